//! Every breaker path, transitions included, allocates nothing: a counting
//! global allocator sees no allocation by the test's thread between the
//! first and last call (the harness's own threads may allocate meanwhile).

use core::time::Duration;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use tripwire::{Breaker, BreakerConfig, CallError, ManualClock, Outcome, State};

struct Counting;

thread_local! {
    /// Set on the thread under test only; const initialisers, so reading
    /// them inside the allocator never allocates. Per thread, so that tests
    /// running side by side do not count each other's allocations.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    if COUNTING.with(Cell::get) {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
    }
}

/// Allocations by this thread while `f` runs.
fn allocations_in(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(Cell::get) - before
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees carry over; the counter is a side effect.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn no_path_allocates() {
    let clock = ManualClock::new(0);
    let breaker = Breaker::new(
        BreakerConfig::builder()
            .failure_threshold(2)
            .open_timeout(Duration::from_millis(1))
            .open_timeout_max(Duration::from_millis(8))
            .open_timeout_growth(2.0)
            .open_timeout_jitter(0.5)
            .half_open_max(2)
            .half_open_successes(2)
            .build()
            .unwrap(),
    );
    let rounds = if cfg!(miri) { 5 } else { 100_000 };
    let allocated = allocations_in(|| {
        for round in 0..rounds {
            // Closed: successes, failures, a trip.
            breaker.permit(&clock).unwrap().success();
            for _ in 0..2 {
                let _ = breaker.call(&clock, || Err::<(), _>("503"));
            }
            assert!(matches!(breaker.call(&clock, || Ok::<_, ()>(())), Err(CallError::Rejected(_))));
            // Half-Open: one probe fails (re-open), then two succeed (close).
            clock.advance(Duration::from_millis(10));
            breaker.permit(&clock).unwrap().failure();
            clock.advance(Duration::from_millis(10));
            let (a, b) = (breaker.permit(&clock).unwrap(), breaker.permit(&clock).unwrap());
            drop(a); // dropped unrecorded: ignored, frees its slot
            b.success();
            breaker.permit(&clock).unwrap().record(Outcome::Success);
            assert_eq!(breaker.state(), State::Closed, "round {round}");
            // Manual modes.
            breaker.force_open();
            let _ = breaker.try_acquire(&clock);
            breaker.disable();
            breaker.permit(&clock).unwrap().failure();
            breaker.reset();
            let _ = breaker.snapshot();
        }
    });
    assert_eq!(allocated, 0, "allocations over {rounds} rounds of every path");
}

/// A named breaker's transitions, each heard by two listeners, allocate
/// nothing either: listeners run from the list itself, not from a copy.
#[cfg(feature = "std")]
#[test]
fn transitions_heard_by_listeners_allocate_nothing() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tripwire::NamedBreaker;

    let breaker = NamedBreaker::with_clock(
        "exchange/rest",
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_millis(1)).build().unwrap(),
        ManualClock::new(0),
    );
    let heard = Arc::new(AtomicUsize::new(0));
    for _ in 0..2 {
        let heard = heard.clone();
        breaker.on_state_change(move |c| {
            assert!(!c.name.is_empty());
            // Relaxed: listeners run on this thread, which reads the count after the loop.
            heard.fetch_add(1, Ordering::Relaxed);
        });
    }
    let rounds = if cfg!(miri) { 5 } else { 100_000 };
    let allocated = allocations_in(|| {
        for _ in 0..rounds {
            // Closed -> Open -> Half-Open -> Closed, the same through a hold, then
            // forced open, disabled, reset.
            breaker.permit().unwrap().record(Outcome::Failure);
            breaker.clock().advance(Duration::from_millis(2));
            breaker.permit().unwrap().record(Outcome::Success);
            breaker.open_for(Duration::from_millis(1));
            breaker.clock().advance(Duration::from_millis(2));
            breaker.permit().unwrap().record(Outcome::Success);
            breaker.force_open();
            breaker.disable();
            breaker.reset();
        }
    });
    assert_eq!(allocated, 0, "allocations over {rounds} rounds of transitions with listeners");
    // Nine transitions a round, each heard by both listeners.
    assert_eq!(heard.load(Ordering::Relaxed), 2 * 9 * rounds, "every listener heard every transition");
}

/// A shared bulkhead allocates nothing: not its acquires and releases, not
/// a refusal, and not the reclaim pass with its liveness checks (`kill`,
/// `/proc/<pid>/stat` read into a stack buffer).
#[cfg(feature = "std")]
#[test]
#[cfg_attr(miri, ignore)] // the liveness checks call kill and read /proc
fn shared_bulkhead_paths_allocate_nothing() {
    use tripwire::{Holder, SlotTable};

    let table = SlotTable::<2>::new(2).unwrap();
    let b = table.bulkhead();
    // This process's identity is computed (and cached) once, outside the count.
    let _ = Holder::this_process();
    // A process gone (no such pid), and pid 1 with a start tag it never had.
    let gone = Holder::new((1 << 22) + 3, 1, 0).unwrap();
    let reused = Holder::new(1, Holder::MAX_START, 0).unwrap();
    let allocated = allocations_in(|| {
        for _ in 0..1_000 {
            let s = b.try_acquire_here().unwrap();
            assert!(b.release(s));
        }
        let held = [b.try_acquire_here().unwrap(), b.try_acquire_here().unwrap()];
        assert!(b.try_acquire_here().is_err());
        for s in held {
            assert!(b.release(s));
        }
        let ghosts = [b.try_acquire(gone).unwrap(), b.try_acquire(reused).unwrap()];
        assert_eq!(b.reclaim_dead(), 1 + u32::from(reused.is_dead()));
        let _ = b.release(ghosts[1]);
    });
    assert_eq!(allocated, 0, "allocations on the shared bulkhead's paths");
}
