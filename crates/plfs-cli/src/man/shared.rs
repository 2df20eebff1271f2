//! Sections two pages share: ENVIRONMENT (plfs(1)) and FILES (plfs(1), plfsrc(5)).

use super::roff::Page;

/// ENVIRONMENT of plfs(1): every variable the tool, the library and ldplfs read.
pub fn environment(p: &mut Page) {
    p.sh("Environment");
    p.tp(
        "PLFSRC",
        "The plfsrc to use, first in the search order (see FILES). If it is set and not empty the file must exist: \
         a typo is an error, never silently another file.",
    );
    p.tp(
        "HOME",
        "Locates `~/.plfsrc`; expands a leading `~/` in `mount_point`, `location` and `include`; the zero-config \
         store lives under it.",
    );
    p.tp(
        "USER",
        "Names the zero-config mount point, `/tmp/plfs-$USER`. When it is unset or empty, the login name of the \
         real user id in the system's user database (getpwuid(3): /etc/passwd, LDAP, SSSD), as `id -un` prints \
         it, is used, and the numeric uid if there is none.",
    );
    p.tp(
        "XDG_DATA_HOME",
        "The zero-config store is `${XDG_DATA_HOME:-$HOME/.local/share}/plfs/store`.",
    );
    p.tp(
        "PLFS_HOSTNAME",
        "The host name a writer uses to choose its hostdir and shadow backend and in the names of its logs \
         (default: the kernel's node name). To pin a node to a shadow backend, or to let several \"hosts\" share \
         one node in tests.",
    );
    p.tp(
        "PLFS_LOG",
        "The library's messages on standard error: `debug`, `info`, `warn` (the default) or `off` (`trace` means \
         `debug`; `0` and `none` mean `off`). It replaces the mlog_* keys of PLFS 2.5. Inside programs run under \
         ldplfs the library is quiet unless this variable asks otherwise.",
    );
    p.tp(
        "PLFS_CAPS_DISABLE",
        "A comma-separated list of backend features to treat as missing (`noreplace`, `exchange`, `fsync_dir`, \
         `locks`, `local_clock`), so that the fallbacks used on backends that lack them are taken. For testing \
         and for working around a file system that claims a feature it does not deliver.",
    );
    p.tp(
        "PLFS_FAILPOINTS",
        "Test builds only: injects errors into the library's system calls (see crates/plfs-core/src/sys/failpoint.rs). \
         Leave it unset.",
    );
    p.tp(
        "XDG_RUNTIME_DIR",
        "Where `plfs mount` keeps the pid file of a daemon run by a user other than root \
         (`$XDG_RUNTIME_DIR/plfs-fuse`, else `/tmp/plfs-fuse-UID`; root's are in `/run/plfs-fuse`).",
    );
    for (k, v) in super::ldplfs::ENV {
        p.tp(k, v);
    }
}

/// FILES of plfs(1) and plfsrc(5).
pub fn files(p: &mut Page) {
    p.sh("Files");
    p.p("The configuration is the first of these that exists; files are never merged:");
    p.tp("$PLFSRC", "When set and not empty (it must exist then).");
    p.tp("~/.plfsrc", "The user's own.");
    p.tp("/etc/plfsrc", "The site's.");
    p.p(
        "With none of them, the zero-config default: mount point `/tmp/plfs-$USER` (see USER under ENVIRONMENT), \
         stored in `${XDG_DATA_HOME:-~/.local/share}/plfs/store`. A file that exists but is invalid is always an \
         error naming the file, the line and the key; `plfs check-config` shows which file is used.",
    );
    p.tp(
        "BACKEND/.plfs_shadow/",
        "Logs of writers whose shadow backend this is (the containers themselves are directories named like the \
         logical files, on their canonical backend). Never edit backend directories by hand; `plfs fsck` checks them.",
    );
}
