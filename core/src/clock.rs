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
//! | [`CachedClock`] (std) | `CLOCK_MONOTONIC` published by an upkeep thread every period (1 ms) | one load, at most a period plus scheduling delay old | same |
//! | [`ManualClock`] | an atomic the caller advances | one load | per instance |
//! | [`FixedClock`] | a timestamp the caller already has (e.g. from the TSC) | free | as the caller makes it |

use core::time::Duration;

use crate::sync::{AtomicU64, Ordering};

#[cfg(feature = "std")]
pub use crate::layers::clock::{CachedClock, CoarseClock, MonotonicClock, Upkeep, UpkeepError};

/// A duration as the core's `u64` nanoseconds, saturating at `u64::MAX`
/// (584 years): how every config, clock and binding here turns a
/// [`Duration`] into the core's time.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::clock::duration_ns;
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
/// use tripwire::clock::FixedClock;
/// use tripwire::Clock;
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

#[cfg(test)]
mod tests {
    use super::*;

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
