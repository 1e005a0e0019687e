//! The cached clocks a `fork` must stop: a child inherits no threads, so a
//! clock whose upkeep thread stayed in the parent would read a time standing
//! still there. A `pthread_atfork` child handler hands every watched clock
//! to `CLOCK_MONOTONIC` instead.
//!
//! # Orderings
//! The slots are read only by the handler, in the child, on the one thread
//! there, from memory as the fork left it: nothing races with that read,
//! so every access is `Relaxed`. A clock leaves its slot before its memory
//! can be freed (its [`Upkeep`](super::Upkeep) holds an `Arc` until after,
//! and the global clock is never freed), and the `Arc`'s Release decrement
//! orders the slot's clearing before any free: a slot the child finds set
//! points at a live clock.

use core::ptr;
use std::sync::OnceLock;

use super::cached::CachedClock;
use crate::sync::{GlobalAtomicPtr, GlobalAtomicU64, Ordering};

/// How many times this process is a forked child of one that watched a
/// clock: an [`Upkeep`](super::Upkeep) made before a fork must not join, in
/// the child, a thread that stayed in the parent (the join would never end).
static FORKS: GlobalAtomicU64 = GlobalAtomicU64::new(0);

/// The number of forks this process descends through (see [`FORKS`]).
pub(crate) fn forks() -> u64 {
    // Relaxed: written only by the child's handler on the forking thread,
    // before any code of the child runs.
    FORKS.load(Ordering::Relaxed)
}

/// How many cached clocks may live at once, the global one included.
pub(crate) const SLOTS: usize = 64;

#[allow(
    clippy::declare_interior_mutable_const,
    reason = "only to repeat into the array, one atomic per slot"
)]
const EMPTY: GlobalAtomicPtr<CachedClock> = GlobalAtomicPtr::new(ptr::null_mut());
static LIVE: [GlobalAtomicPtr<CachedClock>; SLOTS] = [EMPTY; SLOTS];

/// A watched clock's slot; [`Slot::release`] before the clock may be freed.
#[derive(Debug)]
pub(crate) struct Slot(usize);

impl Slot {
    /// Stops watching the clock: a fork from now on leaves it alone.
    pub(crate) fn release(self) {
        // Relaxed: see the module's "Orderings".
        LIVE[self.0].store(ptr::null_mut(), Ordering::Relaxed);
    }
}

/// Watches `clock`, so that a forked child stops it; `None` if every slot
/// is taken or the OS refused the handler. The caller must
/// [`release`](Slot::release) the slot before `clock` can be freed.
pub(crate) fn watch(clock: &CachedClock) -> Option<Slot> {
    static HANDLER: OnceLock<bool> = OnceLock::new();
    let installed = *HANDLER.get_or_init(|| {
        // SAFETY:
        // - `in_child` is an `extern "C" fn()` that lives for the whole
        //   program, as `pthread_atfork` requires of its handlers; null
        //   `prepare` and `parent` handlers are allowed.
        // - It does only what a child of a multi-threaded process may:
        //   atomic loads and read-modify-writes.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) == 0 }
    });
    if !installed {
        return None;
    }
    let clock = ptr::from_ref(clock).cast_mut();
    // Is this slot free? A strong exchange: a spurious failure would pass
    // over a free slot. Relaxed: see the module's "Orderings".
    (0..SLOTS)
        .find(|&i| {
            LIVE[i].compare_exchange(ptr::null_mut(), clock, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        })
        .map(Slot)
}

/// The child's handler: every watched clock reads `CLOCK_MONOTONIC` from
/// now on, since its upkeep thread did not come along.
extern "C" fn in_child() {
    // Relaxed: see `forks`.
    FORKS.fetch_add(1, Ordering::Relaxed);
    for slot in &LIVE {
        // Relaxed: see the module's "Orderings".
        let clock = slot.load(Ordering::Relaxed);
        if !clock.is_null() {
            // SAFETY:
            // - `clock` was a live `&CachedClock` when `watch` stored it,
            //   and its owner releases the slot before the clock can be
            //   freed (module doc, "Orderings"): it is live still.
            // - Only a shared reference is made; `CachedClock` is `Sync`.
            unsafe { (*clock).stop() };
        }
    }
}
