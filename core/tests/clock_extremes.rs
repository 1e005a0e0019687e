//! Clocks at their extremes: 0, `u64::MAX`, a timestamp from the future,
//! a clock that goes backwards. No reading wedges the breaker, and `reset`
//! forgets every time it was stamped with.

use core::time::Duration;

use tripwire::{Breaker, BreakerConfig, ManualClock, Outcome, State, clock::FixedClock};

const COOL_DOWN: Duration = Duration::from_secs(1);
const COOL_NS: u64 = 1_000_000_000;

fn breaker() -> Breaker {
    Breaker::new(BreakerConfig::builder().failure_threshold(1).open_timeout(COOL_DOWN).build().unwrap())
}

/// Trips `b` with one failure stamped at `at`.
fn trip_at(b: &Breaker, at: u64) {
    let t = b.try_acquire(&FixedClock(at)).expect("closed");
    let tripped = b.record(t, Outcome::Failure, &FixedClock(at)).expect("a trip");
    assert_eq!(tripped.to, State::Open);
}

#[test]
fn reset_forgets_an_opening_time_from_the_future() {
    for future in [u64::MAX, u64::MAX / 2, 1 << 60] {
        let b = breaker();
        trip_at(&b, future);
        b.reset();
        // A second trip, at an honest time, in a generation that uses the
        // same slot as the first one (generations 1 and 3).
        assert_eq!(b.generation(), 2);
        trip_at(&b, 1_000);
        assert_eq!(b.generation(), 3);
        let r = b.try_acquire(&FixedClock(1_000)).unwrap_err();
        assert_eq!(r.retry_after, Some(COOL_DOWN), "stamped at {future}");
        let probe = b.try_acquire(&FixedClock(1_000 + COOL_NS)).expect("the cool-down has passed");
        assert!(probe.is_probe());
    }
}

#[test]
fn a_stamp_from_the_future_never_wedges_the_breaker() {
    // One caller's clock was off by a day; everyone else's is right.
    let b = breaker();
    let day = 86_400 * COOL_NS;
    trip_at(&b, 5_000 + day);
    let honest = ManualClock::new(5_000);
    let probe = b.try_acquire(&honest).expect("an opening time beyond now + the cool-down counts as passed");
    assert!(probe.is_probe());
    // The probe's own stamp is honest: its failure re-opens for one cool-down.
    b.record(probe, Outcome::Failure, &honest);
    assert_eq!(b.try_acquire(&honest).unwrap_err().retry_after, Some(COOL_DOWN));
    honest.advance(COOL_DOWN);
    assert!(b.try_acquire(&honest).is_ok());
}

#[test]
fn a_clock_going_backwards_delays_by_at_most_its_step_or_not_at_all() {
    // Far back: the opening time lies beyond now + the cool-down.
    let b = breaker();
    trip_at(&b, 10 * COOL_NS);
    assert!(b.try_acquire(&FixedClock(COOL_NS)).unwrap().is_probe());
    // A little back (a caller whose clock lags): refused, with the lag added.
    let b = breaker();
    trip_at(&b, 10 * COOL_NS);
    let r = b.try_acquire(&FixedClock(10 * COOL_NS - 300)).unwrap_err();
    assert_eq!(r.retry_after, Some(COOL_DOWN + Duration::from_nanos(300)));
}

#[test]
fn clocks_at_zero_and_at_the_top_trip_and_recover() {
    for start in [0, u64::MAX - COOL_NS, u64::MAX - 1] {
        let clock = ManualClock::new(start);
        let b = breaker();
        let t = b.try_acquire(&clock).unwrap();
        b.record(t, Outcome::Failure, &clock);
        assert_eq!(b.try_acquire(&clock).unwrap_err().retry_after, Some(COOL_DOWN), "at {start}");
        b.reset();
        assert!(b.try_acquire(&clock).is_ok(), "at {start}");
    }
    // A cool-down that ends past u64::MAX ends when the clock gets there.
    let b = breaker();
    trip_at(&b, u64::MAX - 10);
    assert_eq!(
        b.try_acquire(&FixedClock(u64::MAX)).unwrap_err().retry_after,
        Some(COOL_DOWN - Duration::from_nanos(10))
    );
}
