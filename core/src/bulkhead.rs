//! The bulkhead: a cap on the calls in flight to one dependency, kept by one
//! atomic word moved by compare-and-swap.
//!
//! Unlike a `fetch_add` followed by a check and a `fetch_sub` on refusal
//! (which lets the counter exceed the cap for an instant, as Envoy's
//! resource counters may), the count only ever moves from `n` to `n + 1`
//! when `n < max`: it is never above `max`, not even briefly.
//!
//! # Representation
//! | bits | field |
//! | --- | --- |
//! | 63–32 | threads waiting for a slot (feature `std`) |
//! | 31–0 | calls in flight |
//!
//! Both halves live in one word so that a release learns whether anyone
//! waits from the very compare-and-swap that frees the slot: waiting costs
//! the non-waiting path nothing, not even a load.
//!
//! # Orderings
//! - Taking a slot is a CAS whose success is `Acquire`; giving one back is a
//!   CAS whose success is `AcqRel`. The `Acquire` of a take pairs with the
//!   `Release` of the release that freed the slot: whatever the previous
//!   holder did happens before the next holder starts, as with any
//!   semaphore. Loads that only decide whether to try a CAS are `Relaxed`:
//!   the CAS re-checks the value it acts on.
//! - Waiting (`bulkhead_wait.rs`): a waiter registers, starts listening, and
//!   then looks at the word again with a `Release` read-modify-write. The
//!   `Acquire` half of the release's CAS pairs with it: if that look saw no
//!   free slot, the release's CAS comes later in the word's modification
//!   order, sees the waiter count, and the listener registered before the
//!   look is visible to the notification sent after the CAS. No wake-up is
//!   lost, and nothing relies on `SeqCst`.
//! - The statistics (`acquired`, `rejected`, `peak`) order nothing and are
//!   `Relaxed`.

use core::fmt;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// A lock-free cap on concurrent calls.
///
/// [`try_acquire`](Self::try_acquire) never waits: it returns a
/// [`BulkheadPermit`] that frees its slot when dropped, or [`BulkheadFull`].
/// With feature `std`, [`acquire_timeout`](Self::acquire_timeout) waits
/// (parked, not spinning) until a slot is freed or the time is up. Callers
/// that cannot hold a Rust guard (a C ABI) use
/// [`try_acquire_raw`](Self::try_acquire_raw) and
/// [`release_raw`](Self::release_raw).
///
/// A `max` of 0 refuses every call: a kill switch.
///
/// # Examples
/// ```
/// use tripwire::{Bulkhead, BulkheadFull};
///
/// let orders = Bulkhead::new(2);
/// let a = orders.try_acquire()?;
/// let b = orders.try_acquire()?;
/// assert_eq!(orders.try_acquire().unwrap_err(), BulkheadFull { max: 2 });
/// drop(a);
/// let _c = orders.try_acquire()?;
/// assert_eq!(orders.snapshot().peak_in_flight, 2);
/// # drop(b);
/// # Ok::<(), BulkheadFull>(())
/// ```
///
/// # Size and alignment
/// `#[repr(C)]`, aligned to a cache-line pair (128 bytes on x86-64) so that
/// the in-flight counter has a line of its own. Without feature `std` it is
/// plain atomics, with no pointer, and may live in memory shared between
/// processes. With `std` it also holds the process-local list of waiting
/// threads (one pointer, allocated by the first thread that waits), so a
/// bulkhead shared between processes must be built without `std` waiting
/// (or be reached through the raw calls of a per-process one).
#[repr(C)]
#[derive(Debug)]
pub struct Bulkhead {
    /// Waiters and calls in flight (see the module's Representation).
    word: CachePadded<AtomicU64>,
    max: u32,
    peak: AtomicU32,
    acquired: AtomicU64,
    rejected: AtomicU64,
    /// Wakes a waiting thread when a slot is freed.
    #[cfg(feature = "std")]
    pub(crate) released: event_listener::Event,
}

/// A bulkhead refused a call: `max` calls were already in flight (and, for
/// a waiting acquire, none finished in time).
///
/// # Examples
/// ```
/// use tripwire::{Bulkhead, BulkheadFull};
/// let err = Bulkhead::new(0).try_acquire().unwrap_err();
/// assert_eq!(err, BulkheadFull { max: 0 });
/// assert_eq!(err.to_string(), "bulkhead full: 0 calls already in flight");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BulkheadFull {
    /// The bulkhead's cap.
    pub max: u32,
}

impl fmt::Display for BulkheadFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bulkhead full: {} calls already in flight", self.max)
    }
}

impl core::error::Error for BulkheadFull {}

/// A bulkhead's counters at one moment (each read separately).
///
/// # Examples
/// ```
/// use tripwire::bulkhead::BulkheadSnapshot;
/// use tripwire::Bulkhead;
/// let bulkhead = Bulkhead::new(1);
/// let _held = bulkhead.try_acquire()?;
/// let _ = bulkhead.try_acquire();
/// let want = BulkheadSnapshot { acquired: 1, rejected: 1, in_flight: 1, peak_in_flight: 1 };
/// assert_eq!(bulkhead.snapshot(), want);
/// # Ok::<(), tripwire::BulkheadFull>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BulkheadSnapshot {
    /// Slots handed out since the bulkhead was made.
    pub acquired: u64,
    /// Calls refused (a waiting acquire that timed out counts once).
    pub rejected: u64,
    /// Calls in flight now.
    pub in_flight: u32,
    /// The most calls ever in flight at once.
    pub peak_in_flight: u32,
}

macro_rules! bulkhead_new {
    ($max:expr) => {
        Bulkhead {
            word: CachePadded::new(AtomicU64::new(0)),
            max: $max,
            peak: AtomicU32::new(0),
            acquired: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            #[cfg(feature = "std")]
            released: event_listener::Event::new(),
        }
    };
}

impl Bulkhead {
    /// A bulkhead that lets at most `max` calls be in flight at once.
    #[cfg(not(loom))]
    pub const fn new(max: u32) -> Self {
        bulkhead_new!(max)
    }

    /// A bulkhead that lets at most `max` calls be in flight at once.
    #[cfg(loom)]
    pub fn new(max: u32) -> Self {
        bulkhead_new!(max)
    }

    /// The cap on calls in flight.
    pub fn max(&self) -> u32 {
        self.max
    }

    /// Calls in flight now.
    pub fn in_flight(&self) -> u32 {
        // Relaxed: a report, ordering nothing else.
        in_flight(self.word.load(Ordering::Relaxed))
    }

    /// The counters at this moment.
    pub fn snapshot(&self) -> BulkheadSnapshot {
        // Relaxed: statistics (see the module's Orderings).
        BulkheadSnapshot {
            acquired: self.acquired.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            in_flight: in_flight(self.word.load(Ordering::Relaxed)),
            peak_in_flight: self.peak.load(Ordering::Relaxed),
        }
    }

    /// Takes a slot if one is free, without waiting; the permit frees it
    /// when dropped.
    #[inline]
    pub fn try_acquire(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        if self.try_acquire_raw() { Ok(BulkheadPermit { bulkhead: self }) } else { Err(self.full()) }
    }

    /// Takes a slot if one is free and says whether it did. The caller must
    /// call [`release_raw`](Self::release_raw) exactly once for each `true`
    /// (see there for what holds when it does not).
    #[inline]
    pub fn try_acquire_raw(&self) -> bool {
        if self.take() {
            return true;
        }
        self.refused();
        false
    }

    /// Takes a slot if one is free, as [`try_acquire_raw`](Self::try_acquire_raw)
    /// does, but counts no refusal when none is: for a caller that waits
    /// next (with [`acquire_timeout`](Self::acquire_timeout) or, with
    /// feature `async`, `acquire_async`) and is refused, if at all,
    /// when that wait ends, which counts the refusal once. A binding that
    /// must not wait while it holds a lock of its own (Python's interpreter
    /// lock) takes a free slot with this first, and lets go of its lock
    /// only to wait. Release each `true` with [`release_raw`](Self::release_raw).
    ///
    /// # Examples
    /// ```
    /// use tripwire::Bulkhead;
    ///
    /// let bulkhead = Bulkhead::new(1);
    /// assert!(bulkhead.try_acquire_raw_before_wait());
    /// assert!(!bulkhead.try_acquire_raw_before_wait());
    /// assert_eq!(bulkhead.snapshot().rejected, 0, "a caller about to wait is not refused yet");
    /// assert!(bulkhead.release_raw());
    /// ```
    #[inline]
    pub fn try_acquire_raw_before_wait(&self) -> bool {
        self.take()
    }

    /// Frees a slot taken by [`try_acquire_raw`](Self::try_acquire_raw) and
    /// wakes a waiting thread if there is one.
    ///
    /// A slot has no owner: the bulkhead counts calls in flight and cannot
    /// tell whose slot a release gives back. Whatever the caller does, it
    /// promises:
    /// - the count never goes below zero: a release when no call is in
    ///   flight changes nothing and returns `false`;
    /// - a release that returns `true` frees exactly one slot, so the
    ///   releases that return `true` never outnumber the slots taken (by any
    ///   acquire: raw, guarded or waiting), and the count is always their
    ///   difference, never above `max`.
    ///
    /// The count is only as true as the caller's pairing. With one release
    /// per acquire, made after it, the count is exact and every release
    /// returns `true`. A release without an acquire of its own, made while
    /// other calls are in flight, frees one of *their* slots: one call more
    /// than `max` may then be admitted while they run (one more per such
    /// release), and the release of the slot's holder later returns `false`. A `false` therefore says that
    /// the pairing is broken somewhere, not necessarily at this call.
    /// [`BulkheadPermit`] releases exactly once by construction.
    ///
    /// # Examples
    /// ```
    /// use tripwire::Bulkhead;
    ///
    /// let bulkhead = Bulkhead::new(1);
    /// assert!(!bulkhead.release_raw(), "nothing to release");
    /// assert!(bulkhead.try_acquire_raw());
    /// assert!(bulkhead.release_raw());
    /// assert!(!bulkhead.release_raw(), "released once already");
    /// assert_eq!(bulkhead.in_flight(), 0);
    /// ```
    #[inline]
    pub fn release_raw(&self) -> bool {
        // Relaxed: only decides whether to try; the CAS re-checks.
        let mut w = self.word.load(Ordering::Relaxed);
        loop {
            // Is any call in flight to release?
            if in_flight(w) == 0 {
                return false;
            }
            // AcqRel: Release pairs with the Acquire CAS of the next holder;
            // Acquire pairs with a waiter's Release look (see the module's
            // Orderings). Relaxed on failure: the next CAS re-checks.
            match self.word.compare_exchange_weak(w, w - 1, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => break,
                Err(actual) => w = actual,
            }
        }
        // Does anyone wait for the slot just freed?
        #[cfg(feature = "std")]
        if w >= WAITER {
            use event_listener::IntoNotification;
            // `additional`: each freed slot wakes one more waiter, even if
            // an earlier one has not woken up yet.
            self.released.notify(1.additional());
        }
        true
    }

    /// The CAS loop that takes a slot: `true` with the slot taken, or
    /// `false` having changed nothing.
    #[inline]
    pub(crate) fn take(&self) -> bool {
        // Relaxed: only decides whether to try; the CAS re-checks.
        let mut w = self.word.load(Ordering::Relaxed);
        loop {
            // Is a slot free?
            if in_flight(w) >= self.max {
                return false;
            }
            let next = w + 1;
            // Acquire pairs with the Release CAS of the release that freed
            // the slot. Relaxed on failure: the next CAS re-checks.
            match self.word.compare_exchange_weak(w, next, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => break,
                Err(actual) => w = actual,
            }
        }
        // Relaxed: statistics (see the module's Orderings). The load spares
        // the shared line a write on every call once the peak is reached.
        self.acquired.fetch_add(1, Ordering::Relaxed);
        let n = in_flight(w) + 1;
        if self.peak.load(Ordering::Relaxed) < n {
            self.peak.fetch_max(n, Ordering::Relaxed);
        }
        true
    }

    /// A waiter's step on the word: takes a slot if one is free, adding
    /// `on_take` to the waiter count, else adds `on_full` (both multiples
    /// of [`WAITER`], wrapping, so `MINUS_WAITER` removes one). Always
    /// writes, even when nothing changes: this is the waiter's `Release`
    /// look of the handshake (see the module's Orderings).
    #[cfg(feature = "std")]
    pub(crate) fn look(&self, on_take: u64, on_full: u64) -> bool {
        // Relaxed: the CAS re-checks.
        let mut w = self.word.load(Ordering::Relaxed);
        loop {
            // Is a slot free? Then take it in the same step.
            let took = in_flight(w) < self.max;
            let next = if took { w.wrapping_add(on_take) + 1 } else { w.wrapping_add(on_full) };
            // AcqRel: Release pairs with the Acquire half of the next
            // release's CAS; Acquire with the Release of the slot's last
            // release, when it takes the slot. Relaxed on failure: the next
            // CAS re-checks.
            match self.word.compare_exchange_weak(w, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) if took => {
                    // Relaxed: statistics (see the module's Orderings).
                    self.acquired.fetch_add(1, Ordering::Relaxed);
                    self.peak.fetch_max(in_flight(next), Ordering::Relaxed);
                    return true;
                }
                Ok(_) => return false,
                Err(actual) => w = actual,
            }
        }
    }

    #[cold]
    pub(crate) fn refused(&self) {
        // Relaxed: statistics (see the module's Orderings).
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn full(&self) -> BulkheadFull {
        BulkheadFull { max: self.max }
    }
}

/// One waiter in the word's high half.
#[cfg(feature = "std")]
pub(crate) const WAITER: u64 = 1 << 32;
/// Minus one waiter, added with wrapping.
#[cfg(feature = "std")]
pub(crate) const MINUS_WAITER: u64 = WAITER.wrapping_neg();

/// Calls in flight, from the word.
#[inline]
fn in_flight(w: u64) -> u32 {
    w as u32
}

/// A slot in a [`Bulkhead`], freed when dropped.
///
/// # Examples
/// ```
/// use tripwire::Bulkhead;
///
/// let bulkhead = Bulkhead::new(1);
/// {
///     let _permit = bulkhead.try_acquire().expect("a free slot");
///     assert_eq!(bulkhead.in_flight(), 1);
/// }
/// assert_eq!(bulkhead.in_flight(), 0);
/// ```
#[must_use = "dropping a permit at once frees its slot"]
#[derive(Debug)]
pub struct BulkheadPermit<'a> {
    bulkhead: &'a Bulkhead,
}

impl BulkheadPermit<'_> {
    /// The bulkhead the slot belongs to.
    pub fn bulkhead(&self) -> &Bulkhead {
        self.bulkhead
    }

    /// Wraps a slot already taken with `take`.
    #[cfg(feature = "std")]
    pub(crate) fn taken(bulkhead: &Bulkhead) -> BulkheadPermit<'_> {
        BulkheadPermit { bulkhead }
    }
}

impl Drop for BulkheadPermit<'_> {
    fn drop(&mut self) {
        self.bulkhead.release_raw();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_hands_out_more_than_max() {
        let b = Bulkhead::new(3);
        let permits: [_; 3] = core::array::from_fn(|_| b.try_acquire().unwrap());
        assert!(b.try_acquire().is_err());
        assert!(!b.try_acquire_raw());
        drop(permits);
        assert_eq!(
            b.snapshot(),
            BulkheadSnapshot { acquired: 3, rejected: 2, in_flight: 0, peak_in_flight: 3 }
        );
    }

    #[test]
    fn release_never_underflows() {
        let b = Bulkhead::new(1);
        assert!(!b.release_raw());
        assert!(b.try_acquire_raw());
        assert!(b.release_raw());
        assert!(!b.release_raw());
        assert_eq!(b.in_flight(), 0);
    }

    #[test]
    fn zero_refuses_everything() {
        let b = Bulkhead::new(0);
        assert_eq!(b.try_acquire().unwrap_err(), BulkheadFull { max: 0 });
        assert_eq!(std::format!("{}", b.full()), "bulkhead full: 0 calls already in flight");
    }

    #[test]
    fn a_full_u32_bulkhead_does_not_overflow() {
        let b = Bulkhead::new(u32::MAX);
        b.word.store(u64::from(u32::MAX - 1), Ordering::Relaxed);
        assert!(b.try_acquire_raw());
        assert!(!b.try_acquire_raw());
        assert_eq!(b.snapshot().peak_in_flight, u32::MAX);
    }
}
