//! One thread, one breaker: the hot paths of tripwire next to baselines and
//! peer crates, in the same groups so that one run gives the ratios.
//!
//! `cargo bench -p tripwire-benches --bench breaker`

use std::hint::black_box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use failsafe::{CircuitBreaker as _, backoff, failure_policy};
use tower::{Service, ServiceExt};
use tripwire::{
    Breaker, BreakerConfig, Clock, ManualClock, MonotonicClock, Outcome,
    clock::{CachedClock, CoarseClock},
};
use tripwire_benches::{Failed, failing, guarded};

const LONG: Duration = Duration::from_secs(3600);

// Breakers live on the heap, as in a service (an `Arc`, a static): on the
// stack, a 4 KiB breaker next to the bench loop's locals times the stack
// layout as much as the breaker.
fn consecutive(count_successes: bool) -> Box<Breaker> {
    Box::new(Breaker::new(BreakerConfig::builder().count_successes(count_successes).build().unwrap()))
}

fn windowed() -> Box<Breaker> {
    Box::new(Breaker::new(
        BreakerConfig::builder()
            .failure_threshold(0)
            .failure_rate(0.5)
            .window(10, Duration::from_secs(1))
            .build()
            .unwrap(),
    ))
}

/// The last 100 calls, as recloser's default ring and resilience4j's.
fn count_windowed() -> Box<Breaker> {
    Box::new(Breaker::new(
        BreakerConfig::builder().failure_threshold(0).failure_rate(0.5).count_window(100).build().unwrap(),
    ))
}

fn open(clock: &impl Clock) -> Box<Breaker> {
    let b = Box::new(Breaker::new(
        BreakerConfig::builder().failure_threshold(1).open_timeout(LONG).build().unwrap(),
    ));
    let _ = b.call(clock, || failing(0));
    b
}

fn baselines(c: &mut Criterion, group: &str) {
    let mut g = c.benchmark_group(group);
    g.bench_function(BenchmarkId::new("baseline", "bare call"), |b| b.iter(|| guarded(black_box(1))));
    let counter = AtomicU64::new(0);
    g.bench_function(BenchmarkId::new("baseline", "fetch_add"), |b| {
        b.iter(|| counter.fetch_add(1, Ordering::AcqRel))
    });
    g.bench_function(BenchmarkId::new("baseline", "compare_exchange"), |b| {
        b.iter(|| {
            let v = counter.load(Ordering::Relaxed);
            counter.compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Relaxed)
        })
    });
    let mutex = Mutex::new(0u64);
    g.bench_function(BenchmarkId::new("baseline", "Mutex lock+unlock"), |b| {
        b.iter(|| *mutex.lock().unwrap() += 1)
    });
    g.bench_function(BenchmarkId::new("baseline", "MonotonicClock read"), |b| {
        b.iter(|| MonotonicClock.now())
    });
    g.bench_function(BenchmarkId::new("baseline", "CoarseClock read"), |b| b.iter(|| CoarseClock.now()));
    let cached = CachedClock::global();
    g.bench_function(BenchmarkId::new("baseline", "CachedClock read"), |b| b.iter(|| cached.now()));
    g.finish();
}

fn closed_success(c: &mut Criterion) {
    baselines(c, "closed_success");
    let mut g = c.benchmark_group("closed_success");
    let clock = MonotonicClock;
    for (name, breaker) in
        [("consecutive", consecutive(true)), ("consecutive, no success count", consecutive(false))]
    {
        g.bench_function(BenchmarkId::new("tripwire", name), |b| {
            b.iter(|| {
                let t = breaker.try_acquire(&clock).unwrap();
                let r = guarded(black_box(1));
                breaker.record(t, Outcome::Success, &clock);
                r
            })
        });
    }
    let breaker = windowed();
    g.bench_function(BenchmarkId::new("tripwire", "window, MonotonicClock"), |b| {
        b.iter(|| breaker.call(&MonotonicClock, || guarded(black_box(1))))
    });
    g.bench_function(BenchmarkId::new("tripwire", "window, CoarseClock"), |b| {
        b.iter(|| breaker.call(&CoarseClock, || guarded(black_box(1))))
    });
    // The upkeep thread publishes CLOCK_MONOTONIC every millisecond: one load.
    let cached = CachedClock::global();
    g.bench_function(BenchmarkId::new("tripwire", "window, CachedClock"), |b| {
        b.iter(|| breaker.call(cached, || guarded(black_box(1))))
    });
    // One load too, with no thread writing to its line: what the upkeep costs.
    let manual = ManualClock::new(MonotonicClock.now());
    g.bench_function(BenchmarkId::new("tripwire", "window, ManualClock"), |b| {
        b.iter(|| breaker.call(&manual, || guarded(black_box(1))))
    });
    let breaker = count_windowed();
    g.bench_function(BenchmarkId::new("tripwire", "count window"), |b| {
        b.iter(|| breaker.call(&MonotonicClock, || guarded(black_box(1))))
    });
    let breaker = consecutive(true);
    g.bench_function(BenchmarkId::new("tripwire", "consecutive, call()"), |b| {
        b.iter(|| breaker.call(&clock, || guarded(black_box(1))))
    });

    let failsafe_default = failsafe::Config::new().build();
    g.bench_function(BenchmarkId::new("failsafe", "default"), |b| {
        b.iter(|| failsafe_default.call(|| guarded(black_box(1))))
    });
    let failsafe_consecutive = failsafe::Config::new()
        .failure_policy(failure_policy::consecutive_failures(5, backoff::constant(LONG)))
        .build();
    g.bench_function(BenchmarkId::new("failsafe", "consecutive"), |b| {
        b.iter(|| failsafe_consecutive.call(|| guarded(black_box(1))))
    });
    let recloser = recloser::Recloser::default();
    g.bench_function(BenchmarkId::new("recloser", "default"), |b| {
        b.iter(|| recloser.call(|| guarded(black_box(1))))
    });
    let cbrs =
        circuitbreaker_rs::CircuitBreaker::<circuitbreaker_rs::DefaultPolicy, Failed>::builder().build();
    g.bench_function(BenchmarkId::new("circuitbreaker-rs", "default"), |b| {
        b.iter(|| cbrs.call(|| guarded(black_box(1))))
    });
    g.finish();
}

fn rejection(c: &mut Criterion) {
    let mut g = c.benchmark_group("rejection");
    let counter = AtomicU64::new(0);
    g.bench_function(BenchmarkId::new("baseline", "fetch_add"), |b| {
        b.iter(|| counter.fetch_add(1, Ordering::AcqRel))
    });
    let breaker = open(&MonotonicClock);
    g.bench_function(BenchmarkId::new("tripwire", "MonotonicClock"), |b| {
        b.iter(|| breaker.try_acquire(&MonotonicClock).unwrap_err())
    });
    g.bench_function(BenchmarkId::new("tripwire", "CoarseClock"), |b| {
        b.iter(|| breaker.try_acquire(&CoarseClock).unwrap_err())
    });
    let cached = CachedClock::global();
    g.bench_function(BenchmarkId::new("tripwire", "CachedClock"), |b| {
        b.iter(|| breaker.try_acquire(cached).unwrap_err())
    });
    let failsafe_consecutive = failsafe::Config::new()
        .failure_policy(failure_policy::consecutive_failures(1, backoff::constant(LONG)))
        .build();
    let _ = failsafe_consecutive.call(|| failing(0));
    g.bench_function(BenchmarkId::new("failsafe", "consecutive"), |b| {
        b.iter(|| failsafe_consecutive.call(|| guarded(black_box(1))).unwrap_err())
    });
    let recloser = recloser::Recloser::custom().closed_len(1).open_wait(LONG).build();
    for _ in 0..2 {
        let _ = recloser.call(|| failing(0));
    }
    g.bench_function(BenchmarkId::new("recloser", "default"), |b| {
        b.iter(|| recloser.call(|| guarded(black_box(1))).unwrap_err())
    });
    let cbrs = circuitbreaker_rs::CircuitBreaker::<circuitbreaker_rs::DefaultPolicy, Failed>::builder()
        .cooldown(LONG)
        .build();
    cbrs.force_open();
    g.bench_function(BenchmarkId::new("circuitbreaker-rs", "forced open"), |b| {
        b.iter(|| cbrs.call(|| guarded(black_box(1))).unwrap_err())
    });
    g.finish();
}

fn half_open_cycle(c: &mut Criterion) {
    let mut g = c.benchmark_group("half_open_cycle");
    let clock = ManualClock::new(1);
    let breaker = Box::new(Breaker::new(
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_micros(1)).build().unwrap(),
    ));
    // Trip, wait out the cool-down, probe, close: three transitions.
    g.bench_function(BenchmarkId::new("tripwire", "trip, probe, close"), |b| {
        b.iter(|| {
            let _ = breaker.call(&clock, || failing(0));
            clock.advance(Duration::from_micros(1));
            breaker.call(&clock, || guarded(black_box(1)))
        })
    });
    g.finish();
}

fn tower_service(c: &mut Criterion) {
    let mut g = c.benchmark_group("tower_closed_success");
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let inner = tower::service_fn(|x: u64| async move { guarded(x) });
    g.bench_function(BenchmarkId::new("baseline", "bare service"), |b| {
        let mut svc = inner;
        b.to_async(&rt).iter(|| svc.call(black_box(1)))
    });
    let breaker = consecutive(true);
    g.bench_function(BenchmarkId::new("tripwire", "consecutive, around the service"), |b| {
        let mut svc = inner;
        let breaker = &breaker;
        b.to_async(&rt).iter(|| {
            let permit = breaker.permit(&MonotonicClock).unwrap();
            let fut = svc.call(black_box(1));
            async move {
                let r = fut.await;
                permit.record(if r.is_ok() { Outcome::Success } else { Outcome::Failure });
                r
            }
        })
    });
    let layer = tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
        .consecutive_failures(5)
        .wait_duration_in_open(LONG)
        .build()
        .unwrap();
    let svc = tower::Layer::layer(&layer, inner);
    g.bench_function(BenchmarkId::new("tower-resilience-circuitbreaker", "consecutive"), |b| {
        b.to_async(&rt).iter(|| {
            let mut svc = svc.clone();
            async move { svc.ready().await.unwrap().call(black_box(1)).await }
        })
    });
    g.finish();
}

criterion_group!(benches, closed_success, rejection, half_open_cycle, tower_service);
criterion_main!(benches);
