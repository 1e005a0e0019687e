//! The async retry executor (feature `async`): runs attempts, sleeps
//! between them on a [`Timer`], and stops at once when the caller's
//! deadline passes or its future is dropped.

use core::marker::PhantomData;
use std::time::Instant;

use crate::layers::clock::{MonotonicClock, monotonic_at};
use crate::layers::retry::blocking::RetryEvent;
use crate::layers::retry::{Attempts, answer};
use crate::layers::timeout::Timer;
use crate::policy::Plan;
use crate::policy::future::{self, AsyncCalls};
use crate::retry::error::RetryError;
use crate::retry::policy::{Classify, Refusal, RetryPolicy};

/// Runs the future `attempt` makes (given the attempt number, from 1)
/// until one succeeds or the policy, the budget or `deadline` stops it;
/// the async twin of [`retry`](crate::retry::retry()).
///
/// Between attempts it sleeps the backoff's delay on `timer` (the pause a
/// classifier's [`retry_after`](crate::retry::Classify::retry_after) names
/// overrides it); a wait that would end past the
/// deadline is not started, and an attempt still running at the deadline is
/// cut short ([`RetryError::Deadline`], with the error of the attempt
/// before, if any). Dropping the returned future cancels at once,
/// mid-attempt or mid-sleep. The budget, if any, gets one deposit per call
/// and one withdrawal per retry. The future is `Send` when the attempts'
/// futures, the timer's sleeps and the errors are.
///
/// # Examples
/// ```
/// # #[cfg(feature = "tokio")]
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use core::time::Duration;
/// use tripwire::retry::{BackoffConfig, RetryError, RetryPolicy, retry_async};
/// use tripwire::timeout::TokioTimer;
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
    on_retry: impl FnMut(RetryEvent<'_, E>),
    attempt: impl FnMut(u32) -> Fut,
) -> Result<T, RetryError<E>>
where
    K: Classify<E>,
    E: Refusal,
    Tm: Timer,
    Fut: Future<Output = Result<T, E>>,
{
    let mut calls = Attempts { classify: policy.classifier(), attempt, on_retry, _answer: PhantomData };
    let limits = policy.limits();
    let plan = Plan::<MonotonicClock>::retries(&limits, None);
    answer(future::drive(plan, timer, deadline.map(monotonic_at), &mut calls).await)
}

impl<K, F, H, T, E, Fut> AsyncCalls for Attempts<'_, K, F, H, T, E>
where
    K: Classify<E>,
    E: Refusal,
    F: FnMut(u32) -> Fut,
    H: FnMut(RetryEvent<'_, E>),
    Fut: Future<Output = Result<T, E>>,
{
    fn call(&mut self, attempt: u32) -> impl Future<Output = Result<T, E>> {
        (self.attempt)(attempt)
    }
}
