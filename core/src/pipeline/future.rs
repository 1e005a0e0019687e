//! Async calls through a [`Pipeline`] (feature `async`): the same layers,
//! plus the per-attempt timeout. Dropping the returned future stops at
//! once; an attempt in flight then counts as ignored.

use crate::assessment::Assessment;
use crate::clock::Clock;
use crate::pipeline::{Failed, Nesting, Pipeline, PipelineError, ok_is_success};
use crate::timeout::{Timer, timeout};

impl<C: Clock, Tm: Timer> Pipeline<C, Tm> {
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
        Fut: Future<Output = Result<T, E>>,
    {
        self.call_async_with(ok_is_success, f).await
    }

    /// Runs the future `f` makes through the layers, judging each attempt
    /// with `assess`; a timeout is a failure.
    pub async fn call_async_with<T, E, Fut>(
        &self,
        assess: impl Fn(&Result<T, E>) -> Assessment,
        mut f: impl FnMut() -> Fut,
    ) -> Result<T, PipelineError<E>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        // Until a retry layer is configured, both nestings make one attempt.
        let _ = self.nesting == Nesting::BreakerOutsideRetry;
        let permit = self.admit().map_err(|f| f.error)?;
        let (assessment, result) = self.attempt_async(&assess, &mut f).await;
        if let Some(p) = permit {
            p.settle(assessment);
        }
        result.map_err(|f| f.error)
    }

    /// One attempt under the timeout, and its assessment.
    async fn attempt_async<T, E, Fut>(
        &self,
        assess: &impl Fn(&Result<T, E>) -> Assessment,
        f: &mut impl FnMut() -> Fut,
    ) -> (Assessment, Result<T, Failed<E>>)
    where
        Fut: Future<Output = Result<T, E>>,
    {
        let result = match self.timeout {
            None => f().await,
            Some(d) => match timeout(&self.timer, d, f()).await {
                Ok(r) => r,
                Err(_) => {
                    let failed = Failed { error: PipelineError::Timeout(d), assessment: Assessment::Failure };
                    return (Assessment::Failure, Err(failed));
                }
            },
        };
        let assessment = assess(&result);
        (assessment, result.map_err(|e| Failed { error: PipelineError::Call(e), assessment }))
    }
}
