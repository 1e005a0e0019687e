//! Real threads on one bulkhead: an independent count of holders never
//! exceeds `max`, and waiting acquires wake and time out as they should.

use core::sync::atomic::{AtomicU32, Ordering};
#[cfg(feature = "std")]
use {core::sync::atomic::AtomicBool, core::time::Duration, std::time::Instant};

use tripwire::Bulkhead;

const ROUNDS: u32 = if cfg!(miri) { 30 } else { 20_000 };

/// Counts this holder in an independent tally while it holds a slot, and
/// keeps the tally's maximum.
fn hold(observed: &AtomicU32, max_seen: &AtomicU32) {
    let now = observed.fetch_add(1, Ordering::SeqCst) + 1;
    max_seen.fetch_max(now, Ordering::Relaxed);
    core::hint::spin_loop();
    observed.fetch_sub(1, Ordering::SeqCst);
}

#[test]
fn hammering_threads_never_see_more_than_max() {
    let bulkhead = Bulkhead::new(3);
    let (observed, max_seen) = (AtomicU32::new(0), AtomicU32::new(0));
    std::thread::scope(|s| {
        for t in 0..4 {
            let (b, o, m) = (&bulkhead, &observed, &max_seen);
            s.spawn(move || {
                for i in 0..ROUNDS {
                    // Half the threads use the raw calls a C caller would.
                    if t % 2 == 0 {
                        if let Ok(_permit) = b.try_acquire() {
                            hold(o, m);
                        }
                    } else if b.try_acquire_raw() {
                        hold(o, m);
                        assert!(b.release_raw(), "round {i}");
                    }
                }
            });
        }
    });
    let s = bulkhead.snapshot();
    assert!(max_seen.load(Ordering::Relaxed) <= 3, "{} in flight", max_seen.load(Ordering::Relaxed));
    assert_eq!(s.in_flight, 0);
    assert_eq!(s.acquired + s.rejected, u64::from(4 * ROUNDS));
    assert!(s.peak_in_flight <= 3 && s.peak_in_flight >= 1);
}

#[test]
#[cfg(feature = "std")]
fn waiting_threads_take_turns_and_never_exceed_max() {
    let bulkhead = Bulkhead::new(2);
    let (observed, max_seen) = (AtomicU32::new(0), AtomicU32::new(0));
    let rounds = ROUNDS / 20;
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (b, o, m) = (&bulkhead, &observed, &max_seen);
            s.spawn(move || {
                for _ in 0..rounds {
                    // Every holder lets go quickly: no wait should time out.
                    let _permit = b.acquire_timeout(Duration::from_secs(30)).expect("woken in time");
                    hold(o, m);
                }
            });
        }
    });
    assert!(max_seen.load(Ordering::Relaxed) <= 2);
    let s = bulkhead.snapshot();
    assert_eq!((s.in_flight, s.acquired, s.rejected), (0, u64::from(4 * rounds), 0));
}

#[test]
#[cfg(feature = "std")]
fn a_release_wakes_a_parked_waiter() {
    let bulkhead = Bulkhead::new(1);
    let held = bulkhead.try_acquire().unwrap();
    let got = AtomicBool::new(false);
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let started = Instant::now();
            let permit = bulkhead.acquire_timeout(Duration::from_secs(30));
            got.store(true, Ordering::SeqCst);
            (permit.is_ok(), started.elapsed())
        });
        std::thread::sleep(Duration::from_millis(20));
        assert!(!got.load(Ordering::SeqCst), "the waiter must wait while the slot is held");
        drop(held);
        let (ok, waited) = waiter.join().unwrap();
        assert!(ok);
        // Woken by the release, not by its 30 s timeout.
        assert!(waited < Duration::from_secs(10), "{waited:?}");
    });
    assert_eq!(bulkhead.in_flight(), 0);
}

#[test]
#[cfg(feature = "std")]
fn a_wait_times_out_when_no_slot_is_freed() {
    let bulkhead = Bulkhead::new(1);
    let _held = bulkhead.try_acquire().unwrap();
    let started = Instant::now();
    let err = bulkhead.acquire_timeout(Duration::from_millis(30)).unwrap_err();
    let waited = started.elapsed();
    assert_eq!(err.max, 1);
    assert!(waited >= Duration::from_millis(30), "gave up early: {waited:?}");
    assert!(waited < Duration::from_secs(10), "overslept: {waited:?}");
    assert_eq!(bulkhead.snapshot().rejected, 1);
    // A deadline already passed refuses at once.
    assert!(bulkhead.acquire_deadline(Instant::now()).is_err());
}
