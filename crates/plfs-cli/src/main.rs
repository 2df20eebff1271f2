//! `plfs`: the command-line tool. Argument parsing and dispatch only; every subcommand lives in
//! its own module and all file system logic lives in `plfs-core`.
//!
//! Exit codes: 0 on success, 1 on any error (printed as `plfs: error: ...` with its context
//! chain), 2 on a usage error (clap's default).

mod config_cmd;
mod demo;
mod files;
mod fsck_cmd;
mod mount_cmd;
mod pattern;
mod tools_cmd;
mod util;
mod worker;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Command-line tool for PLFS, the Parallel Log-structured File System.
#[derive(Debug, Parser)]
#[command(name = "plfs", version, propagate_version = true)]
pub struct Cli {
    /// Use this plfsrc file instead of $PLFSRC, ~/.plfsrc, /etc/plfsrc or the zero-config default.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Load and print the configuration, and check that every backend is a writable directory.
    CheckConfig(config_cmd::CheckConfigArgs),
    /// Print the merged index of a file: one line per extent.
    Map(tools_cmd::MapArgs),
    /// List the physical files behind a logical file, or (--reverse) the logical file a backend
    /// path belongs to.
    Query(tools_cmd::QueryArgs),
    /// Write a flattened index for a file, so later opens read one file instead of every index log.
    Flatten(tools_cmd::FlattenArgs),
    /// Print the library and format versions, or the format version a file was written with.
    Version(tools_cmd::VersionArgs),
    /// List directories (default: the first mount point).
    Ls(files::LsArgs),
    /// Print every attribute of a file.
    Stat(files::StatArgs),
    /// Write files to standard output.
    Cat(files::CatArgs),
    /// Copy a plain file into PLFS (mode preserved).
    Import(files::CopyArgs),
    /// Copy a PLFS file out to a plain file (mode preserved).
    Export(files::CopyArgs),
    /// Run the N-1 demo: N writers, a different number of readers, verified byte for byte and
    /// compared with a plain shared file.
    Demo(demo::DemoArgs),
    /// Check a file or directory tree for crash debris and damage; --repair fixes what is safe.
    /// Exit codes: 0 clean, 1 all repaired, 4 problems left, 8 could not run.
    Fsck(fsck_cmd::FsckArgs),
    /// Check every write of a file against its data checksum. Exit codes: 0 ok, 4 mismatch, 8 error.
    Verify(fsck_cmd::VerifyArgs),
    /// Mount PLFS with FUSE: `plfs mount MOUNTPOINT [--config FILE] [--foreground]`.
    Mount(mount_cmd::MountArgs),
    /// Unmount a PLFS FUSE mount, waiting until its daemon has closed every file.
    Umount(mount_cmd::UmountArgs),
    /// One process of the demo (spawned by `plfs demo`).
    #[command(hide = true)]
    DemoWorker(worker::WorkerArgs),
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    match &cli.cmd {
        Cmd::CheckConfig(a) => config_cmd::check_config(cli, a),
        Cmd::Map(a) => tools_cmd::map(cli, a),
        Cmd::Query(a) => tools_cmd::query(cli, a),
        Cmd::Flatten(a) => tools_cmd::flatten(cli, a),
        Cmd::Version(a) => tools_cmd::version(cli, a),
        Cmd::Ls(a) => files::ls(cli, a),
        Cmd::Stat(a) => files::stat(cli, a),
        Cmd::Cat(a) => files::cat(cli, a),
        Cmd::Import(a) => files::import(cli, a),
        Cmd::Export(a) => files::export(cli, a),
        Cmd::Demo(a) => demo::demo(cli, a),
        Cmd::DemoWorker(a) => worker::worker(cli, a),
        Cmd::Fsck(a) => fsck_cmd::fsck(cli, a),
        Cmd::Verify(a) => fsck_cmd::verify(cli, a),
        Cmd::Mount(a) => mount_cmd::mount(cli, a),
        Cmd::Umount(a) => mount_cmd::umount(a),
    }
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(&cli) {
        if util::is_broken_pipe(&e) {
            // `plfs cat big | head`: the reader went away; that is not our error.
            std::process::exit(0);
        }
        eprintln!("plfs: error: {e:#}");
        std::process::exit(1);
    }
}
