//! The awaitable bulkhead acquire under contention: never more than `max`
//! in flight, waiters woken on release, and cancelled waits leak nothing.
#![cfg(all(feature = "tokio", not(loom)))]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tripwire::{Bulkhead, timeout::TokioTimer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_get_slots_as_they_free_and_the_cap_holds() {
    const MAX: u32 = 3;
    let bulkhead = Arc::new(Bulkhead::new(MAX));
    let inside = Arc::new(AtomicU32::new(0));
    let tasks: Vec<_> = (0..24)
        .map(|_| {
            let (bulkhead, inside) = (bulkhead.clone(), inside.clone());
            tokio::spawn(async move {
                let _slot = bulkhead
                    .acquire_async(&TokioTimer, Duration::from_secs(5))
                    .await
                    .expect("a slot in time");
                let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                assert!(n <= MAX, "{n} in flight");
                tokio::time::sleep(Duration::from_millis(1)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let s = bulkhead.snapshot();
    assert_eq!((s.acquired, s.in_flight, s.rejected), (24, 0, 0));
    assert!(s.peak_in_flight <= MAX);
}

#[tokio::test]
async fn cancelled_and_timed_out_waits_leave_no_waiter_behind() {
    let bulkhead = Bulkhead::new(1);
    let held = bulkhead.try_acquire().unwrap();
    // One wait times out, one is dropped mid-wait.
    assert!(bulkhead.acquire_async(&TokioTimer, Duration::from_millis(5)).await.is_err());
    let dropped = bulkhead.acquire_async(&TokioTimer, Duration::from_secs(10));
    assert!(tokio::time::timeout(Duration::from_millis(5), dropped).await.is_err());
    drop(held);
    // Every slot is free again, and taking and giving it back works as before.
    let again = bulkhead.try_acquire().unwrap();
    assert!(bulkhead.try_acquire().is_err());
    drop(again);
    assert_eq!(bulkhead.in_flight(), 0);
    assert_eq!(bulkhead.snapshot().rejected, 2, "the timed-out wait and the refusal just above");
}

#[tokio::test]
async fn a_release_wakes_a_waiter_long_before_its_deadline() {
    let bulkhead = Arc::new(Bulkhead::new(1));
    let held = bulkhead.try_acquire().unwrap();
    let b = bulkhead.clone();
    let waiter = tokio::spawn(async move {
        let start = std::time::Instant::now();
        let slot = b.acquire_async(&TokioTimer, Duration::from_secs(10)).await;
        (slot.is_ok(), start.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    drop(held);
    let (ok, waited) = waiter.await.unwrap();
    assert!(ok && waited < Duration::from_secs(2), "{waited:?}");
}
