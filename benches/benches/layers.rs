//! What each layer of the std/async pipeline costs on its success path,
//! next to a bare call and the core breaker alone.
//!
//! `cargo bench -p tripwire-benches --bench layers`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use tripwire::{
    Breaker, BreakerConfig, Bulkhead, MonotonicClock, NamedBreaker, Pipeline,
    retry::{BackoffConfig, RetryBudget, RetryBudgetConfig, RetryPolicy},
    timeout::TokioTimer,
};
use tripwire_benches::guarded;

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

criterion_group!(benches, sync_layers, async_layers);
criterion_main!(benches);
