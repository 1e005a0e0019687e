//! How far behind `CLOCK_MONOTONIC` the cached clock reads, sampled on this
//! machine as it is (load included): p50, p99, p99.9 and max of
//! `MonotonicClock − CachedClock` over a few seconds of back-to-back reads.
//! `cargo run --release -p tripwire-benches --example clock_lag -- [seconds]`

use std::time::{Duration, Instant};

use tripwire::{Clock, MonotonicClock, clock::CachedClock};

fn main() {
    let secs: u64 = std::env::args().nth(1).map(|s| s.parse().expect("seconds: a number")).unwrap_or(3);
    let cached = CachedClock::global();
    let end = Instant::now() + Duration::from_secs(secs);
    let mut lags = Vec::with_capacity(1 << 20);
    while Instant::now() < end {
        for _ in 0..1000 {
            // The fresh reading first: if this thread is preempted between
            // the two, the lag comes out smaller, never larger than it was.
            let m = MonotonicClock.now();
            let c = cached.now();
            lags.push(m.saturating_sub(c));
        }
    }
    lags.sort_unstable();
    let at = |q: f64| lags[((lags.len() - 1) as f64 * q) as usize] as f64 / 1e6;
    println!(
        "| period | samples | p50 | p99 | p99.9 | max |\n| --- | --- | --- | --- | --- | --- |\n\
         | {:?} | {} | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms |",
        CachedClock::DEFAULT_PERIOD,
        lags.len(),
        at(0.5),
        at(0.99),
        at(0.999),
        at(1.0)
    );
}
