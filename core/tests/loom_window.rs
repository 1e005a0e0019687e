//! loom models of the rolling windows: a new Closed generation racing
//! outcomes of the old one (a reset, two closing probes, a stale start), a
//! time window moving on under a late outcome and a slow helper, a count
//! window filing chunks and restarting under racing calls. Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p tripwire-breaker --release --target-dir target/loom --test loom_window`.
//!
//! Under loom a time window has 2 slots and one stripe; a count window
//! files chunks of 2 calls in a ring of 4.
//!
//! Every model races for real (see `loom_support`) and fails when the
//! ordering or check it names under "Guards" is weakened;
//! `tests/mutants/run.sh` makes each of those weakenings and shows it. A
//! late outcome leaves the same state whether it was refused or counted
//! and then cleared, so the models that race one tell their sides apart by
//! the order the threads ran in (`loom_support::Steps`).
#![cfg(loom)]

mod loom_support;

use core::time::Duration;

use loom::sync::Arc;
use loom::thread;
use loom_support::{Steps, against, before, model};
use tripwire::{Breaker, BreakerConfig, BreakerConfigBuilder, Outcome, State, clock::FixedClock};

/// The middle of millisecond `ms`: its epoch with 1 ms buckets is `ms`.
fn at(ms: u64) -> FixedClock {
    FixedClock(ms * 1_000_000 + 500_000)
}

fn rates(b: BreakerConfigBuilder, min_calls: u32, failure_rate: f64) -> Breaker {
    Breaker::new(b.failure_threshold(0).min_calls(min_calls).failure_rate(failure_rate).build().unwrap())
}

fn time_window(min_calls: u32, failure_rate: f64) -> Breaker {
    rates(BreakerConfig::builder().window(2, Duration::from_millis(1)), min_calls, failure_rate)
}

fn count_window(calls: u32, min_calls: u32, failure_rate: f64) -> Breaker {
    rates(BreakerConfig::builder().count_window(calls), min_calls, failure_rate)
}

/// Records one outcome on a fresh ticket.
fn record(b: &Breaker, outcome: Outcome, clock: &FixedClock) -> Option<tripwire::Transition> {
    let t = b.try_acquire(clock).unwrap();
    b.record(t, outcome, clock)
}

/// Defect 2, first race: a failure admitted before `reset()` and recorded
/// while the new generation starts its window. Guards: a clear changes
/// every word it passes (the version bump), so the late CAS fails.
#[test]
fn a_failure_admitted_before_a_reset_never_counts_in_the_new_window() {
    model(
        [
            "the late failure was done before the reset",
            "the late failure was done during the reset and the new generation's first failure",
            "the late failure was done after the new generation's first failure",
        ],
        |sides| {
            let b = Arc::new(time_window(2, 1.0));
            let steps = Steps::default();
            let late = b.try_acquire(&at(7)).unwrap();
            // The new generation on the spawned thread, so that the late
            // failure (this thread, which runs first) can stop just before its
            // CAS and resume just after the window is emptied: two preemptions.
            let new = {
                let (b, steps) = (b.clone(), steps.clone());
                thread::spawn(move || {
                    let began = steps.mark();
                    b.reset();
                    // One failure of the new generation: the window holds one call.
                    let report = record(&b, Outcome::Failure, &at(7));
                    (report, (began, steps.mark()))
                })
            };
            let began = steps.mark();
            assert_eq!(b.record(late, Outcome::Failure, &at(7)), None);
            let mine = (began, steps.mark());
            let (report, theirs) = new.join().unwrap();
            assert_eq!(report, None, "a late failure entered the new window");
            sides.saw(against(mine.1, theirs));
            assert!(
                record(&b, Outcome::Failure, &at(7)).is_some(),
                "two calls of the new generation trip it"
            );
        },
    );
}

/// Defect 2, second race: two probes succeed at once; the one that loses
/// the close must not wipe a failure counted after the close. Guards:
/// transitions never touch the window (it starts each Closed generation
/// itself, after the CAS that closes).
#[test]
fn a_losing_closer_never_wipes_a_failure_counted_after_the_close() {
    model(["this thread's probe closed", "the spawned probe closed"], |sides| {
        let b = Arc::new(Breaker::new(
            BreakerConfig::builder()
                .failure_threshold(0)
                .open_timeout(Duration::from_micros(1))
                .half_open_max(2)
                .half_open_successes(1)
                .window(2, Duration::from_millis(1))
                .min_calls(2)
                .failure_rate(1.0)
                .build()
                .unwrap(),
        ));
        assert_eq!(record(&b, Outcome::Failure, &at(7)), None);
        assert!(record(&b, Outcome::Failure, &at(7)).is_some());
        let later = FixedClock(at(7).0 + 1_000);
        let (p1, p2) = (b.try_acquire(&later).unwrap(), b.try_acquire(&later).unwrap());
        assert!(p1.is_probe() && p2.is_probe());
        let loser = {
            let b = b.clone();
            thread::spawn(move || b.record(p2, Outcome::Success, &later))
        };
        let closed = b.record(p1, Outcome::Success, &later);
        // Closed now, by this probe or the other: count one failure.
        let counted = b.try_acquire(&later).unwrap();
        assert!(!counted.is_probe());
        assert_eq!(b.record(counted, Outcome::Failure, &later), None);
        let other = loser.join().unwrap();
        // One close, reported by the probe that made it.
        assert!(closed.is_some() != other.is_some(), "this: {closed:?}, spawned: {other:?}");
        sides.saw(usize::from(other.is_some()));
        assert_eq!(b.state(), State::Closed);
        assert!(record(&b, Outcome::Failure, &later).is_some(), "the first failure was wiped");
    });
}

/// A thread starting the window for its generation after that generation
/// ended must not move the window back. Guards: the generation word is
/// moved by CAS from the value loaded before the state word said the
/// generation was current.
#[test]
fn a_stale_start_never_rewinds_the_window() {
    model(
        [
            "the stale failure began before generation 2's first failure was done",
            "generation 2's first failure was done before the stale failure began",
        ],
        |sides| {
            let b = Arc::new(time_window(2, 1.0));
            // Generation 1, whose window has not started yet.
            b.reset();
            let stale = b.try_acquire(&at(7)).unwrap();
            let steps = Steps::default();
            let old = {
                let (b, steps) = (b.clone(), steps.clone());
                thread::spawn(move || {
                    let began = steps.mark();
                    b.record(stale, Outcome::Failure, &at(7));
                    (began, steps.mark())
                })
            };
            let began = steps.mark();
            b.reset();
            let first = record(&b, Outcome::Failure, &at(7));
            let mine = (began, steps.mark());
            sides.saw(usize::from(before(mine, old.join().unwrap())));
            assert_eq!(first, None);
            assert!(
                record(&b, Outcome::Failure, &at(7)).is_some(),
                "the window of generation 2 was started again"
            );
        },
    );
}

/// A late outcome (its clock read before the window moved on) must not
/// land in the newer epoch that took over its slot. Guards: an outcome
/// whose epoch has left the window (checked against the control word) stays
/// out.
#[test]
fn a_late_outcome_never_lands_in_a_newer_epoch() {
    model(
        [
            "the late success was done before epoch 3's failure began",
            "the late success was done while epoch 3's failure was being recorded",
            "the late success was done after epoch 3's failure",
        ],
        |sides| {
            let b = Arc::new(time_window(2, 0.8));
            let steps = Steps::default();
            assert_eq!(record(&b, Outcome::Success, &at(1)), None);
            let late = b.try_acquire(&at(1)).unwrap();
            // Epoch 3 shares epoch 1's slot (2 slots): the window passes over it.
            let newer = {
                let (b, steps) = (b.clone(), steps.clone());
                thread::spawn(move || {
                    let began = steps.mark();
                    (record(&b, Outcome::Failure, &at(3)), (began, steps.mark()))
                })
            };
            let began = steps.mark();
            assert_eq!(b.record(late, Outcome::Success, &at(1)), None);
            let mine = (began, steps.mark());
            let (report, theirs) = newer.join().unwrap();
            assert_eq!(report, None);
            sides.saw(against(mine.1, theirs));
            // The window holds epoch 3's failure alone: one more failure makes
            // a rate of 1 and trips it; with the late success counted in epoch
            // 3 it would be 2 of 3, below 0.8.
            assert!(
                record(&b, Outcome::Failure, &at(3)).is_some(),
                "a success from epoch 1 was counted in epoch 3"
            );
        },
    );
}

/// A success recorded while another caller moves the window on to the
/// success's own epoch counts in that epoch's slot, not in the slot of the
/// epoch the window showed when the success began. Guards: the inline
/// success path takes its slot from the control word and counts only if
/// the control word it loads after the bucket word is still that value.
/// The success path yields between the two loads (loom would not reorder
/// the other thread's CAS against the first of them).
#[test]
fn a_success_racing_the_move_to_its_epoch_counts_in_its_own_slot() {
    model(
        [
            "epoch 2's failure was done while the success was being recorded",
            "epoch 2's failure was done after the success",
        ],
        |sides| {
            let b = Arc::new(time_window(2, 0.8));
            let steps = Steps::default();
            assert_eq!(record(&b, Outcome::Success, &at(1)), None);
            // Only this thread's success takes the inline path.
            b.loom_yield_in_window_fast_path();
            let success = b.try_acquire(&at(2)).unwrap();
            let mover = {
                let (b, steps) = (b.clone(), steps.clone());
                thread::spawn(move || {
                    let began = steps.mark();
                    (record(&b, Outcome::Failure, &at(2)), (began, steps.mark()))
                })
            };
            // This thread begins first: it marks before its first atomic access.
            let _began = steps.mark();
            assert_eq!(b.record(success, Outcome::Success, &at(2)), None);
            let done = steps.mark();
            let (report, theirs) = mover.join().unwrap();
            // Epochs 1 and 2 hold 3 calls, 1 failure: no trip.
            assert_eq!(report, None);
            sides.saw(usize::from(theirs.1 > done));
            // Epoch 3 takes epoch 1's slot, so the window holds epochs 2 and
            // 3: the success and two failures, 2 of 3, below 0.8. Had the
            // success gone to epoch 1's slot, it would be gone with epoch 1,
            // and 2 failures of 2 would trip.
            assert_eq!(
                record(&b, Outcome::Failure, &at(3)),
                None,
                "the success of epoch 2 was counted in epoch 1's slot"
            );
        },
    );
}

/// Two callers move the window on to one epoch and add to it at once;
/// no count is lost to a helper that clears late. Guards: a clearing
/// helper checks, after loading each word, that its clear is still
/// pending before emptying the word.
#[test]
fn a_late_clearing_helper_never_wipes_a_fresh_count() {
    model(["the spawned failure trips", "this thread's failure trips"], |sides| {
        let b = Arc::new(time_window(2, 1.0));
        assert_eq!(record(&b, Outcome::Success, &at(1)), None);
        let tickets = [b.try_acquire(&at(5)).unwrap(), b.try_acquire(&at(5)).unwrap()];
        let other = {
            let b = b.clone();
            thread::spawn(move || b.record(tickets[0], Outcome::Failure, &at(5)))
        };
        let mine = b.record(tickets[1], Outcome::Failure, &at(5));
        let reports = [other.join().unwrap(), mine];
        // Both failures in epoch 5, the success of epoch 1 gone: a rate of
        // 1 over 2 calls, one trip. A lost failure leaves one call: none.
        assert_eq!(reports.iter().flatten().count(), 1, "{reports:?}");
        sides.saw(usize::from(reports[1].is_some()));
    });
}

/// Calls racing across a chunk boundary of a count window: every call is
/// counted once. Guards: a call is counted by a CAS on the cursor it
/// loaded, so two at once cannot overwrite each other.
#[test]
fn calls_racing_across_a_chunk_boundary_are_all_counted() {
    model(["the spawned failure trips", "this thread's failure trips"], |sides| {
        // The last 3 calls: one full chunk of 2 and one call of the next.
        let b = Arc::new(count_window(3, 3, 1.0));
        assert_eq!(record(&b, Outcome::Failure, &at(1)), None);
        let tickets = [b.try_acquire(&at(1)).unwrap(), b.try_acquire(&at(1)).unwrap()];
        let other = {
            let b = b.clone();
            thread::spawn(move || b.record(tickets[0], Outcome::Failure, &at(1)))
        };
        let mine = b.record(tickets[1], Outcome::Failure, &at(1));
        let reports = [other.join().unwrap(), mine];
        assert_eq!(
            reports.iter().flatten().count(),
            1,
            "three failures in the last three calls: {reports:?}"
        );
        sides.saw(usize::from(reports[1].is_some()));
    });
}

/// Two failures find the same chunk full (two successes, placed as a
/// batch) and race to move the cursor on: the chunk's successes reach the
/// snapshot once. Guards: a chunk's successes are folded only by the
/// caller whose CAS moved the cursor past it.
#[test]
fn racing_rotations_fold_a_chunk_once() {
    model(
        [
            "this thread's failure was done before the spawned one began",
            "this thread's failure was done while the spawned one was being recorded",
            "this thread's failure was done after the spawned one",
        ],
        |sides| {
            let b = Arc::new(count_window(4, 4, 1.0));
            // A batch of two: placed, and the chunk (of two) is full.
            for _ in 0..2 {
                assert_eq!(record(&b, Outcome::Success, &at(1)), None);
            }
            let steps = Steps::default();
            let other = {
                let (b, steps) = (b.clone(), steps.clone());
                thread::spawn(move || {
                    let began = steps.mark();
                    (record(&b, Outcome::Failure, &at(1)), (began, steps.mark()))
                })
            };
            let began = steps.mark();
            assert_eq!(record(&b, Outcome::Failure, &at(1)), None);
            let mine = (began, steps.mark());
            let (report, theirs) = other.join().unwrap();
            assert_eq!(report, None, "two failures of four calls: a rate of 0.5");
            sides.saw(against(mine.1, theirs));
            assert_eq!(b.snapshot().successes, 2);
        },
    );
}

/// A count window restarting for a new generation under a failure of the
/// old one. Guards: a restart moves the cursor to a chunk number never
/// used before, so the old failure's CAS on an empty cursor fails.
#[test]
fn a_late_failure_never_counts_in_a_restarted_count_window() {
    model(
        [
            "the late failure was done before the reset",
            "the late failure was done during the reset and the new generation's first failure",
            "the late failure was done after the new generation's first failure",
        ],
        |sides| {
            let b = Arc::new(count_window(4, 2, 1.0));
            let steps = Steps::default();
            let late = b.try_acquire(&at(1)).unwrap();
            // As in the time window's model: the late failure on this thread.
            let new = {
                let (b, steps) = (b.clone(), steps.clone());
                thread::spawn(move || {
                    let began = steps.mark();
                    b.reset();
                    (record(&b, Outcome::Failure, &at(1)), (began, steps.mark()))
                })
            };
            let began = steps.mark();
            assert_eq!(b.record(late, Outcome::Failure, &at(1)), None);
            let mine = (began, steps.mark());
            let (report, theirs) = new.join().unwrap();
            assert_eq!(report, None, "a late failure entered the new window");
            sides.saw(against(mine.1, theirs));
            assert!(record(&b, Outcome::Failure, &at(1)).is_some());
        },
    );
}

/// A success and then a failure on one thread, a success on another
/// thread racing them: the first success is placed before the failure, so
/// a failure after it leaves the last two calls both failures unless the
/// other success came in between. Guards: a failure places every success
/// waiting on the stripes before it takes its own place. (A success of
/// another thread done earlier, with nothing ordering it before the
/// failure, may take its place after it: the model checks the thread's own
/// success, which its failure follows.)
#[test]
fn a_success_done_before_a_failure_is_placed_before_it() {
    model(
        [
            "the other success was done before this thread's failures began",
            "the other success was done while they were recorded",
            "the other success began after they were done",
        ],
        |sides| {
            // The last 2 calls, both failures to trip.
            let b = Arc::new(count_window(2, 2, 1.0));
            assert_eq!(record(&b, Outcome::Failure, &at(1)), None);
            let other = b.try_acquire(&at(1)).unwrap();
            let steps = Steps::default();
            let success = {
                let (b, steps) = (b.clone(), steps.clone());
                thread::spawn(move || {
                    let began = steps.mark();
                    let _ = b.record(other, Outcome::Success, &at(1));
                    (began, steps.mark())
                })
            };
            assert_eq!(record(&b, Outcome::Success, &at(1)), None);
            let began = steps.mark();
            // Failure, success, failure: the last two hold the success.
            assert_eq!(
                record(&b, Outcome::Failure, &at(1)),
                None,
                "the success was placed after the failure"
            );
            let last = record(&b, Outcome::Failure, &at(1));
            let mine = (began, steps.mark());
            let theirs = success.join().unwrap();
            let side = if theirs.0 > mine.1 { 2 } else { against(theirs.1, mine).min(1) };
            sides.saw(side);
            // Nothing came between the two failures.
            if side == 2 {
                assert!(last.is_some(), "the first success was never placed before the first failure");
            }
        },
    );
}

/// A count window restarting for a new generation with a success of the old
/// one waiting on a stripe, while a late failure of the old one races the
/// restart: the success is dropped with the old window, and the late
/// failure stays out. Guards: a restart sets every stripe's placed value
/// to its counter, in the CAS that empties the window.
#[test]
fn a_success_waiting_on_a_stripe_is_dropped_by_a_restart() {
    model(
        [
            "the late failure was done before the reset",
            "the late failure was done during the reset and the new generation's first failure",
            "the late failure was done after the new generation's first failure",
        ],
        |sides| {
            // The last 3 calls, at least 2 of them, all failures to trip.
            let b = Arc::new(count_window(3, 2, 1.0));
            assert_eq!(record(&b, Outcome::Success, &at(1)), None);
            let late = b.try_acquire(&at(1)).unwrap();
            let steps = Steps::default();
            // As in the model above: the late failure on this thread. The
            // spawn orders the success before the reset.
            let new = {
                let (b, steps) = (b.clone(), steps.clone());
                thread::spawn(move || {
                    let began = steps.mark();
                    b.reset();
                    (record(&b, Outcome::Failure, &at(1)), (began, steps.mark()))
                })
            };
            let began = steps.mark();
            let report = b.record(late, Outcome::Failure, &at(1));
            let mine = (began, steps.mark());
            let (first, theirs) = new.join().unwrap();
            assert_eq!(report, None, "a success and a failure: a rate of 0.5");
            assert_eq!(first, None, "one failure: below min_calls");
            sides.saw(against(mine.1, theirs));
            assert!(
                record(&b, Outcome::Failure, &at(1)).is_some(),
                "the old window's success (or its late failure) counted in the new one"
            );
        },
    );
}
