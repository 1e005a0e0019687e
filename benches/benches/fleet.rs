//! A guarded call on a breaker joined to a fleet, next to the same call on
//! a breaker that is not: the link must cost the call nothing.
//!
//! `cargo bench -p tripwire-benches --bench fleet` (links through
//! `TRIPWIRE_BENCH_REDIS` or `TRIPWIRE_TEST_REDIS`, else starts a
//! redis-server of its own). Propagation between processes:
//! `cargo run --release -p tripwire-benches --example fleet_latency`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use tripwire::{BreakerConfig, NamedBreaker, Outcome};
use tripwire_benches::guarded;
use tripwire_benches::redis::Redis;
use tripwire_fleet::{Fleet, FleetConfig};

const LONG: Duration = Duration::from_secs(3600);

fn closed() -> Arc<NamedBreaker> {
    Arc::new(NamedBreaker::new("bench", BreakerConfig::default()))
}

fn open() -> Arc<NamedBreaker> {
    let b = Arc::new(NamedBreaker::new("bench-open", BreakerConfig::default()));
    b.open_for(LONG);
    b
}

fn admitted(b: &NamedBreaker) -> u64 {
    let t = b.try_acquire().unwrap();
    let r = guarded(black_box(1));
    b.record(t, Outcome::Success);
    r.unwrap()
}

fn fleet(c: &mut Criterion) {
    let redis = Redis::find_or_start();
    let linked = redis.as_ref().map(|r| {
        let ns = format!("bench-{}", std::process::id());
        let fleet = Fleet::new(
            FleetConfig::builder(r.url.clone(), ns, *b"0123456789abcdef0123456789abcdef").build().unwrap(),
        )
        .unwrap();
        let (c, o) = (closed(), open());
        fleet.join(&c).unwrap();
        fleet.join(&o).unwrap();
        assert!(fleet.wait_linked(Duration::from_secs(5)), "the fleet's link is up");
        (fleet, c, o)
    });
    if linked.is_none() {
        eprintln!(
            "fleet bench: no Redis (set TRIPWIRE_BENCH_REDIS, or put redis-server on PATH): unlinked only"
        );
    }
    let (alone, alone_open) = (closed(), open());
    let mut g = c.benchmark_group("fleet: closed success");
    g.bench_function(BenchmarkId::new("tripwire", "not joined"), |b| b.iter(|| admitted(&alone)));
    if let Some((_, c, _)) = &linked {
        g.bench_function(BenchmarkId::new("tripwire", "joined, link up"), |b| b.iter(|| admitted(c)));
    }
    g.finish();
    let mut g = c.benchmark_group("fleet: rejection");
    g.bench_function(BenchmarkId::new("tripwire", "not joined"), |b| {
        b.iter(|| alone_open.try_acquire().is_err())
    });
    if let Some((_, _, o)) = &linked {
        g.bench_function(BenchmarkId::new("tripwire", "joined, link up"), |b| {
            b.iter(|| o.try_acquire().is_err())
        });
    }
    g.finish();
    if let Some((fleet, ..)) = &linked {
        eprintln!("fleet bench: link {:?}, {:?}", fleet.link_state(), fleet.snapshot());
    }
}

criterion_group!(benches, fleet);
criterion_main!(benches);
