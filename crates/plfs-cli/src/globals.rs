//! The options every command takes (`--config`, `--json`, `-v`), handed to each command.

use clap::Args;
use std::path::PathBuf;

/// Global options.
#[derive(Debug, Clone, Args)]
pub struct Globals {
    /// Use this plfsrc file instead of $PLFSRC, ~/.plfsrc, /etc/plfsrc or the zero-config default.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Print JSON instead of text (results on standard output, errors on standard error).
    #[arg(long, global = true)]
    pub json: bool,

    /// Name backend files in error messages (they are left out by default).
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
}
