//! The counters lose no event, however many threads share their stripes
//! (see `breaker/counters.rs`).

use std::sync::Barrier;
use std::thread;

use tripwire::{Breaker, BreakerConfig, Outcome, clock::FixedClock};

/// More threads than stripes, so that several threads count in each.
const THREADS: usize = 20;

fn rounds() -> u64 {
    if cfg!(miri) { 50 } else { 200_000 }
}

#[test]
fn threads_sharing_stripes_lose_no_count() {
    let breaker = Breaker::new(BreakerConfig::builder().failure_threshold(u16::MAX.into()).build().unwrap());
    let clock = FixedClock(1);
    let start = Barrier::new(THREADS);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                start.wait();
                for i in 0..rounds() {
                    let ticket = breaker.try_acquire(&clock).unwrap();
                    // A success, then now and then a failure or an ignored
                    // call, so that several counters of a stripe move at once.
                    let outcome = match i % 8 {
                        0 => Outcome::Ignored,
                        _ => Outcome::Success,
                    };
                    breaker.record(ticket, outcome, &clock);
                }
            });
        }
    });
    let s = breaker.snapshot();
    let n = THREADS as u64 * rounds();
    let ignored = THREADS as u64 * rounds().div_ceil(8);
    assert_eq!((s.successes, s.ignored), (n - ignored, ignored), "{s:?}");
}

#[test]
fn rejections_from_many_threads_are_each_counted() {
    let breaker = Breaker::new(BreakerConfig::default());
    breaker.force_open();
    let clock = FixedClock(1);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..rounds() {
                    assert!(breaker.try_acquire(&clock).is_err());
                }
            });
        }
    });
    assert_eq!(breaker.snapshot().rejected, THREADS as u64 * rounds());
}

/// A refusal while Open takes the inline path (a clock read, the word, the
/// deadline): each one is counted and told the same time left, from every
/// thread, at a clock of 0 and at the last nanosecond of the cool-down.
#[test]
fn refusals_while_open_are_each_counted_with_the_time_left() {
    use std::time::Duration;
    let cool_down = Duration::from_secs(30);
    let breaker =
        Breaker::new(BreakerConfig::builder().failure_threshold(1).open_timeout(cool_down).build().unwrap());
    let t = breaker.try_acquire(&FixedClock(0)).unwrap();
    breaker.record(t, Outcome::Failure, &FixedClock(0));
    let last = cool_down.as_nanos() as u64 - 1;
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for i in 0..rounds() {
                    let now = if i % 2 == 0 { 0 } else { last };
                    let refused = breaker.try_acquire(&FixedClock(now)).unwrap_err();
                    assert_eq!(
                        refused.retry_after,
                        Some(Duration::from_nanos(cool_down.as_nanos() as u64 - now))
                    );
                }
            });
        }
    });
    assert_eq!(breaker.snapshot().rejected, THREADS as u64 * rounds());
    // The cool-down over, the next caller is the probe, not a refusal.
    assert!(breaker.try_acquire(&FixedClock(last + 1)).unwrap().is_probe());
}
