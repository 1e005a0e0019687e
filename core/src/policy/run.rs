//! The step machine: one request through a [`Plan`].

use core::time::Duration;

use crate::assessment::Assessment;
use crate::bulkhead::{Bulkhead, BulkheadFull, BulkheadPermit};
use crate::clock::Clock;
use crate::layers::clock::MonotonicClock;
use crate::layers::events::{Events, slot_wait};
use crate::layers::named::{NamedBreaker, NamedPermit};
use crate::layers::pipeline::Nesting;
use crate::policy::plan::{Calls, Judged, Plan, Rationed};
use crate::refusal::{DeadlinePassed, RefusedBy};
use crate::retry::error::RetryError;
use crate::retry::policy::{Refusal, RetryAll, RetryPolicy};
use crate::retry::step::RetryLoop;

/// What one attempt came to.
#[derive(Debug)]
pub(crate) enum Tried<R> {
    /// The call answered.
    Answer(R),
    /// The call ran out of its own time, after this long (only a future
    /// can be cut short).
    #[cfg_attr(not(feature = "async"), allow(dead_code))]
    TimedOut(Duration),
}

/// A guard's refusal ends a run before the retry loop is asked.
impl<R> Refusal for Tried<R> {}

/// How a request ended without a success.
#[derive(Debug)]
pub(crate) enum Ended<R> {
    /// A guard refused an attempt, which sent nothing. `attempts`: the
    /// calls made; `last`: the last one's answer, kept for the deadline's
    /// refusal only (a breaker's or a bulkhead's is the answer, whatever
    /// came before).
    Refused { by: RefusedBy, attempts: u32, last: Option<Tried<R>> },
    /// The request's time ran out during call number `attempts`, after
    /// `after`; `last`: the answer before it, if any (only a future can be
    /// cut short).
    #[cfg_attr(not(feature = "async"), allow(dead_code))]
    CutShort {
        attempts: u32,
        // Read by the integrations that report it (the reqwest middleware's `Elapsed`).
        #[cfg_attr(not(feature = "reqwest"), allow(dead_code))]
        after: Duration,
        last: Option<Tried<R>>,
    },
    /// The retries stopped: an answer judged final, the attempts, the
    /// budget or the time used up, or the caller gave up.
    Stopped(RetryError<Tried<R>>),
}

/// The bound on one call: `after`, and whether that is the call's own
/// timeout (a failure when it passes) or the request's time left (the
/// caller's limit, which says nothing of the dependency).
#[cfg(feature = "async")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limit {
    pub(crate) after: Duration,
    pub(crate) own: bool,
}

/// The wait for a bulkhead slot one attempt may begin, and whether it was
/// cut to the request's time left.
#[derive(Debug)]
pub(crate) struct SlotWait<'a> {
    pub(crate) bulkhead: &'a Bulkhead,
    pub(crate) wait: Duration,
    pub(crate) cut: bool,
}

/// One attempt in progress: its number (from 1), the breaker's permit for
/// it (breaker inside the retries) and its bulkhead slot. Dropped (a
/// cancelled future), the permit records the call as ignored and the slot
/// is freed.
#[derive(Debug)]
pub(crate) struct Attempt<'a, C: Clock> {
    pub(crate) n: u32,
    permit: Option<NamedPermit<'a, C>>,
    _slot: Option<BulkheadPermit<'a>>,
    /// The rate limiter's units, given back unless the call is made.
    ration: Option<Taken<'a>>,
    /// When its probe (breaker inside the retries) counts as lost.
    #[cfg_attr(not(feature = "async"), allow(dead_code))]
    probe_end: Option<u64>,
}

/// Units a rate limiter gave an attempt: dropped before the call is made
/// (a refusal after it, a cancelled wait), they go back.
struct Taken<'a> {
    rate: &'a dyn Rationed,
    sent: bool,
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        if !self.sent {
            self.rate.give_back();
        }
    }
}

impl core::fmt::Debug for Taken<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Taken").field("sent", &self.sent).finish()
    }
}

impl<C: Clock> Attempt<'_, C> {
    /// The call is about to be made: the wait before it (for the rate
    /// limiter) is no part of its time, and its units are spent.
    #[inline(always)]
    pub(crate) fn restart_clock(&mut self) {
        if let Some(p) = &mut self.permit {
            p.restart_clock();
        }
    }

    /// The call was made: its units stay spent.
    #[inline(always)]
    fn sent(&mut self) {
        if let Some(t) = &mut self.ration {
            t.sent = true;
        }
    }
}

/// What follows an attempt: the end of the request, or a pause before the
/// next attempt.
#[derive(Debug)]
pub(crate) enum Next<R> {
    Done(Result<R, Ended<R>>),
    Wait(Duration),
}

/// One request through a [`Plan`], one step at a time; sans-IO: the
/// driver calls, waits and sleeps, the run decides.
///
/// The steps of an attempt are [`start`](Self::start) (the deadline, the
/// breaker's admission when it sits inside the retries), then, with a
/// bulkhead, [`slot_wait`](Self::slot_wait) and [`slotted`](Self::slotted),
/// then the call under [`limit`](Self::limit), then
/// [`finish`](Self::finish) with its answer (or [`cut_short`](Self::cut_short)
/// when the request's time ran out mid-call). Every step that ends the
/// request settles the breaker's one admission when it sits outside the
/// retries, with the last call's assessment.
///
/// A request (breaker outside the retries) or an attempt (inside them)
/// admitted as a Half-Open probe ends by the breaker's `probe_timeout`:
/// its retries stop and its call is cut there (a failure), so that a
/// probe is never taken over while it runs.
pub(crate) struct Run<'a, C: Clock, R> {
    layers: Layers<'a, C>,
    policy: &'a RetryPolicy<'a, RetryAll>,
    budget: Option<&'a crate::retry::budget::RetryBudget>,
    retry: RetryLoop<Tried<R>>,
    /// The request's one admission, breaker outside the retries.
    outer: Option<NamedPermit<'a, C>>,
    /// The last call's assessment: the request's outcome for `outer`.
    outcome: Assessment,
    /// Calls that reached the dependency.
    calls: u32,
    /// The caller's deadline, or the policy's total time's end if earlier
    /// (a reading of [`MonotonicClock`]).
    #[cfg_attr(not(feature = "async"), allow(dead_code))]
    deadline: Option<u64>,
    /// When the request's probe (breaker outside the retries) counts as
    /// lost: its retries stop by then, and its last call is cut there.
    #[cfg_attr(not(feature = "async"), allow(dead_code))]
    probe_end: Option<u64>,
}

// The steps a driver takes on every call are `inline(always)`: folded into
// the driver, the run's fields live in registers instead of being copied
// between calls (the pipeline's closed path: 994 → 532 instructions beyond
// a bare call, `benches/callgrind.sh`).
impl<'a, C: Clock, R> Run<'a, C, R> {
    /// A request under `plan`, stopping at `deadline` (a reading of
    /// [`MonotonicClock`]) at the latest, with its one admission `outer`
    /// when the breaker sits outside the retries ([`admit`](Self::admit)).
    ///
    /// (A value the driver builds in place: a `Result` around it would be
    /// copied whole on every call.)
    #[inline(always)]
    pub(crate) fn new(plan: Plan<'a, C>, deadline: Option<u64>, outer: Option<NamedPermit<'a, C>>) -> Self {
        let Plan {
            breaker,
            bulkhead,
            bulkhead_wait,
            rate,
            rate_wait,
            retry,
            budget,
            timeout,
            nesting,
            events,
        } = plan;
        let layers = Layers { breaker, bulkhead, bulkhead_wait, rate, rate_wait, timeout, nesting, events };
        // No policy: one attempt, and nothing drawn from a budget.
        let (policy, budget) = match retry {
            Some(policy) => (policy, budget),
            None => (&RetryPolicy::ONCE, None),
        };
        let mut retry = RetryLoop::starting(policy.max_total(), budget, &MonotonicClock, deadline);
        // The caller's time, the policy's total included.
        let deadline = retry.deadline();
        // A probe's request stops by its probe timeout too.
        let probe_end = outer.as_ref().and_then(NamedPermit::probe_left).map(end_after);
        if let Some(end) = probe_end {
            retry.stop_by(end);
        }
        Run {
            layers,
            policy,
            budget,
            retry,
            outer,
            outcome: Assessment::Ignored,
            calls: 0,
            deadline,
            probe_end,
        }
    }

    /// The request's one admission when the breaker sits outside the
    /// retries, taken before [`new`](Self::new) so that a refused request
    /// deposits nothing in the budget.
    #[inline(always)]
    pub(crate) fn admit(plan: &Plan<'a, C>) -> Result<Option<NamedPermit<'a, C>>, Ended<R>> {
        match (plan.nesting, plan.breaker) {
            (Nesting::BreakerOutsideRetry, Some(b)) => match b.permit() {
                Ok(p) => Ok(Some(p)),
                Err(r) => Err(Ended::Refused { by: RefusedBy::Breaker(r), attempts: 0, last: None }),
            },
            _ => Ok(None),
        }
    }

    /// The events the plan reports to.
    pub(crate) fn events(&self) -> Option<&'a Events> {
        self.layers.events
    }

    /// Before an attempt: its number, or the end when the request's time is
    /// up or the breaker (inside the retries) refuses it.
    #[inline(always)]
    pub(crate) fn start(&mut self) -> Result<Attempt<'a, C>, Ended<R>> {
        let n = match self.retry.start(&MonotonicClock) {
            Ok(n) => n,
            Err(e) => return Err(self.end(Ended::Stopped(e))),
        };
        let permit = match (self.layers.nesting, self.layers.breaker) {
            (Nesting::RetryOutsideBreaker, Some(b)) => match b.permit() {
                Ok(p) => Some(p),
                Err(r) => return Err(self.refused(RefusedBy::Breaker(r))),
            },
            _ => None,
        };
        let probe_end = permit.as_ref().and_then(NamedPermit::probe_left).map(end_after);
        Ok(Attempt { n, permit, _slot: None, ration: None, probe_end })
    }

    /// Takes this attempt's units from the plan's rate limiter, if it has
    /// one: the wait before the call (the driver sleeps it, then
    /// [`Attempt::restart_clock`]), or the refusal that ends the request
    /// when the units would not go within the plan's `rate_wait` or the
    /// request's time left. A refusal is never the dependency's failure.
    #[inline(always)]
    pub(crate) fn ration(&mut self, attempt: &mut Attempt<'a, C>) -> Result<Option<Duration>, Ended<R>> {
        let Some(rate) = self.layers.rate else { return Ok(None) };
        let max_wait = match left_until(self.retry.deadline()) {
            Some(left) => left.min(self.layers.rate_wait),
            None => self.layers.rate_wait,
        };
        match rate.take(max_wait) {
            Ok(wait) => {
                attempt.ration = Some(Taken { rate, sent: false });
                Ok((!wait.is_zero()).then_some(wait))
            }
            Err(t) => Err(self.refused(RefusedBy::RateLimited(t))),
        }
    }

    /// The wait for a bulkhead slot this attempt may begin, if there is a
    /// bulkhead: the plan's, cut to the request's time left (a probe's
    /// included).
    #[inline(always)]
    pub(crate) fn slot_wait(&self) -> Option<SlotWait<'a>> {
        let bulkhead = self.layers.bulkhead?;
        let (wait, cut) = slot_wait(self.layers.bulkhead_wait, left_until(self.retry.deadline()));
        Some(SlotWait { bulkhead, wait, cut })
    }

    /// The slot the driver waited for, or the refusal that ends the request:
    /// the bulkhead's, or the deadline's when the wait was cut to it.
    #[inline(always)]
    pub(crate) fn slotted(
        &mut self,
        attempt: &mut Attempt<'a, C>,
        got: Result<BulkheadPermit<'a>, BulkheadFull>,
        cut: bool,
    ) -> Result<(), Ended<R>> {
        match got {
            Ok(slot) => {
                // The wait for the slot is no part of the call's time.
                if let Some(p) = &mut attempt.permit {
                    p.restart_clock();
                }
                attempt._slot = Some(slot);
                Ok(())
            }
            Err(_) if cut => Err(self.refused(RefusedBy::Deadline(DeadlinePassed))),
            Err(full) => Err(self.refused(RefusedBy::Bulkhead(full))),
        }
    }

    /// The bound on the call about to be made: the plan's timeout, or the
    /// time left to its probe (both the call's own: a failure when they
    /// pass), or the caller's time left where that ends first.
    #[cfg(feature = "async")]
    pub(crate) fn limit(&self, attempt: &Attempt<'a, C>) -> Option<Limit> {
        let probe = left_until(earlier(self.probe_end, attempt.probe_end));
        let own = match (self.layers.timeout, probe) {
            (Some(timeout), Some(probe)) => Some(timeout.min(probe)),
            (timeout, probe) => timeout.or(probe),
        };
        match (own, left_until(self.deadline)) {
            (Some(own), Some(left)) if left < own => Some(Limit { after: left, own: false }),
            (Some(own), _) => Some(Limit { after: own, own: true }),
            (None, Some(left)) => Some(Limit { after: left, own: false }),
            (None, None) => None,
        }
    }

    /// After the call: records `judged` (a hold for backpressure), and says
    /// whether the request ends with this answer or retries after a pause.
    #[inline(always)]
    pub(crate) fn finish(&mut self, mut attempt: Attempt<'a, C>, tried: Tried<R>, judged: Judged) -> Next<R> {
        attempt.sent();
        let Attempt { n, permit, _slot, .. } = attempt;
        drop(_slot);
        self.calls = n;
        self.outcome = judged.assessment;
        if let Some(p) = permit {
            p.settle(judged.assessment);
        }
        let tried = match (judged.assessment, tried) {
            (Assessment::Success, Tried::Answer(answer)) => {
                self.settle_outer();
                return Next::Done(Ok(answer));
            }
            (_, tried) => tried,
        };
        let verdict = judged.verdict;
        // Copied only here, on a failure, with the run's budget.
        let policy = match self.budget {
            Some(budget) => self.policy.budget(budget),
            None => self.policy.limits(),
        };
        let policy = policy.classify(verdict);
        match self.retry.failed(&policy, &MonotonicClock, tried) {
            Ok(delay) => Next::Wait(delay),
            Err(e) => Next::Done(Err(self.end(Ended::Stopped(e)))),
        }
    }

    /// The request's time ran out mid-call: the end, with the answer before
    /// this attempt, if any. The call counts as made, and as ignored: the
    /// caller's limit says nothing of the dependency.
    #[cfg(feature = "async")]
    pub(crate) fn cut_short(&mut self, mut attempt: Attempt<'a, C>, after: Duration) -> Ended<R> {
        attempt.sent();
        let Attempt { n, permit, _slot, .. } = attempt;
        drop(_slot);
        self.outcome = Assessment::Ignored;
        if let Some(p) = permit {
            p.settle(Assessment::Ignored);
        }
        let last = self.retry.take_last();
        self.end(Ended::CutShort { attempts: n, after, last })
    }

    /// The caller gave up between attempts.
    pub(crate) fn cancelled(&mut self) -> Ended<R> {
        let e = self.retry.cancelled();
        self.end(Ended::Stopped(e))
    }

    /// A retry about to wait `delay`: reported to the plan's events and to
    /// `calls`, and what is kept of the failed answer made smaller.
    pub(crate) fn scheduled<K: Calls<Answer = R>>(&mut self, calls: &mut K, delay: Duration) {
        let (n, capped) = (self.retry.attempts(), self.retry.capped_hint());
        if let Some(last) = self.retry.last_error() {
            if let Some(events) = self.layers.events {
                let cause = match last {
                    Tried::Answer(answer) => calls.cause(answer),
                    Tried::TimedOut(d) => crate::layers::events::RetryCause::Timeout(*d),
                };
                events.retry_scheduled(n, delay, capped, cause);
            }
            if let Tried::Answer(answer) = last {
                calls.retrying(n, delay, capped, answer);
            }
        }
        self.retry.keep_last(|last| match last {
            Tried::Answer(answer) => Tried::Answer(calls.keep(answer)),
            timed_out => timed_out,
        });
    }

    /// A guard's refusal ends the request; the deadline's keeps the answer
    /// before it.
    fn refused(&mut self, by: RefusedBy) -> Ended<R> {
        let last = match by {
            RefusedBy::Deadline(_) => self.retry.take_last(),
            _ => None,
        };
        self.end(Ended::Refused { by, attempts: self.calls, last })
    }

    /// The end of the request: the outer admission settled, the retries'
    /// stop reported.
    fn end(&mut self, ended: Ended<R>) -> Ended<R> {
        self.settle_outer();
        if let (Some(events), Ended::Stopped(e)) = (self.layers.events, &ended) {
            events.retry_ended(e);
        }
        ended
    }

    fn settle_outer(&mut self) {
        if let Some(p) = self.outer.take() {
            p.settle(self.outcome);
        }
    }
}

/// The time left until `deadline` (a reading of [`MonotonicClock`]), if
/// there is one; the clock is read only then.
#[inline(always)]
fn left_until(deadline: Option<u64>) -> Option<Duration> {
    let deadline = deadline?;
    Some(Duration::from_nanos(deadline.saturating_sub(MonotonicClock.now())))
}

/// The reading of [`MonotonicClock`] `left` from now.
fn end_after(left: Duration) -> u64 {
    MonotonicClock.now().saturating_add(u64::try_from(left.as_nanos()).unwrap_or(u64::MAX))
}

/// The earlier of two optional deadlines.
#[cfg(feature = "async")]
#[inline(always)]
fn earlier(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A plan's layers but its retry policy, which the run keeps apart.
struct Layers<'a, C: Clock> {
    breaker: Option<&'a NamedBreaker<C>>,
    bulkhead: Option<&'a Bulkhead>,
    bulkhead_wait: Duration,
    rate: Option<&'a dyn Rationed>,
    rate_wait: Duration,
    #[cfg_attr(not(feature = "async"), allow(dead_code))]
    timeout: Option<Duration>,
    nesting: Nesting,
    events: Option<&'a Events>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breaker::config::BreakerConfig;
    use crate::layers::named::NamedBreaker;
    use crate::retry::backoff_config::{BackoffConfig, Jitter};
    use crate::retry::policy::Verdict;

    const PAUSE: Duration = Duration::from_millis(10);

    fn policy() -> RetryPolicy<'static, RetryAll> {
        let backoff = BackoffConfig::builder().base(PAUSE).jitter(Jitter::None).build().unwrap();
        RetryPolicy::builder().max_attempts(3).backoff(backoff).build().unwrap()
    }

    fn plan<'a>(
        breaker: &'a NamedBreaker,
        policy: &'a RetryPolicy<'a, RetryAll>,
        nesting: Nesting,
    ) -> Plan<'a, MonotonicClock> {
        Plan {
            breaker: Some(breaker),
            bulkhead: None,
            bulkhead_wait: Duration::ZERO,
            rate: None,
            rate_wait: Duration::ZERO,
            retry: Some(policy),
            budget: None,
            timeout: None,
            nesting,
            events: None,
        }
    }

    fn failure() -> Judged {
        Judged::of(Assessment::Failure, None)
    }

    #[test]
    fn a_run_decides_every_step_and_performs_none_of_them() {
        let (breaker, policy) = (NamedBreaker::new("books", BreakerConfig::default()), policy());
        let mut run = Run::new(plan(&breaker, &policy, Nesting::RetryOutsideBreaker), None, None);
        let first = run.start().unwrap();
        assert_eq!(first.n, 1);
        // The caller waits: the run only says how long.
        assert!(matches!(run.finish(first, Tried::Answer(503), failure()), Next::Wait(PAUSE)));
        let second = run.start().unwrap();
        let done = run.finish(second, Tried::Answer(200), Judged::of(Assessment::Success, None));
        assert!(matches!(done, Next::Done(Ok(200))));
        // Inside the retries, the breaker counted each attempt.
        let s = breaker.snapshot();
        assert_eq!((s.failures, s.successes), (1, 1));
    }

    #[test]
    fn a_server_s_pause_is_the_wait_and_backpressure_ends_the_request_with_a_hold() {
        let (breaker, policy) = (NamedBreaker::new("books", BreakerConfig::default()), policy());
        let plan = plan(&breaker, &policy, Nesting::BreakerOutsideRetry);
        let outer = Run::<_, u16>::admit(&plan).unwrap();
        let mut run = Run::new(plan, None, outer);
        let first = run.start().unwrap();
        let named = Judged::of(Assessment::Failure, Some(Duration::from_secs(2)));
        assert_eq!(named.verdict, Verdict::RetryAfter(Duration::from_secs(2)));
        assert!(
            matches!(run.finish(first, Tried::Answer(503), named), Next::Wait(d) if d == Duration::from_secs(2))
        );
        let second = run.start().unwrap();
        let backpressure = Judged::of(Assessment::Backpressure(Some(Duration::from_secs(30))), None);
        let done = run.finish(second, Tried::Answer(429), backpressure);
        assert!(matches!(done, Next::Done(Err(Ended::Stopped(RetryError::Final { attempts: 2, .. })))));
        // Outside the retries, the one admission settled with the last
        // answer: held, not a failure.
        assert!(breaker.hold_left().is_some_and(|left| left > Duration::from_secs(29)));
        assert_eq!(breaker.snapshot().failures, 0);
    }

    #[test]
    fn a_refusal_ends_the_request_and_is_never_retried() {
        let (breaker, policy) = (NamedBreaker::new("books", BreakerConfig::default()), policy());
        breaker.force_open();
        let mut inner = Run::<_, u16>::new(plan(&breaker, &policy, Nesting::RetryOutsideBreaker), None, None);
        assert!(matches!(inner.start(), Err(Ended::Refused { by: RefusedBy::Breaker(_), attempts: 0, .. })));
        let outer = Run::<_, u16>::admit(&plan(&breaker, &policy, Nesting::BreakerOutsideRetry));
        assert!(matches!(outer, Err(Ended::Refused { by: RefusedBy::Breaker(_), attempts: 0, .. })));
    }

    #[test]
    fn a_deadline_already_passed_starts_no_attempt() {
        let (breaker, policy) = (NamedBreaker::new("books", BreakerConfig::default()), policy());
        let mut run =
            Run::<_, u16>::new(plan(&breaker, &policy, Nesting::RetryOutsideBreaker), Some(0), None);
        assert!(matches!(run.start(), Err(Ended::Stopped(RetryError::Deadline { attempts: 0, last: None }))));
        assert_eq!(breaker.snapshot().calls(), 0);
    }
}
