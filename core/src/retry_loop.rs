//! The decisions of a retry loop, apart from the waiting: shared by the
//! pipeline (sync and async) and `retry_async`, which run their attempts
//! and sleeps themselves (so async futures stay `Send`). Unlike the core's
//! blocking `retry`, the backoff is made at the first failure, so a call
//! that succeeds at once pays nothing for it.

use core::time::Duration;
use std::time::Instant;

use crate::backoff::Backoff;
use crate::clock::MonotonicClock;
use crate::retry::{Classify, Next, Refusal, RetryPolicy};
use crate::retry_error::RetryError;

/// One retry loop's state: the deadline, the backoff (made at the first
/// failure), the attempts made and the last error.
pub(crate) struct RetryLoop<'p, 'b, K, E> {
    policy: &'p RetryPolicy<'b, K>,
    deadline: Option<Instant>,
    backoff: Option<Backoff>,
    attempts: u32,
    last: Option<E>,
}

impl<'p, 'b, K: Classify<E>, E: Refusal> RetryLoop<'p, 'b, K, E> {
    /// A loop under `policy` that stops at `deadline` or at the policy's
    /// `max_total`, whichever comes first; deposits one call in the budget.
    pub(crate) fn new(policy: &'p RetryPolicy<'b, K>, deadline: Option<Instant>) -> Self {
        let total = policy.max_total().and_then(|t| Instant::now().checked_add(t));
        let deadline = match (deadline, total) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(budget) = policy.retry_budget() {
            budget.deposit(&MonotonicClock);
        }
        Self { policy, deadline, backoff: None, attempts: 0, last: None }
    }

    /// The loop's deadline, if it has one.
    #[cfg(feature = "async")]
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Before an attempt: its number, or why none may start.
    pub(crate) fn start(&mut self) -> Result<u32, RetryError<E>> {
        // Has the deadline passed?
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(RetryError::Deadline { attempts: self.attempts, last: self.last.take() });
        }
        self.attempts += 1;
        Ok(self.attempts)
    }

    /// After a failed attempt: how long to wait before the next, or why to
    /// stop.
    pub(crate) fn failed(&mut self, error: E) -> Result<Duration, RetryError<E>> {
        let attempts = self.attempts;
        let backoff = self.backoff.get_or_insert_with(|| Backoff::new(*self.policy.backoff_config()));
        match self.policy.next(attempts, &error) {
            Next::Final => return Err(RetryError::Final { attempts, error }),
            Next::Exhausted => return Err(RetryError::Exhausted { attempts, last: error }),
            Next::Retry(Some(after)) => backoff.override_next(after),
            Next::Retry(None) => {}
        }
        let delay = backoff.next_delay();
        // Would the wait end past the deadline?
        if self.deadline.is_some_and(|d| Instant::now().checked_add(delay).is_none_or(|w| w > d)) {
            return Err(RetryError::Deadline { attempts, last: Some(error) });
        }
        // Is there a token left for this retry?
        if self.policy.retry_budget().is_some_and(|b| !b.try_withdraw(&MonotonicClock)) {
            return Err(RetryError::BudgetExhausted { attempts, last: error });
        }
        self.last = Some(error);
        Ok(delay)
    }
}
