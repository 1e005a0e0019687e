//! The pipeline (feature `std`; async calls with feature `async`): the
//! layers of defence around one call, outermost first
//!
//! ```text
//! fallback → retry → breaker → bulkhead → timeout → call
//! ```
//!
//! Each attempt is one outcome for the breaker, and a refusal (breaker or
//! bulkhead) ends the retries at once; a retry budget caps retries during
//! an outage. [`PipelineBuilder::breaker_outside_retry`] swaps the
//! retry and the breaker: the breaker then admits one logical request and
//! records one outcome for all its attempts. The fallback
//! ([`StaleCache`](crate::StaleCache)) wraps a pipeline's call from outside.
//!
//! A classifier turns each attempt's result into an [`Assessment`]: a
//! success, a failure (retried, counted by the breaker), ignored (the
//! caller's fault: neither retried nor counted) or backpressure (the breaker
//! is held open, nothing retried). A timeout is a failure; a dropped future
//! is ignored.

mod error;
#[cfg(feature = "async")]
mod future;

use core::fmt;
use core::time::Duration;
use std::boxed::Box;
use std::sync::Arc;
use std::time::Instant;

pub use error::PipelineError;

use crate::bulkhead::{Bulkhead, BulkheadFull, BulkheadPermit};
use crate::clock::Clock;
use crate::layers::assessment::Assessment;
use crate::layers::clock::{MonotonicClock, instant_at, monotonic_at};
use crate::layers::events::{Events, RetryCause, slot_wait, wait_slot};
use crate::layers::named::{NamedBreaker, NamedPermit};
use crate::retry::budget::RetryBudget;
use crate::retry::error::RetryError;
use crate::retry::policy::{Refusal, RetryAll, RetryPolicy, Verdict};
use crate::retry::step::RetryLoop;

/// Where the breaker sits relative to the retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Nesting {
    /// retry → breaker: every attempt is admitted and counted by the
    /// breaker; a refusal ends the retries.
    #[default]
    RetryOutsideBreaker,
    /// breaker → retry: one admission and one outcome (the last attempt's)
    /// per logical request.
    BreakerOutsideRetry,
}

/// Resilience layers around calls to one dependency, outermost first:
///
/// ```text
/// retry → breaker → bulkhead → timeout → call
/// ```
///
/// wrapped from outside by a [`StaleCache`](crate::StaleCache) where stale
/// data is acceptable. Each attempt is one outcome for the breaker; a
/// refusal (breaker or bulkhead) ends the retries at once; a retry budget
/// caps retries during an outage. [`PipelineBuilder::breaker_outside_retry`]
/// swaps retry and breaker, so one logical request is one outcome.
///
/// Each attempt's result is judged by an [`Assessment`]: only failures
/// (and timeouts) are retried and counted as failures; ignored results
/// (the caller's fault, a cancelled call) are neither; backpressure holds
/// the breaker open ([`NamedBreaker::open_for`]). An `Ok` value the
/// classifier calls a failure (a 503 response, judged by
/// [`http::assess_result`](crate::http::assess_result)) is retried like an
/// error, and is the answer, still `Ok`, once the retries stop: the one
/// judgement serves the breaker and the retries alike.
///
/// Every part is optional and shared (`Arc`), so several pipelines (one per
/// endpoint, say) can share one breaker, bulkhead or budget. Async calls
/// need a [`Timer`](crate::Timer) ([`PipelineBuilder::timer`]).
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use std::sync::Arc;
/// use tripwire::{
///     BackoffConfig, BreakerConfig, Bulkhead, NamedBreaker, Pipeline, PipelineError, RetryBudget,
///     RetryBudgetConfig, RetryPolicy,
/// };
///
/// let breaker = Arc::new(NamedBreaker::new("kraken/ticker", BreakerConfig::builder().failure_threshold(2).build()?));
/// let pipeline = Pipeline::builder()
///     .retry(
///         RetryPolicy::builder()
///             .max_attempts(3)
///             .backoff(BackoffConfig::builder().base(Duration::from_millis(1)).build()?)
///             .build()?,
///     )
///     .retry_budget(Arc::new(RetryBudget::new(RetryBudgetConfig::default())))
///     .breaker(breaker.clone())
///     .bulkhead(Arc::new(Bulkhead::new(16)))
///     .build();
///
/// assert_eq!(pipeline.call(|| Ok::<_, &str>(42)), Ok(42));
/// // Two failures trip the breaker; its refusal ends the retries at once.
/// let down = pipeline.call(|| Err::<u32, _>("503")).unwrap_err();
/// assert!(matches!(down, PipelineError::Open(r) if r.retry_after.is_some()));
/// assert_eq!(breaker.snapshot().failures, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Pipeline<C: Clock = MonotonicClock, Tm = ()> {
    breaker: Option<Arc<NamedBreaker<C>>>,
    bulkhead: Option<Arc<Bulkhead>>,
    bulkhead_wait: Duration,
    retry: Option<RetryPolicy<'static, RetryAll>>,
    budget: Option<Arc<RetryBudget>>,
    timeout: Option<Duration>,
    nesting: Nesting,
    events: Option<Arc<Events>>,
    timer: Tm,
}

impl<C: Clock, Tm> fmt::Debug for Pipeline<C, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("breaker", &self.breaker.as_ref().map(|b| b.name()))
            .field("bulkhead", &self.bulkhead.as_ref().map(|b| b.max()))
            .field("retry", &self.retry.as_ref().map(|r| r.max_attempts()))
            .field("timeout", &self.timeout)
            .field("nesting", &self.nesting)
            .finish_non_exhaustive()
    }
}

/// Assembles a [`Pipeline`]; every part is optional.
#[must_use = "a builder does nothing until `build` is called"]
pub struct PipelineBuilder<C: Clock = MonotonicClock, Tm = ()> {
    pipeline: Pipeline<C, Tm>,
}

impl<C: Clock, Tm> fmt::Debug for PipelineBuilder<C, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.pipeline.fmt(f)
    }
}

impl Pipeline {
    /// A builder with no layer yet.
    pub fn builder() -> PipelineBuilder {
        PipelineBuilder {
            pipeline: Pipeline {
                breaker: None,
                bulkhead: None,
                bulkhead_wait: Duration::ZERO,
                retry: None,
                budget: None,
                timeout: None,
                nesting: Nesting::default(),
                events: None,
                timer: (),
            },
        }
    }
}

impl<C: Clock, Tm> PipelineBuilder<C, Tm> {
    /// The breaker (share it through a [`Registry`](crate::Registry) to see
    /// it in the metrics).
    pub fn breaker<C2: Clock>(self, breaker: Arc<NamedBreaker<C2>>) -> PipelineBuilder<C2, Tm> {
        let p = self.pipeline;
        PipelineBuilder {
            pipeline: Pipeline {
                breaker: Some(breaker),
                bulkhead: p.bulkhead,
                bulkhead_wait: p.bulkhead_wait,
                retry: p.retry,
                budget: p.budget,
                timeout: p.timeout,
                nesting: p.nesting,
                events: p.events,
                timer: p.timer,
            },
        }
    }

    /// The bulkhead capping the calls in flight.
    pub fn bulkhead(mut self, bulkhead: Arc<Bulkhead>) -> Self {
        self.pipeline.bulkhead = Some(bulkhead);
        self
    }

    /// How long an attempt may wait for a bulkhead slot (default zero: a
    /// full bulkhead refuses at once). The wait is no part of the call's
    /// time: with the breaker inside the retries (the default nesting), a
    /// slow call is timed from the slot on.
    pub fn bulkhead_wait(mut self, d: Duration) -> Self {
        self.pipeline.bulkhead_wait = d;
        self
    }

    /// The retry policy: attempts, backoff, total time. Only failures of
    /// the dependency (and timeouts) are retried; refusals, backpressure
    /// and the caller's own errors are not.
    pub fn retry(mut self, policy: RetryPolicy<'static, RetryAll>) -> Self {
        self.pipeline.retry = Some(policy);
        self
    }

    /// The retry budget that caps retries to a fraction of calls.
    pub fn retry_budget(mut self, budget: Arc<RetryBudget>) -> Self {
        self.pipeline.budget = Some(budget);
        self
    }

    /// The per-attempt timeout of async calls (sync calls rely on their I/O
    /// client's own timeout; the breaker can still count slow calls).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.pipeline.timeout = Some(d);
        self
    }

    /// The timer async calls sleep and time out with, e.g.
    /// [`TokioTimer`](crate::TokioTimer).
    pub fn timer<Tm2>(self, timer: Tm2) -> PipelineBuilder<C, Tm2> {
        let p = self.pipeline;
        PipelineBuilder {
            pipeline: Pipeline {
                breaker: p.breaker,
                bulkhead: p.bulkhead,
                bulkhead_wait: p.bulkhead_wait,
                retry: p.retry,
                budget: p.budget,
                timeout: p.timeout,
                nesting: p.nesting,
                events: p.events,
                timer,
            },
        }
    }

    /// Puts the breaker outside the retries: one admission and one outcome
    /// per logical request, however many attempts it takes.
    pub fn breaker_outside_retry(mut self) -> Self {
        self.pipeline.nesting = Nesting::BreakerOutsideRetry;
        self
    }

    /// Reports the bulkhead's refusals and waits and the retries to
    /// `events` (its listeners, counts, `tracing` and `metrics`).
    pub fn events(mut self, events: Arc<Events>) -> Self {
        self.pipeline.events = Some(events);
        self
    }

    /// The pipeline.
    pub fn build(self) -> Pipeline<C, Tm> {
        self.pipeline
    }
}

/// How one attempt failed: the answer the caller gets if no attempt
/// follows (an error, or a value the classifier called a failure, such as
/// a 503 response), and the assessment that decides whether to try again.
#[derive(Debug)]
pub(crate) struct Failed<T, E> {
    pub(crate) answer: Result<T, PipelineError<E>>,
    pub(crate) assessment: Assessment,
}

impl<T, E> Failed<T, E> {
    /// Whether another attempt may help: only a failure of the dependency.
    fn verdict(&self) -> Verdict {
        if self.assessment == Assessment::Failure { Verdict::Retry } else { Verdict::Final }
    }

    pub(crate) fn refused(error: PipelineError<E>) -> Self {
        Failed { answer: Err(error), assessment: Assessment::Ignored }
    }

    /// What the attempt failed with, for a retry's event.
    pub(crate) fn cause(&self) -> RetryCause<'static> {
        match self.answer {
            Ok(_) => RetryCause::Response(None),
            Err(PipelineError::Timeout(d)) => RetryCause::Timeout(d),
            Err(_) => RetryCause::Failed,
        }
    }
}

/// The breaker's and the bulkhead's refusals are never retried.
impl<T, E> Refusal for Failed<T, E> {
    fn is_refusal(&self) -> bool {
        matches!(self.answer, Err(PipelineError::Open(_) | PipelineError::Full(_)))
    }
}

/// The caller's view of why the retry layer stopped: the last value, if
/// the classifier called it a failure (a 503 once the retries ran out),
/// else the error, naming the layer.
pub(crate) fn from_retry<T, E>(e: RetryError<Failed<T, E>>) -> Result<T, PipelineError<E>> {
    let wrap =
        |last: Failed<T, E>, make: &dyn Fn(Box<PipelineError<E>>) -> PipelineError<E>| match last.answer {
            Ok(value) => Ok(value),
            Err(error) => Err(make(Box::new(error))),
        };
    match e {
        RetryError::Final { error, .. } => error.answer,
        // One attempt allowed: nothing was retried, the answer speaks for itself.
        RetryError::Exhausted { attempts: 1, last } => last.answer,
        RetryError::Exhausted { attempts, last } => {
            wrap(last, &|last| PipelineError::RetriesExhausted { attempts, last })
        }
        RetryError::BudgetExhausted { attempts, last } => {
            wrap(last, &|last| PipelineError::BudgetExhausted { attempts, last })
        }
        RetryError::Deadline { attempts, last } | RetryError::Cancelled { attempts, last } => match last {
            Some(last) => wrap(last, &|last| PipelineError::Deadline { attempts, last: Some(last) }),
            None => Err(PipelineError::Deadline { attempts, last: None }),
        },
    }
}

/// A deadline that cut an attempt short (its wait for a bulkhead slot or,
/// async, its timeout) ends the retries as one between attempts does: with
/// the answer of the attempt before, if one was made, and counting only the
/// attempts that reached the call (a wait for a slot reaches none).
pub(crate) fn cut_short<T, E>(
    e: RetryError<Failed<T, E>>,
    run: &mut RetryLoop<Failed<T, E>>,
) -> RetryError<Failed<T, E>> {
    match e {
        RetryError::Final {
            attempts,
            error: Failed { answer: Err(PipelineError::Deadline { attempts: made, .. }), .. },
        } => RetryError::Deadline { attempts: attempts.saturating_sub(1) + made, last: run.take_last() },
        e => e,
    }
}

/// The default classifier: `Ok` is a success, `Err` a failure.
pub(crate) fn ok_is_success<T, E>(r: &Result<T, E>) -> Assessment {
    if r.is_ok() { Assessment::Success } else { Assessment::Failure }
}

impl<C: Clock, Tm> Pipeline<C, Tm> {
    /// The breaker, if there is one.
    pub fn breaker(&self) -> Option<&Arc<NamedBreaker<C>>> {
        self.breaker.as_ref()
    }

    /// The bulkhead, if there is one.
    pub fn bulkhead(&self) -> Option<&Arc<Bulkhead>> {
        self.bulkhead.as_ref()
    }

    /// The retry budget, if there is one.
    pub fn retry_budget(&self) -> Option<&Arc<RetryBudget>> {
        self.budget.as_ref()
    }

    /// The per-attempt timeout of async calls.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Where the breaker sits relative to the retries.
    pub fn nesting(&self) -> Nesting {
        self.nesting
    }

    /// Runs `f` through the layers; `Ok` is a success, `Err` a failure.
    pub fn call<T, E>(&self, f: impl FnMut() -> Result<T, E>) -> Result<T, PipelineError<E>> {
        self.call_with(ok_is_success, f)
    }

    /// Runs `f` through the layers, judging each attempt with `assess`
    /// (e.g. an HTTP status through [`http::assess`](crate::layers::http::assess)).
    /// A bulkhead with a wait parks the thread; retries sleep it.
    pub fn call_with<T, E>(
        &self,
        assess: impl Fn(&Result<T, E>) -> Assessment,
        f: impl FnMut() -> Result<T, E>,
    ) -> Result<T, PipelineError<E>> {
        self.run_sync(None, assess, f)
    }

    /// [`call_with`](Self::call_with) that starts no attempt after
    /// `deadline` and begins no wait that would end past it (a call in
    /// progress is its I/O client's to cut short). A wait for a bulkhead
    /// slot is cut to the time left; if no slot comes by then, the call
    /// ends with [`PipelineError::Deadline`], not with the bulkhead's refusal.
    pub fn call_before<T, E>(
        &self,
        deadline: Instant,
        assess: impl Fn(&Result<T, E>) -> Assessment,
        f: impl FnMut() -> Result<T, E>,
    ) -> Result<T, PipelineError<E>> {
        self.run_sync(Some(deadline), assess, f)
    }

    fn run_sync<T, E>(
        &self,
        deadline: Option<Instant>,
        assess: impl Fn(&Result<T, E>) -> Assessment,
        mut f: impl FnMut() -> Result<T, E>,
    ) -> Result<T, PipelineError<E>> {
        match self.nesting {
            Nesting::RetryOutsideBreaker => self.retry_sync(deadline, |until| {
                let mut permit = self.admit().map_err(Failed::refused)?;
                let _slot = self.slot_sync(until).map_err(Failed::refused)?;
                // The wait for the slot is no part of the call's time.
                if let (Some(p), Some(_)) = (&mut permit, &self.bulkhead) {
                    p.restart_clock();
                }
                let result = f();
                Self::finish(permit, &assess, result)
            }),
            Nesting::BreakerOutsideRetry => {
                let permit = self.admit()?;
                let mut last = Assessment::Ignored;
                let result = self.retry_sync(deadline, |until| {
                    let _slot = self.slot_sync(until).map_err(Failed::refused)?;
                    let result = f();
                    last = assess(&result);
                    judged(last, result)
                });
                if let Some(p) = permit {
                    p.settle(last);
                }
                result
            }
        }
    }

    /// The retry layer around `attempt`, if there is one; sleeps the
    /// thread between attempts.
    fn retry_sync<T, E>(
        &self,
        deadline: Option<Instant>,
        mut attempt: impl FnMut(Option<Instant>) -> Result<T, Failed<T, E>>,
    ) -> Result<T, PipelineError<E>> {
        let Some(policy) = self.retry else {
            // Past the deadline already?
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(PipelineError::Deadline { attempts: 0, last: None });
            }
            return attempt(deadline).or_else(|f| f.answer);
        };
        let policy = policy.classify(Failed::<T, E>::verdict);
        let policy = match &self.budget {
            Some(b) => policy.budget(b),
            None => policy,
        };
        let clock = MonotonicClock;
        let mut run = RetryLoop::new(&policy, &clock, deadline.map(monotonic_at));
        // The earlier of the caller's deadline and the policy's total, for
        // the attempts' waits for a slot.
        let until = run.deadline().and_then(instant_at);
        loop {
            let n = match run.start(&clock) {
                Ok(n) => n,
                Err(e) => return from_retry(e),
            };
            let failed = match attempt(until) {
                Ok(value) => return Ok(value),
                Err(failed) => failed,
            };
            let delay = match run.failed(&policy, &clock, failed) {
                Ok(delay) => delay,
                Err(e) => return self.retry_ended(cut_short(e, &mut run)),
            };
            self.retry_scheduled(n, delay, &run);
            std::thread::sleep(delay);
        }
    }

    /// Reports a retry about to wait, if there are events to report to.
    pub(crate) fn retry_scheduled<T, E>(&self, attempt: u32, delay: Duration, run: &RetryLoop<Failed<T, E>>) {
        if let (Some(events), Some(failed)) = (&self.events, run.last_error()) {
            events.retry_scheduled(attempt, delay, run.capped_hint(), failed.cause());
        }
    }

    /// Reports why the retries stopped, and makes the caller's answer of it.
    pub(crate) fn retry_ended<T, E>(&self, e: RetryError<Failed<T, E>>) -> Result<T, PipelineError<E>> {
        if let Some(events) = &self.events {
            events.retry_ended(&e);
        }
        from_retry(e)
    }

    /// The breaker's admission, if there is a breaker.
    #[inline]
    pub(crate) fn admit<E>(&self) -> Result<Option<NamedPermit<'_, C>>, PipelineError<E>> {
        let Some(b) = &self.breaker else { return Ok(None) };
        b.permit().map(Some).map_err(PipelineError::Open)
    }

    /// A bulkhead slot, waiting up to `bulkhead_wait` (parking the thread),
    /// and never past `until`.
    #[inline]
    fn slot_sync<E>(&self, until: Option<Instant>) -> Result<Option<BulkheadPermit<'_>>, PipelineError<E>> {
        let Some(b) = &self.bulkhead else { return Ok(None) };
        let (wait, cut) = slot_wait(self.bulkhead_wait, until);
        wait_slot(b, wait, self.events.as_deref()).map(Some).map_err(|full| slot_refused(full, cut))
    }

    /// Records an attempt's assessment and turns its result into the
    /// attempt's.
    #[inline]
    fn finish<T, E>(
        permit: Option<NamedPermit<'_, C>>,
        assess: &impl Fn(&Result<T, E>) -> Assessment,
        result: Result<T, E>,
    ) -> Result<T, Failed<T, E>> {
        let assessment = assess(&result);
        if let Some(p) = permit {
            p.settle(assessment);
        }
        judged(assessment, result)
    }
}

/// No slot came: the bulkhead's refusal, or the deadline's when the wait
/// was cut short by it (which says nothing of the bulkhead's cap).
pub(crate) fn slot_refused<E>(full: BulkheadFull, cut: bool) -> PipelineError<E> {
    if cut { PipelineError::Deadline { attempts: 0, last: None } } else { PipelineError::Full(full) }
}

/// An attempt's result as the retries see it: a value the classifier
/// called a failure (a 503 response) is a failed attempt too, and is the
/// answer if no attempt follows.
pub(crate) fn judged<T, E>(assessment: Assessment, result: Result<T, E>) -> Result<T, Failed<T, E>> {
    match result {
        Ok(value) if assessment == Assessment::Failure => Err(Failed { answer: Ok(value), assessment }),
        Ok(value) => Ok(value),
        Err(e) => Err(Failed { answer: Err(PipelineError::Call(e)), assessment }),
    }
}
