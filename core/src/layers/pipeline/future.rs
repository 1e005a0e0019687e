//! Async calls through a [`Pipeline`] (feature `async`): the same layers,
//! with waits on the pipeline's [`Timer`] and a per-attempt timeout.
//! Dropping the returned future stops at once, mid-attempt or mid-sleep; an
//! attempt in flight then counts as ignored.

use core::marker::PhantomData;
use std::time::Instant;

use crate::clock::Clock;
use crate::layers::classify::ClassifyResult;
use crate::layers::clock::monotonic_at;
use crate::layers::pipeline::{Closure, Pipeline, PipelineError, answer, ok_is_success};
use crate::layers::timeout::Timer;
use crate::policy::future::{self, AsyncCalls};

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
    /// use tripwire::pipeline::PipelineError;
    /// use tripwire::timeout::TokioTimer;
    /// use tripwire::{BreakerConfig, NamedBreaker, Pipeline};
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
    /// with `classifier`, as [`call_with`](Pipeline::call_with) does; a
    /// timeout is a failure.
    pub async fn call_async_with<T, E, Fut>(
        &self,
        classifier: impl ClassifyResult<T, E>,
        f: impl FnMut() -> Fut,
    ) -> Result<T, PipelineError<E>>
    where
        Tm: Timer,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run_async(None, classifier, f).await
    }

    /// [`call_async_with`](Self::call_async_with) that stops at `deadline`:
    /// no attempt starts after it, no wait is begun that would end past it,
    /// and each attempt's timeout and wait for a bulkhead slot are cut to
    /// the time left (a wait so cut that gets no slot ends with
    /// [`PipelineError::Deadline`]).
    pub async fn call_async_before<T, E, Fut>(
        &self,
        deadline: Instant,
        classifier: impl ClassifyResult<T, E>,
        f: impl FnMut() -> Fut,
    ) -> Result<T, PipelineError<E>>
    where
        Tm: Timer,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run_async(Some(deadline), classifier, f).await
    }

    async fn run_async<T, E, Fut>(
        &self,
        deadline: Option<Instant>,
        classifier: impl ClassifyResult<T, E>,
        f: impl FnMut() -> Fut,
    ) -> Result<T, PipelineError<E>>
    where
        Tm: Timer,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut calls = Closure { f, classifier, _answer: PhantomData };
        answer(future::drive(self.plan(), &self.timer, deadline.map(monotonic_at), &mut calls).await)
    }
}

impl<F, K, T, E, Fut> AsyncCalls for Closure<F, K, T, E>
where
    F: FnMut() -> Fut,
    K: ClassifyResult<T, E>,
    Fut: Future<Output = Result<T, E>>,
{
    fn call(&mut self, _attempt: u32) -> impl Future<Output = Result<T, E>> {
        (self.f)()
    }
}
