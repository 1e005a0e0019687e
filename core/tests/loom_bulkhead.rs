//! loom models of the bulkhead's CAS protocol: never above `max`, releases
//! restore the count and never underflow, a waiter is never left asleep
//! with a free slot.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::thread;
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

#[test]
fn never_above_max() {
    loom::model(|| {
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
        let s = bulkhead.snapshot();
        assert_eq!(s.in_flight, 0);
        assert_eq!(s.acquired + s.rejected, 3);
        assert!(s.peak_in_flight <= 2);
    });
}

#[test]
fn raw_releases_restore_the_count_and_never_underflow() {
    loom::model(|| {
        let bulkhead = Arc::new(Bulkhead::new(1));
        let b = bulkhead.clone();
        let other = thread::spawn(move || {
            let got = b.try_acquire_raw();
            if got {
                assert!(b.release_raw());
            }
            got
        });
        // A release without a slot (a buggy C caller) races the other thread.
        let stray = bulkhead.release_raw();
        let got = other.join().unwrap();
        assert!(got, "a lone caller of a free bulkhead always gets in");
        assert!(!stray || bulkhead.in_flight() == 0);
        assert_eq!(bulkhead.in_flight(), 0);
    });
}

#[test]
fn a_waiter_is_woken_by_the_release() {
    loom::model(|| {
        let bulkhead = Arc::new(Bulkhead::new(1));
        let held = bulkhead.try_acquire_raw();
        assert!(held);
        let b = bulkhead.clone();
        // Parks until a slot is free; a lost wake-up deadlocks, which loom reports.
        let waiter = thread::spawn(move || {
            let permit = b.acquire();
            assert_eq!(b.in_flight(), 1);
            drop(permit);
        });
        assert!(bulkhead.release_raw());
        waiter.join().unwrap();
        assert_eq!(bulkhead.in_flight(), 0);
    });
}
