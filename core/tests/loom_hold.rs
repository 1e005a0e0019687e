//! loom models of holds racing probes, and of a late deadline stamp. Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p tripwire-breaker --release --target-dir target/loom --test loom_hold`.
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
use loom_support::model;
use tripwire::{Breaker, BreakerConfig, Outcome, State, clock::FixedClock};

const COOL_DOWN: Duration = Duration::from_micros(1);
const HOLD: Duration = Duration::from_nanos(1_500);

fn breaker() -> Breaker {
    Breaker::new(
        BreakerConfig::builder()
            .failure_threshold(1)
            .open_timeout(COOL_DOWN)
            // Lost probes are taken over as soon as the cool-down would end.
            .probe_timeout(COOL_DOWN)
            .half_open_max(1)
            .half_open_successes(1)
            .build()
            .unwrap(),
    )
}

/// Trips `b` at `at` and returns the time its cool-down has passed.
fn trip_and_cool(b: &Breaker, at: u64) -> u64 {
    let t = b.try_acquire(&FixedClock(at)).unwrap();
    assert!(b.record(t, Outcome::Failure, &FixedClock(at)).is_some());
    at + COOL_DOWN.as_nanos() as u64
}

/// A hold and a probe admission race on an Open breaker whose cool-down has
/// passed. Whichever goes first, the hold ends up in force: the probe, if
/// one got in, belongs to an older generation. A refused caller learns when
/// the hold ends.
///
/// Guards: the `Release` of the hold's CAS and the `Acquire` reload of the
/// word in `try_acquire`. Weakened, the caller can see the held word but
/// not its deadline, take the hold for a passed wait, and get a probe
/// through it.
#[test]
fn a_hold_racing_a_probe_admission_stays_in_force() {
    model(["the probe was admitted before the hold", "the hold refused the caller"], |sides| {
        let b = Arc::new(breaker());
        let after = trip_and_cool(&b, 10_000);
        let holder = {
            let b = b.clone();
            thread::spawn(move || b.open_for(HOLD, &FixedClock(after)))
        };
        let caller = b.try_acquire(&FixedClock(after));
        let held = holder.join().unwrap().expect("the hold always starts a generation");
        assert_eq!((held.to, b.state()), (State::Open, State::Open));
        assert_eq!(b.hold_left(&FixedClock(after)), Some(HOLD));
        sides.saw(usize::from(caller.is_err()));
        match caller {
            // Admitted first: its outcome is from an older generation now.
            Ok(probe) => {
                assert!(probe.generation() != held.generation);
                assert_eq!(b.record(probe, Outcome::Success, &FixedClock(after)), None);
            }
            Err(r) => assert_eq!((r.state, r.retry_after), (State::Open, Some(HOLD))),
        }
        assert_eq!(b.try_acquire(&FixedClock(after)).unwrap_err().retry_after, Some(HOLD));
    });
}

/// As above, with the race forced: the caller reads its clock (between
/// its first load of the word and the load its decision rests on) only
/// once the hold is in place, and learns of that through a `Relaxed` flag,
/// which orders nothing. The caller must see the hold's deadline with the
/// held word, and be refused until the hold ends.
///
/// Guards: the `Acquire` of that second load (and the hold's `Release`).
#[test]
fn a_caller_that_finds_a_hold_finds_its_end() {
    /// Counts, in its third field, the times the caller found the flag
    /// unset and yielded (a `std` atomic: loom does not schedule it).
    struct AfterHold(Arc<AtomicBool>, u64, std::sync::atomic::AtomicUsize);
    impl tripwire::Clock for AfterHold {
        fn now(&self) -> u64 {
            // Relaxed: the flag must order nothing (see above).
            while !self.0.load(Ordering::Relaxed) {
                // Relaxed: a tally, read by this thread once the call is done.
                self.2.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                thread::yield_now();
            }
            self.1
        }
    }
    model(
        ["the caller waited in its clock for the hold", "the caller found the flag set at once"],
        |sides| {
            let b = Arc::new(breaker());
            let after = trip_and_cool(&b, 10_000);
            let done = Arc::new(AtomicBool::new(false));
            let holder = {
                let (b, done) = (b.clone(), done.clone());
                thread::spawn(move || {
                    let held = b.open_for(HOLD, &FixedClock(after));
                    done.store(true, Ordering::Relaxed);
                    held
                })
            };
            let clock = AfterHold(done, after, std::sync::atomic::AtomicUsize::new(0));
            let r = b.try_acquire(&clock).unwrap_err();
            assert_eq!((r.state, r.retry_after), (State::Open, Some(HOLD)));
            sides.saw(usize::from(clock.2.into_inner() == 0));
            assert!(holder.join().unwrap().is_some());
        },
    );
}

/// A hold and a probe's failure race into the same generation (both enter
/// Open from Half-Open, both stamp the Open deadline slot). Whichever CAS
/// wins, the breaker stays shut until the hold ends: the hold is longer
/// than the cool-down.
///
/// Guards: within one generation a stamp keeps the later deadline. If the
/// later stamp simply replaced the earlier one, the failure's cool-down
/// could overwrite the hold's end of the generation the hold won.
#[test]
fn a_hold_racing_a_probe_failure_is_never_shortened() {
    model(["the failure re-opened first", "the hold came first"], |sides| {
        let b = Arc::new(breaker());
        let after = trip_and_cool(&b, 10_000);
        let probe = b.try_acquire(&FixedClock(after)).unwrap();
        let failer = {
            let b = b.clone();
            thread::spawn(move || b.record(probe, Outcome::Failure, &FixedClock(after)))
        };
        let held = b.open_for(HOLD, &FixedClock(after));
        let failed = failer.join().unwrap();
        assert!(held.is_some() || failed.is_some());
        sides.saw(usize::from(failed.is_none()));
        assert_eq!(b.state(), State::Open);
        let r = b.try_acquire(&FixedClock(after)).unwrap_err();
        assert_eq!(r.retry_after, Some(HOLD), "hold: {held:?}, failure: {failed:?}");
    });
}

/// A hold and a probe's success race: the success closes the breaker, the
/// hold opens it. Whichever goes first, the hold ends up in force.
///
/// The generations are arranged so that both transitions write the same
/// deadline slot: the Closed state reads no deadline, but entering it
/// refreshes the slot's tag once it has fallen 32 generations behind,
/// which happens at generation 63 for a slot no Open generation has used.
///
/// Guards: a stamp without a deadline (the refresh) never clears a
/// deadline stamped for the same generation. If it did, the hold that won
/// the CAS could find its slot cleared, read its wait as passed, and let
/// the next call through.
#[test]
fn a_hold_racing_a_probe_success_stays_in_force() {
    model(["the close landed first", "the hold landed first"], |sides| {
        let b = Arc::new(breaker());
        // Generations 1 to 59: Closed. 60: Open (an even slot). 61: Half-Open
        // (its probe lost). 62: Half-Open again, taken over.
        for _ in 0..59 {
            b.reset();
        }
        let cooled = trip_and_cool(&b, 10_000);
        let lost = b.try_acquire(&FixedClock(cooled)).unwrap();
        let after = cooled + COOL_DOWN.as_nanos() as u64;
        let probe = b.try_acquire(&FixedClock(after)).unwrap();
        assert_eq!((lost.generation(), probe.generation()), (61, 62));
        let closer = {
            let b = b.clone();
            thread::spawn(move || b.record(probe, Outcome::Success, &FixedClock(after)))
        };
        let held = b.open_for(HOLD, &FixedClock(after)).expect("the hold always starts a generation");
        let closed = closer.join().unwrap();
        sides.saw(usize::from(closed.is_none()));
        if let Some(c) = closed {
            assert!(c.generation < held.generation, "a close after the hold would have ended it");
        }
        assert_eq!(b.hold_left(&FixedClock(after)), Some(HOLD));
        assert!(b.try_acquire(&FixedClock(after)).is_err());
    });
}

/// A thread records a failure that trips the breaker, and may be overtaken
/// between loading the word and stamping the deadline: meanwhile the
/// breaker trips (perhaps by this very failure), is reset and trips again,
/// two generations later, in the same deadline slot. The late thread must
/// leave that slot alone. (loom preempts the late thread at its slot
/// accesses and runs the other to the end, so the overtaking happens in
/// some of the explored schedules.)
///
/// Guards: a stamp is written only while the word is still at the
/// generation its transition starts from. Without that check the late
/// stamp replaces the new generation's deadline (its tag is older), the
/// slot no longer belongs to the Open state, and the next call passes at
/// once: a cool-down shortened to nothing by a delayed thread.
#[test]
fn a_late_stamp_never_touches_a_later_generations_deadline() {
    model(["the late failure made the first trip", "this thread's failure made it"], |sides| {
        let b = Arc::new(breaker());
        let ticket = b.try_acquire(&FixedClock(0)).unwrap();
        let late = {
            let b = b.clone();
            thread::spawn(move || b.record(ticket, Outcome::Failure, &FixedClock(5_000)))
        };
        // Generation 1: Open (this failure's or the late one's), 2: Closed,
        // 3: Open again, in the slot of generation 1.
        let t = b.try_acquire(&FixedClock(0)).unwrap();
        let first = b.record(t, Outcome::Failure, &FixedClock(10_000));
        b.reset();
        let t = b.try_acquire(&FixedClock(20_000)).unwrap();
        let second = b.record(t, Outcome::Failure, &FixedClock(20_000)).expect("a trip");
        assert_eq!(second.generation, 3);
        let tripped_late = late.join().unwrap();
        // One of the two failures of generation 0 trips it.
        assert!(tripped_late.is_some() != first.is_some(), "late: {tripped_late:?}, first: {first:?}");
        sides.saw(usize::from(first.is_some()));
        let r = b.try_acquire(&FixedClock(20_000)).unwrap_err();
        assert_eq!(r.retry_after, Some(COOL_DOWN));
    });
}
