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
//! ([`StaleCache`](crate::stale::StaleCache)) wraps a pipeline's call from outside.
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
use core::marker::PhantomData;
use core::time::Duration;
use std::boxed::Box;
use std::sync::Arc;
use std::time::Instant;

pub use error::PipelineError;

use crate::assessment::Assessment;
use crate::bulkhead::Bulkhead;
use crate::clock::Clock;
use crate::layers::classify::ClassifyResult;
use crate::layers::clock::{MonotonicClock, monotonic_at};
use crate::layers::events::{Events, RetryCause};
use crate::layers::named::NamedBreaker;
use crate::limiter::RateLimiter;
use crate::policy::blocking::{self, BlockingCalls};
use crate::policy::{Calls, Ended, Judged, Plan, Ration, Rationed, Tried};
use crate::refusal::RefusedBy;
use crate::retry::budget::RetryBudget;
use crate::retry::error::RetryError;
use crate::retry::policy::{RetryAll, RetryPolicy};

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
/// wrapped from outside by a [`StaleCache`](crate::stale::StaleCache) where stale
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
/// [`HttpClassifier`](crate::http::HttpClassifier)) is retried like an error,
/// after its `Retry-After` if it names one, and is the answer, still `Ok`,
/// once the retries stop: the one judgement serves the breaker and the
/// retries alike.
///
/// Every part is optional and shared (`Arc`), so several pipelines (one per
/// endpoint, say) can share one breaker, bulkhead or budget. Async calls
/// need a [`Timer`](crate::timeout::Timer) ([`PipelineBuilder::timer`]).
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use std::sync::Arc;
/// use tripwire::pipeline::PipelineError;
/// use tripwire::retry::{BackoffConfig, RetryBudget, RetryBudgetConfig, RetryPolicy};
/// use tripwire::{BreakerConfig, Bulkhead, NamedBreaker, Pipeline};
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
    rate: Option<Arc<dyn Rationed + Send>>,
    rate_wait: Duration,
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
                rate: None,
                rate_wait: Duration::MAX,
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
    /// The breaker (share it through a [`Registry`](crate::registry::Registry) to see
    /// it in the metrics).
    pub fn breaker<C2: Clock>(self, breaker: Arc<NamedBreaker<C2>>) -> PipelineBuilder<C2, Tm> {
        let p = self.pipeline;
        PipelineBuilder {
            pipeline: Pipeline {
                breaker: Some(breaker),
                bulkhead: p.bulkhead,
                bulkhead_wait: p.bulkhead_wait,
                rate: p.rate,
                rate_wait: p.rate_wait,
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

    /// The rate limiter every attempt asks first, before the bulkhead,
    /// taking `costs` (one per limit: the endpoint's weight, 1 on an order
    /// count for an order, 0 on the limits it does not count on). Share one
    /// limiter between the pipelines of an exchange's endpoints, each with
    /// its own costs. An attempt waits for its units (the wait counts
    /// against the deadline); one that would wait longer than
    /// [`rate_limit_wait`](Self::rate_limit_wait) ends the request with
    /// [`PipelineError::RateLimited`], which is no failure of the
    /// dependency. Units taken for an attempt that is then not sent (a
    /// full bulkhead, a cancelled wait) are given back where the limiter
    /// can ([`RateLimiter::refund`](crate::limiter::RateLimiter::refund)).
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use tripwire::Pipeline;
    /// use tripwire::limiter::{LimitConfig, RateLimiter};
    ///
    /// // Request weight per minute, and orders per 10 s.
    /// let weight = LimitConfig::builder(6_000, Duration::from_secs(60)).build()?;
    /// let orders = LimitConfig::builder(50, Duration::from_secs(10)).build()?;
    /// let limiter = Arc::new(RateLimiter::new([weight, orders]));
    /// let depth = Pipeline::builder().rate_limit(limiter.clone(), [5, 0]).build();
    /// let order = Pipeline::builder().rate_limit(limiter.clone(), [1, 1]).build();
    /// assert_eq!(depth.call(|| Ok::<_, ()>("book")), Ok("book"));
    /// assert_eq!(order.call(|| Ok::<_, ()>("placed")), Ok("placed"));
    /// assert_eq!(limiter.in_use(&tripwire::MonotonicClock), [6, 1]);
    /// # Ok::<(), tripwire::ConfigError>(())
    /// ```
    pub fn rate_limit<const N: usize>(mut self, limiter: Arc<RateLimiter<N>>, costs: [u32; N]) -> Self {
        self.pipeline.rate = Some(Arc::new(Ration { limiter, costs }));
        self
    }

    /// The longest an attempt waits for the rate limiter's units (default:
    /// as long as the limiter reserves ahead, one period's units), cut to
    /// the request's time left; zero: it never waits.
    pub fn rate_limit_wait(mut self, d: Duration) -> Self {
        self.pipeline.rate_wait = d;
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
    /// [`TokioTimer`](crate::timeout::TokioTimer).
    pub fn timer<Tm2>(self, timer: Tm2) -> PipelineBuilder<C, Tm2> {
        let p = self.pipeline;
        PipelineBuilder {
            pipeline: Pipeline {
                breaker: p.breaker,
                bulkhead: p.bulkhead,
                bulkhead_wait: p.bulkhead_wait,
                rate: p.rate,
                rate_wait: p.rate_wait,
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
    /// per logical request, however many attempts it takes. A request
    /// admitted as a Half-Open probe ends by the breaker's
    /// [`probe_timeout`](crate::breaker::BreakerConfigBuilder::probe_timeout):
    /// no attempt or pause begins past it and an async call is cut there (a
    /// failure), so the probe is never taken over while it runs.
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

/// A pipeline's calls: the caller's closure (making a result, or a future
/// of one) and the classifier that judges each result.
pub(crate) struct Closure<F, K, T, E> {
    pub(crate) f: F,
    pub(crate) classifier: K,
    pub(crate) _answer: PhantomData<fn() -> Result<T, E>>,
}

impl<F, K: ClassifyResult<T, E>, T, E> Calls for Closure<F, K, T, E> {
    type Answer = Result<T, E>;

    /// Only a failure of the dependency is retried, after the backoff's
    /// pause or the one its server named, if the classifier reads it (a
    /// 503's `Retry-After` for `HttpClassifier`), as the tower retry layer
    /// and the reqwest middleware do.
    fn judge(&self, answer: &Result<T, E>) -> Judged {
        let after = answer.as_ref().ok().and_then(|value| self.classifier.retry_after(value));
        Judged::of(self.classifier.classify(answer), after)
    }

    fn cause<'s>(&self, answer: &'s Result<T, E>) -> RetryCause<'s> {
        match answer {
            // A value judged a failure (a 503 response).
            Ok(value) => RetryCause::Response(self.classifier.status(value)),
            // An error of a type the pipeline cannot write.
            Err(_) => RetryCause::Failed,
        }
    }
}

impl<F: FnMut() -> Result<T, E>, K: ClassifyResult<T, E>, T, E> BlockingCalls for Closure<F, K, T, E> {
    fn call(&mut self, _attempt: u32) -> Result<T, E> {
        (self.f)()
    }
}

/// The caller's answer of a run: the value, even one judged a failure (a
/// 503 once the retries stopped), else the error naming the layer that
/// answered.
pub(crate) fn answer<T, E>(run: Result<Result<T, E>, Ended<Result<T, E>>>) -> Result<T, PipelineError<E>> {
    let ended = match run {
        Ok(result) => return result.map_err(PipelineError::Call),
        Err(ended) => ended,
    };
    match ended {
        Ended::Refused { by: RefusedBy::Breaker(r), .. } => Err(PipelineError::Open(r)),
        Ended::Refused { by: RefusedBy::Bulkhead(full), .. } => Err(PipelineError::Full(full)),
        Ended::Refused { by: RefusedBy::RateLimited(t), .. } => Err(PipelineError::RateLimited(t)),
        Ended::Refused { by: RefusedBy::Deadline(_), attempts, last }
        | Ended::CutShort { attempts, last, .. } => deadline(attempts, last),
        Ended::Stopped(e) => match e {
            RetryError::Final { error, .. } => plain(error),
            // One attempt allowed: nothing was retried, the answer speaks for itself.
            RetryError::Exhausted { attempts: 1, last } => plain(last),
            RetryError::Exhausted { attempts, last } => {
                wrapped(last, |last| PipelineError::RetriesExhausted { attempts, last })
            }
            RetryError::BudgetExhausted { attempts, last } => {
                wrapped(last, |last| PipelineError::BudgetExhausted { attempts, last })
            }
            RetryError::Deadline { attempts, last } | RetryError::Cancelled { attempts, last } => {
                deadline(attempts, last)
            }
        },
    }
}

/// An attempt's answer as the caller sees it on its own.
fn plain<T, E>(tried: Tried<Result<T, E>>) -> Result<T, PipelineError<E>> {
    match tried {
        Tried::Answer(result) => result.map_err(PipelineError::Call),
        Tried::TimedOut(d) => Err(PipelineError::Timeout(d)),
    }
}

/// The last attempt's answer: a value as it is, an error inside the layer's.
fn wrapped<T, E>(
    tried: Tried<Result<T, E>>,
    make: impl FnOnce(Box<PipelineError<E>>) -> PipelineError<E>,
) -> Result<T, PipelineError<E>> {
    plain(tried).map_err(|e| make(Box::new(e)))
}

fn deadline<T, E>(attempts: u32, last: Option<Tried<Result<T, E>>>) -> Result<T, PipelineError<E>> {
    match last {
        None => Err(PipelineError::Deadline { attempts, last: None }),
        Some(last) => wrapped(last, |last| PipelineError::Deadline { attempts, last: Some(last) }),
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

    /// Runs `f` through the layers, judging each attempt with `classifier`.
    /// A bulkhead with a wait parks the thread; retries sleep it.
    ///
    /// [`HttpClassifier`](crate::http::HttpClassifier) judges `http` responses
    /// and honours a 5xx's `Retry-After`: the retry waits it instead of the
    /// backoff, capped at the policy's
    /// [`max_retry_after`](crate::retry::RetryPolicy::max_retry_after), as the
    /// tower retry layer and the reqwest middleware do. A closure
    /// `|r: &Result<T, E>| -> Assessment` (its argument's type written out)
    /// judges anything and names no pause: its failures wait the backoff.
    /// Any other [`ClassifyResult`] may name one.
    ///
    /// # Examples
    /// ```
    /// # #[cfg(feature = "http")] {
    /// use tripwire::http::HttpClassifier;
    /// use tripwire::retry::RetryPolicy;
    /// use tripwire::{Assessment, Pipeline};
    ///
    /// let pipeline = Pipeline::builder().retry(RetryPolicy::builder().max_attempts(2).build()?).build();
    /// let mut sent = 0;
    /// let busy_then_ok = || {
    ///     sent += 1;
    ///     let status = if sent == 1 { 503 } else { 200 };
    ///     http::Response::builder().status(status).header("retry-after", "0").body(())
    /// };
    /// // The 503 is retried after its `Retry-After` (0 s here), the 200 is the answer.
    /// assert_eq!(pipeline.call_with(HttpClassifier, busy_then_ok)?.status(), 200);
    /// // A closure judges any result, and retries after the backoff.
    /// let even = |r: &Result<u32, ()>| if r == &Ok(2) { Assessment::Success } else { Assessment::Failure };
    /// let mut n = 0;
    /// assert_eq!(pipeline.call_with(even, || { n += 1; Ok(n) }), Ok(2));
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn call_with<T, E>(
        &self,
        classifier: impl ClassifyResult<T, E>,
        f: impl FnMut() -> Result<T, E>,
    ) -> Result<T, PipelineError<E>> {
        self.run_sync(None, classifier, f)
    }

    /// [`call_with`](Self::call_with) that starts no attempt after
    /// `deadline` and begins no wait that would end past it (a call in
    /// progress is its I/O client's to cut short). A wait for a bulkhead
    /// slot is cut to the time left; if no slot comes by then, the call
    /// ends with [`PipelineError::Deadline`], not with the bulkhead's refusal.
    pub fn call_before<T, E>(
        &self,
        deadline: Instant,
        classifier: impl ClassifyResult<T, E>,
        f: impl FnMut() -> Result<T, E>,
    ) -> Result<T, PipelineError<E>> {
        self.run_sync(Some(deadline), classifier, f)
    }

    fn run_sync<T, E>(
        &self,
        deadline: Option<Instant>,
        classifier: impl ClassifyResult<T, E>,
        f: impl FnMut() -> Result<T, E>,
    ) -> Result<T, PipelineError<E>> {
        let mut calls = Closure { f, classifier, _answer: PhantomData };
        answer(blocking::drive(self.plan(), deadline.map(monotonic_at), None, &mut calls))
    }

    /// The layers, as the engine reads them.
    pub(crate) fn plan(&self) -> Plan<'_, C> {
        Plan {
            breaker: self.breaker.as_deref(),
            bulkhead: self.bulkhead.as_deref(),
            bulkhead_wait: self.bulkhead_wait,
            rate: self.rate.as_deref().map(|r| r as &dyn Rationed),
            rate_wait: self.rate_wait,
            retry: self.retry.as_ref(),
            budget: self.budget.as_deref(),
            timeout: self.timeout,
            nesting: self.nesting,
            events: self.events.as_deref(),
        }
    }
}
