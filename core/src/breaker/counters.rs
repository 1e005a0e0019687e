//! Event counters, striped so that threads counting at once do not write
//! to one cache line.
//!
//! # Owned and pooled stripes
//! With `std`, each thread of a process is handed a number on its first
//! count, in turn, never reused. The threads numbered below [`OWNED`] each
//! own a stripe of their own: no other thread writes it, so an increment
//! there is a plain load and store, with no locked instruction. Every other
//! thread adds to one of the [`POOLED`] stripes with a `fetch_add`, and so
//! does every thread when the breaker lives in memory shared between
//! processes (thread numbers are per process, so two processes' first
//! threads would otherwise own one stripe), and every build without `std`
//! (a thread there hashes the address of its own stack: no ownership, only
//! fewer collisions). So no increment is ever lost, with one exception: an
//! event counted from a signal handler that interrupted the same thread
//! between the load and the store of its own count is lost (never any
//! other count, and never the state).
//!
//! A snapshot sums the stripes.
//!
//! # Orderings
//! Every access is `Relaxed`: counters are statistics that order nothing
//! else. An owned stripe has one writer, so its load sees that writer's
//! last store and the store after it loses nothing; a pooled stripe's
//! `fetch_add` is atomic.

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU64, Ordering};

/// Stripes owned by one thread each: the first threads of a process.
#[cfg(not(loom))]
pub(crate) const OWNED: usize = 8;
/// Stripes shared by the other threads, added to with `fetch_add`.
#[cfg(not(loom))]
const POOLED: usize = 4;
// One stripe keeps loom's state space small; striping is no part of any
// protocol loom checks (and loom builds own none: see `owned_slot`).
#[cfg(loom)]
pub(crate) const OWNED: usize = 1;
#[cfg(loom)]
const POOLED: usize = 1;

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
const EVENTS: usize = 7;

/// Whose stripes a breaker's counters may use (see the module docs): a
/// plain integer, since a breaker in shared memory may hold any bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct Sharing(u64);

impl Sharing {
    /// In one process's memory: a thread may count in a stripe it owns.
    pub(crate) const PRIVATE: Sharing = Sharing(0);
    /// In memory shared between processes: every count is a `fetch_add`.
    /// (Any other value counts the same way, and fails a region's checks.)
    pub(crate) const SHARED: Sharing = Sharing(u64::from_ne_bytes(*b"SHAREDCT"));
}

type Stripe = CachePadded<[AtomicU64; EVENTS]>;

fn stripes<const N: usize>() -> [Stripe; N] {
    core::array::from_fn(|_| CachePadded::new(core::array::from_fn(|_| AtomicU64::new(0))))
}

#[repr(C)]
#[derive(Debug)]
pub(crate) struct Counters {
    /// Stripe `i` is written only by the thread numbered `i` (see `owned_slot`).
    owned: [Stripe; OWNED],
    pooled: [Stripe; POOLED],
}

impl Counters {
    #[inline]
    pub(crate) fn new() -> Self {
        Self { owned: stripes(), pooled: stripes() }
    }

    #[inline(always)]
    pub(crate) fn add(&self, event: Event, sharing: Sharing) {
        if sharing == Sharing::PRIVATE
            && let Some(slot) = owned_slot()
        {
            let count = &self.owned[slot][event as usize];
            // Relaxed: see the module's Orderings; this thread is the
            // stripe's only writer, so the load and store lose nothing.
            count.store(count.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
            return;
        }
        // Relaxed: see the module's Orderings.
        self.pooled[stripe(POOLED)][event as usize].fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn total(&self, event: Event) -> u64 {
        self.owned
            .iter()
            .chain(&self.pooled)
            // Relaxed: see the module's Orderings.
            .map(|s| s[event as usize].load(Ordering::Relaxed))
            .fold(0u64, u64::wrapping_add)
    }
}

/// The stripe this thread owns, if it is one of the first [`OWNED`]
/// threads of its process; `None` without `std` (no thread numbers).
#[inline(always)]
fn owned_slot() -> Option<usize> {
    #[cfg(all(feature = "std", not(loom)))]
    {
        let slot = thread_slot();
        (slot < OWNED).then_some(slot)
    }
    #[cfg(not(all(feature = "std", not(loom))))]
    None
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
/// and never handed out again (numbers stop at 2^63 − 1, a pooled one,
/// rather than wrap), so the first threads get different stripes whatever
/// their stack addresses, and own them (see the module docs).
#[cfg(all(feature = "std", not(loom)))]
#[inline(always)]
fn thread_slot() -> usize {
    use core::cell::Cell;

    std::thread_local! {
        static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    let n = SLOT.get();
    if n != usize::MAX {
        return n;
    }
    first_slot(&SLOT)
}

/// Hands this thread its number, on its first call.
#[cfg(all(feature = "std", not(loom)))]
#[cold]
#[inline(never)]
fn first_slot(slot: &'static std::thread::LocalKey<core::cell::Cell<usize>>) -> usize {
    use core::sync::atomic::AtomicUsize;

    static NEXT: AtomicUsize = AtomicUsize::new(0);
    // Relaxed: a ticket number; it orders nothing.
    let n = NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed).min(usize::MAX >> 1);
    slot.set(n);
    n
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
    pub(crate) fn of(c: &Counters) -> Self {
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
