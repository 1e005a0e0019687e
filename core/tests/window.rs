//! The rolling windows against plain references (a list of outcomes), at
//! every clock value and after any idle time; saturation; a concurrent
//! check that no count is lost.

use core::time::Duration;
use std::sync::Arc;
use std::thread;

use proptest::prelude::*;
use tripwire::breaker::{AnyWindow, CountOnly, RollingWindow, TimeOnly, Windows};
use tripwire::{Breaker, BreakerConfig, Clock, ManualClock, Outcome, State, clock::FixedClock};

/// The epoch of `now` as the builder documents it: ⌊now × ⌊2^64 / width⌋ / 2^64⌋.
fn epoch(now: u64, width: u64) -> u64 {
    let recip = ((1u128 << 64) / u128::from(width)) as u64;
    ((u128::from(now) * u128::from(recip)) >> 64) as u64
}

const SLOW_NS: u64 = 1_000;

#[derive(Debug, Clone)]
enum Op {
    Call {
        failed: bool,
        duration_ns: u64,
    },
    Advance(u64),
    /// An idle gap of exactly this many epochs.
    Idle(u64),
    Reset,
}

/// One step; a call fails with probability `failing` (drawn per case, so
/// that some cases hover around the rate drawn and meet it exactly).
fn op(width: u64, failing: f64) -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (prop::bool::weighted(failing), prop_oneof![Just(0u64), Just(500), Just(5_000)])
            .prop_map(|(failed, duration_ns)| Op::Call { failed, duration_ns }),
        3 => (0u64..3 * width).prop_map(Op::Advance),
        1 => (10 * width..40 * width).prop_map(Op::Advance),
        1 => prop_oneof![
            (0u32..46).prop_map(|k| 1u64 << k),
            (1u64..64).prop_map(|n| n * 32),
            any::<u64>().prop_map(|n| n >> 20),
        ].prop_map(Op::Idle),
        1 => Just(Op::Reset),
    ]
}

/// Clock values to start from: anywhere in `u64`, near its end, and on the
/// edges of power-of-two epochs.
fn start(width: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        (0u64..1 << 30).prop_map(|d| u64::MAX - d),
        (0u32..45, 0u64..4).prop_map(move |(k, d)| (1u64 << k).saturating_mul(width).saturating_sub(d)),
        Just(0u64),
    ]
}

/// A rate as the exact fraction it was drawn as: (k, n) is k/n, (0, 1) off.
type Fraction = (u64, u64);

/// The `f64` a fraction is configured as.
fn rate_of((k, n): Fraction) -> f64 {
    k as f64 / n as f64
}

/// Trips when the outcomes inside the window reach a rate; rates are
/// checked on failures and slow calls only, and compared exactly, in
/// integers: `count × n ≥ k × calls`, whatever the breaker does inside.
struct Reference {
    window: RollingWindow,
    width: u64,
    min_calls: u64,
    failure_rate: Fraction,
    slow_rate: Fraction,
    /// (epoch, failed, slow), oldest first, since the window last started.
    outcomes: Vec<(u64, bool, bool)>,
}

impl Reference {
    fn trips(&self, now: u64) -> bool {
        let inside: Vec<_> = match self.window {
            RollingWindow::Time { buckets, .. } => {
                let e = epoch(now, self.width);
                self.outcomes.iter().filter(|o| e - o.0 < u64::from(buckets)).collect()
            }
            RollingWindow::Count { calls } => self.outcomes.iter().rev().take(calls as usize).collect(),
        };
        let calls = inside.len() as u64;
        let failures = inside.iter().filter(|o| o.1).count() as u64;
        let slow = inside.iter().filter(|o| o.2).count() as u64;
        let reached = |(k, n): Fraction, count: u64| k > 0 && count * n >= k * calls;
        calls >= self.min_calls && (reached(self.failure_rate, failures) || reached(self.slow_rate, slow))
    }
}

#[derive(Debug, Clone)]
struct Params {
    window: RollingWindow,
    min_calls: u32,
    failure_rate: Fraction,
    slow_rate: Fraction,
    start: u64,
}

/// Runs `ops` on the default storage, then on the one that holds only
/// the window `p` names: both trip exactly when the reference does.
fn run(p: Params, ops: Vec<Op>) -> Result<(), TestCaseError> {
    run_on::<AnyWindow>(&p, &ops)?;
    match p.window {
        RollingWindow::Time { .. } => run_on::<TimeOnly>(&p, &ops),
        RollingWindow::Count { .. } => run_on::<CountOnly>(&p, &ops),
    }
}

fn run_on<W: Windows>(p: &Params, ops: &[Op]) -> Result<(), TestCaseError> {
    let builder = BreakerConfig::builder()
        .failure_threshold(0)
        .min_calls(p.min_calls)
        .failure_rate(rate_of(p.failure_rate))
        .slow_call(Duration::from_nanos(SLOW_NS))
        .slow_rate(rate_of(p.slow_rate));
    let (builder, width) = match p.window {
        RollingWindow::Time { buckets, width } => (builder.window(buckets, width), width.as_nanos() as u64),
        RollingWindow::Count { calls } => (builder.count_window(calls), 1_000_000),
    };
    let config = builder.build().unwrap();
    prop_assert_eq!(config.rolling_window(), p.window);
    let breaker: Breaker<W> = Breaker::try_new(config).unwrap();
    let mut reference = Reference {
        window: p.window,
        width,
        min_calls: u64::from(p.min_calls),
        failure_rate: p.failure_rate,
        slow_rate: p.slow_rate,
        outcomes: vec![],
    };
    let clock = ManualClock::new(p.start);
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Call { failed, duration_ns } => {
                let ticket =
                    breaker.try_acquire(&clock).expect("never open: each trip is followed by a reset");
                let before = clock.now();
                clock.advance(Duration::from_nanos(duration_ns));
                let outcome = if failed { Outcome::Failure } else { Outcome::Success };
                let tripped = breaker.record(ticket, outcome, &clock);
                let now = clock.now();
                // Measured from the ticket's start; a clock stuck at u64::MAX measures 0.
                let slow = now - before >= SLOW_NS;
                reference.outcomes.push((epoch(now, width), failed, slow));
                let want = (failed || slow) && reference.trips(now);
                prop_assert_eq!(tripped.is_some(), want, "step {} at {}", step, now);
                if want {
                    prop_assert_eq!(breaker.state(), State::Open);
                    breaker.reset();
                    reference.outcomes.clear();
                }
            }
            Op::Advance(ns) => clock.advance(Duration::from_nanos(ns)),
            Op::Idle(epochs) => {
                // To the same offset within an epoch `epochs` later (or u64::MAX).
                clock.advance(Duration::from_nanos(epochs.saturating_mul(width)));
            }
            Op::Reset => {
                breaker.reset();
                reference.outcomes.clear();
            }
        }
    }
    Ok(())
}

const CASES: u32 = if cfg!(miri) { 4 } else { 1000 };
const MAX_OPS: usize = if cfg!(miri) { 40 } else { 150 };

/// Off, or k/n from 0.2 to 1: a fraction of `calls` (a count window's
/// size: a full window then meets the rate exactly), any fraction of up
/// to 120 calls, or a rate with four decimals.
fn rate(calls: u64) -> impl Strategy<Value = Fraction> {
    prop_oneof![
        1 => Just((0, 1)),
        3 => (calls.div_ceil(5)..=calls).prop_map(move |k| (k, calls)),
        2 => (1u64..=120).prop_flat_map(|n| (n.div_ceil(5)..=n, Just(n))),
        1 => (2_000u64..=10_000).prop_map(|k| (k, 10_000)),
    ]
}

fn rates(calls: u64) -> impl Strategy<Value = (Fraction, Fraction)> {
    (rate(calls), rate(calls)).prop_filter("a rate condition", |(f, s)| f.0 > 0 || s.0 > 0)
}

fn time_params() -> impl Strategy<Value = Params> {
    let width =
        prop_oneof![Just(1_000_000u64), Just(7_000_000), Just(1_000_000_000), Just(3_600_000_000_000)];
    (1u32..8, width, 1u32..12, rates(25)).prop_flat_map(
        |(buckets, width, min_calls, (failure_rate, slow_rate))| {
            start(width).prop_map(move |start| Params {
                window: RollingWindow::Time { buckets, width: Duration::from_nanos(width) },
                min_calls,
                failure_rate,
                slow_rate,
                start,
            })
        },
    )
}

fn count_params() -> impl Strategy<Value = Params> {
    let calls = prop_oneof![1u32..=60, 40u32..120, Just(tripwire::breaker::MAX_COUNT_WINDOW)];
    (calls, any::<u64>()).prop_flat_map(|(calls, start)| {
        // A full window at least, half the time: a rate of k/calls then
        // meets its threshold exactly whenever the window holds k failures.
        let min_calls = prop_oneof![1u32..=calls.min(12), Just(calls)];
        (rates(calls.into()), min_calls).prop_map(move |((failure_rate, slow_rate), min_calls)| Params {
            window: RollingWindow::Count { calls },
            min_calls,
            failure_rate,
            slow_rate,
            start,
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    #[cfg_attr(miri, ignore = "single-threaded reference check of safe code; the threaded tests below run under miri")]
    fn a_time_window_trips_exactly_when_the_reference_does(
        p in time_params(),
        ops in (0.1f64..0.9).prop_flat_map(|f| prop::collection::vec(op(1_000_000, f), 1..MAX_OPS)),
    ) {
        // The ops' gaps are drawn for 1 ms; scale them to the width drawn.
        let RollingWindow::Time { width, .. } = p.window else { unreachable!() };
        let scale = width.as_nanos() as u64 / 1_000_000;
        let ops = ops.into_iter().map(|op| match op {
            Op::Advance(ns) => Op::Advance(ns.saturating_mul(scale)),
            other => other,
        }).collect();
        run(p, ops)?;
    }

    #[test]
    #[cfg_attr(miri, ignore = "single-threaded reference check of safe code; the threaded tests below run under miri")]
    fn a_count_window_trips_exactly_when_the_reference_does(
        p in count_params(),
        ops in (0.1f64..0.9).prop_flat_map(|f| prop::collection::vec(op(1_000_000, f), 1..MAX_OPS * 4)),
    ) {
        run(p, ops)?;
    }

    /// A full count window of n calls and a rate of k/n: calls fail (or
    /// are slow) about k times in n, so the window keeps meeting its
    /// threshold exactly, where a rate compared in floating point trips a
    /// call late for some k/n (7/25, 14/50, ...).
    #[test]
    #[cfg_attr(miri, ignore = "single-threaded reference check of safe code; the threaded tests below run under miri")]
    fn a_full_count_window_meets_a_rate_of_its_own_size_exactly(
        (p, ops) in (1u32..=60, 1u32..=60, any::<u64>(), any::<bool>()).prop_flat_map(|(n, k, start, slow)| {
            let (n, k) = (n.max(k), n.min(k));
            let fraction = (u64::from(k), u64::from(n));
            let (failure_rate, slow_rate) = if slow { ((0, 1), fraction) } else { (fraction, (0, 1)) };
            let p = Params { window: RollingWindow::Count { calls: n }, min_calls: n, failure_rate, slow_rate, start };
            let bad = f64::from(k) / f64::from(n);
            let call = prop::bool::weighted(bad).prop_map(move |b| Op::Call {
                failed: b && !slow,
                duration_ns: if b && slow { 5_000 } else { 0 },
            });
            (Just(p), prop::collection::vec(call, 1..MAX_OPS * 2))
        }),
    ) {
        run(p, ops)?;
    }
}

fn rate_breaker(builder: tripwire::BreakerConfigBuilder) -> Breaker {
    Breaker::new(builder.failure_threshold(0).build().unwrap())
}

/// Records `n` outcomes at `clock`, returning the index of the one that
/// tripped the breaker, if any.
fn record_n(b: &Breaker, n: u64, outcome: Outcome, clock: &impl Clock) -> Option<u64> {
    (0..n).find(|_| {
        let t = b.try_acquire(clock).unwrap();
        b.record(t, outcome, clock).is_some()
    })
}

#[test]
fn the_window_counts_in_the_upper_half_of_every_tag_range() {
    // Defect: a bucket tag of 24 bits read any epoch ≥ 2^23 as "later".
    let width = 1_000_000;
    for now in [(1u64 << 23) * width, (3u64 << 23) * width + 17, u64::MAX - 5 * width, u64::MAX] {
        let b = rate_breaker(
            BreakerConfig::builder().window(10, Duration::from_millis(1)).min_calls(4).failure_rate(0.5),
        );
        assert_eq!(record_n(&b, 4, Outcome::Failure, &FixedClock(now)), Some(3), "at {now}");
    }
}

#[test]
fn an_idle_gap_of_2_to_the_k_epochs_never_brings_old_counts_back() {
    // Defect: a tag that wraps made counts from 2^24 epochs ago current again.
    let width = 1_000_000u64;
    for k in [13u32, 23, 24, 32, 40, 44] {
        let b = rate_breaker(
            BreakerConfig::builder().window(4, Duration::from_millis(1)).min_calls(10).failure_rate(0.5),
        );
        let clock = ManualClock::new(5 * width);
        assert_eq!(record_n(&b, 9, Outcome::Failure, &clock), None);
        clock.advance(Duration::from_nanos((1u64 << k) * width));
        assert_eq!(
            record_n(&b, 1, Outcome::Failure, &clock),
            None,
            "2^{k} epochs later: one call in the window"
        );
        // And the window keeps counting after the gap.
        assert_eq!(record_n(&b, 9, Outcome::Failure, &clock), Some(8), "2^{k} epochs later");
    }
}

#[test]
#[cfg_attr(miri, ignore = "three million calls")]
fn a_full_bucket_never_stops_counting_failures() {
    // Defect: a bucket stopped counting at 2^20 − 1 calls, so 1M successes
    // and then 2M failures (66 %) never tripped.
    let clock = FixedClock(42_000_000_000);
    let b = rate_breaker(BreakerConfig::builder().min_calls(10).failure_rate(0.5));
    assert_eq!(record_n(&b, 1_000_000, Outcome::Success, &clock), None);
    // It trips at the millionth failure: 1M of 2M calls.
    assert_eq!(record_n(&b, 2_000_000, Outcome::Failure, &clock), Some(999_999));
}

#[test]
#[cfg_attr(miri, ignore = "two million calls")]
fn the_slow_rate_stays_true_when_a_bucket_fills() {
    // Defect: slow calls kept counting while the bucket's calls stood
    // still, so a slow rate of 36 % read as above 50 %.
    let b = rate_breaker(
        BreakerConfig::builder().slow_call(Duration::from_micros(1)).min_calls(10).slow_rate(0.5),
    );
    let clock = ManualClock::new(1_000_000_000);
    assert_eq!(record_n(&b, 1_000_000, Outcome::Success, &clock), None);
    let slow = |n| {
        (0..n).find(|_| {
            let t = b.try_acquire(&clock).unwrap();
            clock.set(t.started_at() + 1_000);
            b.record(t, Outcome::Success, &clock).is_some()
        })
    };
    assert_eq!(slow(600_000), None, "600k slow of 1.6M calls: 37.5 %");
    assert_eq!(slow(400_000), Some(399_999), "1M slow of 2M calls: 50 %");
}

#[test]
fn many_closes_in_one_epoch_never_bring_old_counts_back() {
    // Generations move on by thousands while the clock stands still; each
    // Closed generation starts from an empty window.
    let b = rate_breaker(
        BreakerConfig::builder().open_timeout(Duration::from_micros(1)).min_calls(3).failure_rate(1.0),
    );
    let clock = ManualClock::new(7_000_000_000);
    assert_eq!(record_n(&b, 2, Outcome::Failure, &clock), None);
    let switches: u32 = if cfg!(miri) { 300 } else { 70_000 };
    for i in 0..switches {
        if i % 2 == 0 {
            b.reset();
        } else {
            b.force_open();
        }
    }
    b.reset();
    assert_eq!(record_n(&b, 2, Outcome::Failure, &clock), None, "two calls since the last close");
    assert_eq!(record_n(&b, 1, Outcome::Failure, &clock), Some(0));
    // Trip, probe, close, over and over within the epoch (1 µs cool-down).
    for _ in 0..if cfg!(miri) { 20 } else { 5_000 } {
        clock.advance(Duration::from_micros(1));
        let probe = b.try_acquire(&clock).unwrap();
        b.record(probe, Outcome::Success, &clock).unwrap();
        assert_eq!(record_n(&b, 2, Outcome::Failure, &clock), None);
        assert_eq!(record_n(&b, 1, Outcome::Failure, &clock), Some(0));
    }
}

#[test]
fn an_outcome_admitted_before_a_reset_stays_out_of_the_new_window() {
    for count in [false, true] {
        let builder = BreakerConfig::builder().min_calls(2).failure_rate(1.0);
        let b = rate_breaker(if count { builder.count_window(10) } else { builder });
        let clock = FixedClock(3_000_000_000);
        let late = b.try_acquire(&clock).unwrap();
        b.reset();
        assert_eq!(b.record(late, Outcome::Failure, &clock), None);
        assert_eq!(record_n(&b, 1, Outcome::Failure, &clock), None, "one call of the new generation");
        assert_eq!(b.snapshot().failures, 2);
    }
}

#[test]
fn successes_counted_in_a_window_reach_the_snapshot_exactly() {
    let time = BreakerConfig::builder().window(2, Duration::from_millis(1));
    successes_reach_the_snapshot::<AnyWindow>(time.clone());
    successes_reach_the_snapshot::<TimeOnly>(time);
    let count = BreakerConfig::builder().count_window(20);
    successes_reach_the_snapshot::<AnyWindow>(count.clone());
    successes_reach_the_snapshot::<CountOnly>(count);
}

/// Successes and failures through resets, on a breaker on storage `W`.
fn successes_reach_the_snapshot<W: Windows>(builder: tripwire::BreakerConfigBuilder) {
    let builder = builder.failure_threshold(0).min_calls(5).failure_rate(0.9);
    let b: Breaker<W> = Breaker::try_new(builder.clone().build().unwrap()).unwrap();
    let clock = ManualClock::new(0);
    for i in 0..if cfg!(miri) { 40 } else { 1_000u64 } {
        let t = b.try_acquire(&clock).unwrap();
        b.record(t, if i % 10 == 0 { Outcome::Failure } else { Outcome::Success }, &clock);
        clock.advance(Duration::from_micros(300));
        if i % 33 == 0 {
            b.reset();
        }
        let s = b.snapshot();
        assert_eq!((s.successes, s.failures), (i + 1 - (i / 10 + 1), i / 10 + 1), "call {i}");
    }
    let off: Breaker<W> = Breaker::try_new(builder.count_successes(false).build().unwrap()).unwrap();
    let t = off.try_acquire(&clock).unwrap();
    off.record(t, Outcome::Success, &clock);
    assert_eq!(off.snapshot().successes, 0);
}

#[test]
fn slow_calls_count_on_a_clock_that_starts_at_zero() {
    let breaker = Breaker::new(BreakerConfig::builder().slow_call(Duration::from_micros(5)).build().unwrap());
    let clock = ManualClock::new(0);
    let ticket = breaker.try_acquire(&clock).unwrap();
    clock.advance(Duration::from_micros(5));
    breaker.record(ticket, Outcome::Success, &clock);
    assert_eq!(breaker.snapshot().slow, 1);
}

#[test]
fn no_count_is_lost_when_threads_record_at_once() {
    no_count_is_lost::<AnyWindow>(false);
    no_count_is_lost::<TimeOnly>(false);
    no_count_is_lost::<AnyWindow>(true);
    no_count_is_lost::<CountOnly>(true);
}

/// Failures recorded by four threads at once, into a time window or a
/// `count` window on storage `W`.
fn no_count_is_lost<W: Windows>(count: bool) {
    const THREADS: usize = 4;
    let per_thread: u32 = if cfg!(miri) { 10 } else { 20_000 };
    let total = THREADS as u32 * per_thread;
    let builder = BreakerConfig::builder().failure_threshold(0).failure_rate(1.0);
    // A count window holds at most 1000 calls: the last 1000 must all be
    // failures, and min_calls 1000 needs every one counted in order.
    let (builder, min_calls) = if count {
        (
            builder.count_window(tripwire::breaker::MAX_COUNT_WINDOW),
            tripwire::breaker::MAX_COUNT_WINDOW.min(total),
        )
    } else {
        (builder.window(4, Duration::from_secs(1)), total)
    };
    let breaker: Arc<Breaker<W>> =
        Arc::new(Breaker::try_new(builder.min_calls(min_calls).build().unwrap()).unwrap());
    let clock = FixedClock(7_000_000_000);
    let tickets = (0..total).map(|_| breaker.try_acquire(&clock).unwrap()).collect::<Vec<_>>();
    let reports: Vec<_> = thread::scope(|s| {
        tickets
            .chunks(per_thread as usize)
            .map(|chunk| {
                let b = &breaker;
                s.spawn(move || chunk.iter().filter_map(|&t| b.record(t, Outcome::Failure, &clock)).count())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect()
    });
    // The window trips only once it holds `min_calls` calls: had one
    // count been lost, the time window would never trip, and the count
    // window would trip late or twice.
    assert_eq!(reports.iter().sum::<usize>(), 1, "{reports:?}");
    assert_eq!(breaker.state(), State::Open);
}

#[test]
fn concurrent_successes_are_all_counted_for_the_snapshot() {
    let time = BreakerConfig::builder().window(2, Duration::from_millis(1));
    concurrent_successes::<AnyWindow>(time.clone());
    concurrent_successes::<TimeOnly>(time);
    let count = BreakerConfig::builder().count_window(64);
    concurrent_successes::<AnyWindow>(count.clone());
    concurrent_successes::<CountOnly>(count);
}

/// Successes recorded by four threads at once, on storage `W`.
fn concurrent_successes<W: Windows>(builder: tripwire::BreakerConfigBuilder) {
    const THREADS: u64 = 4;
    let per_thread: u64 = if cfg!(miri) { 10 } else { 50_000 };
    let b: Breaker<W> =
        Breaker::try_new(builder.failure_threshold(0).min_calls(10).failure_rate(0.5).build().unwrap())
            .unwrap();
    let clock = ManualClock::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..per_thread {
                    let t = b.try_acquire(&clock).unwrap();
                    b.record(t, Outcome::Success, &clock);
                    clock.advance(Duration::from_nanos(97));
                }
            });
        }
    });
    assert_eq!(b.snapshot().successes, THREADS * per_thread);
}
