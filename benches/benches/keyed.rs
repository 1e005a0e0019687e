//! Keyed breakers: a lookup by key and a closed call, with 10,000 keys in
//! the map (of the default storage, and of windowless breakers; each call
//! taking the map's guard, and many under one guard), next to a
//! plain call of one breaker, the registry's get-or-create by name, and the
//! lookup alone in three concurrent maps, in the same run.
//!
//! `cargo bench -p tripwire-benches --bench keyed`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use tripwire::breaker::NoWindow;
use tripwire::keyed::Breakers;
use tripwire::registry::Registry;
use tripwire::{BreakerConfig, NamedBreaker};
use tripwire_benches::guarded;

const KEYS: usize = 10_000;

fn config() -> BreakerConfig {
    BreakerConfig::builder().failure_threshold(5).build().unwrap()
}

/// Symbols as an exchange spells them: `SYM0000USDT` to `SYM9999USDT`.
fn keys() -> Vec<String> {
    (0..KEYS).map(|i| format!("SYM{i:04}USDT")).collect()
}

fn keyed(c: &mut Criterion) {
    let mut g = c.benchmark_group("keyed_closed_call");
    let plain = NamedBreaker::new("plain", config());
    g.bench_function(BenchmarkId::new("baseline", "plain call, one breaker"), |b| {
        b.iter(|| black_box(plain.call(|| guarded(black_box(1)))))
    });
    let keys = keys();
    let map: Breakers<String> =
        Breakers::<String>::builder("symbols", config()).capacity(KEYS).build().unwrap();
    for k in &keys {
        let _ = map.call(k.as_str(), || guarded(1));
    }
    assert_eq!(map.len(), KEYS);
    let hot = keys[KEYS / 2].as_str();
    g.bench_function(BenchmarkId::new("tripwire", "Breakers: one key of 10,000"), |b| {
        b.iter(|| black_box(map.call(black_box(hot), || guarded(black_box(1)))))
    });
    let mut i = 0;
    g.bench_function(BenchmarkId::new("tripwire", "Breakers: the 10,000 keys in turn"), |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            black_box(map.call(black_box(keys[i].as_str()), || guarded(black_box(1))))
        })
    });
    // A thread that makes its calls in a batch takes the map's guard once.
    let pinned = map.pin();
    g.bench_function(BenchmarkId::new("tripwire", "Breakers::pin(): one key of 10,000"), |b| {
        b.iter(|| black_box(pinned.call(black_box(hot), || guarded(black_box(1)))))
    });
    g.bench_function(BenchmarkId::new("tripwire", "Breakers::pin(): the 10,000 keys in turn"), |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            black_box(pinned.call(black_box(keys[i].as_str()), || guarded(black_box(1))))
        })
    });
    drop(pinned);
    let windowless = Breakers::<String>::builder("symbols", config())
        .capacity(KEYS)
        .storage::<NoWindow>()
        .build()
        .unwrap();
    for k in &keys {
        let _ = windowless.call(k.as_str(), || guarded(1));
    }
    assert_eq!(windowless.len(), KEYS);
    g.bench_function(BenchmarkId::new("tripwire", "Breakers (NoWindow storage): one key of 10,000"), |b| {
        b.iter(|| black_box(windowless.call(black_box(hot), || guarded(black_box(1)))))
    });
    let registry = Registry::new();
    for k in &keys {
        registry.breaker(k, config);
    }
    g.bench_function(BenchmarkId::new("baseline", "Registry get-or-create, one name of 10,000"), |b| {
        b.iter(|| black_box(registry.breaker(black_box(hot), config).call(|| guarded(black_box(1)))))
    });
    // The memory a call in turn walks: 10,000 breakers of their own, no map.
    let many: Vec<NamedBreaker> = keys.iter().map(|k| NamedBreaker::new(k.as_str(), config())).collect();
    g.bench_function(BenchmarkId::new("baseline", "plain call, 10,000 breakers in turn"), |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            black_box(many[i].call(|| guarded(black_box(1))))
        })
    });
    drop(many);
    floors(&mut g, &keys, hot);
    let shared = Arc::new(map);
    g.bench_function(BenchmarkId::new("tripwire", "Breakers::get (an owned handle), one key"), |b| {
        b.iter(|| black_box(shared.get(black_box(hot)).call(|| guarded(black_box(1)))))
    });
    g.finish();
}

/// The lookup alone, with no breaker: in papaya (the map the keyed
/// breakers sit on, with their hasher; of one key, and of the keys in
/// turn), and in two other concurrent maps holding the same 10,000 keys. A
/// keyed call costs at least a plain call plus its map's lookup.
fn floors(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    keys: &[String],
    hot: &str,
) {
    let papaya = papaya::HashMap::<String, u64, _>::with_hasher(foldhash::fast::RandomState::default());
    let scc = scc::HashIndex::<String, u64, foldhash::fast::RandomState>::with_hasher(Default::default());
    let dashmap =
        dashmap::DashMap::<String, u64, foldhash::fast::RandomState>::with_hasher(Default::default());
    for (i, k) in keys.iter().enumerate() {
        papaya.pin().insert(k.clone(), i as u64);
        let _ = scc.insert(k.clone(), i as u64);
        dashmap.insert(k.clone(), i as u64);
    }
    g.bench_function(BenchmarkId::new("baseline", "papaya get alone, one key of 10,000"), |b| {
        b.iter(|| black_box(papaya.pin().get(black_box(hot)).copied()))
    });
    let mut i = 0;
    g.bench_function(BenchmarkId::new("baseline", "papaya get alone, the 10,000 keys in turn"), |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            black_box(papaya.pin().get(black_box(keys[i].as_str())).copied())
        })
    });
    g.bench_function(BenchmarkId::new("scc", "HashIndex peek alone, one key of 10,000"), |b| {
        b.iter(|| black_box(scc.peek_with(black_box(hot), |_, v| *v)))
    });
    g.bench_function(BenchmarkId::new("dashmap", "get alone, one key of 10,000"), |b| {
        b.iter(|| black_box(dashmap.get(black_box(hot)).map(|v| *v)))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3));
    targets = keyed
}
criterion_main!(benches);
