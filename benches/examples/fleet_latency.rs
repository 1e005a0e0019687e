//! Propagation through a fleet, between processes on one host: from the
//! moment one process's breaker trips to the moment another's refuses a
//! call, over Redis on loopback. Prints p50, p99 and max.
//!
//! `cargo run --release -p tripwire-benches --example fleet_latency -- [rounds]`
//! (links through `TRIPWIRE_BENCH_REDIS` or `TRIPWIRE_TEST_REDIS`, else
//! starts a redis-server of its own). Both ends read `CLOCK_MONOTONIC`,
//! which every process on a host shares; each round's trip is undone
//! (a reset, which the fleet closes everywhere) before the next.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tripwire::{BreakerConfig, Clock, MonotonicClock, NamedBreaker, Outcome, State};
use tripwire_benches::redis::Redis;
use tripwire_fleet::{Fleet, FleetConfig};

const FOLLOWERS: usize = 2;

fn host(url: &str, ns: &str) -> (Fleet, Arc<NamedBreaker>) {
    let config =
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_secs(60)).build().unwrap();
    let b = Arc::new(NamedBreaker::new("exchange", config));
    let fleet =
        Fleet::new(FleetConfig::builder(url, ns, *b"0123456789abcdef0123456789abcdef").build().unwrap())
            .unwrap();
    fleet.join(&b).unwrap();
    assert!(fleet.wait_linked(Duration::from_secs(5)), "link up");
    (fleet, b)
}

/// A follower: reports when its breaker first refuses, then that it is
/// closed again, once per round, until stdin closes.
fn follow(url: &str, ns: &str) {
    let (_fleet, b) = host(url, ns);
    println!("ready");
    let mut lines = std::io::stdin().lock().lines();
    while let Some(Ok(_round)) = lines.next() {
        // Spin (yielding) until a call is refused: the time the news arrived.
        let seen = loop {
            match b.try_acquire() {
                Ok(t) => {
                    b.record(t, Outcome::Success);
                    std::thread::yield_now();
                }
                Err(_) => break MonotonicClock.now(),
            }
        };
        println!("seen {seen}");
        while b.state() != State::Closed {
            std::thread::sleep(Duration::from_micros(200));
        }
        println!("closed");
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--follow") {
        let (url, ns) = (args.next().unwrap(), args.next().unwrap());
        return follow(&url, &ns);
    }
    let rounds: usize = std::env::args().nth(1).map(|s| s.parse().expect("rounds: a number")).unwrap_or(200);
    let redis =
        Redis::find_or_start().expect("a Redis: set TRIPWIRE_BENCH_REDIS or put redis-server on PATH");
    let ns = format!("latency-{}", std::process::id());
    let mut followers: Vec<_> = (0..FOLLOWERS)
        .map(|_| {
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args(["--follow", &redis.url, &ns])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
            assert_eq!(out.next().unwrap().unwrap(), "ready");
            (child, out)
        })
        .collect();
    let (_fleet, b) = host(&redis.url, &ns);
    let mut samples = Vec::with_capacity(rounds * FOLLOWERS);
    for round in 0..rounds {
        for (child, _) in &mut followers {
            writeln!(child.stdin.as_mut().unwrap(), "{round}").unwrap();
        }
        // Let the followers start spinning.
        std::thread::sleep(Duration::from_millis(5));
        let t = b.try_acquire().unwrap();
        let tripped = MonotonicClock.now();
        b.record(t, Outcome::Failure);
        for (_, out) in &mut followers {
            let line = out.next().unwrap().unwrap();
            let seen: u64 = line.strip_prefix("seen ").unwrap().parse().unwrap();
            samples.push(seen.saturating_sub(tripped));
        }
        // The reset closes the followers too; the next round starts once
        // they are.
        b.reset();
        for (_, out) in &mut followers {
            assert_eq!(out.next().unwrap().unwrap(), "closed");
        }
    }
    for (child, _) in &mut followers {
        drop(child.stdin.take());
        let _ = child.wait();
    }
    samples.sort_unstable();
    let pct = |p: usize| Duration::from_nanos(samples[(samples.len() * p / 100).min(samples.len() - 1)]);
    println!(
        "fleet propagation, trip to refusal in another process, {} samples ({rounds} rounds x {FOLLOWERS} followers): \
         p50 {:?}, p99 {:?}, max {:?}",
        samples.len(),
        pct(50),
        pct(99),
        Duration::from_nanos(*samples.last().unwrap())
    );
}
