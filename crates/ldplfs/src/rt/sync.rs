//! Mutexes held across fork.
//!
//! fork() copies only the calling thread: a mutex another thread held at that instant stays
//! locked forever in the child. Every [`ForkMutex`] therefore registers itself (at its first
//! lock) in a list that the fork handlers (`fd::fork`) lock as a whole before fork, in rank
//! order, and release after it in the parent and the child ([`hold_all`], [`release_all`]). A
//! lock registering itself while a fork is being prepared waits for the fork to finish, so no
//! registered lock can be taken by another thread between the prepare and the child handlers.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// A lock the fork handlers take and release.
trait Held: Sync {
    /// Position in the locking order (lower first).
    fn rank(&self) -> u8;
    /// Prepare: take the lock and keep the guard.
    fn hold(&'static self);
    /// Parent or child: drop the kept guard.
    fn let_go(&'static self);
}

/// A mutex that the fork handlers hold across fork(), so the child never inherits it locked by
/// a thread that does not exist there.
pub struct ForkMutex<T: 'static> {
    m: Mutex<T>,
    stash: UnsafeCell<Option<MutexGuard<'static, T>>>,
    rank: u8,
    registered: AtomicBool,
}

// SAFETY: `m` is a Mutex; `stash` is touched only by the forking thread between the prepare and
// the parent/child handlers, which run in that same thread while the lock is held.
unsafe impl<T: Send> Sync for ForkMutex<T> {}

impl<T: Send> ForkMutex<T> {
    /// A new unlocked mutex; `rank` orders it among the others when a fork takes them all.
    pub const fn new(rank: u8, v: T) -> Self {
        ForkMutex {
            m: Mutex::new(v),
            stash: UnsafeCell::new(None),
            rank,
            registered: AtomicBool::new(false),
        }
    }

    /// Locks it (a poisoned lock is recovered: the data are plain maps).
    pub fn lock(&'static self) -> MutexGuard<'static, T> {
        if !self.registered.load(Ordering::Acquire) {
            register(self, &self.registered);
        }
        self.m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lets `f` change the data while the fork handlers hold the lock (the child handler fixes
    /// up what the parent's threads left behind). Does nothing when the lock is not held.
    pub fn with_held(&'static self, f: impl FnOnce(&mut T)) {
        // SAFETY: see the Sync impl.
        if let Some(g) = unsafe { (*self.stash.get()).as_mut() } {
            f(g);
        }
    }
}

impl<T: Send> Held for ForkMutex<T> {
    fn rank(&self) -> u8 {
        self.rank
    }

    fn hold(&'static self) {
        let g = self.m.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: see the Sync impl.
        unsafe { *self.stash.get() = Some(g) };
    }

    fn let_go(&'static self) {
        // SAFETY: see the Sync impl.
        drop(unsafe { (*self.stash.get()).take() });
    }
}

/// The registered locks, in rank order; itself held from prepare to parent/child.
struct Registry {
    list: Mutex<Vec<&'static dyn Held>>,
    stash: UnsafeCell<Option<MutexGuard<'static, Vec<&'static dyn Held>>>>,
}

// SAFETY: as for ForkMutex.
unsafe impl Sync for Registry {}

static REGISTRY: Registry = Registry {
    list: Mutex::new(Vec::new()),
    stash: UnsafeCell::new(None),
};

fn registry() -> MutexGuard<'static, Vec<&'static dyn Held>> {
    REGISTRY.list.lock().unwrap_or_else(|p| p.into_inner())
}

fn register(m: &'static dyn Held, flag: &AtomicBool) {
    let mut l = registry();
    if !flag.swap(true, Ordering::AcqRel) {
        let at = l.partition_point(|x| x.rank() <= m.rank());
        l.insert(at, m);
    }
}

/// Fork prepare handler: takes every registered lock, in rank order.
pub fn hold_all() {
    let l = registry();
    for m in l.iter() {
        m.hold();
    }
    // SAFETY: see the Sync impl of Registry.
    unsafe { *REGISTRY.stash.get() = Some(l) };
}

/// Fork parent and child handlers: releases what [`hold_all`] took, in reverse order.
pub fn release_all() {
    // SAFETY: see the Sync impl of Registry.
    if let Some(l) = unsafe { (*REGISTRY.stash.get()).take() } {
        for m in l.iter().rev() {
            m.let_go();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static A: ForkMutex<u32> = ForkMutex::new(20, 0);
    static B: ForkMutex<u32> = ForkMutex::new(10, 0);

    #[test]
    fn registered_at_first_lock_and_held_in_rank_order() {
        *A.lock() += 1;
        *B.lock() += 1;
        // (Other locks of the library may be registered too: only the order is asserted.)
        let ranks: Vec<u8> = registry().iter().map(|m| m.rank()).collect();
        assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
        assert!(ranks.contains(&10) && ranks.contains(&20), "{ranks:?}");
        hold_all();
        // Held: another thread cannot take them until they are released.
        assert!(A.m.try_lock().is_err() && B.m.try_lock().is_err());
        A.with_held(|v| *v = 7);
        release_all();
        assert_eq!(*A.lock(), 7);
        assert_eq!(*B.lock(), 1);
    }
}
