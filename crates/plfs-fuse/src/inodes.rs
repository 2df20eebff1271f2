//! The inode table: FUSE's path-less protocol names files by inode number; PLFS names them by
//! logical path. This table maps one to the other and follows renames and unlinks.
//!
//! Invariants:
//! - Inode numbers are never reused during a daemon's life (a counter), so the FUSE generation
//!   number can stay constant ([`GENERATION`]).
//! - `by_path[p] == i` iff `nodes[i].path == Some(p)`: an unlinked (or replaced) node keeps its
//!   number, with no path, until the kernel forgets it.
//! - A node's `nlookup` counts the lookups the kernel holds (entry replies minus forgets); only a
//!   node with `nlookup == 0` may be dropped. Nodes created for readdir entries start at 0 and may
//!   be pruned at any time. The root (inode 1) is never dropped.
//! - A path whose file kind changed (a file replaced by a directory behind our back) gets a new
//!   inode: the kernel treats a kind change under one inode number as a stale inode.

use plfs_core::FileKind;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The root's inode number.
pub const ROOT: u64 = 1;
/// Generation of every inode (numbers are never reused, so one generation suffices).
pub const GENERATION: u64 = 1;
/// Above this many nodes, nodes the kernel holds no reference to are pruned.
const PRUNE_ABOVE: usize = 100_000;

#[derive(Debug)]
struct Node {
    /// Path relative to the mount root ("" for the root); None once unlinked or replaced.
    path: Option<PathBuf>,
    kind: FileKind,
    nlookup: u64,
}

/// The table. Not synchronised: the daemon wraps it in a mutex.
#[derive(Debug)]
pub struct Inodes {
    nodes: HashMap<u64, Node>,
    by_path: HashMap<PathBuf, u64>,
    next: u64,
}

impl Default for Inodes {
    fn default() -> Self {
        Self::new()
    }
}

impl Inodes {
    /// A table holding only the root.
    pub fn new() -> Self {
        let mut t = Inodes {
            nodes: HashMap::new(),
            by_path: HashMap::new(),
            next: ROOT + 1,
        };
        t.nodes.insert(
            ROOT,
            Node {
                path: Some(PathBuf::new()),
                kind: FileKind::Dir,
                nlookup: 1,
            },
        );
        t.by_path.insert(PathBuf::new(), ROOT);
        t
    }

    /// Number of nodes (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True if only the root is known.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }

    /// The path of inode `ino`: None if the inode is unknown or was unlinked.
    pub fn path(&self, ino: u64) -> Option<PathBuf> {
        self.nodes.get(&ino).and_then(|n| n.path.clone())
    }

    /// True if the kernel may still name `ino` (known, even if unlinked).
    pub fn known(&self, ino: u64) -> bool {
        self.nodes.contains_key(&ino)
    }

    fn node_for(&mut self, path: &Path, kind: FileKind) -> u64 {
        if let Some(&ino) = self.by_path.get(path) {
            if self.nodes.get(&ino).is_some_and(|n| n.kind == kind || ino == ROOT) {
                return ino;
            }
            self.detach(path);
        }
        let ino = self.next;
        self.next += 1;
        self.nodes.insert(
            ino,
            Node {
                path: Some(path.to_path_buf()),
                kind,
                nlookup: 0,
            },
        );
        self.by_path.insert(path.to_path_buf(), ino);
        ino
    }

    /// The inode for `path` (of kind `kind`) after the kernel received an entry for it: counts
    /// one lookup.
    pub fn lookup(&mut self, path: &Path, kind: FileKind) -> u64 {
        let ino = self.node_for(path, kind);
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.nlookup += 1;
        }
        ino
    }

    /// The inode number to show for a directory entry (no lookup counted).
    pub fn peek(&mut self, path: &Path, kind: FileKind) -> u64 {
        if self.nodes.len() > PRUNE_ABOVE {
            self.prune();
        }
        self.node_for(path, kind)
    }

    /// Drops every node the kernel holds no reference to (except the root).
    fn prune(&mut self) {
        let by_path = &mut self.by_path;
        self.nodes.retain(|&ino, n| {
            let keep = ino == ROOT || n.nlookup > 0;
            if !keep {
                if let Some(p) = &n.path {
                    by_path.remove(p);
                }
            }
            keep
        });
    }

    /// The kernel forgot `n` lookups of `ino`.
    pub fn forget(&mut self, ino: u64, n: u64) {
        if ino == ROOT {
            return;
        }
        let drop_it = match self.nodes.get_mut(&ino) {
            Some(node) => {
                node.nlookup = node.nlookup.saturating_sub(n);
                node.nlookup == 0
            }
            None => false,
        };
        if drop_it {
            if let Some(Node { path: Some(p), .. }) = self.nodes.remove(&ino) {
                if self.by_path.get(&p) == Some(&ino) {
                    self.by_path.remove(&p);
                }
            }
        }
    }

    /// `path` no longer names its inode (unlink, rmdir, replaced by a rename).
    pub fn detach(&mut self, path: &Path) {
        if let Some(ino) = self.by_path.remove(path) {
            let unused = match self.nodes.get_mut(&ino) {
                Some(n) => {
                    n.path = None;
                    n.nlookup == 0
                }
                None => false,
            };
            if unused && ino != ROOT {
                self.nodes.remove(&ino);
            }
        }
    }

    /// `from` was renamed to `to`: whatever `to` named is detached, and `from` and everything
    /// below it move.
    pub fn rename(&mut self, from: &Path, to: &Path) {
        if from == to {
            return;
        }
        self.detach(to);
        let moved: Vec<(PathBuf, u64)> = self
            .by_path
            .iter()
            .filter(|(p, _)| p.starts_with(from))
            .map(|(p, &i)| (p.clone(), i))
            .collect();
        for (old, ino) in moved {
            self.by_path.remove(&old);
            let suffix = old.strip_prefix(from).expect("filtered by starts_with");
            let new = if suffix.as_os_str().is_empty() {
                to.to_path_buf()
            } else {
                to.join(suffix)
            };
            // A stale entry below the target (possible only after external changes) is replaced.
            if let Some(stale) = self.by_path.insert(new.clone(), ino) {
                if let Some(n) = self.nodes.get_mut(&stale) {
                    n.path = None;
                }
            }
            if let Some(n) = self.nodes.get_mut(&ino) {
                n.path = Some(new);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_forget_and_reuse() {
        let mut t = Inodes::new();
        let a = t.lookup(Path::new("a"), FileKind::File);
        assert_eq!(t.lookup(Path::new("a"), FileKind::File), a);
        assert_eq!(t.path(a).unwrap(), Path::new("a"));
        t.forget(a, 1);
        assert!(t.known(a));
        t.forget(a, 1);
        assert!(!t.known(a));
        let a2 = t.lookup(Path::new("a"), FileKind::File);
        assert_ne!(a, a2, "inode numbers are never reused");
        t.forget(ROOT, 100);
        assert_eq!(t.path(ROOT).unwrap(), Path::new(""));
    }

    #[test]
    fn kind_change_gets_a_new_inode() {
        let mut t = Inodes::new();
        let a = t.lookup(Path::new("a"), FileKind::File);
        let b = t.lookup(Path::new("a"), FileKind::Dir);
        assert_ne!(a, b);
        assert_eq!(t.path(a), None);
        assert_eq!(t.path(b).unwrap(), Path::new("a"));
    }

    #[test]
    fn rename_moves_subtree_and_detaches_target() {
        let mut t = Inodes::new();
        let d = t.lookup(Path::new("d"), FileKind::Dir);
        let f = t.lookup(Path::new("d/f"), FileKind::File);
        let g = t.lookup(Path::new("d/sub/g"), FileKind::File);
        let other = t.lookup(Path::new("dd"), FileKind::File);
        let target = t.lookup(Path::new("e"), FileKind::Dir);
        t.rename(Path::new("d"), Path::new("e"));
        assert_eq!(t.path(d).unwrap(), Path::new("e"));
        assert_eq!(t.path(f).unwrap(), Path::new("e/f"));
        assert_eq!(t.path(g).unwrap(), Path::new("e/sub/g"));
        assert_eq!(
            t.path(other).unwrap(),
            Path::new("dd"),
            "a sibling sharing a prefix does not move"
        );
        assert_eq!(t.path(target), None);
        assert!(t.known(target));
        assert_eq!(t.lookup(Path::new("e/f"), FileKind::File), f);
    }

    #[test]
    fn unlink_then_forget_drops_node() {
        let mut t = Inodes::new();
        let a = t.lookup(Path::new("a"), FileKind::File);
        t.detach(Path::new("a"));
        assert_eq!(t.path(a), None);
        assert!(t.known(a));
        t.forget(a, 1);
        assert!(!t.known(a));
        assert!(t.is_empty());
    }

    #[test]
    fn peeked_nodes_are_pruned_but_referenced_ones_stay() {
        let mut t = Inodes::new();
        let kept = t.lookup(Path::new("kept"), FileKind::File);
        for i in 0..PRUNE_ABOVE + 10 {
            t.peek(&PathBuf::from(format!("f{i}")), FileKind::File);
        }
        assert!(t.len() < PRUNE_ABOVE);
        assert_eq!(t.path(kept).unwrap(), Path::new("kept"));
        assert_eq!(t.lookup(Path::new("kept"), FileKind::File), kept);
    }
}
