//! Time as the core sees it: monotonic nanoseconds from a [`Clock`] the
//! caller chooses.
//!
//! The core never reads a clock on its own initiative; every operation that
//! may need the time takes a `&impl Clock` and calls [`Clock::now`] only when
//! the decision at hand needs it (an Open breaker, a rolling window, slow-call
//! measurement). A Closed breaker counting consecutive failures never reads
//! it on its success path.
//!
//! | clock | source | cost | across processes |
//! | --- | --- | --- | --- |
//! | [`MonotonicClock`] (std) | `CLOCK_MONOTONIC`, absolute ns | a vDSO call, ~20 ns | same value in every process on a host |
//! | [`CoarseClock`] (std) | `CLOCK_MONOTONIC_COARSE` (Linux) | a few ns, tick resolution (1–4 ms) | same |
//! | [`ManualClock`] | an atomic the caller advances | one load | per instance |
//! | [`FixedClock`] | a timestamp the caller already has (e.g. from the TSC) | free | as the caller makes it |

use core::time::Duration;

use crate::sync::{AtomicU64, Ordering};

/// A duration as the core's `u64` nanoseconds, saturating at `u64::MAX`
/// (584 years): how every config, clock and binding here turns a
/// [`Duration`] into the core's time.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::duration_ns;
/// assert_eq!(duration_ns(Duration::from_millis(3)), 3_000_000);
/// assert_eq!(duration_ns(Duration::MAX), u64::MAX);
/// ```
#[inline]
pub const fn duration_ns(d: Duration) -> u64 {
    let ns = d.as_nanos();
    if ns > u64::MAX as u128 { u64::MAX } else { ns as u64 }
}

/// Nanoseconds from a monotonic source. Only differences between two
/// readings of the same clock are meaningful.
pub trait Clock {
    /// The current time in nanoseconds. Must never go backwards.
    fn now(&self) -> u64;
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn now(&self) -> u64 {
        (**self).now()
    }
}

/// A timestamp the caller has already read, e.g. from its own TSC-based
/// clock: "now" is whatever it was given.
///
/// # Examples
/// ```
/// use tripwire::{Clock, FixedClock};
/// assert_eq!(FixedClock(42).now(), 42);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedClock(pub u64);

impl Clock for FixedClock {
    #[inline]
    fn now(&self) -> u64 {
        self.0
    }
}

/// A clock that only moves when told to: for tests and simulations.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::{Clock, ManualClock};
/// let clock = ManualClock::new(1_000);
/// clock.advance(Duration::from_micros(2));
/// assert_eq!(clock.now(), 3_000);
/// ```
#[derive(Debug)]
pub struct ManualClock {
    // Relaxed everywhere: the clock's value carries no other data with it;
    // tests that share it across threads synchronise through the breaker.
    nanos: AtomicU64,
}

impl ManualClock {
    /// A clock that reads `start_ns` until advanced.
    pub fn new(start_ns: u64) -> Self {
        Self { nanos: AtomicU64::new(start_ns) }
    }

    /// Moves the clock forward by `by` (saturating at `u64::MAX` ns).
    pub fn advance(&self, by: Duration) {
        let by = duration_ns(by);
        // Relaxed: see the field's comment.
        let _ = self.nanos.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| Some(n.saturating_add(by)));
    }

    /// Sets the clock to `now_ns` if that is not earlier than it reads now:
    /// a monotonic clock never goes back.
    pub fn set(&self, now_ns: u64) {
        // Relaxed: see the field's comment.
        self.nanos.fetch_max(now_ns, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now(&self) -> u64 {
        // Relaxed: see the field's comment.
        self.nanos.load(Ordering::Relaxed)
    }
}

#[cfg(feature = "std")]
mod os {
    use super::Clock;

    /// `CLOCK_MONOTONIC` in absolute nanoseconds: the same reading in every
    /// process on a host, which breakers shared between processes need.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct MonotonicClock;

    /// `CLOCK_MONOTONIC_COARSE` on Linux (tick resolution, usually 1–4 ms,
    /// several times cheaper to read); `CLOCK_MONOTONIC` elsewhere. Same
    /// epoch as [`MonotonicClock`], so the two may be mixed on one breaker.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct CoarseClock;

    #[inline]
    fn read(id: libc::clockid_t) -> u64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY:
        // - `ts` is a valid, writable `timespec` that outlives the call.
        // - `id` is one of the clock ids this module passes, which the
        //   platform supports (checked by the tests on every CI run).
        let rc = unsafe { libc::clock_gettime(id, &mut ts) };
        debug_assert_eq!(rc, 0, "clock_gettime({id}) failed");
        (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
    }

    impl Clock for MonotonicClock {
        #[inline]
        fn now(&self) -> u64 {
            read(libc::CLOCK_MONOTONIC)
        }
    }

    impl Clock for CoarseClock {
        #[inline]
        fn now(&self) -> u64 {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            let id = libc::CLOCK_MONOTONIC_COARSE;
            #[cfg(not(any(target_os = "linux", target_os = "android")))]
            let id = libc::CLOCK_MONOTONIC;
            read(id)
        }
    }
}

#[cfg(feature = "std")]
pub use os::{CoarseClock, MonotonicClock};

/// `at` as a reading of [`MonotonicClock`]: its reading now, moved by the
/// time from now to `at` (saturating), for executors whose callers give
/// deadlines as `Instant`s.
#[cfg(feature = "std")]
pub(crate) fn monotonic_at(at: std::time::Instant) -> u64 {
    let (now, clock) = (std::time::Instant::now(), MonotonicClock.now());
    match at.checked_duration_since(now) {
        Some(ahead) => clock.saturating_add(duration_ns(ahead)),
        None => clock.saturating_sub(duration_ns(now.duration_since(at))),
    }
}

/// The `Instant` at which [`MonotonicClock`] reads `ns`; `None` if it is
/// too far ahead to represent.
#[cfg(feature = "async")]
pub(crate) fn instant_at(ns: u64) -> Option<std::time::Instant> {
    let (now, clock) = (std::time::Instant::now(), MonotonicClock.now());
    match ns.checked_sub(clock) {
        Some(ahead) => now.checked_add(Duration::from_nanos(ahead)),
        None => Some(now.checked_sub(Duration::from_nanos(clock - ns)).unwrap_or(now)),
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clocks_move_forward_and_share_an_epoch() {
        let a = MonotonicClock.now();
        let c = CoarseClock.now();
        let b = MonotonicClock.now();
        assert!(b >= a);
        // The coarse clock lags by at most a few ticks, never by a different epoch.
        assert!(c.abs_diff(a) < 1_000_000_000, "coarse {c} vs fine {a}");
    }

    #[test]
    fn manual_clock_never_goes_back() {
        let clock = ManualClock::new(100);
        clock.set(50);
        assert_eq!(clock.now(), 100);
        clock.set(150);
        assert_eq!(clock.now(), 150);
        clock.advance(core::time::Duration::from_nanos(u64::MAX));
        assert_eq!(clock.now(), u64::MAX);
    }
}
