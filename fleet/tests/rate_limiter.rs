//! The fleet's rate limiter against a real Redis: two hosts (two limiters
//! of one name) spend one budget, all or nothing, one round trip a check;
//! Redis unreachable is the configured choice, the local limit or a
//! refusal; a cost above a burst never costs a round trip.

mod support;

use std::time::Duration;

use support::{KEY, namespace, redis_url};
use tripwire::limiter::{LimitConfig, Throttled};
use tripwire_fleet::{FleetConfig, FleetRateLimiter, FleetThrottled, OnRedisLoss};

fn config(url: &str, ns: &str) -> FleetConfig {
    FleetConfig::builder(url, ns, *KEY).connect_timeout(Duration::from_millis(200)).build().unwrap()
}

/// Orders: 10 an hour, 4 at once. Weight: 1,000 an hour, 100 at once.
fn limits() -> [LimitConfig; 2] {
    [
        LimitConfig::builder(10, Duration::from_secs(3600)).burst(4).build().unwrap(),
        LimitConfig::builder(1_000, Duration::from_secs(3600)).burst(100).build().unwrap(),
    ]
}

#[test]
fn two_hosts_spend_one_budget_all_or_nothing_in_one_round_trip_each() {
    let Some(url) = redis_url("two_hosts_spend_one_budget") else { return };
    let ns = namespace("rate-two-hosts");
    let a =
        FleetRateLimiter::new(&config(&url, &ns), "binance/orders", limits(), OnRedisLoss::Refuse).unwrap();
    let b =
        FleetRateLimiter::new(&config(&url, &ns), "binance/orders", limits(), OnRedisLoss::Refuse).unwrap();
    // The orders' burst of 4, spent from both hosts.
    for limiter in [&a, &b, &a, &b] {
        assert_eq!(limiter.acquire([1, 10], Duration::ZERO), Ok(Duration::ZERO));
    }
    let refused = b.acquire([1, 10], Duration::ZERO).unwrap_err();
    let FleetThrottled::Throttled(Throttled::Wait { limit: 0, wait }) = refused else {
        panic!("{refused:?}")
    };
    // One order's time: an hour over the 6 paced ones, less the moments since.
    assert!(wait > Duration::from_secs(590) && wait <= Duration::from_secs(600), "{wait:?}");
    // The refused request took no weight: 60 of 100 left go at once.
    assert_eq!(a.acquire([0, 60], Duration::ZERO), Ok(Duration::ZERO));
    assert!(matches!(a.acquire([0, 1], Duration::ZERO), Err(FleetThrottled::Throttled(_))));
    // Reserved ahead: the next order goes after its wait.
    let ahead = b.acquire([1, 0], Duration::from_secs(3600)).unwrap();
    assert!(ahead > Duration::from_secs(590), "{ahead:?}");
    assert_eq!(a.round_trips() + b.round_trips(), 8, "one round trip a check");
}

#[test]
fn a_cost_above_a_burst_never_reaches_redis() {
    let Some(url) = redis_url("a_cost_above_a_burst") else { return };
    let limiter =
        FleetRateLimiter::new(&config(&url, &namespace("rate-burst")), "x", limits(), OnRedisLoss::Refuse)
            .unwrap();
    let err = limiter.acquire([5, 0], Duration::from_secs(1)).unwrap_err();
    assert_eq!(err, FleetThrottled::Throttled(Throttled::TooCostly { limit: 0, cost: 5, burst: 4 }));
    assert_eq!(limiter.round_trips(), 0);
}

#[test]
fn without_redis_the_limiter_falls_back_to_the_local_limit_or_refuses_as_configured() {
    // Nothing listens on port 1.
    let down = config("redis://127.0.0.1:1", "rate-down");
    let local = FleetRateLimiter::new(&down, "x", limits(), OnRedisLoss::Local).unwrap();
    for _ in 0..4 {
        assert_eq!(local.acquire([1, 0], Duration::ZERO), Ok(Duration::ZERO));
    }
    assert!(
        matches!(local.acquire([1, 0], Duration::ZERO), Err(FleetThrottled::Throttled(_))),
        "the local limit"
    );
    let strict = FleetRateLimiter::new(&down, "x", limits(), OnRedisLoss::Refuse).unwrap();
    let err = strict.acquire([1, 0], Duration::ZERO).unwrap_err();
    assert!(matches!(&err, FleetThrottled::Unavailable(_)), "{err:?}");
    assert!(err.to_string().starts_with("fleet rate limiter: Redis unavailable: "), "{err}");
    // Tried again only after the reconnect minimum: no connect wait per call.
    let start = std::time::Instant::now();
    for _ in 0..20 {
        assert!(strict.acquire([1, 0], Duration::ZERO).is_err());
    }
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    assert_eq!(strict.round_trips(), 0);
    let err = FleetRateLimiter::new(&down, "", limits(), OnRedisLoss::Local).unwrap_err();
    assert!(err.to_string().contains("a name of 1 to 255 bytes"), "{err}");
}
