//! The retry executors: a retry policy alone, run by the composition
//! engine's drivers, blocking ([`blocking`]) or in a future ([`future`],
//! feature `async`).

pub(crate) mod blocking;
#[cfg(feature = "async")]
pub(crate) mod future;

pub use blocking::{CANCEL_CHECK, RetryEvent, Stop, retry, retry_notify};
#[cfg(feature = "async")]
pub use future::{retry_async, retry_async_notify};

use core::marker::PhantomData;
use core::time::Duration;

use crate::assessment::Assessment;
use crate::policy::{Calls, Ended, Judged, Tried};
use crate::retry::error::RetryError;
use crate::retry::policy::{Classify, Refusal, Verdict};

/// The attempts of [`retry`] and [`retry_async`]: the caller's closure, its
/// classifier, and the hook told of each retry.
pub(crate) struct Attempts<'k, K, F, H, T, E> {
    pub(crate) classify: &'k K,
    pub(crate) attempt: F,
    pub(crate) on_retry: H,
    pub(crate) _answer: PhantomData<fn() -> Result<T, E>>,
}

impl<K, F, H, T, E> Calls for Attempts<'_, K, F, H, T, E>
where
    K: Classify<E>,
    E: Refusal,
    H: FnMut(RetryEvent<'_, E>),
{
    type Answer = Result<T, E>;

    /// `Ok` is a success; an error is what the classifier says, and a
    /// guard's refusal is never retried. An error is never a success: one
    /// the classifier calls so ends the retries as final, as any judgement
    /// but a failure does, and the caller gets it with the attempts made.
    fn judge(&self, answer: &Result<T, E>) -> Judged {
        match answer {
            Ok(_) => Judged { assessment: Assessment::Success, verdict: Verdict::Final },
            Err(e) if e.is_refusal() => Judged { assessment: Assessment::Ignored, verdict: Verdict::Final },
            Err(e) => match self.classify.classify(e) {
                Assessment::Success => Judged { assessment: Assessment::Ignored, verdict: Verdict::Final },
                judged => Judged::of(judged, self.classify.retry_after(e)),
            },
        }
    }

    fn retrying(
        &mut self,
        attempt: u32,
        delay: Duration,
        capped_from: Option<Duration>,
        answer: &Result<T, E>,
    ) {
        if let Err(error) = answer {
            (self.on_retry)(RetryEvent { attempt, delay, error, capped_from });
        }
    }
}

/// The caller's answer of a run of retries alone: the value, else the
/// retries' end with the last error.
pub(crate) fn answer<T, E>(run: Result<Result<T, E>, Ended<Result<T, E>>>) -> Result<T, RetryError<E>> {
    let e = match run {
        Ok(answer) => return answer.map_err(|error| RetryError::Final { attempts: 1, error }),
        Err(Ended::Stopped(e)) => e,
        // No guard and no timeout of its own: only the caller's deadline
        // ends a call early.
        Err(Ended::CutShort { attempts, last, .. } | Ended::Refused { attempts, last, .. }) => {
            RetryError::Deadline { attempts, last }
        }
    };
    settle(e)
}

/// The retries' end with its last answer unwrapped: a value (one the
/// classifier called a failure) is the answer, an error stays the error.
pub(crate) fn settle<T, E>(e: RetryError<Tried<Result<T, E>>>) -> Result<T, RetryError<E>> {
    let attempts = e.attempts();
    // A call that ran out of time has no error of its own: the deadline's.
    let deadline = RetryError::Deadline { attempts, last: None };
    let rebuild = |last: Tried<Result<T, E>>, make: &dyn Fn(E) -> RetryError<E>| match last {
        Tried::Answer(Ok(value)) => Ok(value),
        Tried::Answer(Err(error)) => Err(make(error)),
        Tried::TimedOut(_) => Err(RetryError::Deadline { attempts, last: None }),
    };
    match e {
        RetryError::Exhausted { last, .. } => rebuild(last, &|last| RetryError::Exhausted { attempts, last }),
        RetryError::Final { error, .. } => rebuild(error, &|error| RetryError::Final { attempts, error }),
        RetryError::BudgetExhausted { last, .. } => {
            rebuild(last, &|last| RetryError::BudgetExhausted { attempts, last })
        }
        RetryError::Deadline { last: Some(last), .. } => {
            rebuild(last, &|last| RetryError::Deadline { attempts, last: Some(last) })
        }
        RetryError::Cancelled { last: Some(last), .. } => {
            rebuild(last, &|last| RetryError::Cancelled { attempts, last: Some(last) })
        }
        RetryError::Deadline { last: None, .. } => Err(deadline),
        RetryError::Cancelled { last: None, .. } => Err(RetryError::Cancelled { attempts, last: None }),
    }
}
