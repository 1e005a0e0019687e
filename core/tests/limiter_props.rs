//! The rate limiter against an exact reference: the log of every request
//! sent. Random weights on two limits, reservations, refunds, server
//! corrections and clocks that jump, idle for days, go back and start
//! anywhere in the `u64` range. Checked:
//! - no stretch of one period ever holds more than a limit's units of the
//!   requests sent (the refunded ones never were);
//! - a refusal's wait is exact: one nanosecond less is refused, the wait
//!   itself admits;
//! - a refusal takes nothing from any limit, and a refund made at once
//!   restores what the limiter counted;
//! - a server's count only ever raises the limiter's.
// Single-threaded properties of safe code: miri has nothing to find here
// that the native run does not.
#![cfg(not(miri))]

use core::time::Duration;

use proptest::prelude::*;
use tripwire::clock::FixedClock;
use tripwire::limiter::{Grant, LimitConfig, RateLimiter, Throttled};

const SEC: u64 = 1_000_000_000;

#[derive(Debug, Clone)]
enum Op {
    /// Costs on each limit, and how long the caller would wait (ms).
    Acquire([u32; 2], u64),
    /// Gives back the grant this many grants ago, if it was not sent yet.
    Refund(usize),
    /// The server reports this much used on a limit (in a window that ends
    /// this many ms from now, if given).
    Observe(usize, u64, Option<u64>),
    /// The clock moves on (ns).
    Advance(u64),
    /// The clock goes back (ns).
    Back(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => ([0u32..8, 0u32..3], prop_oneof![3 => Just(0u64), 1 => 0u64..3_000]).prop_map(|(c, w)| Op::Acquire(c, w)),
        2 => (0usize..4).prop_map(Op::Refund),
        1 => (0usize..2, 0u64..200, proptest::option::of(0u64..12_000)).prop_map(|(l, u, w)| Op::Observe(l, u, w)),
        6 => (0u64..2 * SEC).prop_map(Op::Advance),
        1 => (0u64..30 * 86_400 * SEC).prop_map(Op::Advance),
        1 => (0u64..5 * SEC).prop_map(Op::Back),
    ]
}

/// 100 weight per 10 s (burst 10), 5 orders per 1 s (burst 2).
fn configs() -> [LimitConfig; 2] {
    [
        LimitConfig::builder(100, Duration::from_secs(10)).burst(10).build().unwrap(),
        LimitConfig::builder(5, Duration::from_secs(1)).burst(2).build().unwrap(),
    ]
}

/// A request admitted: when it is sent (in real time, its wait after the
/// grant), its costs, and its grant until it is refunded.
struct Sent {
    at: u128,
    costs: [u32; 2],
    grant: Option<Grant<2>>,
    refunded: bool,
}

/// Whether any stretch of `period` holds more than `units` of `sends`.
fn over(sends: &[(u128, u32)], period: u128, units: u32) -> Option<(u128, u32)> {
    let mut sends = sends.to_vec();
    sends.sort_unstable();
    let (mut from, mut sum) = (0, 0u32);
    for to in 0..sends.len() {
        sum += sends[to].1;
        while sends[to].0 - sends[from].0 >= period {
            sum -= sends[from].1;
            from += 1;
        }
        if sum > units {
            return Some((sends[to].0, sum));
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_limiter_never_sends_more_than_a_limit_and_its_waits_are_exact(
        start in prop_oneof![Just(0u64), Just(u64::MAX - 20 * SEC), any::<u64>()],
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let limiter = RateLimiter::new(configs());
        // The clock as the limiter reads it; the real time since `start`
        // (u128: it never wraps), and how far behind it the clock has
        // fallen (each `Back` adds to the lag, each `Advance` moves both).
        let (mut now, mut real, mut lag) = (start, 0u128, 0u128);
        let mut sent: Vec<Sent> = Vec::new();
        // Each server report: the limit, when, the rest of its window, the
        // units it had seen, and the requests granted before it.
        let mut reports: Vec<(usize, u128, u128, u64, usize)> = Vec::new();
        for op in ops {
            let clock = FixedClock(now);
            let on_time = lag == 0;
            match op {
                Op::Acquire(costs, wait_ms) => {
                    let before = limiter.in_use(&clock);
                    let waits = [limiter.wait_for([costs[0], 0], &clock), limiter.wait_for([0, costs[1]], &clock)];
                    match limiter.acquire(costs, Duration::from_millis(wait_ms), &clock) {
                        Ok(grant) => {
                            prop_assert!(grant.ready_in() <= Duration::from_millis(wait_ms));
                            let at = real + grant.ready_in().as_nanos();
                            sent.push(Sent { at, costs, grant: Some(grant), refunded: false });
                        }
                        Err(Throttled::Wait { limit, wait }) => {
                            // Past the wait asked for, cut to what each limit reserves.
                            let cap = (0..2)
                                .filter(|&l| costs[l] > 0)
                                .map(|l| configs()[l].max_wait())
                                .fold(Duration::from_millis(wait_ms), Duration::min);
                            prop_assert!(wait > cap, "{wait:?}");
                            // Nothing taken from either limit.
                            prop_assert_eq!(limiter.in_use(&clock), before);
                            prop_assert_eq!(waits[limit], Ok(wait), "the longest wait of the two");
                            if on_time {
                                // Exact: a nanosecond less is refused, the wait admits.
                                let ns = u64::try_from(wait.as_nanos()).unwrap();
                                let early = FixedClock(now.wrapping_add(ns - 1));
                                prop_assert!(limiter.try_acquire(costs, &early).is_err());
                                let end = FixedClock(now.wrapping_add(ns));
                                let then = limiter.in_use(&end);
                                let grant = limiter.try_acquire(costs, &end);
                                prop_assert!(grant.is_ok(), "{:?} at the wait's end", grant);
                                limiter.refund(grant.unwrap(), &end);
                                prop_assert_eq!(limiter.in_use(&end), then, "the refund restored it");
                                // The clock has read the wait's end: that is now.
                                now = end.0;
                                real += u128::from(ns);
                            }
                        }
                        Err(Throttled::TooCostly { .. }) => prop_assert!(false, "costs within the bursts"),
                    }
                }
                Op::Refund(back) => {
                    let Some(i) = sent.len().checked_sub(back + 1) else { continue };
                    // Only a grant whose send time is still to come.
                    if sent[i].at > real && let Some(grant) = sent[i].grant.take() {
                        limiter.refund(grant, &clock);
                        sent[i].refunded = true;
                    }
                }
                Op::Observe(limit, used, window_left) => {
                    let before = limiter.in_use(&clock);
                    let raised = match window_left {
                        None => limiter.observe_used(limit, used, &clock),
                        Some(ms) => limiter.observe_used_in(limit, used, Duration::from_millis(ms), &clock),
                    };
                    let after = limiter.in_use(&clock);
                    prop_assert!(after[limit] >= before[limit], "never lowered");
                    let units = u64::from(configs()[limit].units());
                    if raised {
                        prop_assert!(after[limit] <= used.min(units), "never more than the server saw");
                    } else {
                        prop_assert_eq!(after, before, "a lower count changes nothing");
                    }
                    if window_left.is_none() {
                        prop_assert!(after[limit] >= used.min(units), "counts what the server saw");
                    }
                    // The window's rest, as the server counts it.
                    let period = configs()[limit].period().as_nanos();
                    let rest = window_left.map_or(period, |ms| (u128::from(ms) * 1_000_000).min(period));
                    reports.push((limit, real, rest, used.min(units), sent.len()));
                }
                Op::Advance(ns) => {
                    now = now.wrapping_add(ns);
                    real += u128::from(ns);
                }
                Op::Back(ns) => {
                    now = now.wrapping_sub(ns);
                    lag += u128::from(ns);
                }
            }
        }
        for (limit, config) in configs().iter().enumerate() {
            let sends: Vec<(u128, u32)> = sent
                .iter()
                .filter(|s| !s.refunded)
                .map(|s| (s.at, s.costs[limit]))
                .filter(|&(_, c)| c > 0)
                .collect();
            let period = config.period().as_nanos();
            prop_assert_eq!(over(&sends, period, config.units()), None, "limit {}", limit);
            // After a server reported `used`, the requests granted in the
            // rest of its window have room for the rest of the units only.
            for &(_, at, rest, used, before) in reports.iter().filter(|r| r.0 == limit) {
                let after: u64 = sent[before..]
                    .iter()
                    .filter(|s| !s.refunded && (at..at + rest).contains(&s.at))
                    .map(|s| u64::from(s.costs[limit]))
                    .sum();
                prop_assert!(after + used <= u64::from(config.units()), "limit {limit}: {after} sent after {used} seen");
            }
        }
    }
}
