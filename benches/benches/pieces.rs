//! The core's other hot paths next to one `fetch_add`: bulkhead acquire +
//! release, backoff's next delay, a retry-budget deposit + withdrawal.
//!
//! `cargo bench -p tripwire-benches --bench pieces`

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use tripwire::{
    Bulkhead,
    clock::{CoarseClock, FixedClock},
    retry::{Backoff, BackoffConfig, RetryBudget, RetryBudgetConfig},
};

fn pieces(c: &mut Criterion) {
    let mut g = c.benchmark_group("pieces");
    let counter = AtomicU64::new(0);
    g.bench_function(BenchmarkId::new("baseline", "fetch_add"), |b| {
        b.iter(|| counter.fetch_add(1, Ordering::AcqRel))
    });
    let bulkhead = Bulkhead::new(64);
    g.bench_function(BenchmarkId::new("tripwire", "bulkhead acquire + release"), |b| {
        b.iter(|| drop(black_box(bulkhead.try_acquire())))
    });
    let full = Bulkhead::new(1);
    let _held = full.try_acquire().unwrap();
    g.bench_function(BenchmarkId::new("tripwire", "bulkhead rejection"), |b| {
        b.iter(|| full.try_acquire().is_err())
    });
    let mut backoff = Backoff::new(BackoffConfig::default());
    g.bench_function(BenchmarkId::new("tripwire", "backoff next delay"), |b| {
        b.iter(|| {
            if backoff.attempt() > 20 {
                backoff.reset();
            }
            backoff.next_delay()
        })
    });
    let budget = RetryBudget::new(RetryBudgetConfig::default());
    g.bench_function(BenchmarkId::new("tripwire", "budget deposit + withdraw, caller's clock"), |b| {
        let clock = FixedClock(1_000_000_000);
        b.iter(|| {
            budget.deposit(&clock);
            budget.try_withdraw(&clock)
        })
    });
    g.bench_function(BenchmarkId::new("tripwire", "budget deposit + withdraw, CoarseClock"), |b| {
        b.iter(|| {
            budget.deposit(&CoarseClock);
            budget.try_withdraw(&CoarseClock)
        })
    });
    g.finish();
}

criterion_group!(benches, pieces);
criterion_main!(benches);
