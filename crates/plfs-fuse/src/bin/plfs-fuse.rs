//! `plfs-fuse`: the standalone FUSE daemon (the same as `plfs mount` / `plfs umount`).
//!
//! Usage:
//!   plfs-fuse MOUNTPOINT [--config FILE] [--foreground] [--threads N] [--allow-other|--no-allow-other]
//!             [--no-default-permissions] [--direct-io]
//!   plfs-fuse -u MOUNTPOINT

use plfs_fuse::MountOptions;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: plfs-fuse MOUNTPOINT [--config FILE] [--foreground] [--threads N] [--allow-other|--no-allow-other] [--no-default-permissions] [--direct-io]\n       plfs-fuse -u MOUNTPOINT";

enum Action {
    Mount { opts: MountOptions, foreground: bool },
    Umount(PathBuf),
}

fn parse(args: Vec<OsString>) -> Result<Action, String> {
    let mut it = args.into_iter();
    let mut opts = MountOptions::default();
    let mut mountpoint: Option<PathBuf> = None;
    let (mut foreground, mut unmount) = (false, false);
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("-f" | "--foreground") => foreground = true,
            Some("-u" | "--unmount") => unmount = true,
            Some("--allow-other") => opts.allow_other = Some(true),
            Some("--no-allow-other") => opts.allow_other = Some(false),
            Some("--no-default-permissions") => opts.default_permissions = Some(false),
            Some("--direct-io") => opts.direct_io = Some(true),
            Some("-c" | "--config") => opts.config = Some(it.next().ok_or("--config needs a FILE")?.into()),
            Some("--threads") => {
                let n = it.next().ok_or("--threads needs a number")?;
                opts.threads = Some(
                    n.to_str()
                        .and_then(|s| s.parse().ok())
                        .filter(|&n| n > 0)
                        .ok_or("--threads needs a positive number")?,
                );
            }
            Some("-h" | "--help") => return Err(String::new()),
            Some(s) if s.starts_with('-') => return Err(format!("unknown option {s}")),
            _ if mountpoint.is_none() => mountpoint = Some(a.into()),
            _ => return Err(format!("unexpected argument {}", a.to_string_lossy())),
        }
    }
    let mountpoint = mountpoint.ok_or("missing MOUNTPOINT")?;
    if unmount {
        return Ok(Action::Umount(mountpoint));
    }
    opts.mountpoint = mountpoint;
    Ok(Action::Mount { opts, foreground })
}

fn main() -> ExitCode {
    let action = match parse(std::env::args_os().skip(1).collect()) {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("plfs-fuse: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(if e.is_empty() { 0 } else { 2 });
        }
    };
    let r = match action {
        Action::Umount(p) => plfs_fuse::umount(&p),
        Action::Mount { opts, foreground: true } => plfs_fuse::mount(opts),
        Action::Mount {
            opts,
            foreground: false,
        } => plfs_fuse::spawn_background(&opts, &[]).map(|_| ()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("plfs-fuse: error: {e}");
            ExitCode::FAILURE
        }
    }
}
