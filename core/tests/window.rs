//! The rolling window against a plain reference (a list of timestamped
//! outcomes), plus a concurrent check that no count is lost.

use core::time::Duration;
use std::sync::Arc;
use std::thread;

use proptest::prelude::*;
use tripwire::{Breaker, BreakerConfig, FixedClock, ManualClock, Outcome, State};

const WIDTH_NS: u64 = 1_000_000;

#[derive(Debug, Clone)]
enum Op {
    Call { failed: bool, duration_ns: u64 },
    Advance(u64),
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (any::<bool>(), prop_oneof![Just(0u64), Just(500), Just(5_000)])
            .prop_map(|(failed, duration_ns)| Op::Call { failed, duration_ns }),
        3 => (0u64..3 * WIDTH_NS).prop_map(Op::Advance),
        1 => (10 * WIDTH_NS..40 * WIDTH_NS).prop_map(Op::Advance),
        1 => Just(Op::Reset),
    ]
}

/// Trips when the outcomes whose epoch lies in the window reach a rate.
/// Rates are checked on failures and slow calls only.
struct Reference {
    buckets: u64,
    min_calls: u64,
    failure_rate: f64,
    slow_rate: f64,
    outcomes: Vec<(u64, bool, bool)>,
}

impl Reference {
    fn trips(&self, now: u64) -> bool {
        let epoch = now / WIDTH_NS;
        let inside: Vec<_> =
            self.outcomes.iter().filter(|(t, ..)| epoch - t / WIDTH_NS < self.buckets).collect();
        let calls = inside.len() as f64;
        let failures = inside.iter().filter(|o| o.1).count() as f64;
        let slow = inside.iter().filter(|o| o.2).count() as f64;
        inside.len() as u64 >= self.min_calls
            && ((self.failure_rate > 0.0 && failures >= self.failure_rate * calls)
                || (self.slow_rate > 0.0 && slow >= self.slow_rate * calls))
    }
}

fn run(
    buckets: u32,
    min_calls: u32,
    failure_rate: f64,
    slow_rate: f64,
    ops: Vec<Op>,
) -> Result<(), TestCaseError> {
    let breaker = Breaker::new(
        BreakerConfig::builder()
            .failure_threshold(0)
            .window(buckets, Duration::from_nanos(WIDTH_NS))
            .min_calls(min_calls)
            .failure_rate(failure_rate)
            .slow_call(Duration::from_nanos(1_000))
            .slow_rate(slow_rate)
            .build()
            .unwrap(),
    );
    let mut reference = Reference {
        buckets: u64::from(buckets),
        min_calls: u64::from(min_calls),
        failure_rate,
        slow_rate,
        outcomes: vec![],
    };
    let clock = ManualClock::new(1_000 * WIDTH_NS);
    for (step, op) in ops.into_iter().enumerate() {
        match op {
            Op::Call { failed, duration_ns } => {
                let ticket =
                    breaker.try_acquire(&clock).expect("never open: each trip is followed by a reset");
                clock.advance(Duration::from_nanos(duration_ns));
                let outcome = if failed { Outcome::Failure } else { Outcome::Success };
                let tripped = breaker.record(ticket, outcome, &clock);
                let slow = duration_ns >= 1_000;
                reference.outcomes.push((tripwire::Clock::now(&clock), failed, slow));
                // Rates are checked when a failure or a slow call arrives: a
                // plain success never trips a breaker.
                let want = (failed || slow) && reference.trips(tripwire::Clock::now(&clock));
                prop_assert_eq!(tripped.is_some(), want, "step {}", step);
                if want {
                    prop_assert_eq!(breaker.state(), State::Open);
                    breaker.reset();
                    reference.outcomes.clear();
                }
            }
            Op::Advance(ns) => clock.advance(Duration::from_nanos(ns)),
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

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn window_trips_exactly_when_the_reference_does(
        buckets in 1u32..8,
        min_calls in 1u32..12,
        failure_rate in prop_oneof![Just(0.0), 0.2f64..1.0],
        slow_rate in prop_oneof![Just(0.0), 0.2f64..1.0],
        ops in prop::collection::vec(op(), 1..MAX_OPS),
    ) {
        prop_assume!(failure_rate > 0.0 || slow_rate > 0.0);
        run(buckets, min_calls, failure_rate, slow_rate, ops)?;
    }
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
    const THREADS: usize = 4;
    let per_thread: u32 = if cfg!(miri) { 10 } else { 20_000 };
    let total = THREADS as u32 * per_thread;
    let breaker = Arc::new(Breaker::new(
        BreakerConfig::builder()
            .failure_threshold(0)
            .window(4, Duration::from_secs(1))
            .min_calls(total)
            .failure_rate(1.0)
            .build()
            .unwrap(),
    ));
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
    // The window trips only once it holds `total` calls: had one count been
    // lost, it would never trip.
    assert_eq!(reports.iter().sum::<usize>(), 1, "{reports:?}");
    assert_eq!(breaker.state(), State::Open);
}
