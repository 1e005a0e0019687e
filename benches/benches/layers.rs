//! What each layer of the std/async pipeline costs on its success path,
//! next to a bare call and the core breaker alone; and the tower breaker
//! layer, closed and open, next to a bare service, a wrapper that does
//! nothing and tower-resilience's breaker, in one group.
//!
//! `cargo bench -p tripwire-benches --bench layers`

use std::hint::black_box;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use tower::{Layer, Service};
use tripwire::{
    Assessment, Breaker, BreakerConfig, Bulkhead, CallError, Clock, MonotonicClock, NamedBreaker, Pipeline,
    clock::{CachedClock, CoarseClock},
    retry::{BackoffConfig, RetryBudget, RetryBudgetConfig, RetryPolicy},
    timeout::TokioTimer,
    tower::BreakerLayer,
};
use tripwire_benches::{Failed, failing, guarded};

fn retry() -> RetryPolicy<'static> {
    let backoff = BackoffConfig::builder().base(Duration::from_millis(1)).build().unwrap();
    RetryPolicy::builder().max_attempts(3).backoff(backoff).build().unwrap()
}

fn named() -> Arc<NamedBreaker> {
    Arc::new(NamedBreaker::new("bench", BreakerConfig::default()))
}

fn sync_layers(c: &mut Criterion) {
    let mut g = c.benchmark_group("layers_sync");
    g.bench_function(BenchmarkId::new("baseline", "bare call"), |b| b.iter(|| guarded(black_box(1))));
    let core = Box::new(Breaker::new(BreakerConfig::default()));
    g.bench_function(BenchmarkId::new("tripwire", "core Breaker::call"), |b| {
        b.iter(|| core.call(&MonotonicClock, || guarded(black_box(1))))
    });
    let n = named();
    g.bench_function(BenchmarkId::new("tripwire", "NamedBreaker::call"), |b| {
        b.iter(|| n.call(|| guarded(black_box(1))))
    });
    let budget = Arc::new(RetryBudget::new(RetryBudgetConfig::default()));
    let pipelines = [
        ("pipeline: breaker", Pipeline::builder().breaker(named()).build()),
        (
            "pipeline: breaker + bulkhead",
            Pipeline::builder().breaker(named()).bulkhead(Arc::new(Bulkhead::new(64))).build(),
        ),
        ("pipeline: retry", Pipeline::builder().retry(retry()).build()),
        ("pipeline: retry + budget", Pipeline::builder().retry(retry()).retry_budget(budget.clone()).build()),
        (
            "pipeline: retry + budget + breaker + bulkhead",
            Pipeline::builder()
                .retry(retry())
                .retry_budget(budget)
                .breaker(named())
                .bulkhead(Arc::new(Bulkhead::new(64)))
                .build(),
        ),
    ];
    for (name, p) in &pipelines {
        g.bench_function(BenchmarkId::new("tripwire", name), |b| b.iter(|| p.call(|| guarded(black_box(1)))));
    }
    g.finish();
}

fn async_layers(c: &mut Criterion) {
    let mut g = c.benchmark_group("layers_async");
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    g.bench_function(BenchmarkId::new("baseline", "bare future"), |b| {
        b.to_async(&rt).iter(|| async { guarded(black_box(1)) })
    });
    let breaker_only = Pipeline::builder().breaker(named()).timer(TokioTimer).build();
    g.bench_function(BenchmarkId::new("tripwire", "pipeline: breaker"), |b| {
        b.to_async(&rt).iter(|| breaker_only.call_async(|| async { guarded(black_box(1)) }))
    });
    let all = Pipeline::builder()
        .retry(retry())
        .retry_budget(Arc::new(RetryBudget::new(RetryBudgetConfig::default())))
        .breaker(named())
        .bulkhead(Arc::new(Bulkhead::new(64)))
        .timeout(Duration::from_secs(2))
        .timer(TokioTimer)
        .build();
    g.bench_function(BenchmarkId::new("tripwire", "pipeline: all layers + tokio timeout"), |b| {
        b.to_async(&rt).iter(|| all.call_async(|| async { guarded(black_box(1)) }))
    });
    g.finish();
}

/// The service every tower row wraps: `guarded`, or `failing` for request 0
/// (to trip the breakers of the open rows).
fn dependency()
-> impl Service<u64, Response = u64, Error = Failed, Future: Send + 'static> + Clone + Send + 'static {
    tower::service_fn(|x: u64| async move { if x == 0 { failing(x) } else { guarded(x) } })
}

/// `poll_ready`, then `call`: how a caller drives a tower service. Every
/// service here is ready at once; the caller awaits the returned future.
fn ready_call<S: Service<u64>>(svc: &mut S, req: u64) -> S::Future {
    match svc.poll_ready(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(Ok(())) => svc.call(req),
        _ => panic!("the benched services are always ready"),
    }
}

/// A tower layer that does nothing but wrap: its future maps the inner
/// error into its own, as a breaker's does. The floor any wrapping layer
/// stands on.
#[derive(Clone)]
struct Wrap<S>(S);

#[derive(Debug)]
struct Wrapped<E>(E);

pin_project_lite::pin_project! {
    struct WrapFuture<F> {
        #[pin]
        inner: F,
    }
}

impl<S: Service<u64>> Service<u64> for Wrap<S> {
    type Response = S::Response;
    type Error = Wrapped<S::Error>;
    type Future = WrapFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx).map_err(Wrapped)
    }

    fn call(&mut self, req: u64) -> Self::Future {
        WrapFuture { inner: self.0.call(req) }
    }
}

impl<T, E, F: Future<Output = Result<T, E>>> Future for WrapFuture<F> {
    type Output = Result<T, Wrapped<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll(cx).map_err(Wrapped)
    }
}

/// A layer that does what a breaker layer cannot do without: its future
/// owns a shared handle (so that it may outlive the service, and report
/// when dropped) and counts the call when it completes (one relaxed
/// `fetch_add`). The floor of a layer whose futures are `'static`.
#[derive(Clone)]
struct Counted<S>(S, Arc<AtomicU64>);

pin_project_lite::pin_project! {
    struct CountedFuture<F> {
        #[pin]
        inner: F,
        count: Arc<AtomicU64>,
    }
}

impl<S: Service<u64>> Service<u64> for Counted<S> {
    type Response = S::Response;
    type Error = Wrapped<S::Error>;
    type Future = CountedFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx).map_err(Wrapped)
    }

    fn call(&mut self, req: u64) -> Self::Future {
        CountedFuture { inner: self.0.call(req), count: self.1.clone() }
    }
}

impl<T, E, F: Future<Output = Result<T, E>>> Future for CountedFuture<F> {
    type Output = Result<T, Wrapped<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = std::task::ready!(this.inner.poll(cx));
        this.count.fetch_add(1, Ordering::Relaxed);
        Poll::Ready(result.map_err(Wrapped))
    }
}

fn judge(r: &Result<u64, Failed>) -> Assessment {
    if r.is_ok() { Assessment::Success } else { Assessment::Failure }
}

/// The tower breaker layer around `dependency`, on a breaker reading `clock`
/// that trips at its first failure and stays open for an hour.
fn tripwire_tower<C: Clock>(clock: C) -> impl Service<u64, Response = u64, Error = CallError<Failed>> {
    let config = BreakerConfig::builder()
        .failure_threshold(1)
        .open_timeout(Duration::from_secs(3600))
        .build()
        .unwrap();
    let breaker = Arc::new(NamedBreaker::with_clock("bench", config, clock));
    BreakerLayer::new(breaker).classify(judge).layer(dependency())
}

fn tower_resilience() -> impl Service<u64, Response = u64, Error = impl std::fmt::Debug> {
    let layer = tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
        .consecutive_failures(1)
        .wait_duration_in_open(Duration::from_secs(3600))
        .build()
        .unwrap();
    layer.layer(dependency())
}

fn tower_layer(c: &mut Criterion) {
    let mut g = c.benchmark_group("tower_breaker");
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    g.bench_function(BenchmarkId::new("baseline", "bare service"), |b| {
        let mut svc = dependency();
        b.to_async(&rt).iter(|| ready_call(&mut svc, black_box(1)))
    });
    g.bench_function(BenchmarkId::new("baseline", "wrapper doing nothing"), |b| {
        let mut svc = Wrap(dependency());
        b.to_async(&rt).iter(|| ready_call(&mut svc, black_box(1)))
    });
    g.bench_function(BenchmarkId::new("baseline", "wrapper owning an Arc, counting"), |b| {
        let mut svc = Counted(dependency(), Arc::new(AtomicU64::new(0)));
        b.to_async(&rt).iter(|| ready_call(&mut svc, black_box(1)))
    });
    // Closed: every call admitted and counted a success.
    fn closed<S: Service<u64, Future: Future<Output = Result<u64, E>>>, E>(
        g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
        rt: &tokio::runtime::Runtime,
        id: BenchmarkId,
        mut svc: S,
    ) {
        g.bench_function(id, |b| b.to_async(rt).iter(|| ready_call(&mut svc, black_box(1))));
    }
    // Open: tripped by one failure, every later call refused.
    fn open<S: Service<u64, Future: Future<Output = Result<u64, E>>>, E>(
        g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
        rt: &tokio::runtime::Runtime,
        id: BenchmarkId,
        mut svc: S,
    ) {
        assert!(rt.block_on(ready_call(&mut svc, 0)).is_err(), "the failure");
        assert!(rt.block_on(ready_call(&mut svc, 1)).is_err(), "refused once open");
        g.bench_function(id, |b| b.to_async(rt).iter(|| ready_call(&mut svc, black_box(1))));
    }
    closed(&mut g, &rt, BenchmarkId::new("tripwire", "closed"), tripwire_tower(MonotonicClock));
    open(&mut g, &rt, BenchmarkId::new("tripwire", "open"), tripwire_tower(MonotonicClock));
    open(&mut g, &rt, BenchmarkId::new("tripwire", "open, CoarseClock"), tripwire_tower(CoarseClock));
    open(
        &mut g,
        &rt,
        BenchmarkId::new("tripwire", "open, CachedClock"),
        tripwire_tower(CachedClock::global()),
    );
    closed(&mut g, &rt, BenchmarkId::new("tower-resilience-circuitbreaker", "closed"), tower_resilience());
    open(&mut g, &rt, BenchmarkId::new("tower-resilience-circuitbreaker", "open"), tower_resilience());
    g.finish();
}

criterion_group!(benches, sync_layers, async_layers, tower_layer);
criterion_main!(benches);
