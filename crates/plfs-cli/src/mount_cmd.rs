//! `plfs mount` and `plfs umount`: the FUSE daemon (crate plfs-fuse) serving one plfsrc mount
//! point through the kernel.

use crate::globals::Globals;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `plfs mount`.
#[derive(Debug, Args)]
pub struct MountArgs {
    /// Directory to mount on; it serves the plfsrc mount point of the same path (or the only one).
    pub mountpoint: PathBuf,
    /// Stay in the foreground (for debugging); otherwise return once the mount is live.
    #[arg(long, short = 'f')]
    pub foreground: bool,
    /// Threads serving requests.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Let every user use the mount (default when run as root; the kernel checks permissions).
    #[arg(long, conflicts_with = "no_allow_other")]
    pub allow_other: bool,
    /// Only the user who mounted may use the mount.
    #[arg(long)]
    pub no_allow_other: bool,
    /// Do not let the kernel check permissions: the daemon checks opens itself and serves every
    /// request with its caller's identity.
    #[arg(long)]
    pub no_default_permissions: bool,
    /// Read-only opens bypass the page cache too (faster large reads, slower small ones).
    #[arg(long)]
    pub direct_io: bool,
}

/// Arguments of `plfs umount`.
#[derive(Debug, Args)]
pub struct UmountArgs {
    /// The mount point to unmount.
    pub mountpoint: PathBuf,
}

/// `plfs mount`.
pub fn mount(cli: &Globals, a: &MountArgs) -> anyhow::Result<()> {
    let opts = plfs_fuse::MountOptions {
        mountpoint: a.mountpoint.clone(),
        config: cli.config.clone(),
        threads: a.threads,
        allow_other: if a.allow_other {
            Some(true)
        } else if a.no_allow_other {
            Some(false)
        } else {
            None
        },
        default_permissions: a.no_default_permissions.then_some(false),
        direct_io: a.direct_io.then_some(true),
    };
    if a.foreground {
        plfs_fuse::mount(opts).with_context(|| format!("mounting {}", a.mountpoint.display()))
    } else {
        plfs_fuse::spawn_background(&opts, &["mount".into()])
            .map(|_| ())
            .with_context(|| format!("mounting {}", a.mountpoint.display()))?;
        if cli.json {
            crate::out::json(&serde_json::json!({"mounted": a.mountpoint.display().to_string()}));
        }
        Ok(())
    }
}

/// `plfs umount`.
pub fn umount(cli: &Globals, a: &UmountArgs) -> anyhow::Result<()> {
    plfs_fuse::umount(&a.mountpoint).with_context(|| format!("unmounting {}", a.mountpoint.display()))?;
    if cli.json {
        crate::out::json(&serde_json::json!({"unmounted": a.mountpoint.display().to_string()}));
    }
    Ok(())
}
