//! Two threads on one shared object, success path: does the cost per call
//! stay flat (no shared cache line written) or grow with contention?
//!
//! `cargo bench -p tripwire-benches --bench contention`

use std::hint::black_box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use failsafe::CircuitBreaker as _;
use tripwire::clock::CachedClock;
use tripwire::{Breaker, BreakerConfig, MonotonicClock, Outcome};
use tripwire_benches::{Failed, guarded};

const THREADS: usize = 2;

/// Runs `op` `iters` times on each of two threads at once; the time per
/// iteration is the wall time of the whole run divided by `iters`, i.e. the
/// cost of one call on each thread while the other calls too.
fn on_two_threads(iters: u64, op: &(impl Fn() + Sync)) -> Duration {
    let start = Instant::now();
    thread::scope(|s| {
        for _ in 0..THREADS {
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
    let mut g = c.benchmark_group("two_threads_success");
    let counter = AtomicU64::new(0);
    g.bench_function(BenchmarkId::new("baseline", "fetch_add"), |b| {
        b.iter_custom(|iters| {
            on_two_threads(iters, &|| {
                counter.fetch_add(1, Ordering::AcqRel);
            })
        })
    });
    let mutex = Mutex::new(0u64);
    g.bench_function(BenchmarkId::new("baseline", "Mutex lock+unlock"), |b| {
        b.iter_custom(|iters| on_two_threads(iters, &|| *mutex.lock().unwrap() += 1))
    });
    for (name, count) in [("consecutive", true), ("consecutive, no success count", false)] {
        let breaker =
            Box::new(Breaker::new(BreakerConfig::builder().count_successes(count).build().unwrap()));
        g.bench_function(BenchmarkId::new("tripwire", name), |b| {
            b.iter_custom(|iters| {
                on_two_threads(iters, &|| {
                    let t = breaker.try_acquire(&MonotonicClock).unwrap();
                    let _ = black_box(guarded(black_box(1)));
                    breaker.record(t, Outcome::Success, &MonotonicClock);
                })
            })
        });
    }
    let windowed = Box::new(Breaker::new(
        BreakerConfig::builder().failure_threshold(0).failure_rate(0.5).build().unwrap(),
    ));
    g.bench_function(BenchmarkId::new("tripwire", "window"), |b| {
        b.iter_custom(|iters| {
            on_two_threads(iters, &|| {
                let _ = black_box(windowed.call(&MonotonicClock, || guarded(black_box(1))));
            })
        })
    });
    let cached = CachedClock::global();
    g.bench_function(BenchmarkId::new("tripwire", "window, CachedClock"), |b| {
        b.iter_custom(|iters| {
            on_two_threads(iters, &|| {
                let _ = black_box(windowed.call(&cached, || guarded(black_box(1))));
            })
        })
    });
    // The last 100 calls, as recloser's default ring and resilience4j's.
    let counted = Box::new(Breaker::new(
        BreakerConfig::builder().failure_threshold(0).failure_rate(0.5).count_window(100).build().unwrap(),
    ));
    g.bench_function(BenchmarkId::new("tripwire", "count window"), |b| {
        b.iter_custom(|iters| {
            on_two_threads(iters, &|| {
                let _ = black_box(counted.call(&cached, || guarded(black_box(1))));
            })
        })
    });
    // What a window that gives every call its place with one shared write
    // costs at least (the count window before its successes went to
    // stripes): a breaker call that writes no shared word, then one shared
    // `fetch_add`, on each thread.
    let quiet = Box::new(Breaker::new(BreakerConfig::builder().count_successes(false).build().unwrap()));
    let order = AtomicU64::new(0);
    g.bench_function(BenchmarkId::new("baseline", "call writing nothing + fetch_add"), |b| {
        b.iter_custom(|iters| {
            on_two_threads(iters, &|| {
                let _ = black_box(quiet.call(&cached, || guarded(black_box(1))));
                order.fetch_add(1, Ordering::SeqCst);
            })
        })
    });
    let failsafe = failsafe::Config::new().build();
    g.bench_function(BenchmarkId::new("failsafe", "default"), |b| {
        b.iter_custom(|iters| {
            on_two_threads(iters, &|| {
                let _ = black_box(failsafe.call(|| guarded(black_box(1))));
            })
        })
    });
    let recloser = recloser::Recloser::default();
    g.bench_function(BenchmarkId::new("recloser", "default"), |b| {
        b.iter_custom(|iters| {
            on_two_threads(iters, &|| {
                let _ = black_box(recloser.call(|| guarded(black_box(1))));
            })
        })
    });
    let cbrs =
        circuitbreaker_rs::CircuitBreaker::<circuitbreaker_rs::DefaultPolicy, Failed>::builder().build();
    g.bench_function(BenchmarkId::new("circuitbreaker-rs", "default"), |b| {
        b.iter_custom(|iters| {
            on_two_threads(iters, &|| {
                let _ = black_box(cbrs.call(|| guarded(black_box(1))));
            })
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3));
    targets = two_threads
}
criterion_main!(benches);
