//! Model-based test: random sequences of acquire / record (every outcome,
//! late tickets included) / advance time / manual actions, checked step by
//! step against a plain sequential model of the rules in DESIGN.md.

use core::time::Duration;

use proptest::prelude::*;
use tripwire::{Breaker, BreakerConfig, ManualClock, Outcome, State, Ticket};

/// The rules, written as plainly as possible.
#[derive(Debug)]
struct Model {
    threshold: u32,
    half_open_max: u32,
    half_open_successes: u32,
    open_timeout: u64,
    open_timeout_max: u64,
    growth: f64,
    state: State,
    generation: u32,
    failures: u32,
    probes: u32,
    passed: u32,
    reopens: u32,
    entered: u64,
    counts: Counts,
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    successes: u64,
    failures: u64,
    ignored: u64,
    rejected: u64,
    transitions: u64,
}

type Change = Option<(State, State, u32)>;

impl Model {
    fn cooldown(&self) -> u64 {
        let grown = self.open_timeout as f64 * self.growth.powi(self.reopens as i32);
        (grown as u64).min(self.open_timeout_max)
    }

    fn enter(&mut self, to: State, now: u64) -> Change {
        let from = self.state;
        self.state = to;
        self.generation = self.generation.wrapping_add(1);
        self.failures = 0;
        self.probes = 0;
        self.passed = 0;
        if matches!(to, State::Open | State::HalfOpen) {
            self.entered = now;
        }
        self.counts.transitions += 1;
        Some((from, to, self.generation))
    }

    /// `Ok((generation, probe, change))` or `Err(retry_after)`.
    fn acquire(&mut self, now: u64) -> Result<(u32, bool, Change), Option<u64>> {
        let waited = now.saturating_sub(self.entered);
        match self.state {
            State::Closed | State::Disabled => Ok((self.generation, false, None)),
            State::ForcedOpen => {
                self.counts.rejected += 1;
                Err(None)
            }
            State::HalfOpen if self.probes < self.half_open_max => {
                self.probes += 1;
                Ok((self.generation, true, None))
            }
            State::Open | State::HalfOpen if waited >= self.cooldown() => {
                let change = self.enter(State::HalfOpen, now);
                self.probes = 1;
                Ok((self.generation, true, change))
            }
            State::Open | State::HalfOpen => {
                self.counts.rejected += 1;
                Err(Some(self.cooldown() - waited))
            }
        }
    }

    fn record(&mut self, generation: u32, outcome: Outcome, now: u64) -> Change {
        match outcome {
            Outcome::Success => self.counts.successes += 1,
            Outcome::Failure => self.counts.failures += 1,
            Outcome::Ignored => self.counts.ignored += 1,
        }
        if generation != self.generation {
            return None;
        }
        match (self.state, outcome) {
            (State::Closed, Outcome::Success) => self.failures = 0,
            (State::Closed, Outcome::Failure) => {
                self.failures += 1;
                if self.failures >= self.threshold {
                    self.reopens = 0;
                    return self.enter(State::Open, now);
                }
            }
            (State::HalfOpen, Outcome::Success) => {
                self.probes -= 1;
                self.passed += 1;
                if self.passed >= self.half_open_successes {
                    self.reopens = 0;
                    return self.enter(State::Closed, now);
                }
            }
            (State::HalfOpen, Outcome::Failure) => {
                self.reopens += 1;
                return self.enter(State::Open, now);
            }
            (State::HalfOpen, Outcome::Ignored) => self.probes -= 1,
            _ => {}
        }
        None
    }

    fn manual(&mut self, to: State, now: u64) -> Change {
        self.reopens = 0;
        self.enter(to, now)
    }
}

#[derive(Debug, Clone)]
enum Op {
    Acquire,
    Record { pick: usize, outcome: Outcome },
    Advance(u64),
    ForceOpen,
    Disable,
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    let outcome = prop_oneof![Just(Outcome::Success), Just(Outcome::Failure), Just(Outcome::Ignored)];
    prop_oneof![
        6 => Just(Op::Acquire),
        6 => (any::<usize>(), outcome).prop_map(|(pick, outcome)| Op::Record { pick, outcome }),
        3 => (0u64..25_000).prop_map(Op::Advance),
        1 => Just(Op::ForceOpen),
        1 => Just(Op::Disable),
        1 => Just(Op::Reset),
    ]
}

#[derive(Debug, Clone)]
struct Params {
    threshold: u32,
    half_open_max: u32,
    half_open_successes: u32,
    open_timeout: u64,
    cap_factor: u64,
    growth: u32,
}

fn params() -> impl Strategy<Value = Params> {
    (1u32..5, 1u32..4, 1u32..4, 1_000u64..10_000, prop_oneof![Just(1u64), Just(4), Just(16)], 1u32..4)
        .prop_map(|(threshold, max, succ, open_timeout, cap_factor, growth)| Params {
            threshold,
            half_open_max: max,
            half_open_successes: succ.min(max),
            open_timeout,
            cap_factor,
            growth,
        })
}

fn change(t: Option<tripwire::Transition>) -> Change {
    t.map(|t| (t.from, t.to, t.generation))
}

fn run(p: Params, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let config = BreakerConfig::builder()
        .failure_threshold(p.threshold)
        .half_open_max(p.half_open_max)
        .half_open_successes(p.half_open_successes)
        .open_timeout(Duration::from_nanos(p.open_timeout))
        .open_timeout_max(Duration::from_nanos(p.open_timeout * p.cap_factor))
        .open_timeout_growth(f64::from(p.growth))
        .build()
        .expect("generated configs are valid");
    let breaker = Breaker::new(config);
    let mut model = Model {
        threshold: p.threshold,
        half_open_max: p.half_open_max,
        half_open_successes: p.half_open_successes,
        open_timeout: p.open_timeout,
        open_timeout_max: p.open_timeout * p.cap_factor,
        growth: f64::from(p.growth),
        state: State::Closed,
        generation: 0,
        failures: 0,
        probes: 0,
        passed: 0,
        reopens: 0,
        entered: 0,
        counts: Counts::default(),
    };
    let clock = ManualClock::new(1_000_000);
    let mut tickets: Vec<Ticket> = Vec::new();
    for (step, op) in ops.into_iter().enumerate() {
        let now = clock_now(&clock);
        match op {
            Op::Acquire => {
                let got = breaker.try_acquire(&clock);
                let want = model.acquire(now);
                match (got, want) {
                    (Ok(t), Ok((generation, probe, ch))) => {
                        prop_assert_eq!(
                            (t.generation(), t.is_probe(), change(t.transition())),
                            (generation, probe, ch),
                            "step {}",
                            step
                        );
                        tickets.push(t);
                    }
                    (Err(r), Err(retry)) => {
                        prop_assert_eq!(r.retry_after, retry.map(Duration::from_nanos), "step {}", step);
                        prop_assert_eq!(r.state, model.state, "step {}", step);
                    }
                    (got, want) => prop_assert!(false, "step {}: got {:?}, model {:?}", step, got, want),
                }
            }
            Op::Record { pick, outcome } => {
                if tickets.is_empty() {
                    continue;
                }
                let t = tickets.swap_remove(pick % tickets.len());
                let got = change(breaker.record(t, outcome, &clock));
                prop_assert_eq!(got, model.record(t.generation(), outcome, now), "step {}", step);
            }
            Op::Advance(ns) => clock.advance(Duration::from_nanos(ns)),
            Op::ForceOpen => {
                prop_assert_eq!(change(Some(breaker.force_open())), model.manual(State::ForcedOpen, now))
            }
            Op::Disable => {
                prop_assert_eq!(change(Some(breaker.disable())), model.manual(State::Disabled, now))
            }
            Op::Reset => prop_assert_eq!(change(Some(breaker.reset())), model.manual(State::Closed, now)),
        }
        prop_assert_eq!(breaker.state(), model.state, "step {}", step);
        prop_assert_eq!(breaker.generation(), model.generation, "step {}", step);
        let s = breaker.snapshot();
        let got = Counts {
            successes: s.successes,
            failures: s.failures,
            ignored: s.ignored,
            rejected: s.rejected,
            transitions: s.transitions,
        };
        prop_assert_eq!(&got, &model.counts, "step {}", step);
    }
    Ok(())
}

fn clock_now(clock: &ManualClock) -> u64 {
    use tripwire::Clock;
    clock.now()
}

/// Cases per run: 2000 natively, a handful under miri (which is ~1000× slower).
const CASES: u32 = if cfg!(miri) { 6 } else { 2000 };
const MAX_OPS: usize = if cfg!(miri) { 40 } else { 120 };

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn breaker_matches_the_reference_model(p in params(), ops in prop::collection::vec(op(), 1..MAX_OPS)) {
        run(p, ops)?;
    }
}
