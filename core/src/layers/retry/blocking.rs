//! The blocking retry executor (feature `std`): runs attempts, sleeps
//! between them, and stops at once on the caller's deadline or
//! cancellation.

use core::marker::PhantomData;
use core::sync::atomic::AtomicBool;
use core::time::Duration;
use std::time::Instant;

use crate::layers::clock::{MonotonicClock, monotonic_at};
use crate::layers::retry::{Attempts, answer};
use crate::policy::Plan;
use crate::policy::blocking::{self, BlockingCalls};
use crate::retry::error::RetryError;
use crate::retry::policy::{Classify, Refusal, RetryPolicy};

/// The longest the executor sleeps before it looks at the cancel flag
/// again. A canceller that also unparks the retrying thread wakes it at
/// once.
pub const CANCEL_CHECK: Duration = Duration::from_millis(5);

/// When the caller wants a retry loop to stop, whatever the policy says: a
/// deadline, a cancel flag, both or neither.
///
/// # Examples
/// ```
/// use std::sync::atomic::AtomicBool;
/// use std::time::Duration;
/// use tripwire::retry::Stop;
///
/// let shutdown = AtomicBool::new(false);
/// let stop = Stop::after(Duration::from_secs(2)).or_cancelled(&shutdown);
/// assert!(stop.deadline().is_some());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Stop<'a> {
    deadline: Option<Instant>,
    cancel: Option<&'a AtomicBool>,
}

impl<'a> Stop<'a> {
    /// No deadline and no cancel flag: only the policy stops the loop.
    pub fn never() -> Self {
        Self::default()
    }

    /// Stops at `deadline`.
    pub fn at(deadline: Instant) -> Self {
        Self { deadline: Some(deadline), cancel: None }
    }

    /// Stops `timeout` from now (a timeout too long to represent is none).
    pub fn after(timeout: Duration) -> Self {
        Self { deadline: Instant::now().checked_add(timeout), cancel: None }
    }

    /// Also stops once `cancel` reads `true`.
    pub fn or_cancelled(self, cancel: &'a AtomicBool) -> Stop<'a> {
        Stop { cancel: Some(cancel), ..self }
    }

    /// The deadline, if any.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}

/// Runs `attempt` (given the attempt number, from 1) until it succeeds or
/// the policy, the budget, the deadline or the cancel flag stops it.
///
/// Between attempts it sleeps the backoff's delay (a classifier's
/// [`Classify::retry_after`](crate::retry::Classify::retry_after) overrides it); a wait
/// that would end past the deadline is not started: the loop stops at once
/// with [`RetryError::Deadline`]. The budget, if the policy has one, gets
/// one deposit per call and one withdrawal per retry, read against
/// [`MonotonicClock`]. A guard's refusal ([`Refusal`]) ends the loop at
/// once.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::{BackoffConfig, RetryError, RetryPolicy, Stop, retry};
///
/// let policy = RetryPolicy::builder()
///     .max_attempts(3)
///     .backoff(BackoffConfig::builder().base(Duration::from_millis(1)).build()?)
///     .build()?;
/// let flaky = retry(&policy, &Stop::never(), |n| if n < 3 { Err(std::io::Error::other("503")) } else { Ok(n) });
/// assert_eq!(flaky.unwrap(), 3);
///
/// let down = retry(&policy, &Stop::never(), |_| Err::<(), _>(std::io::Error::other("503")));
/// assert!(matches!(down, Err(RetryError::Exhausted { attempts: 3, .. })));
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
pub fn retry<T, E, K>(
    policy: &RetryPolicy<'_, K>,
    stop: &Stop<'_>,
    attempt: impl FnMut(u32) -> Result<T, E>,
) -> Result<T, RetryError<E>>
where
    K: Classify<E>,
    E: Refusal,
{
    retry_notify(policy, stop, |_| {}, attempt)
}

/// A retry about to wait: the attempt that failed (from 1), the error it
/// failed with, and the pause before the next attempt. What
/// [`retry_notify`] and [`retry_async_notify`](crate::retry::retry_async_notify)
/// hand their hook, for logs and metrics (as backon's `notify` and
/// tenacity's `before_sleep`).
#[derive(Debug)]
pub struct RetryEvent<'e, E> {
    /// The attempt that failed, from 1.
    pub attempt: u32,
    /// The pause before the next attempt.
    pub delay: Duration,
    /// The error it failed with.
    pub error: &'e E,
    /// The pause the server asked for, when it was longer than the
    /// policy's [`max_retry_after`](crate::retry::RetryPolicy::max_retry_after)
    /// and `delay` is that cap instead.
    pub capped_from: Option<Duration>,
}

/// [`retry`], calling `on_retry` before each pause (never after the last
/// attempt, nor when the loop stops instead of retrying).
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::{BackoffConfig, RetryEvent, RetryPolicy, Stop, retry_notify};
///
/// let policy = RetryPolicy::builder()
///     .max_attempts(3)
///     .backoff(BackoffConfig::builder().base(Duration::from_millis(1)).build()?)
///     .build()?;
/// let mut seen = Vec::new();
/// let got = retry_notify(
///     &policy,
///     &Stop::never(),
///     |e: RetryEvent<'_, std::io::Error>| seen.push((e.attempt, e.error.to_string())),
///     |n| if n < 3 { Err(std::io::Error::other("503")) } else { Ok(n) },
/// );
/// assert_eq!(got.unwrap(), 3);
/// assert_eq!(seen, [(1, "503".to_owned()), (2, "503".to_owned())]);
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
pub fn retry_notify<T, E, K>(
    policy: &RetryPolicy<'_, K>,
    stop: &Stop<'_>,
    on_retry: impl FnMut(RetryEvent<'_, E>),
    attempt: impl FnMut(u32) -> Result<T, E>,
) -> Result<T, RetryError<E>>
where
    K: Classify<E>,
    E: Refusal,
{
    let mut calls = Attempts { classify: policy.classifier(), attempt, on_retry, _answer: PhantomData };
    let limits = policy.limits();
    let plan = Plan::<MonotonicClock>::retries(&limits, None);
    let deadline = stop.deadline.map(monotonic_at);
    answer(blocking::drive(plan, deadline, stop.cancel, &mut calls))
}

impl<K, F, H, T, E> BlockingCalls for Attempts<'_, K, F, H, T, E>
where
    K: Classify<E>,
    E: Refusal,
    F: FnMut(u32) -> Result<T, E>,
    H: FnMut(RetryEvent<'_, E>),
{
    fn call(&mut self, attempt: u32) -> Result<T, E> {
        (self.attempt)(attempt)
    }
}
