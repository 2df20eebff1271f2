//! `plfs generate man [--tree] DIR` and `plfs generate completions SHELL [DIR]` (hidden;
//! `make install` runs them): man pages ([`crate::man`]) and shell completions, generated from the
//! clap definitions, so they always match the binary; the bash script also completes paths under
//! the mount points ([`crate::complete`]).

use crate::fail::IoContext;
use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Arguments of `plfs generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Write plfs.1, one plfs-COMMAND.1 per command, plfsrc.5 and ldplfs.8 into DIR.
    Man {
        /// Output directory (created if missing).
        dir: PathBuf,
        /// Write into DIR/man1, DIR/man5 and DIR/man8 (a man directory such as
        /// /usr/local/share/man) instead of DIR itself.
        #[arg(long)]
        tree: bool,
    },
    /// Write the completion script for SHELL to standard output, or into DIR under the shell's
    /// conventional file name (plfs, _plfs, plfs.fish).
    Completions {
        /// The shell.
        shell: Shell,
        /// Output directory (default: standard output).
        dir: Option<PathBuf>,
    },
}

/// Shells with completions.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Runs `plfs generate`.
pub fn generate(a: &GenerateArgs, command: clap::Command) -> Result<()> {
    let mut cmd = command;
    cmd.build();
    match &a.what {
        What::Man { dir, tree } => {
            std::fs::create_dir_all(dir).at("cannot create directory", dir)?;
            for w in crate::man::write_all(&cmd, dir, *tree)? {
                outln!("{}", w.display());
            }
        }
        What::Completions { shell, dir } => {
            let mut buf = Vec::new();
            let (sh, file) = match shell {
                Shell::Bash => (clap_complete::Shell::Bash, "plfs"),
                Shell::Zsh => (clap_complete::Shell::Zsh, "_plfs"),
                Shell::Fish => (clap_complete::Shell::Fish, "plfs.fish"),
            };
            clap_complete::generate(sh, &mut cmd, "plfs", &mut buf);
            if matches!(shell, Shell::Bash) {
                // Paths under the mount points, through `plfs __complete`.
                buf.extend_from_slice(crate::complete::BASH_PATHS.as_bytes());
            }
            match dir {
                Some(d) => {
                    std::fs::create_dir_all(d).at("cannot create directory", d)?;
                    let f = d.join(file);
                    std::fs::write(&f, buf).at("cannot write", &f)?;
                    outln!("{}", f.display());
                }
                None => crate::out::bytes(&buf),
            }
        }
    }
    Ok(())
}
