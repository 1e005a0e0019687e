//! Heap growth over one million state transitions, for tripwire and each
//! peer, counted by a global allocator; with `--sizes`, the memory a
//! tripwire breaker takes on each storage instead. Not a timing: prints a
//! table.
//!
//! `cargo bench -p tripwire-benches --bench heap [-- --sizes]`

use std::time::Duration;

use failsafe::{CircuitBreaker as _, backoff, failure_policy};
use tripwire::breaker::{AnyWindow, CountOnly, NoWindow, TimeOnly};
use tripwire::{Breaker, BreakerConfig, ManualClock, NamedBreaker};
use tripwire_benches::counting::{Counting, allocations, live_bytes};
use tripwire_benches::{Failed, failing, guarded};

#[global_allocator]
static GLOBAL: Counting = Counting;

const TRANSITIONS: u64 = 1_000_000;

/// Runs `cycle` (which must make two transitions: trip, then recover) until
/// a million transitions have happened; returns (allocations, bytes still
/// held afterwards).
fn measure(mut cycle: impl FnMut()) -> (u64, i64) {
    cycle(); // warm up: lazily built state is not growth
    let (a0, b0) = (allocations(), live_bytes());
    for _ in 0..TRANSITIONS / 2 {
        cycle();
    }
    (allocations() - a0, live_bytes() - b0)
}

/// Breakers that hold no heap memory of their own: `size_of` is all they take.
const BREAKERS: u64 = 10_000;

/// The memory of one breaker per storage, and of `BREAKERS` of them, with
/// the configs each storage runs.
fn sizes() {
    let row = |storage: &str, configs: &str, size: usize| {
        let mib = (size as u64 * BREAKERS) as f64 / f64::from(1 << 20);
        println!("| {storage} | {configs} | {size} | {mib:.1} |");
    };
    println!("| breaker | configs | bytes each | {BREAKERS} of them (MiB) |");
    println!("| --- | --- | --- | --- |");
    row("`Breaker<NoWindow>`", "consecutive failures", size_of::<Breaker<NoWindow>>());
    row("`Breaker<CountOnly>`", "… or a count window", size_of::<Breaker<CountOnly>>());
    row("`Breaker<TimeOnly>`", "… or a time window", size_of::<Breaker<TimeOnly>>());
    row("`Breaker` (`AnyWindow`)", "any", size_of::<Breaker<AnyWindow>>());
    // A named breaker's name lives on the heap: a short one is counted.
    let named = NamedBreaker::new("binance:BTCUSDT", BreakerConfig::default());
    row("`NamedBreaker`", "any (plus its name)", size_of_val(&named) + named.name().len());
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` asks benches to name themselves
    }
    if std::env::args().any(|a| a == "--sizes") {
        return sizes();
    }
    let mut rows = Vec::new();

    let clock = ManualClock::new(1);
    let tripwire = Breaker::new(
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_micros(1)).build().unwrap(),
    );
    rows.push((
        "tripwire",
        measure(|| {
            let _ = tripwire.call(&clock, || failing(0)); // Closed → Open
            clock.advance(Duration::from_micros(1));
            let _ = tripwire.call(&clock, || guarded(1)); // → Half-Open → Closed
        }),
    ));

    let failsafe = failsafe::Config::new()
        .failure_policy(failure_policy::consecutive_failures(1, backoff::constant(Duration::ZERO)))
        .build();
    rows.push((
        "failsafe",
        measure(|| {
            let _ = failsafe.call(|| failing(0));
            let _ = failsafe.call(|| guarded(1));
        }),
    ));

    let recloser =
        recloser::Recloser::custom().closed_len(1).half_open_len(1).open_wait(Duration::ZERO).build();
    rows.push((
        "recloser",
        measure(|| {
            let _ = recloser.call(|| failing(0));
            let _ = recloser.call(|| failing(0));
            let _ = recloser.call(|| guarded(1));
            let _ = recloser.call(|| guarded(1));
        }),
    ));

    let cbrs = circuitbreaker_rs::CircuitBreaker::<circuitbreaker_rs::DefaultPolicy, Failed>::builder()
        .cooldown(Duration::ZERO)
        .build();
    rows.push((
        "circuitbreaker-rs",
        measure(|| {
            cbrs.force_open();
            cbrs.force_closed();
        }),
    ));

    println!(
        "| breaker | allocations per transition | heap growth after {TRANSITIONS} transitions (bytes) |"
    );
    println!("| --- | --- | --- |");
    for (name, (allocs, growth)) in rows {
        println!("| {name} | {:.2} | {growth} |", allocs as f64 / TRANSITIONS as f64);
    }
}
