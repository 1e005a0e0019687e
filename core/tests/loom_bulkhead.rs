//! loom models of the bulkhead's CAS protocol: never above `max`, a slot
//! hands its holder's work to the next holder, raw releases never underflow,
//! a waiter is never left asleep with a free slot.
//!
//! Every model races for real (see `loom_support`) and fails when the
//! ordering or check it names under "Guards" is weakened;
//! `tests/mutants/run.sh` makes each of those weakenings and shows it.
#![cfg(loom)]

mod loom_support;

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use loom::thread;
use loom_support::{model, spin_until};
use tripwire::Bulkhead;

/// Takes a slot if it can and, while holding it, checks an independent
/// count of holders against `max`.
fn hold(bulkhead: &Bulkhead, observed: &AtomicU32) -> bool {
    let Ok(permit) = bulkhead.try_acquire() else { return false };
    let now = observed.fetch_add(1, Ordering::SeqCst) + 1;
    assert!(now <= bulkhead.max(), "{now} in flight, max {}", bulkhead.max());
    observed.fetch_sub(1, Ordering::SeqCst);
    drop(permit);
    true
}

/// Guards: the CAS in `take` (as a plain store, two callers that read the
/// same count both take the last slot).
#[test]
fn never_above_max() {
    model(["one of the three was refused", "all three got in, one after a release"], |sides| {
        let bulkhead = Arc::new(Bulkhead::new(2));
        let observed = Arc::new(AtomicU32::new(0));
        let others: Vec<_> = (0..2)
            .map(|_| {
                let (b, o) = (bulkhead.clone(), observed.clone());
                thread::spawn(move || hold(&b, &o))
            })
            .collect();
        let mine = hold(&bulkhead, &observed);
        let admitted =
            others.into_iter().map(|t| t.join().unwrap()).filter(|&a| a).count() + usize::from(mine);
        assert!(admitted >= 2, "with max 2 at least two of three get in");
        sides.saw(admitted - 2);
        let s = bulkhead.snapshot();
        assert_eq!(s.in_flight, 0);
        assert_eq!(s.acquired + s.rejected, 3);
        assert!(s.peak_in_flight <= 2);
    });
}

/// Two callers take turns at a bulkhead of one slot, each changing plain
/// (non-atomic) data while it holds the slot: whatever one holder did
/// happens before the next holder starts. loom reports a data race on the
/// cell otherwise.
///
/// Guards: the Acquire of the CAS in `take`, and the Release half of the
/// `AcqRel` CAS in `release_raw`.
#[test]
fn the_next_holder_sees_what_the_last_one_did() {
    model(["the first thread held it first", "the second thread held it first"], |sides| {
        let bulkhead = Arc::new(Bulkhead::new(1));
        // Holders so far, and the first one's number.
        let work = Arc::new(UnsafeCell::new((0u32, 0usize)));
        let holders: Vec<_> = (0..2)
            .map(|i| {
                let (b, work) = (bulkhead.clone(), work.clone());
                thread::spawn(move || {
                    let mut permit = None;
                    spin_until(|| {
                        permit = b.try_acquire().ok();
                        permit.is_some()
                    });
                    work.with_mut(|w| {
                        // SAFETY:
                        // - The bulkhead has one slot and this thread holds
                        //   it, so no other thread touches the cell now; the
                        //   last holder's access happens before this one
                        //   (the bulkhead's Acquire and Release), which is
                        //   what loom checks.
                        let w = unsafe { &mut *w };
                        if w.0 == 0 {
                            w.1 = i;
                        }
                        w.0 += 1;
                    });
                    drop(permit);
                })
            })
            .collect();
        for h in holders {
            h.join().unwrap();
        }
        // SAFETY:
        // - Both holders have been joined: no other access to the cell is left.
        let (holders, first) = work.with(|w| unsafe { *w });
        assert_eq!(holders, 2);
        sides.saw(first);
        assert_eq!(bulkhead.in_flight(), 0);
    });
}

/// A stray release (a buggy C caller's, with no slot of its own) races the
/// release of the one slot's holder. A slot has no owner, so the stray
/// release may free the holder's slot; the holder's own release is then
/// refused. What `release_raw` promises, and this checks: exactly one of
/// the two releases frees the one slot taken, the other returns `false`
/// and changes nothing, and the count ends at zero, never below.
///
/// Guards: the check in `release_raw` that a call is in flight, and the
/// CAS there (as a plain store, both releases free the one slot).
#[test]
fn raw_releases_restore_the_count_and_never_underflow() {
    model(["the holder's release freed the slot", "the stray release freed it"], |sides| {
        let bulkhead = Arc::new(Bulkhead::new(1));
        let holding = Arc::new(AtomicBool::new(false));
        let holder = {
            let (b, holding) = (bulkhead.clone(), holding.clone());
            thread::spawn(move || {
                assert!(b.try_acquire_raw(), "a lone caller of a free bulkhead always gets in");
                // Release: pairs with the Acquire load below.
                holding.store(true, Ordering::Release);
                b.release_raw()
            })
        };
        // Wait until the slot is taken, then release it without having
        // taken it, racing the holder's release. Acquire pairs with the
        // Release store above: the slot's taking happens before the stray
        // release.
        spin_until(|| holding.load(Ordering::Acquire));
        let stray = bulkhead.release_raw();
        let released = holder.join().unwrap();
        assert_eq!(
            u32::from(stray) + u32::from(released),
            1,
            "one slot taken, freed once: stray {stray}, holder {released}"
        );
        sides.saw(usize::from(stray));
        assert_eq!(bulkhead.in_flight(), 0);
        assert!(!bulkhead.release_raw(), "nothing in flight, nothing to release");
        assert_eq!(bulkhead.in_flight(), 0);
        assert_eq!(bulkhead.snapshot().acquired, 1);
    });
}

/// Guards: the wake-up in `release_raw` (without it a registered waiter
/// sleeps for good), and the waiter's second look at the word after it
/// starts listening (without it a release between the waiter's
/// registration and its listening is missed). loom reports the sleeper as
/// a deadlock.
#[test]
fn a_waiter_is_woken_by_the_release() {
    model(
        ["the waiter had asked when the release began", "the release began before the waiter asked"],
        |sides| {
            let bulkhead = Arc::new(Bulkhead::new(1));
            let held = bulkhead.try_acquire_raw();
            assert!(held);
            // Set just before the waiter asks: a loom atomic, so that loom
            // races it against the release and explores the waiter inside
            // `acquire` when the release comes as well as before it.
            let asking = Arc::new(AtomicBool::new(false));
            let (b, a) = (bulkhead.clone(), asking.clone());
            // Parks until a slot is free; a lost wake-up deadlocks, which loom reports.
            let waiter = thread::spawn(move || {
                a.store(true, Ordering::SeqCst);
                let permit = b.acquire();
                assert_eq!(b.in_flight(), 1);
                drop(permit);
            });
            sides.saw(usize::from(!asking.load(Ordering::SeqCst)));
            assert!(bulkhead.release_raw());
            waiter.join().unwrap();
            assert_eq!(bulkhead.in_flight(), 0);
        },
    );
}
