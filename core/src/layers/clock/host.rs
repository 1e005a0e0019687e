//! The host's clocks read on every call: `CLOCK_MONOTONIC` and its
//! coarse twin, and conversions between their readings and `Instant`s.

use crate::clock::{Clock, duration_ns};

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

/// `at` as a reading of [`MonotonicClock`]: its reading now, moved by the
/// time from now to `at` (saturating), for executors whose callers give
/// deadlines as `Instant`s.
pub(crate) fn monotonic_at(at: std::time::Instant) -> u64 {
    let (now, clock) = (std::time::Instant::now(), MonotonicClock.now());
    match at.checked_duration_since(now) {
        Some(ahead) => clock.saturating_add(duration_ns(ahead)),
        None => clock.saturating_sub(duration_ns(now.duration_since(at))),
    }
}

#[cfg(test)]
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
}
