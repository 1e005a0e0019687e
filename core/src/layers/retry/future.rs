//! The async retry executor (feature `async`): runs attempts, sleeps
//! between them on a [`Timer`], and stops at once when the caller's
//! deadline passes or its future is dropped.

use std::time::Instant;

use crate::layers::clock::{MonotonicClock, monotonic_at};
use crate::layers::retry::blocking::RetryEvent;
use crate::layers::timeout::Timer;
use crate::retry::error::RetryError;
use crate::retry::policy::{Classify, Refusal, RetryPolicy};
use crate::retry::step::RetryLoop;

/// Runs the future `attempt` makes (given the attempt number, from 1)
/// until one succeeds or the policy, the budget or `deadline` stops it;
/// the async twin of [`retry`](crate::retry()).
///
/// Between attempts it sleeps the backoff's delay on `timer` (a
/// classifier's `RetryAfter` overrides it); a wait that would end past the
/// deadline is not started. Dropping the returned future cancels at once,
/// mid-attempt or mid-sleep. The budget, if any, gets one deposit per call
/// and one withdrawal per retry. The future is `Send` when the attempts'
/// futures, the timer's sleeps and the errors are.
///
/// # Examples
/// ```
/// # #[cfg(feature = "tokio")]
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use core::time::Duration;
/// use tripwire::{BackoffConfig, RetryError, RetryPolicy, TokioTimer, retry_async};
///
/// let policy = RetryPolicy::builder()
///     .max_attempts(3)
///     .backoff(BackoffConfig::builder().base(Duration::from_millis(1)).build().unwrap())
///     .build()
///     .unwrap();
/// let got = retry_async(&policy, &TokioTimer, None, |n| async move {
///     if n < 3 { Err(std::io::Error::other("503")) } else { Ok(n) }
/// })
/// .await;
/// assert_eq!(got.unwrap(), 3);
/// # });
/// ```
pub async fn retry_async<T, E, K, Tm, Fut>(
    policy: &RetryPolicy<'_, K>,
    timer: &Tm,
    deadline: Option<Instant>,
    attempt: impl FnMut(u32) -> Fut,
) -> Result<T, RetryError<E>>
where
    K: Classify<E>,
    E: Refusal,
    Tm: Timer,
    Fut: Future<Output = Result<T, E>>,
{
    retry_async_notify(policy, timer, deadline, |_| {}, attempt).await
}

/// [`retry_async`], calling `on_retry` before each pause (see
/// [`RetryEvent`]).
pub async fn retry_async_notify<T, E, K, Tm, Fut>(
    policy: &RetryPolicy<'_, K>,
    timer: &Tm,
    deadline: Option<Instant>,
    mut on_retry: impl FnMut(RetryEvent<'_, E>),
    mut attempt: impl FnMut(u32) -> Fut,
) -> Result<T, RetryError<E>>
where
    K: Classify<E>,
    E: Refusal,
    Tm: Timer,
    Fut: Future<Output = Result<T, E>>,
{
    let clock = MonotonicClock;
    let mut run = RetryLoop::new(policy, &clock, deadline.map(monotonic_at));
    loop {
        let n = run.start(&clock)?;
        let error = match attempt(n).await {
            Ok(value) => return Ok(value),
            Err(e) => e,
        };
        let delay = run.failed(policy, &clock, error)?;
        let capped_from = run.capped_hint();
        if let Some(error) = run.last_error() {
            on_retry(RetryEvent { attempt: n, delay, error, capped_from });
        }
        timer.sleep(delay).await;
    }
}
