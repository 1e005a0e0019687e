//! loom models of the breaker's CAS protocols. Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p tripwire --release --test loom_breaker`.
#![cfg(loom)]

use core::time::Duration;

use loom::sync::Arc;
use loom::thread;
use tripwire::{Breaker, BreakerConfig, FixedClock, ManualClock, Outcome, State};

const COOL_DOWN: Duration = Duration::from_micros(1);

fn breaker(threshold: u32, half_open_max: u32) -> Breaker {
    Breaker::new(
        BreakerConfig::builder()
            .failure_threshold(threshold)
            .open_timeout(COOL_DOWN)
            .half_open_max(half_open_max)
            .half_open_successes(1)
            .build()
            .unwrap(),
    )
}

/// Trips `b` (threshold 1) at `at`, then lets the cool-down pass.
fn trip_and_cool(b: &Breaker, at: u64) -> u64 {
    let t = b.try_acquire(&FixedClock(at)).unwrap();
    assert!(b.record(t, Outcome::Failure, &FixedClock(at)).is_some());
    at + COOL_DOWN.as_nanos() as u64
}

#[test]
fn two_threads_tripping_at_once_exactly_one_reports_it() {
    loom::model(|| {
        let b = Arc::new(breaker(2, 1));
        let clock = FixedClock(10_000);
        let tickets = [b.try_acquire(&clock).unwrap(), b.try_acquire(&clock).unwrap()];
        let handles: Vec<_> = tickets
            .into_iter()
            .map(|t| {
                let b = b.clone();
                thread::spawn(move || b.record(t, Outcome::Failure, &FixedClock(10_000)))
            })
            .collect();
        let reports: Vec<_> = handles.into_iter().filter_map(|h| h.join().unwrap()).collect();
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert_eq!((reports[0].from, reports[0].to), (State::Closed, State::Open));
        assert_eq!(b.state(), State::Open);
        assert_eq!(b.snapshot().transitions, 1);
    });
}

#[test]
fn an_observer_of_open_sees_the_time_it_opened() {
    loom::model(|| {
        let b = Arc::new(breaker(1, 1));
        let at = 50_000;
        let t = b.try_acquire(&FixedClock(at)).unwrap();
        let tripper = {
            let b = b.clone();
            thread::spawn(move || b.record(t, Outcome::Failure, &FixedClock(at)))
        };
        // Either still Closed, or Open with the whole cool-down left: never
        // an Open read with a stale opening time (which would admit a probe).
        match b.try_acquire(&FixedClock(at)) {
            Ok(ticket) => assert!(!ticket.is_probe()),
            Err(r) => assert_eq!(r.retry_after, Some(COOL_DOWN)),
        }
        assert!(tripper.join().unwrap().is_some());
    });
}

#[test]
fn concurrent_probes_never_exceed_half_open_max() {
    loom::model(|| {
        let b = Arc::new(breaker(1, 2));
        let after = trip_and_cool(&b, 10_000);
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || b.try_acquire(&FixedClock(after)).ok())
            })
            .collect();
        let probes: Vec<_> = handles.into_iter().filter_map(|h| h.join().unwrap()).collect();
        assert_eq!(probes.len(), 2, "exactly half_open_max probes admitted");
        assert!(probes.iter().all(|t| t.is_probe() && t.generation() == probes[0].generation()));
        assert_eq!(probes.iter().filter(|t| t.transition().is_some()).count(), 1);
        assert_eq!(b.state(), State::HalfOpen);
    });
}

#[test]
fn a_late_failure_from_an_older_generation_never_reopens() {
    loom::model(|| {
        let b = Arc::new(breaker(1, 1));
        let late = b.try_acquire(&FixedClock(10_000)).unwrap();
        let after = trip_and_cool(&b, 10_000);
        let probe = b.try_acquire(&FixedClock(after)).unwrap();
        let closer = {
            let b = b.clone();
            thread::spawn(move || b.record(probe, Outcome::Success, &FixedClock(after)))
        };
        let late_report = b.record(late, Outcome::Failure, &FixedClock(after));
        let closed = closer.join().unwrap().expect("the probe closes the breaker");
        assert_eq!(late_report, None);
        assert_eq!((closed.from, closed.to), (State::HalfOpen, State::Closed));
        assert_eq!(b.state(), State::Closed);
    });
}

#[test]
fn a_lost_probe_is_taken_over_once_after_the_cool_down() {
    loom::model(|| {
        let clock = Arc::new(ManualClock::new(10_000));
        let b = Arc::new(breaker(1, 1));
        let after = trip_and_cool(&b, 10_000);
        clock.set(after);
        let lost = b.try_acquire(&*clock).unwrap();
        assert!(lost.is_probe());
        clock.advance(COOL_DOWN);
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (b, clock) = (b.clone(), clock.clone());
                thread::spawn(move || b.try_acquire(&*clock).ok())
            })
            .collect();
        let taken: Vec<_> = handles.into_iter().filter_map(|h| h.join().unwrap()).collect();
        assert_eq!(taken.len(), 1, "one new probe, not two");
        let probe = taken[0];
        assert_eq!(probe.generation(), lost.generation().wrapping_add(1));
        assert_eq!(probe.transition().map(|t| (t.from, t.to)), Some((State::HalfOpen, State::HalfOpen)));
        // The lost probe's outcome, arriving at last, changes nothing.
        assert_eq!(b.record(lost, Outcome::Success, &*clock), None);
        assert_eq!(b.state(), State::HalfOpen);
        assert!(b.record(probe, Outcome::Success, &*clock).is_some());
        assert_eq!(b.state(), State::Closed);
    });
}

#[test]
fn ignored_probe_frees_its_slot_for_a_concurrent_caller() {
    loom::model(|| {
        let b = Arc::new(breaker(1, 1));
        let after = trip_and_cool(&b, 10_000);
        let probe = b.try_acquire(&FixedClock(after)).unwrap();
        let releaser = {
            let b = b.clone();
            thread::spawn(move || b.record(probe, Outcome::Ignored, &FixedClock(after)))
        };
        let second = b.try_acquire(&FixedClock(after));
        assert_eq!(releaser.join().unwrap(), None);
        // Before the release the slot is taken; after it, free. Either way
        // no more than one probe is in flight and the breaker stays Half-Open.
        if let Ok(t) = second {
            assert!(t.is_probe());
            assert_eq!(t.generation(), probe.generation());
        }
        assert_eq!(b.state(), State::HalfOpen);
        assert!(b.try_acquire(&FixedClock(after)).is_err() || second.is_err());
    });
}

#[test]
fn window_rotation_loses_no_count() {
    loom::model(|| {
        // Two 1 ms buckets: epochs 10 and 12 share a bucket, so recording at
        // 12 rotates it while a record at 10 may still be under way.
        let b = Arc::new(Breaker::new(
            BreakerConfig::builder()
                .failure_threshold(0)
                .window(2, Duration::from_millis(1))
                .min_calls(2)
                .failure_rate(0.6)
                .build()
                .unwrap(),
        ));
        let clock = FixedClock(0);
        let t =
            [b.try_acquire(&clock).unwrap(), b.try_acquire(&clock).unwrap(), b.try_acquire(&clock).unwrap()];
        let at = |ms: u64| FixedClock(ms * 1_000_000);
        let late = {
            let b = b.clone();
            thread::spawn(move || b.record(t[0], Outcome::Success, &at(10)))
        };
        let other = {
            let b = b.clone();
            thread::spawn(move || b.record(t[1], Outcome::Failure, &at(12)))
        };
        let mine = b.record(t[2], Outcome::Failure, &at(12));
        let reports = [late.join().unwrap(), other.join().unwrap(), mine];
        // At epoch 12 the window holds both failures and perhaps the late
        // success: a rate of 1 or 2/3, either way a trip, reported once. A
        // lost failure would leave 1/2 or 1/1 below min_calls: no trip.
        assert_eq!(reports.iter().flatten().count(), 1, "{reports:?}");
        assert_eq!(b.state(), State::Open);
    });
}
