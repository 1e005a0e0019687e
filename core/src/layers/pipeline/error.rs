//! Which layer of a pipeline answered instead of the call.

use core::fmt;
use core::time::Duration;
use std::boxed::Box;

use crate::breaker::ticket::Rejected;
use crate::bulkhead::BulkheadFull;
use crate::limiter::Throttled;
use crate::refusal::{DeadlinePassed, RefusedBy};

/// Why a pipeline returned no value; each variant names the layer that
/// answered.
///
/// `last` errors are those of the last attempt: a [`Timeout`](Self::Timeout)
/// or the call's own [`Call`](Self::Call) error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PipelineError<E> {
    /// The breaker refused the call (open, or held open by a 429): come
    /// back after `retry_after`. The call was not made, and no retry
    /// followed.
    Open(Rejected),
    /// The bulkhead had no free slot (in time). The call was not made.
    Full(BulkheadFull),
    /// The rate limiter would not let the call go within the wait allowed
    /// (the pipeline's `rate_limit_wait`, cut to the deadline). The call
    /// was not made.
    RateLimited(Throttled),
    /// The attempt ran out of time (async pipelines); counted by the
    /// breaker as a failure.
    Timeout(Duration),
    /// The retry budget had no token left for another attempt: retries are
    /// capped during an outage.
    BudgetExhausted {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: Box<PipelineError<E>>,
    },
    /// Every attempt the retry policy allows failed.
    RetriesExhausted {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: Box<PipelineError<E>>,
    },
    /// The caller's deadline (or the policy's `max_total`, or, for a
    /// request admitted as a Half-Open probe, the breaker's
    /// [`probe_timeout`](crate::breaker::BreakerConfigBuilder::probe_timeout))
    /// passed, or waiting for another attempt would have passed it.
    Deadline {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error, if one was made.
        last: Option<Box<PipelineError<E>>>,
    },
    /// The call's own error, not retried (there is no retry layer, or the
    /// error was final: the caller's fault, or backpressure).
    Call(E),
}

impl<E> PipelineError<E> {
    /// The call's own error, here or as the last attempt's.
    pub fn call_error(&self) -> Option<&E> {
        match self {
            PipelineError::Call(e) => Some(e),
            PipelineError::BudgetExhausted { last, .. } | PipelineError::RetriesExhausted { last, .. } => {
                last.call_error()
            }
            PipelineError::Deadline { last, .. } => last.as_ref()?.call_error(),
            _ => None,
        }
    }

    /// Attempts made: 0 when a guard refused the first one, 1 when no retry
    /// layer answered.
    pub fn attempts(&self) -> u32 {
        match self {
            PipelineError::Open(_) | PipelineError::Full(_) | PipelineError::RateLimited(_) => 0,
            PipelineError::Timeout(_) | PipelineError::Call(_) => 1,
            PipelineError::BudgetExhausted { attempts, .. }
            | PipelineError::RetriesExhausted { attempts, .. }
            | PipelineError::Deadline { attempts, .. } => *attempts,
        }
    }

    /// When trying again makes sense, if a layer said so (an open breaker,
    /// a rate limiter's wait).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            PipelineError::Open(r) => r.retry_after,
            PipelineError::RateLimited(t) => RefusedBy::RateLimited(*t).retry_after(),
            _ => None,
        }
    }
}

impl<E: fmt::Display> fmt::Display for PipelineError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PipelineError::Open(r) => r.fmt(f),
            PipelineError::Full(b) => b.fmt(f),
            PipelineError::RateLimited(t) => t.fmt(f),
            PipelineError::Timeout(d) => write!(f, "call timed out after {d:?}"),
            PipelineError::BudgetExhausted { attempts, last } => {
                write!(f, "retry budget exhausted after {attempts} attempts; last error: {last}")
            }
            PipelineError::RetriesExhausted { attempts, last } => {
                write!(f, "gave up after {attempts} attempts; last error: {last}")
            }
            PipelineError::Deadline { attempts, last: Some(last) } => {
                write!(f, "deadline passed after {attempts} attempts; last error: {last}")
            }
            PipelineError::Deadline { attempts, last: None } => {
                write!(f, "deadline passed after {attempts} attempts")
            }
            PipelineError::Call(e) => e.fmt(f),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for PipelineError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            PipelineError::Open(r) => Some(r),
            PipelineError::Full(b) => Some(b),
            PipelineError::RateLimited(t) => Some(t),
            PipelineError::Call(e) => Some(e),
            PipelineError::BudgetExhausted { last, .. } | PipelineError::RetriesExhausted { last, .. } => {
                Some(&**last)
            }
            PipelineError::Deadline { last: Some(last), .. } => Some(&**last),
            // No attempt was made: nothing reached the dependency.
            PipelineError::Deadline { attempts: 0, last: None } => Some(&DeadlinePassed),
            PipelineError::Deadline { last: None, .. } => None,
            PipelineError::Timeout(_) => None,
        }
    }
}
