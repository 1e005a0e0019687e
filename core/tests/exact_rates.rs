//! Rates are compared in integers: a rate of k/n, configured as the
//! nearest `f64` to k/n, trips a window of n calls at exactly k failures
//! (or slow calls), never one late, never one early.
// Single-threaded properties of safe code: miri, which runs the tests that
// reach `unsafe` code or race threads, has nothing to find here that the
// native run does not.
#![cfg(not(miri))]

use core::time::Duration;

use tripwire::{Breaker, BreakerConfig, ManualClock, Outcome, State};

const SLOW: Duration = Duration::from_micros(10);

/// Which rate a test sets.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Failure,
    Slow,
}

/// A count window of `n` calls that needs all of them, with `rate` as the
/// only condition.
fn breaker(kind: Kind, n: u32, rate: f64) -> Breaker {
    let b = BreakerConfig::builder().count_window(n).min_calls(n).failure_threshold(0);
    let b = match kind {
        Kind::Failure => b.failure_rate(rate),
        Kind::Slow => b.slow_call(SLOW).slow_rate(rate),
    };
    Breaker::new(b.build().unwrap_or_else(|e| panic!("{kind:?} rate {rate}, window {n}: {e}")))
}

/// Records `good` calls that count toward nothing, then `bad` failures (or
/// slow successes); the number of bad ones recorded when the breaker
/// tripped, if it did.
fn tripped_at(b: &Breaker, kind: Kind, good: u32, bad: u32) -> Option<u32> {
    let clock = ManualClock::new(1_000_000);
    let call = |bad: bool| {
        let t = b.try_acquire(&clock).expect("closed until it trips");
        let outcome = match (kind, bad) {
            (Kind::Failure, true) => Outcome::Failure,
            (Kind::Slow, true) => {
                clock.advance(SLOW);
                Outcome::Success
            }
            (_, false) => Outcome::Success,
        };
        b.record(t, outcome, &clock).is_some()
    };
    for _ in 0..good {
        assert!(!call(false), "a success never trips");
    }
    (1..=bad).find(|_| call(true))
}

/// Every k/n with n up to 60 (1,830 pairs), both rates: n − k good calls
/// then k bad ones trip at the k-th; n − k + 1 good ones then k − 1 bad ones
/// fill the window without tripping.
#[test]
fn every_rate_k_of_n_trips_at_exactly_k_of_n() {
    let n_max = 60;
    for kind in [Kind::Failure, Kind::Slow] {
        let mut late = vec![];
        for n in 1..=n_max {
            for k in 1..=n {
                let rate = f64::from(k) / f64::from(n);
                let at = tripped_at(&breaker(kind, n, rate), kind, n - k, k);
                if at != Some(k) {
                    late.push((k, n, at));
                }
                let short = breaker(kind, n, rate);
                assert_eq!(tripped_at(&short, kind, n - k + 1, k - 1), None, "{kind:?} {k}/{n} one short");
                assert_eq!(short.state(), State::Closed);
            }
        }
        assert!(late.is_empty(), "{kind:?}: (k, n, tripped at) {late:?}");
    }
}

/// The cases the review found, as decimals: 0.28 at 7 of 25, 0.14 at 7 of
/// 50, 0.55 at 55 of 100.
#[test]
fn decimal_rates_trip_at_their_exact_count() {
    for kind in [Kind::Failure, Kind::Slow] {
        for (rate, k, n) in [
            (0.28, 7, 25),
            (0.14, 7, 50),
            (0.55, 55, 100),
            (0.3, 3, 10),
            (0.001, 1, 1_000),
            (0.999, 999, 1_000),
        ] {
            assert_eq!(
                tripped_at(&breaker(kind, n, rate), kind, n - k, k),
                Some(k),
                "{kind:?} {rate} of {n}"
            );
            let short = breaker(kind, n, rate);
            assert_eq!(tripped_at(&short, kind, n - k + 1, k - 1), None, "{kind:?} {rate} of {n}, one short");
        }
    }
}

/// The configured rate reads back as given, and the smallest and largest
/// rates keep their meaning: any failure at all, every call failed.
#[test]
fn rates_read_back_as_given_and_the_extremes_keep_their_meaning() {
    for rate in [0.28, 1.0 / 3.0, 0.123_456_789, 1e-300, 1.0] {
        let c = BreakerConfig::builder().failure_rate(rate).slow_call(SLOW).slow_rate(rate).build().unwrap();
        assert_eq!((c.failure_rate(), c.slow_rate()), (rate, rate));
    }
    let tiny = breaker(Kind::Failure, 50, 1e-300);
    assert_eq!(tripped_at(&tiny, Kind::Failure, 49, 1), Some(1), "one failure of 50 reaches 1e-300");
    assert_eq!(tripped_at(&breaker(Kind::Failure, 50, 1e-300), Kind::Failure, 50, 0), None, "none does not");
    assert_eq!(tripped_at(&breaker(Kind::Failure, 50, 1.0), Kind::Failure, 1, 49), None);
    assert_eq!(tripped_at(&breaker(Kind::Failure, 50, 1.0), Kind::Failure, 0, 50), Some(50));
}
