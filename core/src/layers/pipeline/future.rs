//! Async calls through a [`Pipeline`] (feature `async`): the same layers,
//! with waits on the pipeline's [`Timer`] and a per-attempt timeout.
//! Dropping the returned future stops at once, mid-attempt or mid-sleep; an
//! attempt in flight then counts as ignored.

use std::time::Instant;

use crate::clock::Clock;
use crate::layers::assessment::Assessment;
use crate::layers::clock::{MonotonicClock, instant_at, monotonic_at};
use crate::layers::events::{slot_wait, wait_slot_async};
use crate::layers::named::NamedPermit;
use crate::layers::pipeline::{
    Failed, Nesting, Pipeline, PipelineError, cut_short, judged, ok_is_success, slot_refused,
};
use crate::layers::timeout::{Timer, timeout};
use crate::retry::error::RetryError;
use crate::retry::step::RetryLoop;

// `Tm: Timer` on each method, not on the block: a pipeline built without
// `.timer(..)` then meets `Timer`'s own diagnostic (pass `TokioTimer`),
// not "no method named `call_async`".
impl<C: Clock, Tm> Pipeline<C, Tm> {
    /// Runs the future `f` makes through the layers; `Ok` is a success,
    /// `Err` and a timeout are failures.
    ///
    /// # Examples
    /// ```
    /// # #[cfg(feature = "tokio")]
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// use core::time::Duration;
    /// use std::sync::Arc;
    /// use tripwire::{BreakerConfig, NamedBreaker, Pipeline, PipelineError, TokioTimer};
    ///
    /// let breaker = Arc::new(NamedBreaker::new("okx/books", BreakerConfig::default()));
    /// let pipeline = Pipeline::builder()
    ///     .breaker(breaker.clone())
    ///     .timeout(Duration::from_millis(20))
    ///     .timer(TokioTimer)
    ///     .build();
    /// let hung = pipeline.call_async(|| async {
    ///     tokio::time::sleep(Duration::from_secs(10)).await;
    ///     Ok::<u32, std::io::Error>(1)
    /// });
    /// assert!(matches!(hung.await, Err(PipelineError::Timeout(_))));
    /// assert_eq!(breaker.snapshot().failures, 1);
    /// # });
    /// ```
    pub async fn call_async<T, E, Fut>(&self, f: impl FnMut() -> Fut) -> Result<T, PipelineError<E>>
    where
        Tm: Timer,
        Fut: Future<Output = Result<T, E>>,
    {
        self.call_async_with(ok_is_success, f).await
    }

    /// Runs the future `f` makes through the layers, judging each attempt
    /// with `assess`; a timeout is a failure.
    pub async fn call_async_with<T, E, Fut>(
        &self,
        assess: impl Fn(&Result<T, E>) -> Assessment,
        f: impl FnMut() -> Fut,
    ) -> Result<T, PipelineError<E>>
    where
        Tm: Timer,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run_async(None, assess, f).await
    }

    /// [`call_async_with`](Self::call_async_with) that stops at `deadline`:
    /// no attempt starts after it, no wait is begun that would end past it,
    /// and each attempt's timeout and wait for a bulkhead slot are cut to
    /// the time left (a wait so cut that gets no slot ends with
    /// [`PipelineError::Deadline`]).
    pub async fn call_async_before<T, E, Fut>(
        &self,
        deadline: Instant,
        assess: impl Fn(&Result<T, E>) -> Assessment,
        f: impl FnMut() -> Fut,
    ) -> Result<T, PipelineError<E>>
    where
        Tm: Timer,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run_async(Some(deadline), assess, f).await
    }

    async fn run_async<T, E, Fut>(
        &self,
        deadline: Option<Instant>,
        assess: impl Fn(&Result<T, E>) -> Assessment,
        mut f: impl FnMut() -> Fut,
    ) -> Result<T, PipelineError<E>>
    where
        Tm: Timer,
        Fut: Future<Output = Result<T, E>>,
    {
        // Without retries both nestings are one attempt: run it here, with no
        // retry machinery around it (the common case stays a small future).
        let Some(policy) = self.retry else {
            // Past the deadline already?
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(PipelineError::Deadline { attempts: 0, last: None });
            }
            let mut permit = self.admit()?;
            let (assessment, result) = self.attempt_async(deadline, permit.as_mut(), &assess, &mut f).await;
            if let Some(p) = permit {
                p.settle(assessment.unwrap_or(Assessment::Ignored));
            }
            return result.or_else(|f| f.answer);
        };
        let policy = policy.classify(Failed::<T, E>::verdict);
        let policy = match &self.budget {
            Some(b) => policy.budget(b),
            None => policy,
        };
        let clock = MonotonicClock;
        let mut run = RetryLoop::new(&policy, &clock, deadline.map(monotonic_at));
        // The earlier of the caller's deadline and the policy's total, for
        // the attempts' timeouts.
        let deadline = run.deadline().and_then(instant_at);
        // Breaker outside the retries: one admission for the whole request.
        let outer = match self.nesting {
            Nesting::BreakerOutsideRetry => self.admit()?,
            Nesting::RetryOutsideBreaker => None,
        };
        let mut last = Assessment::Ignored;
        // The retry loop, written out (not a closure) so the future stays `Send`.
        let result = loop {
            let attempts = match run.start(&clock) {
                Ok(n) => n,
                Err(e) => break Err(e),
            };
            let mut inner = match self.nesting {
                Nesting::RetryOutsideBreaker => match self.admit() {
                    Ok(permit) => permit,
                    // A refusal ends the retries at once.
                    Err(error) => break Err(RetryError::Final { attempts, error: Failed::refused(error) }),
                },
                Nesting::BreakerOutsideRetry => None,
            };
            let (assessment, attempt) = self.attempt_async(deadline, inner.as_mut(), &assess, &mut f).await;
            // An attempt that got no bulkhead slot made no call: the request's
            // outcome is still the last call's.
            if let Some(a) = assessment {
                last = a;
            }
            if let Some(p) = inner {
                p.settle(assessment.unwrap_or(Assessment::Ignored));
            }
            let failed = match attempt {
                Ok(value) => break Ok(value),
                Err(failed) => failed,
            };
            match run.failed(&policy, &clock, failed) {
                Ok(delay) => {
                    self.retry_scheduled(attempts, delay, &run);
                    self.timer.sleep(delay).await;
                }
                Err(e) => break Err(cut_short(e, &mut run)),
            }
        };
        if let Some(p) = outer {
            p.settle(last);
        }
        result.or_else(|e| self.retry_ended(e))
    }

    /// A bulkhead slot, then one call under the timeout; its assessment (a
    /// timeout is a failure), `None` when it got no slot and made no call.
    /// The call's own `permit`, if it has one, is timed from the slot on.
    async fn attempt_async<T, E, Fut>(
        &self,
        deadline: Option<Instant>,
        permit: Option<&mut NamedPermit<'_, C>>,
        assess: &impl Fn(&Result<T, E>) -> Assessment,
        f: &mut impl FnMut() -> Fut,
    ) -> (Option<Assessment>, Result<T, Failed<T, E>>)
    where
        Tm: Timer,
        Fut: Future<Output = Result<T, E>>,
    {
        let _slot = match &self.bulkhead {
            None => None,
            Some(b) => {
                let (wait, cut) = slot_wait(self.bulkhead_wait, deadline);
                match wait_slot_async(b, &self.timer, wait, self.events.as_deref()).await {
                    Ok(slot) => {
                        // The wait for the slot is no part of the call's time.
                        if let Some(p) = permit {
                            p.restart_clock();
                        }
                        Some(slot)
                    }
                    Err(full) => return (None, Err(Failed::refused(slot_refused(full, cut)))),
                }
            }
        };
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let limit = match (self.timeout, left) {
            (Some(t), Some(l)) => Some(t.min(l)),
            (t, l) => t.or(l),
        };
        let result = match limit {
            None => f().await,
            Some(d) => match timeout(&self.timer, d, f()).await {
                Ok(r) => r,
                // Cut short by the caller's deadline: says nothing of the
                // dependency. The call was made: one attempt.
                Err(_) if self.timeout.is_none_or(|t| d < t) => {
                    let failed = Failed::refused(PipelineError::Deadline { attempts: 1, last: None });
                    return (Some(Assessment::Ignored), Err(failed));
                }
                Err(_) => {
                    let failed =
                        Failed { answer: Err(PipelineError::Timeout(d)), assessment: Assessment::Failure };
                    return (Some(Assessment::Failure), Err(failed));
                }
            },
        };
        let assessment = assess(&result);
        (Some(assessment), judged(assessment, result))
    }
}
