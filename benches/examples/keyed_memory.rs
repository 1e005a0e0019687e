//! Memory of keyed breakers, counted by a global allocator: the heap that
//! 10,000 keys of a `Breakers` map hold, with windowless (`NoWindow`)
//! breakers and with the default storage (`AnyWindow`), and a `Registry`
//! of as many names next to them; and the allocations made by lookups of
//! keys that exist, in both maps. Prints a Markdown table.
//!
//! `cargo run --release -p tripwire-benches --example keyed_memory`

use std::fmt::Display;
use std::hash::BuildHasher;

use tripwire::breaker::{AnyWindow, NoWindow, Windows};
use tripwire::keyed::Breakers;
use tripwire::registry::Registry;
use tripwire::{BreakerConfig, MonotonicClock, NamedBreaker};
use tripwire_benches::counting::{Counting, allocations, live_bytes};

#[global_allocator]
static GLOBAL: Counting = Counting;

const KEYS: usize = 10_000;
const LOOKUPS: usize = 1_000_000;

fn mib(bytes: i64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// A map of `keys` on storage `W`: the heap it holds, and the allocations
/// of `LOOKUPS` calls of keys it has.
fn keyed<W: Windows>(config: BreakerConfig, keys: &[String]) -> (i64, u64) {
    let before = live_bytes();
    let map = Breakers::<String>::builder("symbols", config).capacity(KEYS).storage::<W>().build().unwrap();
    for k in keys {
        map.call(k.as_str(), || Ok::<_, ()>(())).unwrap();
    }
    let bytes = live_bytes() - before;
    (bytes, lookups(&map, keys))
}

fn lookups<S: BuildHasher, W: Windows>(map: &Breakers<String, MonotonicClock, S, W>, keys: &[String]) -> u64 {
    let a0 = allocations();
    for i in 0..LOOKUPS {
        map.call(keys[i % keys.len()].as_str(), || Ok::<_, ()>(())).unwrap();
    }
    allocations() - a0
}

fn row(what: impl Display, bytes: i64) {
    println!("| {what} | {} | {} B |", mib(bytes), bytes / KEYS as i64);
}

fn main() {
    let config = BreakerConfig::builder().failure_threshold(5).build().unwrap();
    let keys: Vec<String> = (0..KEYS).map(|i| format!("SYM{i:04}USDT")).collect();

    let (windowless_bytes, windowless_allocations) = keyed::<NoWindow>(config, &keys);
    let (map_bytes, map_allocations) = keyed::<AnyWindow>(config, &keys);

    let before = live_bytes();
    let registry = Registry::new();
    for k in &keys {
        registry.breaker(k, || config);
    }
    let registry_bytes = live_bytes() - before;

    println!("| 10,000 keys, consecutive breakers | heap held | per key |");
    println!("| --- | ---: | ---: |");
    row("tripwire `Breakers<String>` (NoWindow storage)", windowless_bytes);
    row("tripwire `Breakers<String>` (AnyWindow storage)", map_bytes);
    row("tripwire `Registry` (by name)", registry_bytes);
    println!();
    println!(
        "`size_of::<NamedBreaker<_, NoWindow>>()` is {} bytes, `size_of::<NamedBreaker>()` {}. \
         Lookups of keys that exist: {LOOKUPS} calls made {windowless_allocations} allocations (NoWindow), \
         {map_allocations} (AnyWindow).",
        size_of::<NamedBreaker<MonotonicClock, NoWindow>>(),
        size_of::<NamedBreaker>()
    );
    assert_eq!(windowless_allocations, 0, "a lookup of a key that exists allocated (NoWindow)");
    assert_eq!(map_allocations, 0, "a lookup of a key that exists allocated (AnyWindow)");
    drop(registry);
}
