//! The rate limiter at the edges: clocks at 0 and `u64::MAX`, a clock
//! that goes back, idle days, a garbage-sized server count, costs above the
//! burst, and the config's limits.

use core::time::Duration;

use tripwire::clock::FixedClock;
use tripwire::limiter::{LimitConfig, RateLimiter, Throttled};

const SEC: u64 = 1_000_000_000;

/// 10 per second, 2 at once: a unit stays counted 125 ms.
fn ten_a_second() -> RateLimiter<1> {
    RateLimiter::new([LimitConfig::builder(10, Duration::from_secs(1)).burst(2).build().unwrap()])
}

#[test]
fn a_new_limiter_lets_its_burst_go_at_any_clock_reading() {
    for now in [0, 1, SEC, u64::MAX / 2, u64::MAX / 2 + 1, u64::MAX - 1, u64::MAX] {
        let limiter = ten_a_second();
        let at = FixedClock(now);
        assert!(limiter.try_acquire([2], &at).is_ok(), "at {now}");
        assert_eq!(
            limiter.try_acquire([1], &at),
            Err(Throttled::Wait { limit: 0, wait: Duration::from_millis(125) }),
            "at {now}"
        );
    }
}

#[test]
fn a_wrapping_clock_keeps_the_count() {
    let limiter = ten_a_second();
    let before = FixedClock(u64::MAX - 50_000_000);
    assert!(limiter.try_acquire([2], &before).is_ok());
    // 100 ms later, past the wrap: 150 ms of the two units still counted.
    let after = FixedClock(before.0.wrapping_add(100_000_000));
    assert_eq!(limiter.in_use(&after), [2]);
    assert_eq!(limiter.wait_for([2], &after), Ok(Duration::from_millis(150)));
}

#[test]
fn a_clock_that_goes_back_only_lengthens_the_wait_and_never_past_two_periods() {
    let limiter = ten_a_second();
    assert!(limiter.try_acquire([2], &FixedClock(1000 * SEC)).is_ok());
    // 5 s back: the count reaches 5.25 s ahead, read as two periods' worth.
    let back = FixedClock(995 * SEC);
    let wait = limiter.wait_for([1], &back).unwrap();
    assert!(wait > Duration::from_millis(125), "{wait:?}");
    assert!(wait <= 2 * limiter.configs()[0].max_wait(), "{wait:?}");
}

#[test]
fn idle_for_days_the_whole_burst_is_back() {
    let limiter = ten_a_second();
    assert!(limiter.try_acquire([2], &FixedClock(SEC)).is_ok());
    let later = FixedClock(SEC + 3 * 86_400 * SEC);
    assert_eq!(limiter.in_use(&later), [0]);
    assert!(limiter.try_acquire([2], &later).is_ok());
}

#[test]
fn a_server_count_above_the_limit_counts_as_the_limit_and_is_never_lowered() {
    let limiter = ten_a_second();
    let now = FixedClock(7 * SEC);
    assert!(limiter.observe_used(0, u64::MAX, &now));
    assert_eq!(limiter.in_use(&now), [10]);
    assert!(!limiter.observe_used(0, 3, &now), "a lower count changes nothing");
    assert!(!limiter.observe_used(5, 3, &now), "no limit 5");
    // Eleven units' time, less the burst's two: 9 × 125 ms.
    assert_eq!(limiter.wait_for([1], &now), Ok(Duration::from_millis(1_125)));
    // A refund never takes back what the server reported.
    let grant = limiter.try_acquire([1], &FixedClock(9 * SEC)).unwrap();
    assert!(limiter.observe_used(0, 10, &FixedClock(9 * SEC)));
    assert_eq!(limiter.refund(grant, &FixedClock(9 * SEC)), [false]);
    assert_eq!(limiter.in_use(&FixedClock(9 * SEC)), [10]);
}

#[test]
fn a_cost_above_the_burst_never_goes_and_takes_nothing() {
    let limiter = RateLimiter::new([
        LimitConfig::builder(100, Duration::from_secs(1)).build().unwrap(),
        LimitConfig::builder(10, Duration::from_secs(1)).burst(2).build().unwrap(),
    ]);
    let now = FixedClock(0);
    let err = limiter.acquire([1, 3], Duration::from_secs(60), &now).unwrap_err();
    assert_eq!(err, Throttled::TooCostly { limit: 1, cost: 3, burst: 2 });
    assert_eq!(err.to_string(), "rate limit 1: a cost of 3 is above its burst of 2");
    assert_eq!(limiter.in_use(&now), [0, 0]);
}

#[test]
fn reserving_ahead_queues_callers_in_order_and_a_refund_before_the_send_keeps_the_queue() {
    let limiter = ten_a_second();
    let now = FixedClock(0);
    let waits: Vec<_> =
        (0..4).map(|_| limiter.acquire([1], Duration::from_secs(1), &now).unwrap().ready_in()).collect();
    assert_eq!(
        waits,
        [Duration::ZERO, Duration::ZERO, Duration::from_millis(125), Duration::from_millis(250)]
    );
    // The third caller gives up before its send: the fourth's place rests
    // on its units, which stay counted.
    let third = limiter.acquire([1], Duration::from_secs(1), &now).unwrap();
    assert_eq!(limiter.refund(third, &now), [false]);
    assert_eq!(limiter.in_use(&now), [5]);
    // No reservation further ahead than one period's units (1.25 s),
    // whatever the wait asked for.
    let most = limiter.configs()[0].max_wait();
    let refused = loop {
        match limiter.acquire([1], Duration::from_secs(60), &now) {
            Ok(grant) => assert!(grant.ready_in() <= most, "{grant:?}"),
            Err(e) => break e,
        }
    };
    assert!(matches!(refused, Throttled::Wait { wait, .. } if wait > most), "{refused:?}");
}

#[test]
fn every_setting_is_checked() {
    let period = Duration::from_secs(1);
    let cases = [
        (
            LimitConfig::builder(1, period).build(),
            "invalid rate limit config: units = 1, expected 2 to 1000000000",
        ),
        (
            LimitConfig::builder(10, Duration::ZERO).build(),
            "invalid rate limit config: period = 0ns, expected 1ms to 604800s",
        ),
        (
            LimitConfig::builder(10, period).burst(0).build(),
            "invalid rate limit config: burst = 0, expected 1 to 5",
        ),
        (
            LimitConfig::builder(10, period).burst(6).build(),
            "invalid rate limit config: burst = 6, expected 1 to 5",
        ),
    ];
    for (got, message) in cases {
        assert_eq!(got.unwrap_err().to_string(), message);
    }
    let widest = LimitConfig::builder(1_000_000_000, Duration::from_secs(7 * 86_400)).build().unwrap();
    assert!(widest.max_wait() >= widest.period());
}

#[test]
fn a_counting_limiter_counts_what_each_limit_did() {
    use tripwire::limiter::LimitCounts;
    let limiter = RateLimiter::new([
        LimitConfig::builder(10, Duration::from_secs(1)).burst(2).build().unwrap(),
        LimitConfig::builder(100, Duration::from_secs(1)).build().unwrap(),
    ])
    .counting();
    let now = FixedClock(SEC);
    assert!(limiter.try_acquire([1, 3], &now).is_ok());
    assert!(limiter.acquire([1, 0], Duration::ZERO, &now).is_ok());
    // Past the first limit's burst: reserved ahead (a wait), then refused.
    assert!(limiter.acquire([1, 2], Duration::from_secs(1), &now).unwrap().ready_in() > Duration::ZERO);
    assert!(limiter.try_acquire([1, 0], &now).is_err());
    assert!(limiter.try_acquire([3, 0], &now).is_err(), "above the burst: refused by limit 0");
    assert!(limiter.observe_used(1, 90, &now));
    assert!(!limiter.observe_used(1, 10, &now), "no correction counted for a lower count");
    assert_eq!(
        limiter.counts(),
        [
            LimitCounts { spent: 3, waits: 1, refusals: 2, corrections: 0 },
            LimitCounts { spent: 5, waits: 1, refusals: 0, corrections: 1 },
        ]
    );
}
