//! Event counters, striped so that threads counting at once do not write
//! to one cache line.
//!
//! Each thread keeps to one stripe: with `std`, threads are handed stripes
//! in turn on their first call; without it, a thread hashes the address of
//! its own stack. A collision only costs contention, never a lost count,
//! since every increment is a `fetch_add`.
//! A snapshot sums the stripes.
//!
//! A stripe is one of two layouts: [`Padded`], 128 bytes on x86-64 and
//! aarch64 (crossbeam's `CachePadded`: a line pair there, out of reach of
//! the adjacent-line prefetcher), which the default storage and shared
//! regions keep; or [`Line`], 64 bytes, one line on x86-64, which the
//! storages made for many small breakers take (see `storage`): half the
//! memory, still a line of its own per stripe on x86-64.
//!
//! # Orderings
//! Every access is `Relaxed`: counters are statistics that order nothing
//! else, and each `fetch_add` is atomic, so no increment is lost.

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU64, Ordering};

#[cfg(not(loom))]
const STRIPES: usize = 8;
// One stripe keeps loom's state space small; striping is no part of any
// protocol loom checks.
#[cfg(loom)]
const STRIPES: usize = 1;

/// Which counter of a stripe.
#[derive(Debug, Clone, Copy)]
#[repr(usize)]
pub(crate) enum Event {
    Success = 0,
    Failure = 1,
    Ignored = 2,
    Rejected = 3,
    Slow = 4,
    Transition = 5,
    HoldCapped = 6,
}
pub(crate) const EVENTS: usize = 7;

/// One stripe's counters, in one of the layouts below.
pub(crate) trait Stripe {
    fn new() -> Self;
    fn events(&self) -> &[AtomicU64; EVENTS];
}

/// A stripe padded to crossbeam's `CachePadded` (128 bytes on x86-64).
pub(crate) type Padded = CachePadded<[AtomicU64; EVENTS]>;

impl Stripe for Padded {
    #[inline]
    fn new() -> Self {
        CachePadded::new(core::array::from_fn(|_| AtomicU64::new(0)))
    }

    #[inline(always)]
    fn events(&self) -> &[AtomicU64; EVENTS] {
        self
    }
}

/// A stripe on one 64-byte line.
#[repr(C, align(64))]
#[derive(Debug)]
pub(crate) struct Line([AtomicU64; EVENTS]);

impl Stripe for Line {
    #[inline]
    fn new() -> Self {
        Line(core::array::from_fn(|_| AtomicU64::new(0)))
    }

    #[inline(always)]
    fn events(&self) -> &[AtomicU64; EVENTS] {
        &self.0
    }
}

#[cfg(not(loom))]
const _: () = assert!(size_of::<Line>() == 64 && size_of::<Counters<Line>>() == 512);

#[repr(C)]
#[derive(Debug)]
pub(crate) struct Counters<S = Padded> {
    stripes: [S; STRIPES],
}

impl<S: Stripe> Counters<S> {
    #[inline]
    pub(crate) fn new() -> Self {
        Self { stripes: core::array::from_fn(|_| S::new()) }
    }

    #[inline(always)]
    pub(crate) fn add(&self, event: Event) {
        // Relaxed: see the module's Orderings.
        self.stripes[stripe(STRIPES)].events()[event as usize].fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn total(&self, event: Event) -> u64 {
        self.stripes
            .iter()
            // Relaxed: see the module's Orderings.
            .map(|s| s.events()[event as usize].load(Ordering::Relaxed))
            .fold(0u64, u64::wrapping_add)
    }
}

/// This thread's stripe of `stripes` (a power of two).
#[inline(always)]
pub(crate) fn stripe(stripes: usize) -> usize {
    debug_assert!(stripes.is_power_of_two());
    if stripes == 1 {
        return 0;
    }
    thread_slot() & (stripes - 1)
}

/// With `std`: a number handed to each thread on its first call, in turn,
/// so the first eight threads get eight different stripes whatever their
/// stack addresses.
#[cfg(all(feature = "std", not(loom)))]
#[inline(always)]
fn thread_slot() -> usize {
    use core::cell::Cell;
    use core::sync::atomic::AtomicUsize;

    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::thread_local! {
        static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    SLOT.with(|slot| {
        let n = slot.get();
        if n != usize::MAX {
            return n;
        }
        // Relaxed: a ticket number; it orders nothing.
        let n = NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed) & (usize::MAX >> 1);
        slot.set(n);
        n
    })
}

/// Without `std` (no thread-locals): a hash of the stack address at 4 KiB
/// granularity (threads' stacks lie megabytes apart; one thread stays on
/// one stripe at similar call depths), so two threads usually differ.
#[cfg(not(all(feature = "std", not(loom))))]
#[inline(always)]
fn thread_slot() -> usize {
    let marker = 0u8;
    let page = (core::ptr::addr_of!(marker).addr() >> 12) as u64;
    (page.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize
}

/// The breaker's counters at one moment (each counter read separately, so a
/// snapshot taken while calls are recorded may be off by those calls).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Calls recorded as [`Outcome::Success`](crate::Outcome::Success)
    /// (0 when the config turns success counting off).
    pub successes: u64,
    /// Calls recorded as failures.
    pub failures: u64,
    /// Calls recorded as ignored, including permits dropped unrecorded.
    pub ignored: u64,
    /// Calls refused by the breaker.
    pub rejected: u64,
    /// Calls slower than the config's `slow_call` threshold.
    pub slow: u64,
    /// State transitions, manual ones included.
    pub transitions: u64,
    /// Holds a server asked for that were longer than the config's
    /// [`max_hold`](crate::BreakerConfig::max_hold), and were cut to it.
    pub capped_holds: u64,
}

impl Snapshot {
    #[inline]
    /// Calls admitted and recorded: successes + failures + ignored.
    pub fn calls(&self) -> u64 {
        self.successes.wrapping_add(self.failures).wrapping_add(self.ignored)
    }

    #[inline]
    pub(crate) fn of<S: Stripe>(c: &Counters<S>) -> Self {
        Self {
            successes: c.total(Event::Success),
            failures: c.total(Event::Failure),
            ignored: c.total(Event::Ignored),
            rejected: c.total(Event::Rejected),
            slow: c.total(Event::Slow),
            transitions: c.total(Event::Transition),
            capped_holds: c.total(Event::HoldCapped),
        }
    }
}
