//! loom models of the awaitable bulkhead acquire: a release always wakes a
//! waiting future (no lost wake-up), and a cancelled wait leaves no slot
//! taken. Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test
//! -p tripwire-breaker --release --target-dir target/loom --features async --test
//! loom_bulkhead_async`.
//!
//! Every model races for real (see `loom_support`) and fails when the
//! ordering or check it names under "Guards" is weakened;
//! `tests/mutants/run.sh` makes each of those weakenings and shows it.
#![cfg(all(loom, feature = "async"))]

mod loom_support;

use core::time::Duration;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use loom_support::model;
use tripwire::{Bulkhead, timeout::Timer};

/// A timer that never fires: only a release can end the wait.
struct Never;

impl Timer for Never {
    type Sleep = core::future::Pending<()>;
    fn sleep(&self, _: Duration) -> Self::Sleep {
        core::future::pending()
    }
}

/// Guards: the wake-up in `release_raw`, and the future's second look at
/// the word after it starts listening (without either, the future sleeps
/// for good with the slot free; loom reports a deadlock).
#[test]
fn a_release_always_wakes_the_waiting_future() {
    model(
        [
            "the future had been polled when the release began",
            "the release began before the future was polled",
        ],
        |sides| {
            let bulkhead = Arc::new(Bulkhead::new(1));
            let held = bulkhead.try_acquire().unwrap();
            // Set just before the future is polled: a loom atomic, so that loom
            // races it against the release (as in the blocking model).
            let asking = Arc::new(AtomicBool::new(false));
            let (b, a) = (bulkhead.clone(), asking.clone());
            let waiter = thread::spawn(move || {
                a.store(true, Ordering::SeqCst);
                // Deadlocks (and loom reports it) if the release's wake-up is lost.
                let slot = block_on(b.acquire_async(&Never, Duration::from_secs(1)));
                assert!(slot.is_ok());
            });
            sides.saw(usize::from(!asking.load(Ordering::SeqCst)));
            drop(held);
            waiter.join().unwrap();
            assert_eq!(bulkhead.in_flight(), 0);
            assert_eq!(bulkhead.snapshot().acquired, 2);
        },
    );
}

/// A wait given up (its future dropped after one poll) racing a release:
/// the slot ends free whichever came first.
///
/// Guards: the release in `Waiting::drop` of a slot the cancelled wait took
/// on its way out (without it the slot leaks).
#[test]
fn a_dropped_wait_racing_a_release_leaves_the_slot_free() {
    model(["the poll took the slot", "the wait was dropped without it"], |sides| {
        let bulkhead = Arc::new(Bulkhead::new(1));
        let held = bulkhead.try_acquire().unwrap();
        let b = bulkhead.clone();
        let waiter = thread::spawn(move || {
            let mut wait = Box::pin(b.acquire_async(&Never, Duration::from_secs(1)));
            let waker = futures_noop_waker();
            let mut cx = core::task::Context::from_waker(&waker);
            // One poll registers the wait (or takes the slot), then give up.
            let got = wait.as_mut().poll(&mut cx).is_ready();
            drop(wait);
            got
        });
        drop(held);
        sides.saw(usize::from(!waiter.join().unwrap()));
        assert_eq!(bulkhead.in_flight(), 0);
        // The slot can be taken again.
        assert!(bulkhead.try_acquire().is_ok());
    });
}

fn futures_noop_waker() -> core::task::Waker {
    core::task::Waker::noop().clone()
}

/// Polls `f` on this loom thread, parking between polls; its waker unparks
/// the thread, so a lost wake-up is a deadlock loom reports.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(thread::current())));
    let mut cx = core::task::Context::from_waker(&waker);
    let mut f = core::pin::pin!(f);
    loop {
        if let core::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}
