//! Runs one hot path a fixed number of times, for instruction counting
//! under `valgrind --tool=callgrind` (stable on noisy machines, unlike time):
//! `cargo run --release -p tripwire-benches --example hot_path -- <path> [iterations]`.
//! Prints the loop's time per iteration too.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use tower::{Layer, Service};
use tripwire::{
    Assessment, Breaker, BreakerConfig, Bulkhead, CallError, MonotonicClock, NamedBreaker, Outcome, Pipeline,
    clock::{CachedClock, CoarseClock, FixedClock},
    keyed::Breakers,
    retry::{Backoff, BackoffConfig, RetryBudget, RetryBudgetConfig, RetryPolicy},
    tower::BreakerLayer,
};
use tripwire_benches::{Failed, failing, guarded};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "consecutive".into());
    let n: u64 = args.next().map(|s| s.parse().expect("iterations: a number")).unwrap_or(1_000_000);
    let consecutive = Breaker::new(BreakerConfig::default());
    let uncounted = Breaker::new(BreakerConfig::builder().count_successes(false).build().unwrap());
    let bulkhead = Bulkhead::new(8);
    let budget = RetryBudget::new(RetryBudgetConfig::default());
    let mut backoff = Backoff::new(BackoffConfig::default());
    let windowed = Breaker::new(
        BreakerConfig::builder().failure_threshold(0).failure_rate(0.5).build().expect("valid config"),
    );
    let count_windowed = Breaker::new(
        BreakerConfig::builder().failure_threshold(0).failure_rate(0.5).count_window(100).build().unwrap(),
    );
    let open = Breaker::new(
        BreakerConfig::builder()
            .failure_threshold(1)
            .open_timeout(Duration::from_secs(3600))
            .build()
            .unwrap(),
    );
    let _ = open.call(&MonotonicClock, || failing(0));
    // Every layer of a pipeline, closed and open: the composition engine's
    // cost per call beyond the breaker's.
    let layered = |breaker: Arc<NamedBreaker>| {
        Pipeline::builder()
            .retry(RetryPolicy::builder().max_attempts(3).build().unwrap())
            .retry_budget(Arc::new(RetryBudget::new(RetryBudgetConfig::default())))
            .breaker(breaker)
            .bulkhead(Arc::new(Bulkhead::new(64)))
            .build()
    };
    let pipeline = layered(Arc::new(NamedBreaker::new("closed", BreakerConfig::default())));
    let held = Arc::new(NamedBreaker::new("open", BreakerConfig::default()));
    held.force_open();
    let pipeline_open = layered(held);
    let counter = AtomicU64::new(0);
    let clock = FixedClock(1);
    // The longest period, so that the upkeep thread's few ticks stay out of
    // the count; its readers run the same load as the global clock's.
    let upkeep = CachedClock::start(CachedClock::MAX_PERIOD).expect("an upkeep thread");
    let cached: &CachedClock = upkeep.clock();
    // The loop's time, for timing variants of one path against each other
    // (benches/window_variants.sh); callgrind counts ignore it.
    let repeat = |f: &mut dyn FnMut()| {
        let start = std::time::Instant::now();
        (0..n).for_each(|_| f());
        println!("{:.3} ns per iteration", start.elapsed().as_nanos() as f64 / n as f64);
    };
    // The tower breaker layer around a service that answers at once,
    // called and its future polled once, without a runtime; `tower_bare` is
    // the service alone, driven the same way.
    let mut tower_bare = dependency();
    let mut tower_closed = tower_breaker(BreakerConfig::default());
    let mut tower_open = tower_breaker(
        BreakerConfig::builder()
            .failure_threshold(1)
            .open_timeout(Duration::from_secs(3600))
            .build()
            .unwrap(),
    );
    assert!(
        drive(&mut tower_open, 0).is_err() && drive(&mut tower_open, 1).is_err(),
        "tripped, then refusing"
    );
    // A closed call of one key among 10,000 (the criterion bench's symbols),
    // next to the same call of one `NamedBreaker`. A fixed seed, so that
    // filling the map costs the same in every run (callgrind.sh counts
    // each path's setup in a run of its own and takes it off).
    let template = BreakerConfig::builder().failure_threshold(5).build().unwrap();
    let named = NamedBreaker::new("plain", template);
    let keyed = Breakers::<String>::builder("symbols", template)
        .capacity(10_000)
        .hasher(foldhash::fast::FixedState::default())
        .build()
        .unwrap();
    if path.starts_with("keyed") {
        (0..10_000).for_each(|i| _ = keyed.call(&format!("SYM{i:04}USDT"), || guarded(1)));
    }
    match path.as_str() {
        "named_call" => repeat(&mut || _ = black_box(named.call(|| guarded(black_box(1))))),
        "keyed" => {
            repeat(&mut || _ = black_box(keyed.call(black_box("SYM5000USDT"), || guarded(black_box(1)))))
        }
        "keyed_pinned" => {
            let pinned = keyed.pin();
            repeat(&mut || _ = black_box(pinned.call(black_box("SYM5000USDT"), || guarded(black_box(1)))))
        }
        "tower_bare" => repeat(&mut || _ = black_box(drive(&mut tower_bare, black_box(1)))),
        "tower_closed" => repeat(&mut || _ = black_box(drive(&mut tower_closed, black_box(1)))),
        "tower_open" => repeat(&mut || _ = black_box(drive(&mut tower_open, black_box(1)))),
        "bare" => repeat(&mut || _ = black_box(guarded(black_box(1)))),
        "fetch_add" => repeat(&mut || {
            _ = black_box(counter.fetch_add(1, Ordering::AcqRel));
            _ = black_box(guarded(black_box(1)));
        }),
        "consecutive" => repeat(&mut || {
            let t = consecutive.try_acquire(&clock).unwrap();
            let r = guarded(black_box(1));
            black_box(consecutive.record(t, Outcome::Success, &clock));
            _ = black_box(r);
        }),
        "call" => repeat(&mut || _ = black_box(consecutive.call(&clock, || guarded(black_box(1))))),
        "call_monotonic" => {
            repeat(&mut || _ = black_box(consecutive.call(&MonotonicClock, || guarded(black_box(1)))))
        }
        "consecutive_uncounted" => repeat(&mut || {
            let t = uncounted.try_acquire(&clock).unwrap();
            let r = guarded(black_box(1));
            black_box(uncounted.record(t, Outcome::Success, &clock));
            _ = black_box(r);
        }),
        "bulkhead" => repeat(&mut || {
            let permit = bulkhead.try_acquire().unwrap();
            _ = black_box(guarded(black_box(1)));
            drop(permit);
        }),
        "budget" => repeat(&mut || {
            budget.deposit(&clock);
            _ = black_box(budget.try_withdraw(&clock));
            _ = black_box(guarded(black_box(1)));
        }),
        "backoff" => repeat(&mut || {
            _ = black_box(backoff.next_delay());
            _ = black_box(guarded(black_box(1)));
        }),
        "window" => repeat(&mut || _ = black_box(windowed.call(&clock, || guarded(black_box(1))))),
        "window_cached" => repeat(&mut || _ = black_box(windowed.call(cached, || guarded(black_box(1))))),
        "count_window" => {
            repeat(&mut || _ = black_box(count_windowed.call(&clock, || guarded(black_box(1)))))
        }
        // Each path makes the guarded call once, so that the bare loop can be
        // subtracted from all of them alike.
        "reject_monotonic" => repeat(&mut || {
            _ = black_box(open.try_acquire(&MonotonicClock));
            _ = black_box(guarded(black_box(1)));
        }),
        "reject_coarse" => repeat(&mut || {
            _ = black_box(open.try_acquire(&CoarseClock));
            _ = black_box(guarded(black_box(1)));
        }),
        "reject_cached" => repeat(&mut || {
            _ = black_box(open.try_acquire(cached));
            _ = black_box(guarded(black_box(1)));
        }),
        "pipeline" => repeat(&mut || _ = black_box(pipeline.call(|| guarded(black_box(1))))),
        "pipeline_reject" => repeat(&mut || _ = black_box(pipeline_open.call(|| guarded(black_box(1))))),
        other => panic!(
            "unknown path {other:?}: bare, fetch_add, consecutive, window, window_cached, count_window, \
             reject_monotonic, reject_coarse, reject_cached, pipeline, pipeline_reject, tower_bare, \
             tower_closed, tower_open, named_call, keyed, keyed_pinned"
        ),
    }
}

/// The service the tower paths wrap: `guarded`, or `failing` for request 0.
fn dependency() -> impl Service<u64, Response = u64, Error = Failed> {
    tower::service_fn(|x: u64| async move { if x == 0 { failing(x) } else { guarded(x) } })
}

fn tower_breaker(config: BreakerConfig) -> impl Service<u64, Response = u64, Error = CallError<Failed>> {
    let judge = |r: &Result<u64, Failed>| if r.is_ok() { Assessment::Success } else { Assessment::Failure };
    BreakerLayer::new(Arc::new(NamedBreaker::new("tower", config))).classify(judge).layer(dependency())
}

/// `poll_ready`, `call`, and one poll of the future, which is ready at once.
fn drive<S: Service<u64>>(svc: &mut S, req: u64) -> Result<S::Response, S::Error> {
    let mut cx = Context::from_waker(Waker::noop());
    let Poll::Ready(Ok(())) = svc.poll_ready(&mut cx) else { panic!("the service is ready at once") };
    let Poll::Ready(result) = pin!(svc.call(req)).poll(&mut cx) else { panic!("the call ends at once") };
    result
}
