//! Reading a server's rate-limit counts from its headers: each dialect,
//! several intervals, hostile values, and what a count can do to a limiter.
#![cfg(feature = "http")]

use core::time::Duration;

use http::{HeaderMap, HeaderValue};
use tripwire::clock::FixedClock;
use tripwire::http::{Usage, UsageKind, usage};
use tripwire::limiter::{LimitConfig, RateLimiter};

fn headers(pairs: &[(&'static str, &[u8])]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (name, value) in pairs {
        h.append(*name, HeaderValue::from_bytes(value).unwrap());
    }
    h
}

#[test]
fn binance_reports_weight_and_orders_per_interval() {
    let h = headers(&[
        ("X-MBX-USED-WEIGHT-1M", b"312"),
        ("X-MBX-USED-WEIGHT", b"312"),
        ("X-MBX-ORDER-COUNT-10S", b"3"),
        ("X-MBX-ORDER-COUNT-1D", b"1200"),
        ("x-mbx-uuid", b"not a count"),
    ]);
    let found = usage(&h);
    assert_eq!(found.unreadable, 0);
    let used = |kind, secs: Option<u64>| found.find(kind, secs.map(Duration::from_secs)).and_then(|u| u.used);
    assert_eq!(used(UsageKind::Weight, Some(60)), Some(312));
    assert_eq!(used(UsageKind::Orders, Some(10)), Some(3));
    assert_eq!(used(UsageKind::Orders, Some(86_400)), Some(1200));
    assert_eq!(found.counts.iter().filter(|u| u.kind == UsageKind::Weight && u.window.is_none()).count(), 1);
}

#[test]
fn the_ietf_headers_pair_each_count_with_its_policy() {
    let h = headers(&[
        ("RateLimit-Policy", br#""burst";q=100;w=60, "daily";q=1000;w=86400"#),
        ("RateLimit", br#""burst";r=40;t=30, "daily";r=900;t=3600"#),
    ]);
    let found = usage(&h);
    assert_eq!(found.unreadable, 0);
    let burst = found.find(UsageKind::Quota, Some(Duration::from_secs(60))).unwrap();
    assert_eq!((burst.remaining, burst.limit), (Some(40), Some(100)));
    assert_eq!(burst.used_of(1_200), Some(720), "60 % of 1,200");
    let daily = found.find(UsageKind::Quota, Some(Duration::from_secs(86_400))).unwrap();
    assert_eq!((daily.remaining, daily.limit), (Some(900), Some(1000)));
}

#[test]
fn the_earlier_drafts_and_x_ratelimit_read_as_quotas() {
    let combined = usage(&headers(&[("RateLimit", b"limit=100, remaining=25, reset=50")]));
    assert_eq!(combined.counts[0].used_of(100), Some(75));
    let split = usage(&headers(&[("RateLimit-Limit", b"100;w=60"), ("RateLimit-Remaining", b"10")]));
    assert_eq!((split.counts[0].remaining, split.counts[0].limit), (Some(10), Some(100)));
    let x = usage(&headers(&[("X-RateLimit-Remaining", b"7"), ("X-RateLimit-Limit", b"60")]));
    assert_eq!(
        x.counts,
        [Usage { kind: UsageKind::Quota, window: None, used: None, remaining: Some(7), limit: Some(60) }]
    );
}

#[test]
fn hostile_values_are_counted_as_unreadable_and_never_panic() {
    let hostile: &[(&'static str, &[u8])] = &[
        ("X-MBX-USED-WEIGHT-1M", b"-5"),
        ("X-MBX-USED-WEIGHT-1M", b"1.5"),
        ("X-MBX-USED-WEIGHT-1M", b""),
        ("X-MBX-USED-WEIGHT-1M", b"\xff\xfe"),
        ("X-MBX-USED-WEIGHT-0M", b"5"),
        ("X-MBX-USED-WEIGHT-99999999999999999999D", b"5"),
        ("X-MBX-USED-WEIGHT-1Y", b"5"),
        ("X-MBX-USED-WEIGHT-M", b"5"),
        ("X-MBX-USED-WEIGHTS", b"5"),
        ("RateLimit", br#""burst";r=-1"#),
        ("RateLimit", b"\xff"),
        ("RateLimit-Policy", b"\x80"),
        ("X-RateLimit-Remaining", b"lots"),
    ];
    let found = usage(&headers(hostile));
    assert_eq!(found.counts, []);
    assert_eq!(found.unreadable, u32::try_from(hostile.len()).unwrap());
}

#[test]
fn huge_counts_saturate_and_no_count_raises_a_limiter_past_its_units() {
    let h = headers(&[
        ("X-MBX-USED-WEIGHT-1M", b"99999999999999999999999999"),
        ("X-RateLimit-Remaining", b"0"),
        ("X-RateLimit-Limit", b"99999999999999999999999999"),
    ]);
    let found = usage(&h);
    assert_eq!(found.counts[0].used, Some(u64::MAX));
    assert_eq!(found.counts[1].used_of(1_200), Some(1_200), "none left: all used");
    // A remaining count above the limit says nothing is used.
    let odd =
        Usage { kind: UsageKind::Quota, window: None, used: None, remaining: Some(500), limit: Some(100) };
    assert_eq!(odd.used_of(1_200), Some(0));
    let zero = Usage { limit: Some(0), ..odd };
    assert_eq!(zero.used_of(1_200), Some(700), "a zero limit is no limit to scale by");
    let limiter = RateLimiter::new([LimitConfig::builder(1_200, Duration::from_secs(60)).build().unwrap()]);
    let now = FixedClock(0);
    assert!(limiter.observe_used(0, found.counts[0].used_of(1_200).unwrap(), &now));
    assert_eq!(limiter.in_use(&now), [1_200], "capped at the limit's units");
    // A minute's units, less the burst, to drain before one unit goes.
    let wait = limiter.wait_for([1], &now).unwrap();
    assert!(wait <= limiter.configs()[0].max_wait(), "{wait:?}");
}
