//! `plfs`: the command-line tool. Argument parsing and dispatch only; every subcommand lives in
//! its own module and all file system logic lives in `plfs-core`.
//!
//! Output goes through [`out`] (never `println!`: a closed pipe must end the command quietly),
//! errors through [`fail`]; the exit codes are in [`EXIT_CODES`].

#![deny(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod out;
mod advise;
mod compact_cmd;
mod complete;
mod config_cmd;
mod copy;
mod demo;
mod df;
mod du;
mod fail;
mod files;
mod fsck_cmd;
mod generate;
mod globals;
mod man;
mod mount_cmd;
mod ops;
mod pattern;
mod progress;
mod stats;
mod tools_cmd;
mod upgrade_cmd;
mod util;
mod worker;

use clap::{CommandFactory, Parser, Subcommand};
use globals::Globals;

/// The exit-code table, shown by `plfs --help` and in docs/cli.md.
pub const EXIT_CODES: &str = "\
Exit codes (every command):
  0    success (also when standard output is closed early, as in `plfs map F | head -1`)
  1    an operation failed: the message (or, with --json, the JSON object on standard error,
       with its errno) says which path and why; commands with several operands go on with the
       others and exit 1 at the end
  2    usage error: unknown command or option, missing or bad argument
fsck and verify follow e2fsck instead:
  fsck   0 clean, 1 problems found and all repaired, 4 problems left, 8 could not run
  verify 0 every checksum matched, 4 a mismatch or an unreadable log, 8 could not run

With --json every command prints one JSON document on standard output, and an error as one line
of JSON on standard error: {\"error\": \"...\", \"path\": \"...\", \"errno\": N, \"exit_code\": N}.
Messages name the logical path; backend files are named only with -v/--verbose.";

/// Command-line tool for PLFS, the Parallel Log-structured File System.
#[derive(Debug, Parser)]
#[command(name = "plfs", version, propagate_version = true, after_long_help = EXIT_CODES)]
struct Cli {
    #[command(flatten)]
    g: Globals,

    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Load and print the configuration, and check that every backend is a writable directory.
    CheckConfig(config_cmd::CheckConfigArgs),
    /// List directories (default: the first mount point).
    Ls(files::LsArgs),
    /// Print every attribute of a file.
    Stat(files::StatArgs),
    /// Write files to standard output.
    Cat(files::CatArgs),
    /// Make directories.
    Mkdir(ops::MkdirArgs),
    /// Copy files and directory trees into, out of and within PLFS (mode preserved).
    Cp(copy::CpArgs),
    /// Make DST an up-to-date copy of SRC (a file or a tree), resumably: files complete at DST (same
    /// size and modification time) are skipped, the others copied again, N at a time.
    Sync(copy::SyncArgs),
    /// Move or rename files and directories.
    Mv(ops::MvArgs),
    /// Remove files (and, with -r, directory trees).
    Rm(ops::RmArgs),
    /// Backends of the mount points (or of PATH's): capacity, used and free space of their file
    /// systems, and the directory entries PLFS keeps under each.
    Df(df::DfArgs),
    /// Space used: logical bytes, physical bytes in the backends, dead ratio, open writers.
    Du(du::DuArgs),
    /// Rewrite files' live data into fresh logs and retire the old ones (--dry-run: only report
    /// what would be reclaimed).
    Compact(compact_cmd::CompactArgs),
    /// Copy one plain file into PLFS (mode preserved).
    Import(copy::ImportArgs),
    /// Copy one PLFS file out to a plain file (mode preserved).
    Export(copy::ImportArgs),
    /// Print the merged index of a file: one line per extent (--writer/--rank: only one writer's).
    Map(tools_cmd::MapArgs),
    /// Characterise the I/O of an N-1 file from its index (per writer: bytes, writes, times,
    /// access sizes; the file's pattern, stride, record size, overlap, span and bandwidth), or
    /// of every file under a directory, one line per directory.
    Stats(stats::StatsArgs),
    /// List the physical files behind a logical file, or (--reverse) the logical file a backend
    /// path belongs to.
    Query(tools_cmd::QueryArgs),
    /// Write a flattened index for a file, so later opens read one file instead of every index log.
    Flatten(tools_cmd::FlattenArgs),
    /// Print the library and format versions, or the format version a file was written with.
    Version(tools_cmd::VersionArgs),
    /// Run the N-1 demo: N writers, a different number of readers, verified byte for byte and
    /// compared with a plain shared file.
    Demo(demo::DemoArgs),
    /// Check a file or directory tree for crash debris and damage; --repair fixes what is safe.
    /// Exit codes: 0 clean, 1 all repaired, 4 problems left, 8 could not run.
    Fsck(fsck_cmd::FsckArgs),
    /// Check every write of a file against its data checksum. Exit codes: 0 ok, 4 mismatch, 8 error.
    Verify(fsck_cmd::VerifyArgs),
    /// Convert files written by PLFS 2.x (read-only here), and format 2 containers, to this
    /// format, in place: FILE, or every such file under DIR. Crash-safe: the original stays until
    /// its copy is verified.
    Upgrade(upgrade_cmd::UpgradeArgs),
    /// Probe a plain file system for a few seconds and predict whether PLFS helps an N-1 workload
    /// there (`plfs advise DIR [--writers N] [--record BYTES] [--quick]`); with `--scale [--costs
    /// FILE.json]`, for 1 to 10,000 writers.
    #[command(after_long_help = advise::HELP)]
    Advise(advise::AdviseArgs),
    /// Mount PLFS with FUSE: `plfs mount MOUNTPOINT [--config FILE] [--foreground]`.
    Mount(mount_cmd::MountArgs),
    /// Unmount a PLFS FUSE mount, waiting until its daemon has closed every file.
    Umount(mount_cmd::UmountArgs),
    /// Generate man pages or shell completions (used by `make install`).
    #[command(hide = true)]
    Generate(generate::GenerateArgs),
    /// One process of the demo (spawned by `plfs demo`).
    #[command(hide = true)]
    DemoWorker(worker::WorkerArgs),
    /// Completions of a path under a mount point (asked by the bash completion script).
    #[command(name = "__complete", hide = true)]
    Complete(complete::CompleteArgs),
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    let g = &cli.g;
    match &cli.cmd {
        Cmd::CheckConfig(a) => config_cmd::check_config(g, a),
        Cmd::Ls(a) => files::ls(g, a),
        Cmd::Stat(a) => files::stat(g, a),
        Cmd::Cat(a) => files::cat(g, a),
        Cmd::Mkdir(a) => ops::mkdir(g, a),
        Cmd::Cp(a) => copy::cp(g, a),
        Cmd::Sync(a) => copy::sync(g, a),
        Cmd::Mv(a) => ops::mv(g, a),
        Cmd::Rm(a) => ops::rm(g, a),
        Cmd::Df(a) => df::df(g, a),
        Cmd::Du(a) => du::du(g, a),
        Cmd::Compact(a) => compact_cmd::compact(g, a),
        Cmd::Import(a) => copy::import(g, a),
        Cmd::Export(a) => copy::export(g, a),
        Cmd::Map(a) => tools_cmd::map(g, a),
        Cmd::Stats(a) => stats::stats(g, a),
        Cmd::Query(a) => tools_cmd::query(g, a),
        Cmd::Flatten(a) => tools_cmd::flatten(g, a),
        Cmd::Version(a) => tools_cmd::version(g, a),
        Cmd::Demo(a) => demo::demo(g, a),
        Cmd::DemoWorker(a) => worker::worker(g, a),
        Cmd::Fsck(a) => fsck_cmd::fsck(g, a),
        Cmd::Verify(a) => fsck_cmd::verify(g, a),
        Cmd::Upgrade(a) => upgrade_cmd::upgrade(g, a),
        Cmd::Advise(a) => advise::advise(g, a),
        Cmd::Mount(a) => mount_cmd::mount(g, a),
        Cmd::Umount(a) => mount_cmd::umount(g, a),
        Cmd::Generate(a) => generate::generate(a, Cli::command()),
        Cmd::Complete(a) => complete::complete(g, a),
    }
}

fn main() {
    // A plfs command runs no user program in this process (the demo starts its writers as
    // processes of their own, and the core's descriptors are close-on-exec): its descriptors
    // need not stay out of one's way.
    plfs_core::descriptors_anywhere();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind as K;
            let json = std::env::args_os().skip(1).any(|a| a == "--json");
            if json && !matches!(e.kind(), K::DisplayHelp | K::DisplayVersion) {
                let msg = e.kind().as_str().map_or_else(
                    || e.to_string().lines().next().unwrap_or("usage error").to_string(),
                    |k| {
                        let first = e.to_string();
                        let line = first.lines().next().unwrap_or(k).trim_start_matches("error: ");
                        line.to_string()
                    },
                );
                let v = serde_json::json!({
                    "error": msg, "path": null, "errno": 22, "exit_code": out::EXIT_USAGE,
                });
                errln!("{v}");
                std::process::exit(out::EXIT_USAGE);
            }
            e.exit();
        }
    };
    out::set_mode(cli.g.json, cli.g.verbose);
    match run(&cli) {
        Ok(()) => out::exit(out::EXIT_OK),
        Err(e) => {
            if util::is_broken_pipe(&e) {
                // `plfs cat big | head`: the reader went away; that is not our error.
                std::process::exit(out::EXIT_OK);
            }
            if e.downcast_ref::<fail::Reported>().is_none() {
                fail::report(&e, out::EXIT_FAILURE);
            }
            out::exit(out::EXIT_FAILURE);
        }
    }
}

#[cfg(test)]
mod tests {
    /// clap's own consistency checks (duplicate short flags between global and subcommand
    /// options, conflicting names...), which release builds skip.
    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
