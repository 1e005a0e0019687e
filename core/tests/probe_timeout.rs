//! A probe that runs longer than the cool-down keeps its slot: only the
//! probe timeout, a setting of its own, lets a new probe take over.

use core::time::Duration;

use tripwire::{Breaker, BreakerConfig, Outcome, State, breaker::DEFAULT_PROBE_TIMEOUT, clock::FixedClock};

const SEC: u64 = 1_000_000_000;

/// Tripped by one failure at 0, with a 1 s cool-down and one probe at a time.
fn tripped(probe_timeout: Option<Duration>) -> Breaker {
    let mut config =
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_secs(1)).half_open_max(1);
    if let Some(d) = probe_timeout {
        config = config.probe_timeout(d);
    }
    let b = Breaker::new(config.build().unwrap());
    let t = b.try_acquire(&FixedClock(0)).unwrap();
    b.record(t, Outcome::Failure, &FixedClock(0));
    b
}

#[test]
fn a_probe_held_past_the_cool_down_keeps_its_slot_and_its_success_closes_the_breaker() {
    let b = tripped(None);
    let probe = b.try_acquire(&FixedClock(SEC)).expect("the cool-down has passed");
    assert!(probe.is_probe());
    // 1.1 s into the probe: past the cool-down, far from the probe timeout.
    let at = FixedClock(SEC + SEC * 11 / 10);
    let second = b.try_acquire(&at).expect_err("the first probe is still running");
    assert_eq!(second.state, State::HalfOpen);
    let left = second.retry_after.unwrap();
    assert_eq!(left, DEFAULT_PROBE_TIMEOUT - Duration::from_millis(1100), "the probe timeout's end");
    let closed = b.record(probe, Outcome::Success, &at).expect("the probe's success still counts");
    assert_eq!((closed.from, closed.to), (State::HalfOpen, State::Closed));
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn a_probe_nobody_records_is_taken_over_once_the_probe_timeout_has_passed() {
    let b = tripped(Some(Duration::from_secs(5)));
    let lost = b.try_acquire(&FixedClock(SEC)).unwrap();
    assert!(b.try_acquire(&FixedClock(6 * SEC - 1)).is_err(), "1 ns before the probe timeout");
    let taker = b.try_acquire(&FixedClock(6 * SEC)).expect("the probe counts as lost");
    assert!(taker.is_probe());
    assert!(taker.generation() != lost.generation(), "a new generation took over");
    // The lost probe's late success is counted and changes nothing.
    assert_eq!(b.record(lost, Outcome::Success, &FixedClock(6 * SEC)), None);
    assert_eq!(b.state(), State::HalfOpen);
    assert!(b.record(taker, Outcome::Success, &FixedClock(6 * SEC)).is_some());
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn the_probe_timeout_is_checked_like_every_duration() {
    let err = BreakerConfig::builder().probe_timeout(Duration::ZERO).build().unwrap_err();
    assert_eq!(err.to_string(), "invalid breaker config: probe_timeout = 0ns, expected 1µs to 604800s");
    let err = BreakerConfig::builder().probe_timeout(Duration::from_secs(8 * 24 * 3600)).build().unwrap_err();
    assert_eq!(err.field(), "probe_timeout");
    assert_eq!(BreakerConfig::default().probe_timeout(), DEFAULT_PROBE_TIMEOUT);
}
