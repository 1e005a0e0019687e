//! Redis's work per 1,000 checks of the fleet's rate limiter
//! (`tripwire_fleet::FleetRateLimiter`): the commands Redis ran during
//! 1,000 checks (the script's own `TIME`, `GET` and `SET` included), from
//! its `INFO stats` before and after (the second `INFO` itself taken
//! off), and the time per check; its round trips are its own count, one
//! a check. Prints one Markdown table row.
//!
//! `cargo run --release -p tripwire-benches --example limiter_round_trips`
//! (links through `TRIPWIRE_BENCH_REDIS` or `TRIPWIRE_TEST_REDIS`, else
//! starts a redis-server of its own). `benches/limiter_redis.sh` runs it
//! next to the `limits` Python package's Redis backend.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use tripwire::limiter::LimitConfig;
use tripwire_benches::redis::Redis;
use tripwire_fleet::{FleetConfig, FleetRateLimiter, OnRedisLoss};

const CHECKS: u64 = 1_000;

/// Redis's `total_commands_processed`, read over a plain connection.
fn commands_processed(url: &str) -> u64 {
    let addr = url.trim_start_matches("redis://").trim_end_matches('/');
    let mut conn = TcpStream::connect(addr).expect("redis");
    conn.write_all(b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n").unwrap();
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "INFO ended without the count");
        if let Some(n) = line.trim().strip_prefix("total_commands_processed:") {
            return n.parse().unwrap();
        }
    }
}

fn main() {
    let Some(redis) = Redis::find_or_start() else {
        println!("| tripwire FleetRateLimiter | not measured: no redis-server |");
        return;
    };
    let ns = format!("round-trips-{}", std::process::id());
    let config = FleetConfig::builder(&redis.url, &ns, *b"0123456789abcdef0123456789abcdef").build().unwrap();
    let limit = LimitConfig::builder(1_000_000, Duration::from_secs(1)).build().unwrap();
    let limiter = FleetRateLimiter::new(&config, "bench", [limit], OnRedisLoss::Refuse).unwrap();
    // Connected (and its handshake done) before counting.
    limiter.acquire([1], Duration::ZERO).unwrap();
    let before = commands_processed(&redis.url);
    let start = Instant::now();
    for _ in 0..CHECKS {
        limiter.acquire([1], Duration::ZERO).unwrap();
    }
    let took = start.elapsed();
    // The second INFO counts itself.
    let commands = commands_processed(&redis.url) - before - 1;
    assert_eq!(limiter.round_trips(), CHECKS + 1, "one round trip a check");
    println!(
        "| tripwire `FleetRateLimiter` (one Lua script, one round trip a check) | {commands} | {:.1} µs |",
        took.as_secs_f64() * 1e6 / CHECKS as f64
    );
}
