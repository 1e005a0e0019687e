//! Model-based test: random sequences of acquire / record (every outcome,
//! late and duplicate tickets included) / advance time / calls stamped
//! with a clock from the future or the past / holds / manual actions,
//! checked step by step against a plain sequential model of the rules in
//! DESIGN.md.
// Single-threaded properties of safe code: miri, which runs the tests that
// reach `unsafe` code or race threads, has nothing to find here that the
// native run does not.
#![cfg(not(miri))]

use core::time::Duration;

use proptest::prelude::*;
use tripwire::breaker::{AnyWindow, NoWindow, Windows};
use tripwire::{Breaker, BreakerConfig, Clock, ManualClock, Outcome, State, Ticket, clock::FixedClock};

/// The probe slots of one Half-Open generation.
const SLOTS: u32 = 10;

/// The rules, written as plainly as possible.
#[derive(Debug)]
struct Model {
    threshold: u32,
    half_open_max: u32,
    half_open_successes: u32,
    open_timeout: u64,
    open_timeout_max: u64,
    max_hold: u64,
    probe_timeout: u64,
    growth: f64,
    state: State,
    held: bool,
    generation: u32,
    failures: u32,
    /// Half-Open: slots in flight (one bit each), slots handed out, successes.
    in_flight: u32,
    issued: u32,
    passed: u32,
    reopens: u32,
    /// Open and Half-Open: when the wait ends (ns; wide enough never to wrap here).
    deadline: i128,
    counts: Counts,
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    successes: u64,
    failures: u64,
    ignored: u64,
    rejected: u64,
    transitions: u64,
    capped_holds: u64,
}

type Change = Option<(State, State, u32)>;

/// What the model says a ticket is: its generation and, for a probe, its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Issued {
    generation: u32,
    slot: Option<u32>,
}

impl Model {
    fn cooldown(&self, reopens: u32) -> u64 {
        // Integer arithmetic (the growth factors here are whole numbers):
        // exact, where `powi` may round differently from one build to the
        // next (miri perturbs it).
        let (max, mut t) = (u128::from(self.open_timeout_max), u128::from(self.open_timeout));
        for _ in 0..reopens {
            if t >= max {
                break;
            }
            t *= self.growth as u128;
        }
        t.min(max) as u64
    }

    /// The time left until the deadline, if it lies within the limit of
    /// its kind (twice the longest wait); anything else has passed.
    fn left(&self, now: u64) -> Option<u64> {
        let limit = 2 * if self.held {
            self.max_hold
        } else if self.state == State::HalfOpen {
            self.probe_timeout
        } else {
            self.open_timeout_max
        };
        let left = self.deadline - i128::from(now);
        (left > 0 && left <= i128::from(limit)).then_some(left as u64)
    }

    fn enter(&mut self, to: State) -> Change {
        let from = self.state;
        self.state = to;
        self.held = false;
        self.generation = self.generation.wrapping_add(1);
        self.failures = 0;
        self.in_flight = 0;
        self.issued = 0;
        self.passed = 0;
        self.counts.transitions += 1;
        Some((from, to, self.generation))
    }

    fn open(&mut self, now: u64, reopens: u32) -> Change {
        let change = self.enter(State::Open);
        self.reopens = reopens;
        self.deadline = i128::from(now) + i128::from(self.cooldown(reopens));
        change
    }

    /// A new Half-Open generation with the caller as the probe of slot 0,
    /// whose probes count as lost after the probe timeout.
    fn half_open(&mut self, now: u64, passed: u32) -> (u32, Change) {
        let change = self.enter(State::HalfOpen);
        self.in_flight = 1;
        self.issued = 1;
        self.passed = passed;
        self.deadline = i128::from(now) + i128::from(self.probe_timeout);
        (0, change)
    }

    /// `Ok((ticket, change))` or `Err(retry_after)`.
    fn acquire(&mut self, now: u64) -> Result<(Issued, Change), Option<u64>> {
        let plain = Issued { generation: self.generation, slot: None };
        match self.state {
            State::Closed | State::Disabled => return Ok((plain, None)),
            State::ForcedOpen => {
                self.counts.rejected += 1;
                return Err(None);
            }
            State::HalfOpen if self.in_flight.count_ones() < self.half_open_max && self.issued < SLOTS => {
                let slot = self.issued;
                self.in_flight |= 1 << slot;
                self.issued += 1;
                return Ok((Issued { generation: self.generation, slot: Some(slot) }, None));
            }
            // Every slot handed out, none in flight: a fresh generation of slots.
            State::HalfOpen if self.in_flight == 0 => {
                let (slot, change) = self.half_open(now, self.passed);
                return Ok((Issued { generation: self.generation, slot: Some(slot) }, change));
            }
            State::Open | State::HalfOpen => {}
        }
        if let Some(left) = self.left(now) {
            self.counts.rejected += 1;
            return Err(Some(left));
        }
        // The wait is over: a probe (after an Open), or lost probes taken over.
        let (slot, change) = self.half_open(now, 0);
        Ok((Issued { generation: self.generation, slot: Some(slot) }, change))
    }

    fn record(&mut self, t: Issued, outcome: Outcome, now: u64) -> Change {
        match outcome {
            Outcome::Success => self.counts.successes += 1,
            Outcome::Failure => self.counts.failures += 1,
            Outcome::Ignored => self.counts.ignored += 1,
        }
        if t.generation != self.generation {
            return None;
        }
        // Half-Open heeds only a probe whose slot is still in flight.
        let awaited = t.slot.is_some_and(|s| self.in_flight & (1 << s) != 0);
        match (self.state, outcome) {
            (State::Closed, Outcome::Success) => self.failures = 0,
            (State::Closed, Outcome::Failure) => {
                self.failures += 1;
                if self.failures >= self.threshold {
                    return self.open(now, 0);
                }
            }
            (State::HalfOpen, Outcome::Success) if awaited => {
                self.in_flight &= !(1 << t.slot.unwrap());
                self.passed += 1;
                if self.passed >= self.half_open_successes {
                    self.reopens = 0;
                    return self.enter(State::Closed);
                }
            }
            (State::HalfOpen, Outcome::Failure) if awaited => return self.open(now, self.reopens + 1),
            (State::HalfOpen, Outcome::Ignored) if awaited => self.in_flight &= !(1 << t.slot.unwrap()),
            _ => {}
        }
        None
    }

    fn hold(&mut self, asked: u64, now: u64) -> Change {
        if asked == 0 {
            return None;
        }
        let len = asked.min(self.max_hold);
        if len < asked {
            self.counts.capped_holds += 1;
        }
        match self.state {
            State::ForcedOpen | State::Disabled => return None,
            // A wait at least as long already?
            State::Open if self.left(now).is_some_and(|l| l >= len) => return None,
            _ => {}
        }
        let reopens = if self.state == State::Closed { 0 } else { self.reopens };
        let change = self.enter(State::Open);
        self.held = true;
        self.reopens = reopens;
        self.deadline = i128::from(now) + i128::from(len);
        change
    }

    fn hold_left(&self, now: u64) -> Option<u64> {
        if self.state == State::Open && self.held { self.left(now) } else { None }
    }

    fn manual(&mut self, to: State) -> Change {
        self.reopens = 0;
        self.enter(to)
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Acquire, stamping with the clock moved by this much (a caller whose
    /// clock runs ahead or behind).
    Acquire(i64),
    /// Records a ticket not recorded yet.
    Record {
        pick: usize,
        outcome: Outcome,
        skew: i64,
    },
    /// Records a ticket once more (a caller's mistake).
    Again {
        pick: usize,
        outcome: Outcome,
    },
    /// Calls whose outcome says nothing (cancelled, a 4xx), one after the
    /// other: in Half-Open they use up the probe slots of a generation.
    Churn(u32),
    Advance(u64),
    Hold(u64),
    ForceOpen,
    Disable,
    Reset,
}

/// Clock offsets: mostly none, sometimes a little, sometimes far (a day).
fn skew() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => Just(0i64),
        1 => -3_000i64..3_000,
        1 => prop_oneof![Just(86_400_000_000_000i64), Just(-500_000i64), Just(-86_400_000_000_000i64)],
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let outcome = || prop_oneof![Just(Outcome::Success), Just(Outcome::Failure), Just(Outcome::Ignored)];
    prop_oneof![
        6 => skew().prop_map(Op::Acquire),
        6 => (any::<usize>(), outcome(), skew()).prop_map(|(pick, outcome, skew)| Op::Record { pick, outcome, skew }),
        2 => (any::<usize>(), outcome()).prop_map(|(pick, outcome)| Op::Again { pick, outcome }),
        1 => (1u32..14).prop_map(Op::Churn),
        3 => (0u64..25_000).prop_map(Op::Advance),
        1 => prop_oneof![3 => 0u64..60_000, 1 => Just(u64::MAX)].prop_map(Op::Hold),
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
    max_hold: u64,
    probe_timeout: u64,
}

fn params() -> impl Strategy<Value = Params> {
    (
        1u32..5,
        1u32..4,
        1u32..4,
        1_000u64..10_000,
        prop_oneof![Just(1u64), Just(4), Just(16)],
        1u32..4,
        prop_oneof![Just(1_000u64), Just(20_000), Just(1_000_000)],
        prop_oneof![Just(1_000u64), Just(20_000), Just(1_000_000)],
    )
        .prop_map(|(threshold, max, succ, open_timeout, cap_factor, growth, max_hold, probe_timeout)| {
            Params {
                threshold,
                half_open_max: max,
                half_open_successes: succ.min(max),
                open_timeout,
                cap_factor,
                growth,
                max_hold,
                probe_timeout,
            }
        })
}

fn change(t: Option<tripwire::Transition>) -> Change {
    t.map(|t| (t.from, t.to, t.generation))
}

fn skewed(now: u64, skew: i64) -> u64 {
    now.saturating_add_signed(skew)
}

/// Runs `ops` on a breaker on storage `W` and on the model.
fn run<W: Windows>(p: Params, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let config = BreakerConfig::builder()
        .failure_threshold(p.threshold)
        .half_open_max(p.half_open_max)
        .half_open_successes(p.half_open_successes)
        .open_timeout(Duration::from_nanos(p.open_timeout))
        .open_timeout_max(Duration::from_nanos(p.open_timeout * p.cap_factor))
        .open_timeout_growth(f64::from(p.growth))
        .max_hold(Duration::from_nanos(p.max_hold))
        .probe_timeout(Duration::from_nanos(p.probe_timeout))
        .build()
        .expect("generated configs are valid");
    let breaker: Breaker<W> = Breaker::try_new(config).expect("every storage runs a windowless config");
    let mut model = Model {
        threshold: p.threshold,
        half_open_max: p.half_open_max,
        half_open_successes: p.half_open_successes,
        open_timeout: p.open_timeout,
        open_timeout_max: p.open_timeout * p.cap_factor,
        max_hold: p.max_hold,
        probe_timeout: p.probe_timeout,
        growth: f64::from(p.growth),
        state: State::Closed,
        held: false,
        generation: 0,
        failures: 0,
        in_flight: 0,
        issued: 0,
        passed: 0,
        reopens: 0,
        deadline: 0,
        counts: Counts::default(),
    };
    let clock = ManualClock::new(1_000_000_000_000_000);
    // Tickets not recorded yet, and tickets recorded once at least.
    let mut live: Vec<(Ticket, Issued)> = Vec::new();
    let mut recorded: Vec<(Ticket, Issued)> = Vec::new();
    for (step, op) in ops.into_iter().enumerate() {
        let now = clock.now();
        match op {
            Op::Acquire(skew) => {
                let at = skewed(now, skew);
                let got = breaker.try_acquire(&FixedClock(at));
                let want = model.acquire(at);
                match (got, want) {
                    (Ok(t), Ok((issued, ch))) => {
                        prop_assert_eq!(
                            (t.generation(), t.is_probe(), change(t.transition())),
                            (issued.generation, issued.slot.is_some(), ch),
                            "step {}",
                            step
                        );
                        live.push((t, issued));
                    }
                    (Err(r), Err(retry)) => {
                        prop_assert_eq!(r.retry_after, retry.map(Duration::from_nanos), "step {}", step);
                        prop_assert_eq!(r.state, model.state, "step {}", step);
                    }
                    (got, want) => prop_assert!(false, "step {}: got {:?}, model {:?}", step, got, want),
                }
            }
            Op::Record { pick, outcome, skew } => {
                if live.is_empty() {
                    continue;
                }
                let (t, issued) = live.swap_remove(pick % live.len());
                let at = skewed(now, skew);
                let got = change(breaker.record(t, outcome, &FixedClock(at)));
                prop_assert_eq!(got, model.record(issued, outcome, at), "step {}", step);
                recorded.push((t, issued));
            }
            Op::Again { pick, outcome } => {
                if recorded.is_empty() {
                    continue;
                }
                let (t, issued) = recorded[pick % recorded.len()];
                let got = change(breaker.record(t, outcome, &clock));
                prop_assert_eq!(got, model.record(issued, outcome, now), "step {}: again", step);
            }
            Op::Churn(n) => {
                for i in 0..n {
                    let got = breaker.try_acquire(&clock);
                    match (got, model.acquire(now)) {
                        (Ok(t), Ok((issued, ch))) => {
                            prop_assert_eq!(
                                (t.generation(), t.is_probe(), change(t.transition())),
                                (issued.generation, issued.slot.is_some(), ch),
                                "step {}, call {}",
                                step,
                                i
                            );
                            let got = change(breaker.record(t, Outcome::Ignored, &clock));
                            prop_assert_eq!(
                                got,
                                model.record(issued, Outcome::Ignored, now),
                                "step {}",
                                step
                            );
                            recorded.push((t, issued));
                        }
                        (Err(r), Err(retry)) => {
                            prop_assert_eq!(r.retry_after, retry.map(Duration::from_nanos), "step {}", step)
                        }
                        (got, want) => prop_assert!(false, "step {}: got {:?}, model {:?}", step, got, want),
                    }
                }
            }
            Op::Advance(ns) => clock.advance(Duration::from_nanos(ns)),
            Op::Hold(ns) => {
                let got = change(breaker.open_for(Duration::from_nanos(ns), &clock));
                prop_assert_eq!(got, model.hold(ns, now), "step {}: hold {}", step, ns);
            }
            Op::ForceOpen => {
                prop_assert_eq!(change(Some(breaker.force_open())), model.manual(State::ForcedOpen))
            }
            Op::Disable => prop_assert_eq!(change(Some(breaker.disable())), model.manual(State::Disabled)),
            Op::Reset => prop_assert_eq!(change(Some(breaker.reset())), model.manual(State::Closed)),
        }
        prop_assert_eq!(breaker.state(), model.state, "step {}", step);
        prop_assert_eq!(breaker.generation(), model.generation, "step {}", step);
        let now = clock.now();
        prop_assert_eq!(
            breaker.hold_left(&clock),
            model.hold_left(now).map(Duration::from_nanos),
            "step {}",
            step
        );
        let s = breaker.snapshot();
        let got = Counts {
            successes: s.successes,
            failures: s.failures,
            ignored: s.ignored,
            rejected: s.rejected,
            transitions: s.transitions,
            capped_holds: s.capped_holds,
        };
        prop_assert_eq!(&got, &model.counts, "step {}", step);
    }
    Ok(())
}

/// Cases per run, and the most operations in one.
const CASES: u32 = 2000;
const MAX_OPS: usize = 160;

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn breaker_matches_the_reference_model(p in params(), ops in prop::collection::vec(op(), 1..MAX_OPS)) {
        run::<AnyWindow>(p, ops)?;
    }

    /// The same rules without a window's storage: a windowless breaker
    /// differs only in memory.
    #[test]
    fn a_breaker_without_a_window_matches_the_reference_model(
        p in params(),
        ops in prop::collection::vec(op(), 1..MAX_OPS),
    ) {
        run::<NoWindow>(p, ops)?;
    }
}
