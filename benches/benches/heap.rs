//! Heap growth over one million state transitions, for tripwire and each
//! peer, counted by a global allocator. Not a timing: prints a table.
//!
//! `cargo bench -p tripwire-benches --bench heap`

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use failsafe::{CircuitBreaker as _, backoff, failure_policy};
use tripwire::{Breaker, BreakerConfig, ManualClock};
use tripwire_benches::{Failed, failing, guarded};

struct Counting;
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees carry over; the counters are a side effect.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const TRANSITIONS: u64 = 1_000_000;

/// Runs `cycle` (which must make two transitions: trip, then recover) until
/// a million transitions have happened; returns (allocations, bytes still
/// held afterwards).
fn measure(mut cycle: impl FnMut()) -> (u64, i64) {
    cycle(); // warm up: lazily built state is not growth
    let (a0, b0) = (ALLOCATIONS.load(Ordering::Relaxed), LIVE_BYTES.load(Ordering::Relaxed));
    for _ in 0..TRANSITIONS / 2 {
        cycle();
    }
    (ALLOCATIONS.load(Ordering::Relaxed) - a0, LIVE_BYTES.load(Ordering::Relaxed) - b0)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` asks benches to name themselves
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
