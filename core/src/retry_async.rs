//! The async retry executor (feature `async`): runs attempts, sleeps
//! between them on a [`Timer`], and stops at once when the caller's
//! deadline passes or its future is dropped.

use std::time::Instant;

use crate::backoff::Backoff;
use crate::clock::MonotonicClock;
use crate::retry::{Classify, Next, Refusal, RetryPolicy};
use crate::retry_error::RetryError;
use crate::timeout::Timer;

/// Runs `attempt` (an async closure given the attempt number, from 1)
/// until one succeeds or the policy, the budget or `deadline` stops it;
/// the async twin of [`retry`](crate::retry()).
///
/// Between attempts it sleeps the backoff's delay on `timer` (a
/// classifier's `RetryAfter` overrides it); a wait that would end past the
/// deadline is not started. Dropping the returned future cancels at once,
/// mid-attempt or mid-sleep. The budget, if any, gets one deposit per call
/// and one withdrawal per retry.
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
pub async fn retry_async<T, E, K, Tm>(
    policy: &RetryPolicy<'_, K>,
    timer: &Tm,
    deadline: Option<Instant>,
    mut attempt: impl AsyncFnMut(u32) -> Result<T, E>,
) -> Result<T, RetryError<E>>
where
    K: Classify<E>,
    E: Refusal,
    Tm: Timer,
{
    let total = policy.max_total().and_then(|t| Instant::now().checked_add(t));
    let deadline = match (deadline, total) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    // Made at the first failure: a call that succeeds at once pays nothing for it.
    let mut backoff: Option<Backoff> = None;
    if let Some(budget) = policy.retry_budget() {
        budget.deposit(&MonotonicClock);
    }
    let (mut attempts, mut last) = (0, None);
    loop {
        // Has the deadline passed?
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(RetryError::Deadline { attempts, last });
        }
        attempts += 1;
        let error = match attempt(attempts).await {
            Ok(value) => return Ok(value),
            Err(e) => e,
        };
        let backoff = backoff.get_or_insert_with(|| Backoff::new(*policy.backoff_config()));
        match policy.next(attempts, &error) {
            Next::Final => return Err(RetryError::Final { attempts, error }),
            Next::Exhausted => return Err(RetryError::Exhausted { attempts, last: error }),
            Next::Retry(Some(after)) => backoff.override_next(after),
            Next::Retry(None) => {}
        }
        let delay = backoff.next_delay();
        // Would the wait end past the deadline?
        if deadline.is_some_and(|d| Instant::now().checked_add(delay).is_none_or(|w| w > d)) {
            return Err(RetryError::Deadline { attempts, last: Some(error) });
        }
        // Is there a token left for this retry?
        if policy.retry_budget().is_some_and(|b| !b.try_withdraw(&MonotonicClock)) {
            return Err(RetryError::BudgetExhausted { attempts, last: error });
        }
        last = Some(error);
        timer.sleep(delay).await;
    }
}
