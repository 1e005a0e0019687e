//! Tickets recorded more than once, late or forged: the Half-Open probe
//! bound and the successes that close the breaker hold whatever a caller
//! records.

use core::time::Duration;

use tripwire::{Breaker, BreakerConfig, Outcome, State, Ticket, clock::FixedClock};

const NOW: FixedClock = FixedClock(1_000);

/// A breaker tripped by one failure and past its cool-down.
fn half_open_ready(max: u32, successes: u32) -> Breaker {
    let b = Breaker::new(
        BreakerConfig::builder()
            .failure_threshold(1)
            .open_timeout(Duration::from_nanos(1_000))
            .half_open_max(max)
            .half_open_successes(successes)
            .build()
            .unwrap(),
    );
    let t = b.try_acquire(&FixedClock(0)).unwrap();
    b.record(t, Outcome::Failure, &FixedClock(0));
    b
}

#[test]
fn a_probe_ticket_recorded_twice_frees_one_slot() {
    let b = half_open_ready(1, 1);
    let first = b.try_acquire(&NOW).unwrap();
    assert!(first.is_probe());
    b.record(first, Outcome::Ignored, &NOW);
    let second = b.try_acquire(&NOW).expect("the ignored probe freed its slot");
    // The caller records the first ticket once more, by mistake.
    assert_eq!(b.record(first, Outcome::Ignored, &NOW), None);
    let third = b.try_acquire(&NOW);
    assert_eq!(third.unwrap_err().state, State::HalfOpen, "one probe in flight: the second");
    assert!(b.record(second, Outcome::Success, &NOW).is_some(), "the second probe still decides");
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn a_duplicate_probe_success_counts_once() {
    let b = half_open_ready(2, 2);
    let (p, q) = (b.try_acquire(&NOW).unwrap(), b.try_acquire(&NOW).unwrap());
    assert_eq!(b.record(p, Outcome::Success, &NOW), None);
    assert_eq!(b.record(p, Outcome::Success, &NOW), None, "the same probe, recorded again");
    assert_eq!(b.state(), State::HalfOpen, "one success so far, not two");
    assert!(b.record(q, Outcome::Success, &NOW).is_some());
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn a_duplicate_or_forged_failure_never_reopens_a_half_open_breaker() {
    let b = half_open_ready(2, 1);
    let p = b.try_acquire(&NOW).unwrap();
    b.record(p, Outcome::Ignored, &NOW);
    assert_eq!(b.record(p, Outcome::Failure, &NOW), None, "its slot was already freed");
    // A ticket of the current generation that is no probe at all.
    let forged = Ticket::from_raw(0, b.generation(), 0);
    assert_eq!(b.record(forged, Outcome::Failure, &NOW), None);
    assert_eq!(b.record(forged, Outcome::Success, &NOW), None);
    assert_eq!(b.state(), State::HalfOpen);
}
