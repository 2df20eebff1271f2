//! Metalinks: a hostdir slot of a canonical container that is a symbolic link to a hostdir on a
//! shadow backend (its text is parsed by [`crate::format::legacy::parse_metalink`]).
//!
//! A metalink is the only symbolic link ever followed in a legacy container, and it is resolved
//! here, never by the kernel: its target must be one of the mount's configured backends, and the
//! path below it is opened from that backend's root descriptor refusing a link at every
//! component, so nothing a container holds can lead outside the configured backends.

use crate::error::{Error, Result};
use crate::format::legacy::parse_metalink;
use crate::mount::{Backend, Mount};
use crate::sys::Dir;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// Lexically normalised absolute path (no `.`, `..` or repeated slashes); `None` with a `..`.
fn normal(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => out.push(n),
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// Opens the hostdir the metalink at `link` (text `text`) points to: `<backend>/<rel>/<hostdir>`,
/// where the backend must be one of `mount`'s and `rel` is the container's path below its
/// backend. Anything else is corruption naming the metalink. Returns the backend too.
pub fn open_target(link: &Path, text: &[u8], mount: &Mount, rel: &Path, hostdir: &str) -> Result<(Arc<Backend>, Dir)> {
    let spec = parse_metalink(link, text)?;
    let want = normal(&spec);
    let backend = mount
        .canonical
        .iter()
        .chain(mount.shadows.iter())
        .find(|b| want.is_some() && normal(&b.path) == want);
    let Some(backend) = backend else {
        return Err(Error::corrupt(
            link,
            format!("metalink to {}, which is not a configured backend", spec.display()),
        ));
    };
    let target = rel.join(hostdir);
    let dir = backend.root().and_then(|r| r.open_dir_beneath(&target)).map_err(|e| {
        Error::corrupt(
            link,
            format!(
                "metalink target {} cannot be opened as a directory ({e})",
                backend.path.join(&target).display()
            ),
        )
    })?;
    Ok((backend.clone(), dir.kept()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalised_paths() {
        assert_eq!(normal(Path::new("//a//b/./c/")), Some(PathBuf::from("/a/b/c")));
        assert_eq!(normal(Path::new("/a/../b")), None);
    }
}
