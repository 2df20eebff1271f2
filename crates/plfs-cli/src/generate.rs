//! `plfs generate man DIR` and `plfs generate completions SHELL [DIR]` (hidden; `make install`
//! runs them): man pages and shell completions generated from the clap definitions, so they
//! always match the binary.

use crate::fail::IoContext;
use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};

/// Arguments of `plfs generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Write plfs.1 and one plfs-COMMAND.1 per command into DIR.
    Man {
        /// Output directory (created if missing).
        dir: PathBuf,
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

/// Writes the man page of `cmd` (named `name`) and of each visible subcommand into `dir`.
fn man_pages(cmd: &clap::Command, name: &str, dir: &Path, written: &mut Vec<PathBuf>) -> Result<()> {
    let cmd = cmd.clone().name(name.to_string());
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut buf)
        .at("cannot render the man page of", Path::new(name))?;
    let file = dir.join(format!("{name}.1"));
    std::fs::write(&file, buf).at("cannot write", &file)?;
    written.push(file);
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        man_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

/// Runs `plfs generate`.
pub fn generate(a: &GenerateArgs, command: clap::Command) -> Result<()> {
    let mut cmd = command;
    cmd.build();
    match &a.what {
        What::Man { dir } => {
            std::fs::create_dir_all(dir).at("cannot create directory", dir)?;
            let mut written = Vec::new();
            man_pages(&cmd, "plfs", dir, &mut written)?;
            for w in written {
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
