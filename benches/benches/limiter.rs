//! The rate limiter's check next to governor's, and next to one
//! `fetch_add`, in one run: uncontended, and two threads on one limiter.
//! Every check passes (limits far above the rate reached), so each row is
//! the cost of a check that admits.
//!
//! `cargo bench -p tripwire-benches --bench limiter`

use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use governor::{Quota, RateLimiter as Governor};
use tripwire::MonotonicClock;
use tripwire::clock::CachedClock;
use tripwire::limiter::{LimitConfig, RateLimiter};

/// Far more per second than a check loop reaches: every check admits.
const UNITS: u32 = 1_000_000_000;

fn limit() -> LimitConfig {
    LimitConfig::builder(UNITS, Duration::from_secs(1)).build().unwrap()
}

fn governor() -> governor::DefaultDirectRateLimiter {
    Governor::direct(Quota::per_second(NonZeroU32::new(UNITS).unwrap()))
}

fn uncontended(c: &mut Criterion) {
    let mut g = c.benchmark_group("limiter_check");
    let counter = AtomicU64::new(0);
    g.bench_function(BenchmarkId::new("baseline", "fetch_add"), |b| {
        b.iter(|| counter.fetch_add(1, Ordering::AcqRel))
    });
    let cached = CachedClock::global();
    let one = RateLimiter::new([limit()]);
    g.bench_function(BenchmarkId::new("tripwire", "one limit, CachedClock"), |b| {
        b.iter(|| black_box(one.try_acquire(black_box([1]), &cached)).is_ok())
    });
    g.bench_function(BenchmarkId::new("tripwire", "one limit, MonotonicClock"), |b| {
        b.iter(|| black_box(one.try_acquire(black_box([1]), &MonotonicClock)).is_ok())
    });
    let two = RateLimiter::new([limit(), limit()]);
    g.bench_function(BenchmarkId::new("tripwire", "two limits, CachedClock"), |b| {
        b.iter(|| black_box(two.try_acquire(black_box([1, 1]), &cached)).is_ok())
    });
    let gov = governor();
    g.bench_function(BenchmarkId::new("governor", "direct"), |b| b.iter(|| black_box(gov.check()).is_ok()));
    g.finish();
}

/// Runs `op` `iters` times on each of two threads at once; the time per
/// iteration is the wall time of the whole run divided by `iters`.
fn on_two_threads(iters: u64, op: &(impl Fn() + Sync)) -> Duration {
    let start = Instant::now();
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..iters {
                    op();
                }
            });
        }
    });
    start.elapsed()
}

fn two_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("limiter_two_threads");
    let counter = AtomicU64::new(0);
    g.bench_function(BenchmarkId::new("baseline", "fetch_add"), |b| {
        b.iter_custom(|iters| {
            on_two_threads(iters, &|| {
                counter.fetch_add(1, Ordering::AcqRel);
            })
        })
    });
    let cached = CachedClock::global();
    let one = RateLimiter::new([limit()]);
    g.bench_function(BenchmarkId::new("tripwire", "one limit, CachedClock"), |b| {
        b.iter_custom(|iters| {
            on_two_threads(iters, &|| {
                let _ = black_box(one.try_acquire(black_box([1]), &cached));
            })
        })
    });
    let gov = governor();
    g.bench_function(BenchmarkId::new("governor", "direct"), |b| {
        b.iter_custom(|iters| {
            on_two_threads(iters, &|| {
                let _ = black_box(gov.check());
            })
        })
    });
    g.finish();
}

criterion_group!(benches, uncontended, two_threads);
criterion_main!(benches);
