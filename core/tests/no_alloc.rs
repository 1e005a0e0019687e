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

/// Bulkhead and retry events, heard by two listeners each, allocate
/// nothing: a refusal by a full bulkhead costs no allocation with them, and
/// a pipeline whose retries run out (or find no budget) allocates exactly
/// what it allocates without them (the boxed last error of its
/// `PipelineError`).
#[cfg(feature = "std")]
#[test]
fn bulkhead_and_retry_events_allocate_nothing() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tripwire::{
        Bulkhead, Pipeline,
        events::Events,
        pipeline::PipelineError,
        retry::{BackoffConfig, RetryBudget, RetryBudgetConfig, RetryPolicy},
    };

    let events = Arc::new(Events::new("exchange/rest"));
    let heard = Arc::new(AtomicUsize::new(0));
    for _ in 0..2 {
        let (b, r) = (heard.clone(), heard.clone());
        // Relaxed: listeners run on this thread, which reads the count after the loop.
        events.on_bulkhead(move |e| {
            assert!(!e.name().is_empty());
            b.fetch_add(1, Ordering::Relaxed);
        });
        events.on_retry(move |e| {
            assert!(!e.name().is_empty());
            r.fetch_add(1, Ordering::Relaxed);
        });
    }
    let bulkhead = Arc::new(Bulkhead::new(1));
    let backoff = BackoffConfig::builder().base(Duration::from_nanos(1)).build().unwrap();
    let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff).build().unwrap();
    let empty = RetryBudgetConfig::builder().ratio(0.0).min_retries_per_sec(0.0).build().unwrap();
    let budget = Arc::new(RetryBudget::new(empty));
    let full = Pipeline::builder().bulkhead(bulkhead.clone()).retry(policy).events(events.clone()).build();
    let retrying = |with: bool| {
        let b = Pipeline::builder().retry(policy);
        if with { b.events(events.clone()) } else { b }.build()
    };
    let frugal = |with: bool| {
        let b = Pipeline::builder().retry(policy).retry_budget(budget.clone());
        if with { b.events(events.clone()) } else { b }.build()
    };
    let (retrying_with, retrying_without) = (retrying(true), retrying(false));
    let (frugal_with, frugal_without) = (frugal(true), frugal(false));
    let _busy = bulkhead.try_acquire().unwrap();

    let rounds = if cfg!(miri) { 5 } else { 10_000 };
    let refusals = allocations_in(|| {
        for _ in 0..rounds {
            assert!(matches!(full.call(|| Ok::<_, ()>(1)), Err(PipelineError::Full(_))));
        }
    });
    assert_eq!(refusals, 0, "allocations over {rounds} refusals reported to two listeners");
    let run = |p: &Pipeline| {
        allocations_in(|| {
            for _ in 0..rounds {
                assert!(p.call(|| Err::<(), _>("503")).is_err());
            }
        })
    };
    assert_eq!(run(&retrying_with), run(&retrying_without), "retries reported to two listeners");
    assert_eq!(run(&frugal_with), run(&frugal_without), "budget refusals reported to two listeners");
    // Per round: a refusal, two retries and their end, one budget refusal;
    // each heard by both listeners.
    assert_eq!(heard.load(Ordering::Relaxed), 2 * (1 + 3 + 1) * rounds);
    let c = events.counts();
    let rounds = rounds as u64;
    assert_eq!((c.bulkhead_refused, c.retries_scheduled, c.retries_exhausted), (rounds, 2 * rounds, rounds));
    assert_eq!(c.retry_budget_refused, rounds);
}

/// A tower bulkhead's refusal, reported to a listener, allocates nothing.
#[cfg(feature = "tower")]
#[test]
fn a_tower_bulkhead_refusal_with_events_allocates_nothing() {
    use core::pin::pin;
    use core::task::{Context, Poll, Waker};
    use std::sync::Arc;
    use tower_layer::Layer;
    use tower_service::Service;
    use tripwire::tower::{BulkheadError, BulkheadLayer};
    use tripwire::{Bulkhead, events::Events};

    let events = Arc::new(Events::new("exchange/rest"));
    events.on_bulkhead(|e| assert!(e.is_refusal()));
    let bulkhead = Arc::new(Bulkhead::new(0));
    let mut svc = BulkheadLayer::new(bulkhead).events(events.clone()).layer(tower_service_fn());
    let mut cx = Context::from_waker(Waker::noop());
    let rounds = if cfg!(miri) { 5 } else { 10_000 };
    let allocated = allocations_in(|| {
        for _ in 0..rounds {
            assert!(svc.poll_ready(&mut cx).is_ready());
            let refused = pin!(svc.call(()));
            assert!(matches!(refused.poll(&mut cx), Poll::Ready(Err(BulkheadError::Full(_)))));
        }
    });
    assert_eq!(allocated, 0, "allocations over {rounds} refusals");
    assert_eq!(events.counts().bulkhead_refused, rounds as u64);
}

/// A service that answers at once.
#[cfg(feature = "tower")]
fn tower_service_fn() -> Ready {
    Ready
}

#[cfg(feature = "tower")]
#[derive(Clone)]
struct Ready;

#[cfg(feature = "tower")]
impl tower_service::Service<()> for Ready {
    type Response = ();
    type Error = std::io::Error;
    type Future = core::future::Ready<Result<(), std::io::Error>>;
    fn poll_ready(&mut self, _: &mut core::task::Context<'_>) -> core::task::Poll<Result<(), Self::Error>> {
        core::task::Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: ()) -> Self::Future {
        core::future::ready(Ok(()))
    }
}

/// A shared bulkhead allocates nothing: not its acquires and releases, not
/// a refusal, and not the reclaim pass with its liveness checks (`kill`,
/// `/proc/<pid>/stat` read into a stack buffer).
#[cfg(feature = "std")]
#[test]
#[cfg_attr(miri, ignore)] // the liveness checks call kill and read /proc
fn shared_bulkhead_paths_allocate_nothing() {
    use tripwire::shared::{Holder, SlotTable};

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

/// A keyed map allocates when a key is new (its entry, its breaker), never
/// for a key that exists: lookups by `&str`, calls, trips and recoveries
/// through `call`, `with` and `with_slot` allocate nothing.
#[cfg(all(feature = "keyed", not(miri)))]
#[test]
fn lookups_of_keys_that_exist_allocate_nothing() {
    use tripwire::keyed::Breakers;

    let clock = &*Box::leak(Box::new(ManualClock::new(0)));
    let config =
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_millis(1)).build().unwrap();
    let map: Breakers<String, &ManualClock> =
        Breakers::<String>::builder("m", config).clock(clock).build().unwrap();
    let keys: Vec<String> = (0..100).map(|i| format!("SYM{i}")).collect();
    // Made first, with the thread's first guard of the map (which registers
    // the thread with the map's collector, once).
    for key in &keys {
        let _ = map.call(key.as_str(), || Ok::<_, ()>(()));
    }
    let allocated = allocations_in(|| {
        for round in 0..1_000 {
            for key in &keys {
                let key = key.as_str();
                let _ = map.call(key, || Ok::<_, ()>(()));
                if round % 100 == 0 {
                    let _ = map.call(key, || Err::<(), _>("503"));
                    assert_eq!(map.with(key, |b| b.state()), State::Open);
                    clock.advance(Duration::from_millis(2));
                    assert_eq!(map.with_slot(key, |b, ()| b.call(|| Ok::<_, ()>(1)).ok()), Some(1));
                }
            }
        }
    });
    assert_eq!(allocated, 0, "allocations by lookups of keys that exist");
    assert_eq!(map.counts().created, 100);
}
