//! The pipeline (feature `std`; async calls with feature `async`): the
//! layers of defence around one call, outermost first
//!
//! ```text
//! fallback → retry → breaker → bulkhead → timeout → call
//! ```
//!
//! Each attempt is one outcome for the breaker, and a refusal ends the
//! retries at once. [`PipelineBuilder::breaker_outside_retry`] swaps the
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
use std::sync::Arc;

pub use error::PipelineError;

use crate::assessment::Assessment;
use crate::clock::{Clock, MonotonicClock};
use crate::named::{NamedBreaker, NamedPermit};

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

/// Resilience layers around calls to one dependency; cheap to share
/// (`Arc` inside), `Send + Sync` when its parts are.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use tripwire::{BreakerConfig, NamedBreaker, Pipeline, PipelineError};
///
/// let breaker = Arc::new(NamedBreaker::new("kraken/ticker", BreakerConfig::builder().failure_threshold(2).build()?));
/// let pipeline = Pipeline::builder().breaker(breaker.clone()).build();
///
/// assert_eq!(pipeline.call(|| Ok::<_, &str>(42)), Ok(42));
/// for _ in 0..2 {
///     assert_eq!(pipeline.call(|| Err::<u32, _>("503")), Err(PipelineError::Call("503")));
/// }
/// let refused = pipeline.call(|| Ok::<_, &str>(42)).unwrap_err();
/// assert!(matches!(refused, PipelineError::Open(r) if r.retry_after.is_some()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Pipeline<C: Clock = MonotonicClock, Tm = ()> {
    breaker: Option<Arc<NamedBreaker<C>>>,
    timeout: Option<Duration>,
    nesting: Nesting,
    timer: Tm,
}

impl<C: Clock, Tm> fmt::Debug for Pipeline<C, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("breaker", &self.breaker.as_ref().map(|b| b.name()))
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
            pipeline: Pipeline { breaker: None, timeout: None, nesting: Nesting::default(), timer: () },
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
                timeout: p.timeout,
                nesting: p.nesting,
                timer: p.timer,
            },
        }
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
            pipeline: Pipeline { breaker: p.breaker, timeout: p.timeout, nesting: p.nesting, timer },
        }
    }

    /// Puts the breaker outside the retries: one admission and one outcome
    /// per logical request, however many attempts it takes.
    pub fn breaker_outside_retry(mut self) -> Self {
        self.pipeline.nesting = Nesting::BreakerOutsideRetry;
        self
    }

    /// The pipeline.
    pub fn build(self) -> Pipeline<C, Tm> {
        self.pipeline
    }
}

/// How one attempt failed: the error the caller may see, and the
/// assessment that decides whether to try again.
#[derive(Debug)]
pub(crate) struct Failed<E> {
    pub(crate) error: PipelineError<E>,
    pub(crate) assessment: Assessment,
}

impl<E> Failed<E> {
    /// Whether another attempt may help: only a failure of the dependency;
    /// refusals, backpressure and the caller's own errors are final.
    #[allow(dead_code, reason = "read by the retry layer")]
    pub(crate) fn retryable(&self) -> bool {
        self.assessment == Assessment::Failure && !matches!(self.error, PipelineError::Open(_))
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
    /// (e.g. an HTTP response's status through [`http::assess`](crate::http::assess)).
    pub fn call_with<T, E>(
        &self,
        assess: impl Fn(&Result<T, E>) -> Assessment,
        mut f: impl FnMut() -> Result<T, E>,
    ) -> Result<T, PipelineError<E>> {
        match self.nesting {
            Nesting::RetryOutsideBreaker => self.retry_sync(|_| {
                let permit = self.admit()?;
                let result = f();
                self.finish(permit, &assess, result)
            }),
            Nesting::BreakerOutsideRetry => {
                let permit = self.admit().map_err(|f| f.error)?;
                let mut last = Assessment::Ignored;
                let result = self.retry_sync(|_| {
                    let result = f();
                    last = assess(&result);
                    Self::judged(last, result)
                });
                if let Some(p) = permit {
                    self.settle(p, last);
                }
                result
            }
        }
    }

    /// The retry layer around `attempt` (one attempt until a retry policy
    /// is configured).
    fn retry_sync<T, E>(
        &self,
        mut attempt: impl FnMut(u32) -> Result<T, Failed<E>>,
    ) -> Result<T, PipelineError<E>> {
        attempt(1).map_err(|f| f.error)
    }

    /// The breaker's admission, if there is a breaker.
    #[inline]
    fn admit<E>(&self) -> Result<Option<NamedPermit<'_, C>>, Failed<E>> {
        let Some(b) = &self.breaker else { return Ok(None) };
        match b.permit() {
            Ok(p) => Ok(Some(p)),
            Err(r) => Err(Failed { error: PipelineError::Open(r), assessment: Assessment::Ignored }),
        }
    }

    /// Records an attempt's assessment and turns its result into the
    /// attempt's.
    #[inline]
    fn finish<T, E>(
        &self,
        permit: Option<NamedPermit<'_, C>>,
        assess: &impl Fn(&Result<T, E>) -> Assessment,
        result: Result<T, E>,
    ) -> Result<T, Failed<E>> {
        let assessment = assess(&result);
        if let Some(p) = permit {
            self.settle(p, assessment);
        }
        Self::judged(assessment, result)
    }

    fn judged<T, E>(assessment: Assessment, result: Result<T, E>) -> Result<T, Failed<E>> {
        result.map_err(|e| Failed { error: PipelineError::Call(e), assessment })
    }

    #[inline]
    fn settle(&self, permit: NamedPermit<'_, C>, assessment: Assessment) {
        permit.settle(assessment);
    }
}
