//! loom models of the breaker's CAS protocols. Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p tripwire-breaker --release --target-dir target/loom --test loom_breaker`.
//!
//! Every model races for real (see `loom_support`) and fails when the
//! ordering or check it names under "Guards" is weakened;
//! `tests/mutants/run.sh` makes each of those weakenings and shows it.
#![cfg(loom)]

mod loom_support;

use core::time::Duration;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use loom_support::{model, spin_until};
use tripwire::{Breaker, BreakerConfig, ManualClock, Outcome, State, clock::FixedClock};

const COOL_DOWN: Duration = Duration::from_micros(1);
/// Longer than the cool-down, so that the models tell the two apart.
const PROBE_TIMEOUT: Duration = Duration::from_micros(2);

fn breaker(threshold: u32, half_open_max: u32) -> Breaker {
    Breaker::new(
        BreakerConfig::builder()
            .failure_threshold(threshold)
            .open_timeout(COOL_DOWN)
            .probe_timeout(PROBE_TIMEOUT)
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

/// Guards: the CAS in `apply` (as a plain store, both failures count from
/// the same word and neither, or both, trip).
#[test]
fn two_threads_tripping_at_once_exactly_one_reports_it() {
    model(["the first thread trips", "the second thread trips"], |sides| {
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
        let reports: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let trippers: Vec<_> = (0..2).filter(|&i| reports[i].is_some()).collect();
        assert_eq!(trippers.len(), 1, "{reports:?}");
        sides.saw(trippers[0]);
        let report = reports[trippers[0]].unwrap();
        assert_eq!((report.from, report.to), (State::Closed, State::Open));
        assert_eq!(b.state(), State::Open);
        assert_eq!(b.snapshot().transitions, 1);
    });
}

/// Guards: the Release of the CAS in `apply` that trips the breaker
/// (weakened, the observer may read the opening time's slot from before the
/// trip, see a cool-down long gone, and admit a probe at once).
///
/// The observer is a thread of its own: loom never hands a thread a value
/// it saw before it last yielded, so an observer that had seen the slot
/// (its creator) could not be shown the stale one.
#[test]
fn an_observer_of_open_sees_the_time_it_opened() {
    model(["the observer looked before the trip", "the observer found it open"], |sides| {
        let b = Arc::new(breaker(1, 1));
        let at = 50_000;
        let t = b.try_acquire(&FixedClock(at)).unwrap();
        let observer = {
            let b = b.clone();
            thread::spawn(move || {
                // A look racing the trip: still Closed, or Open with the
                // whole cool-down left.
                let first = b.try_acquire(&FixedClock(at));
                if let Ok(ticket) = first {
                    assert!(!ticket.is_probe());
                    // Wait for the trip to show. `state` is a Relaxed load:
                    // the look below takes its ordering from its own loads.
                    spin_until(|| b.state() != State::Closed);
                }
                // Never an Open read with a stale opening time, which would
                // admit a probe.
                match b.try_acquire(&FixedClock(at)) {
                    Ok(ticket) => panic!("admitted during the cool-down: {ticket:?}"),
                    Err(r) => assert_eq!(r.retry_after, Some(COOL_DOWN)),
                }
                first.is_err()
            })
        };
        assert!(b.record(t, Outcome::Failure, &FixedClock(at)).is_some());
        sides.saw(usize::from(observer.join().unwrap()));
    });
}

/// Guards: the Release half of the `AcqRel` CAS in `admit_from` that enters
/// Half-Open (weakened, a caller that finds the probe slot taken may read
/// the entry time's slot from two generations back and take over from a
/// probe that has only just begun). The observer is a thread of its own,
/// as in the model above.
#[test]
fn an_observer_of_half_open_sees_the_time_it_began() {
    model(["the observer looked before the probe", "the observer found the probe"], |sides| {
        let b = Arc::new(breaker(1, 1));
        let after = trip_and_cool(&b, 10_000);
        let observer = {
            let b = b.clone();
            thread::spawn(move || {
                // `state` is a Relaxed load: see the model above.
                let early = b.state() == State::Open;
                spin_until(|| b.state() == State::HalfOpen);
                match b.try_acquire(&FixedClock(after)) {
                    Ok(ticket) => panic!("took over from a probe that has just begun: {ticket:?}"),
                    Err(r) => assert_eq!(r.retry_after, Some(PROBE_TIMEOUT)),
                }
                !early
            })
        };
        let probe = b.try_acquire(&FixedClock(after)).unwrap();
        assert_eq!(probe.transition().map(|t| (t.from, t.to)), Some((State::Open, State::HalfOpen)));
        sides.saw(usize::from(observer.join().unwrap()));
    });
}

/// Guards: the check for a free probe slot in `state::admit`; the CAS in
/// `admit_from` that takes the slot (as a plain store, two callers take the
/// same slot); and the Acquire of the word's reload in `admit_from`
/// (weakened, a caller whose reload finds the Half-Open another one has just
/// entered may read its entry time's slot from before, and take over).
#[test]
fn concurrent_probes_never_exceed_half_open_max() {
    model(["this thread was refused", "a spawned thread was refused"], |sides| {
        let b = Arc::new(breaker(1, 2));
        let after = trip_and_cool(&b, 10_000);
        // Three callers for two slots: two threads and this one.
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || b.try_acquire(&FixedClock(after)).ok())
            })
            .collect();
        let mine = b.try_acquire(&FixedClock(after)).ok();
        sides.saw(usize::from(mine.is_some()));
        let probes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).chain([mine]).flatten().collect();
        assert_eq!(probes.len(), 2, "exactly half_open_max probes admitted");
        assert!(probes.iter().all(|t| t.is_probe() && t.generation() == probes[0].generation()));
        assert_eq!(probes.iter().filter(|t| t.transition().is_some()).count(), 1);
        assert_eq!(b.state(), State::HalfOpen);
    });
}

/// Two probes of one generation: one succeeds and closes the breaker, the
/// other fails. Whichever lands second comes from an older generation and
/// must change nothing; a failure that lands after the close must not
/// re-open it.
///
/// Guards: the generation check in `state::on_failure` (without it the late
/// failure trips the freshly closed breaker again).
#[test]
fn a_late_failure_from_an_older_generation_never_reopens() {
    model(["the close landed first", "the re-open landed first"], |sides| {
        let b = Arc::new(breaker(1, 2));
        let after = trip_and_cool(&b, 10_000);
        let closing = b.try_acquire(&FixedClock(after)).unwrap();
        let failing = b.try_acquire(&FixedClock(after)).unwrap();
        assert_eq!(closing.generation(), failing.generation());
        let closer = {
            let b = b.clone();
            thread::spawn(move || b.record(closing, Outcome::Success, &FixedClock(after)))
        };
        let reopened = b.record(failing, Outcome::Failure, &FixedClock(after));
        let closed = closer.join().unwrap();
        match (closed, reopened) {
            (Some(c), None) => {
                sides.saw(0);
                assert_eq!((c.from, c.to), (State::HalfOpen, State::Closed));
                assert_eq!(b.state(), State::Closed);
            }
            (None, Some(o)) => {
                sides.saw(1);
                assert_eq!((o.from, o.to), (State::HalfOpen, State::Open));
                assert_eq!(b.state(), State::Open);
            }
            other => panic!("exactly one of the close and the re-open takes effect: {other:?}"),
        }
        assert_eq!(b.snapshot().transitions, 3);
    });
}

/// Guards: the CAS in `admit_from` that takes over a lost probe's
/// Half-Open (as a plain store, both callers take over), and the Acquire of
/// the word's reload there (as in the model above).
#[test]
fn a_lost_probe_is_taken_over_once_after_the_cool_down() {
    model(["the first thread took over", "the second thread took over"], |sides| {
        let clock = Arc::new(ManualClock::new(10_000));
        let b = Arc::new(breaker(1, 1));
        let after = trip_and_cool(&b, 10_000);
        clock.set(after);
        let lost = b.try_acquire(&*clock).unwrap();
        assert!(lost.is_probe());
        clock.advance(COOL_DOWN);
        assert!(b.try_acquire(&*clock).is_err(), "past the cool-down, the probe is still awaited");
        clock.advance(PROBE_TIMEOUT - COOL_DOWN);
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (b, clock) = (b.clone(), clock.clone());
                thread::spawn(move || b.try_acquire(&*clock).ok())
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        if let [Some(_), None] | [None, Some(_)] = results[..] {
            sides.saw(usize::from(results[1].is_some()));
        }
        let taken: Vec<_> = results.into_iter().flatten().collect();
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

/// A caller keeps asking while the only probe's outcome is recorded as
/// Ignored: it is refused while the slot is taken and admitted, as a probe
/// of the same generation, once the slot is freed.
///
/// Guards: the freeing of the slot in `state::on_ignored` (without it the
/// caller is refused after the release has happened).
#[test]
fn ignored_probe_frees_its_slot_for_a_concurrent_caller() {
    model(["refused until the release", "admitted at the first try"], |sides| {
        let b = Arc::new(breaker(1, 1));
        let after = trip_and_cool(&b, 10_000);
        let probe = b.try_acquire(&FixedClock(after)).unwrap();
        let released = Arc::new(AtomicBool::new(false));
        let releaser = {
            let (b, released) = (b.clone(), released.clone());
            thread::spawn(move || {
                let report = b.record(probe, Outcome::Ignored, &FixedClock(after));
                // Release: pairs with the caller's Acquire load below.
                released.store(true, Ordering::Release);
                report
            })
        };
        let mut refusals = 0;
        let second = loop {
            // Acquire pairs with the Release store above: once it reads
            // true, the record has happened before the attempt below.
            let was_released = released.load(Ordering::Acquire);
            match b.try_acquire(&FixedClock(after)) {
                Ok(t) => break t,
                Err(r) => {
                    assert!(!was_released, "the ignored probe's slot is still taken after its release");
                    assert_eq!(r.retry_after, Some(PROBE_TIMEOUT));
                    refusals += 1;
                    thread::yield_now();
                }
            }
        };
        sides.saw(usize::from(refusals == 0));
        assert!(second.is_probe());
        assert_eq!(second.generation(), probe.generation());
        assert_eq!(releaser.join().unwrap(), None);
        assert_eq!(b.state(), State::HalfOpen);
        assert!(b.try_acquire(&FixedClock(after)).is_err(), "one slot, and the second probe holds it");
    });
}

/// Guards: the CAS in `TimeWindow::bump` (as a plain store, the rotation and
/// a count racing it lose one of the two).
///
/// A new window takes its first epoch without a clear, and loom's ring has
/// 2 slots: the one rotation here clears 6 words. (When the first epoch
/// cleared the whole ring, 3 threads helping with 12 words made 1.7 million
/// interleavings at one preemption, and no end in sight at two.)
#[test]
fn window_rotation_loses_no_count() {
    model(["the spawned failure trips", "this thread's failure trips"], |sides| {
        // Two 1 ms buckets: epochs 10 and 12 share a slot, so recording at
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
        // At epoch 12 the window (epochs 11 and 12) holds both failures and
        // nothing else: the late success was counted in epoch 10 and
        // rotated out, or came after the rotation and stayed out. A rate
        // of 1, a trip, reported once, by the second failure. A lost
        // failure would leave 1 call, below min_calls; a failure
        // overwritten by the success, 0 failures: no trip either way.
        assert_eq!(reports.iter().flatten().count(), 1, "{reports:?}");
        assert_eq!(reports[0], None, "a success never trips");
        sides.saw(usize::from(reports[2].is_some()));
        assert_eq!(b.state(), State::Open);
    });
}
