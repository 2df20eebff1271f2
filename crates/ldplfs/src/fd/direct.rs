//! The look-up of descriptor numbers below [`LEN`] without the table's lock: one slot per
//! number, holding the entry registered for it (a strong reference, as a raw `Arc` pointer) and
//! the generation it was registered or last confirmed in. The table (`fd::table`) changes the
//! slots, always under its lock; every read or write call reads them without it.
//!
//! Reclamation: a reader takes its reference to the entry (`Arc` count up) from the pointer it
//! loaded, while it is counted in its stripe of [`READERS`]. A writer that takes an entry out
//! of a slot does not drop the slot's reference: it puts it in the table's `grave`, and a grave
//! is emptied ([`reclaim`]) only when every stripe is seen at zero after the entries went in.
//! A reader that loaded one of them was counted before it loaded it, so it is no longer counted
//! only once it holds its own reference: no reader ever counts up the reference of a freed
//! entry. Nothing waits: a reader still counted leaves the grave for a later change of the
//! table (a signal handler that closes a descriptor never waits for the code it interrupted).
//!
//! Fork: the fork handlers hold the table's lock, so no slot changes under it; a thread that was
//! counted when the process forked does not exist in the child, whose stripes start again at
//! zero ([`in_child`]). The child never drops a reference of the parent's (its entries are the
//! parent's until renewed): the slots it renews and the grave it inherits are forgotten.

use crate::fd::entry::Entry;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

/// Descriptor numbers below this have a slot (those above are only in the table's map).
pub const LEN: usize = 65536;

struct Slot {
    /// `Arc::into_raw` of the registered entry, or null.
    entry: AtomicPtr<Entry>,
    /// The generation the number was registered or last confirmed in (0: never, which no
    /// generation is).
    checked: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    entry: AtomicPtr::new(null_mut()),
    checked: AtomicU64::new(0),
};

/// All zero: the slots take no memory until used.
static SLOTS: [Slot; LEN] = [EMPTY; LEN];

/// Readers between loading a slot's pointer and holding their own reference, by stripe (the
/// descriptor number modulo [`STRIPES`]): threads using different descriptors count on
/// different cache lines.
const STRIPES: usize = 16;

#[repr(align(64))]
struct Stripe(AtomicUsize);

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: Stripe = Stripe(AtomicUsize::new(0));

static READERS: [Stripe; STRIPES] = [ZERO; STRIPES];

/// Whether slot `fd` (below [`LEN`]) holds an entry: one atomic load, no reference taken (safe
/// in a signal handler).
#[inline]
pub fn occupied(fd: usize) -> bool {
    !SLOTS[fd].entry.load(SeqCst).is_null()
}

/// The entry of slot `fd` (below [`LEN`]) and the generation it was confirmed in (0 where the
/// slot changed while it was read: it is then confirmed again by the caller). No lock.
#[inline]
pub fn get(fd: usize) -> Option<(Arc<Entry>, u64)> {
    let s = &SLOTS[fd];
    let r = &READERS[fd % STRIPES].0;
    r.fetch_add(1, SeqCst);
    let p = s.entry.load(SeqCst);
    let found = if p.is_null() {
        None
    } else {
        // A writer sets `checked` to 0, swaps the pointer, then sets the new generation: if the
        // pointer is the same after `checked` was read, that was this entry's (or 0).
        let mut checked = s.checked.load(SeqCst);
        if s.entry.load(SeqCst) != p {
            checked = 0;
        }
        // SAFETY: `p` came from `Arc::into_raw` (`set`), and the slot's reference to it is not
        // dropped while this thread is counted in its stripe (see the module documentation:
        // it was loaded after the count went up, and a grave is emptied only when every stripe
        // was seen at zero after the pointer left the slot). So the entry is alive here, and
        // this adds a reference of our own, which `from_raw` takes over.
        let e = unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        };
        Some((e, checked))
    };
    r.fetch_sub(1, SeqCst);
    found
}

/// Registers `entry` (None: nothing) in slot `fd` in generation `checked`; the reference the
/// slot held goes to `grave`. The caller holds the table's lock.
pub fn set(fd: usize, entry: Option<&Arc<Entry>>, checked: u64, grave: &mut Vec<Arc<Entry>>) {
    let s = &SLOTS[fd];
    let new = entry.map_or(null_mut(), |e| Arc::into_raw(e.clone()).cast_mut());
    s.checked.store(0, SeqCst);
    let old = s.entry.swap(new, SeqCst);
    s.checked.store(checked, SeqCst);
    if !old.is_null() {
        // SAFETY: `old` came from `Arc::into_raw` in an earlier `set`, and this takes over the
        // slot's reference, which nothing else drops (it has just left the slot).
        grave.push(unsafe { Arc::from_raw(old) });
    }
}

/// Slot `fd` was confirmed in generation `gen`, if it still holds `entry`. The caller holds
/// the table's lock.
pub fn confirmed(fd: usize, entry: &Arc<Entry>, gen: u64) {
    let s = &SLOTS[fd];
    if std::ptr::eq(s.entry.load(SeqCst), Arc::as_ptr(entry)) {
        s.checked.store(gen, SeqCst);
    }
}

/// Drops the references in `grave` if no reader can be about to count one of them up (every
/// stripe at zero now, after they left their slots). The caller holds the table's lock.
pub fn reclaim(grave: &mut Vec<Arc<Entry>>) {
    if !grave.is_empty() && READERS.iter().all(|r| r.0.load(SeqCst) == 0) {
        grave.clear();
    }
}

/// In a forked child, while the fork handlers hold the table: the readers counted in the
/// parent are not here, and the references in `grave` are the parent's (forgotten).
pub fn in_child(grave: &mut Vec<Arc<Entry>>) {
    for r in &READERS {
        r.0.store(0, SeqCst);
    }
    for e in grave.drain(..) {
        std::mem::forget(e);
    }
}

/// In a forked child: slot `fd` names `entry` (a renewed one); the parent's reference it held
/// is forgotten, not dropped.
pub fn renew(fd: usize, entry: &Arc<Entry>) {
    let s = &SLOTS[fd];
    let new = Arc::into_raw(entry.clone()).cast_mut();
    // The child has one thread, the forking one, inside the fork handler: no reader to order
    // against. The old pointer's reference is the parent's: leaked on purpose.
    s.entry.store(new, SeqCst);
}
