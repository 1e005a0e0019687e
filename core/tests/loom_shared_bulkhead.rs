//! loom models of the shared bulkhead's slot protocol: never above `max`,
//! a slot hands its holder's work to the next holder, a reclaim pass
//! racing a release and a new acquire never frees the new holder's slot,
//! racing passes free a dead slot once, a stale receipt never frees a slot
//! taken again since, with another word or the same one.
//!
//! The processes of a real region are threads here, each with its own
//! holder word; "dead" is what the model's liveness check says. Every model
//! races for real (see `loom_support`) and fails when the check or ordering
//! it names under "Guards" is weakened; `tests/mutants/run.sh` makes each
//! weakening and shows it.
#![cfg(loom)]

mod loom_support;

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use loom::thread;
use loom_support::{model, spin_until};
use tripwire::shared::{Holder, SlotTable};

fn holder(pid: u32, nonce: u16) -> Holder {
    Holder::new(pid, 1, nonce).unwrap()
}

/// Guards: the CAS that takes a slot (as a plain store, two callers that
/// saw the same free slot both take it).
#[test]
fn never_above_max() {
    model(["a caller was refused", "every caller got in"], |sides| {
        let table = Arc::new(SlotTable::<2>::new(2).unwrap());
        let observed = Arc::new(AtomicU32::new(0));
        let hold = |table: &SlotTable<2>, observed: &AtomicU32, pid: u32| {
            let b = table.bulkhead();
            let Ok(slot) = b.try_acquire(holder(pid, 0)) else { return false };
            let now = observed.fetch_add(1, Ordering::SeqCst) + 1;
            assert!(now <= 2, "{now} holders, max 2");
            observed.fetch_sub(1, Ordering::SeqCst);
            assert!(b.release(slot), "a holder's own release frees its slot");
            true
        };
        let others: Vec<_> = (0..2)
            .map(|i| {
                let (t, o) = (table.clone(), observed.clone());
                thread::spawn(move || hold(&t, &o, 10 + i))
            })
            .collect();
        let mine = hold(&table, &observed, 1);
        let admitted =
            others.into_iter().map(|t| t.join().unwrap()).filter(|&a| a).count() + usize::from(mine);
        assert!(admitted >= 2, "with max 2, at least two of three get in");
        sides.saw(usize::from(admitted == 3));
        assert_eq!(table.bulkhead().held(), 0);
    });
}

/// Two processes take turns at one slot, each changing plain data while it
/// holds it: whatever one holder did happens before the next one starts.
/// loom reports a data race on the cell otherwise.
///
/// Guards: the Acquire of the CAS that takes a slot, and the Release of the
/// CAS that frees it.
#[test]
fn the_next_holder_sees_what_the_last_one_did() {
    model(["the first thread held it first", "the second thread held it first"], |sides| {
        let table = Arc::new(SlotTable::<1>::new(1).unwrap());
        let work = Arc::new(UnsafeCell::new((0u32, 0usize)));
        let holders: Vec<_> = (0..2)
            .map(|i| {
                let (t, work) = (table.clone(), work.clone());
                thread::spawn(move || {
                    let b = t.bulkhead();
                    let mut slot = None;
                    spin_until(|| {
                        slot = b.try_acquire(holder(1 + i as u32, 0)).ok();
                        slot.is_some()
                    });
                    work.with_mut(|w| {
                        // SAFETY:
                        // - The one slot is this thread's, so no other thread
                        //   touches the cell now; the last holder's access
                        //   happens before this one (the slot's Acquire and
                        //   Release), which is what loom checks.
                        let w = unsafe { &mut *w };
                        if w.0 == 0 {
                            w.1 = i;
                        }
                        w.0 += 1;
                    });
                    assert!(b.release(slot.unwrap()));
                })
            })
            .collect();
        for h in holders {
            h.join().unwrap();
        }
        // SAFETY:
        // - Both holders have been joined: no other access is left.
        let (count, first) = work.with(|w| unsafe { *w });
        assert_eq!(count, 2);
        sides.saw(first);
    });
}

/// Process 7 holds the one slot, releases it and exits; process 8 waits
/// for the slot and takes it; a reclaim pass runs meanwhile. If the pass
/// read 7's word before the release and asks about 7 once it is dead, the
/// slot holds 8's word (or nothing) by the time it acts: it must free
/// nothing, and 8's release must be its own.
///
/// Guards: the reclaim pass's CAS from the word it read (as a plain store
/// of 0, the pass frees the slot 8 took after 7's release).
#[test]
fn a_reclaim_racing_a_release_and_a_new_acquire_leaves_the_new_holder_alone() {
    model(["the pass judged the dead holder's word", "the pass judged nothing dead"], |sides| {
        let table = Arc::new(SlotTable::<1>::new(1).unwrap());
        let dead = Arc::new(AtomicBool::new(false));
        let sevens = table.bulkhead().try_acquire(holder(7, 0)).unwrap();
        let seven = {
            let (t, dead) = (table.clone(), dead.clone());
            thread::spawn(move || {
                assert!(t.bulkhead().release(sevens));
                // Exits: from now on the liveness check calls it dead.
                dead.store(true, Ordering::SeqCst);
            })
        };
        let eight = {
            let t = table.clone();
            thread::spawn(move || {
                let b = t.bulkhead();
                let mut slot = None;
                spin_until(|| {
                    slot = b.try_acquire(holder(8, 0)).ok();
                    slot.is_some()
                });
                b.release(slot.unwrap())
            })
        };
        let mut judged_dead = false;
        let freed = table.bulkhead().reclaim(|h| {
            let gone = h.pid() == 7 && dead.load(Ordering::SeqCst);
            judged_dead |= gone;
            gone
        });
        seven.join().unwrap();
        let eights_release = eight.join().unwrap();
        assert_eq!(freed, 0, "nothing was held by a dead process when the pass acted");
        assert!(eights_release, "8's slot was freed under it");
        sides.saw(usize::from(!judged_dead));
        assert_eq!(table.bulkhead().held(), 0);
    });
}

/// Process 7 died holding the one slot. Two reclaim passes race over it,
/// while process 8 waits for the slot, takes it and releases it: the dead
/// slot is freed exactly once, and 8's slot never.
///
/// Guards: the reclaim pass's CAS from the word it read (as a plain store
/// of 0, both passes free the slot, or one frees 8's).
#[test]
fn racing_reclaim_passes_free_a_dead_slot_once() {
    model(["the spawned pass freed it", "the main pass freed it"], |sides| {
        let table = Arc::new(SlotTable::<1>::new(1).unwrap());
        let _dead_slot = table.bulkhead().try_acquire(holder(7, 0)).unwrap();
        let other = {
            let t = table.clone();
            thread::spawn(move || t.bulkhead().reclaim(|h| h.pid() == 7))
        };
        let eight = {
            let t = table.clone();
            thread::spawn(move || {
                let b = t.bulkhead();
                let mut slot = None;
                spin_until(|| {
                    slot = b.try_acquire(holder(8, 0)).ok();
                    slot.is_some()
                });
                b.release(slot.unwrap())
            })
        };
        let mine = table.bulkhead().reclaim(|h| h.pid() == 7);
        let theirs = other.join().unwrap();
        assert!(eight.join().unwrap(), "8's slot was freed under it");
        assert_eq!(mine + theirs, 1, "the dead slot freed {} times", mine + theirs);
        sides.saw(mine as usize);
        let b = table.bulkhead();
        assert_eq!((b.held(), b.snapshot().reclaimed), (0, 1));
    });
}

/// One process, two threads: the first has released its receipt and
/// releases it again (a bug), while the second takes the freed slot with
/// its own acquire (same pid, next nonce) and holds it until the stale
/// release has returned. The stale release must be refused whenever it
/// lands, and the second thread's slot stay its own.
///
/// Guards, with the slot's release count: the count and the whole
/// holder word are compared together. (Since the count moves on with every
/// release, comparing only the process no longer frees the other thread's
/// slot; the next model shows the count doing its part.)
#[test]
fn a_stale_receipt_never_frees_the_slot_taken_again() {
    stale_receipt_model(1);
}

/// As above, but the second acquire takes the slot with the very word of
/// the stale receipt, as it does once the process's 16-bit nonce has come
/// round (65,536 acquires later).
///
/// Guards: release's claim of the slot's release count (without it, the
/// word matches and the stale receipt frees the other thread's slot).
#[test]
fn a_stale_receipt_with_the_same_word_never_frees_the_slot_taken_again() {
    stale_receipt_model(0);
}

/// The two models above: the second acquire's nonce is `nonce`.
fn stale_receipt_model(nonce: u16) {
    model(["the second acquire came before the stale release returned", "after it"], move |sides| {
        let table = Arc::new(SlotTable::<1>::new(1).unwrap());
        let b = table.bulkhead();
        let first = b.try_acquire(holder(5, 0)).unwrap();
        assert!(b.release(first));
        let stale_done = Arc::new(AtomicBool::new(false));
        let second = {
            let (t, stale_done) = (table.clone(), stale_done.clone());
            thread::spawn(move || {
                let b = t.bulkhead();
                let slot = b.try_acquire(holder(5, nonce)).expect("the one slot is free");
                let before_stale = !stale_done.load(Ordering::SeqCst);
                // Hold the slot across the stale release.
                spin_until(|| stale_done.load(Ordering::SeqCst));
                let held = b.holder_of(slot.index()) == Some(holder(5, nonce));
                (before_stale, held, b.release(slot))
            })
        };
        // loom would run the stale release before the second thread's
        // acquire every time: let the second thread go first where it can.
        thread::yield_now();
        let stale = b.release(first);
        stale_done.store(true, Ordering::SeqCst);
        let (before_stale, held, released) = second.join().unwrap();
        assert!(!stale, "a receipt released twice freed a slot");
        assert!(held && released, "the second thread's slot was freed under it");
        sides.saw(usize::from(!before_stale));
        assert_eq!(b.held(), 0);
    });
}
