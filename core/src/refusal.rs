//! Whether a guard refused a call, read from any layer's error: [`refusal`]
//! walks an error's [`source`](core::error::Error::source) chain for a
//! breaker's [`Rejected`], a bulkhead's [`BulkheadFull`], a rate
//! limiter's [`Throttled`] or a [`DeadlinePassed`], so a caller asks "was I refused, and for how long?"
//! in one call, whatever the layers and their order.
//!
//! A refusal is never a failure of the dependency: the call was not made.
//! The tower breaker counts an inner layer's refusal as ignored, and the
//! retry layers never retry one.

use core::error::Error;
use core::fmt;
use core::time::Duration;

use crate::breaker::ticket::Rejected;
use crate::bulkhead::BulkheadFull;
use crate::limiter::Throttled;

/// A retry loop's deadline passed before any attempt was made, so nothing
/// reached the dependency: the [`source`](Error::source) of a
/// [`RetryError::Deadline`](crate::retry::RetryError::Deadline) (and of a
/// pipeline's deadline) with no attempt made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DeadlinePassed;

impl fmt::Display for DeadlinePassed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the deadline passed before any attempt was made")
    }
}

impl Error for DeadlinePassed {}

/// Which guard refused a call, as [`refusal`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefusedBy {
    /// The breaker is open, held open, or has every probe slot taken.
    Breaker(Rejected),
    /// The bulkhead had no free slot.
    Bulkhead(BulkheadFull),
    /// The deadline passed before any attempt.
    Deadline(DeadlinePassed),
    /// A rate limiter would not let the request go in time (or ever, for a
    /// cost above its burst).
    RateLimited(Throttled),
}

impl RefusedBy {
    /// When trying again makes sense, if the guard said: the breaker's
    /// `retry_after` (the end of its cool-down or of a server's hold), or a
    /// rate limiter's wait. `None` for a full bulkhead (a slot may free at any moment), a passed
    /// deadline, a breaker forced open, and a cost above a limiter's burst.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            RefusedBy::Breaker(r) => r.retry_after,
            RefusedBy::RateLimited(Throttled::Wait { wait, .. }) => Some(*wait),
            RefusedBy::Bulkhead(_) | RefusedBy::Deadline(_) | RefusedBy::RateLimited(_) => None,
        }
    }
}

impl fmt::Display for RefusedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefusedBy::Breaker(r) => r.fmt(f),
            RefusedBy::Bulkhead(b) => b.fmt(f),
            RefusedBy::Deadline(d) => d.fmt(f),
            RefusedBy::RateLimited(t) => t.fmt(f),
        }
    }
}

/// The guard's refusal in `error` or anywhere down its
/// [`source`](Error::source) chain, or `None` when the error came from the
/// call itself.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::RetryError;
/// use tripwire::{CallError, RefusedBy, Rejected, State, refusal};
///
/// let open = Rejected { state: State::Open, retry_after: Some(Duration::from_secs(3)) };
/// // A breaker's refusal seen through a retry layer.
/// let err: RetryError<CallError<std::io::Error>> =
///     RetryError::Final { attempts: 1, error: CallError::Rejected(open) };
/// assert_eq!(refusal(&err), Some(RefusedBy::Breaker(open)));
/// assert_eq!(refusal(&err).and_then(|r| r.retry_after()), Some(Duration::from_secs(3)));
///
/// // The dependency's own failure is no refusal.
/// let failed: CallError<std::io::Error> = CallError::Inner(std::io::Error::other("reset"));
/// assert_eq!(refusal(&failed), None);
/// ```
pub fn refusal(error: &(dyn Error + 'static)) -> Option<RefusedBy> {
    let mut cause = Some(error);
    while let Some(e) = cause {
        // A guard's refusal at this link of the chain?
        if let Some(r) = e.downcast_ref::<Rejected>() {
            return Some(RefusedBy::Breaker(*r));
        }
        if let Some(b) = e.downcast_ref::<BulkheadFull>() {
            return Some(RefusedBy::Bulkhead(*b));
        }
        if let Some(d) = e.downcast_ref::<DeadlinePassed>() {
            return Some(RefusedBy::Deadline(*d));
        }
        if let Some(t) = e.downcast_ref::<Throttled>() {
            return Some(RefusedBy::RateLimited(*t));
        }
        cause = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breaker::permit::CallError;
    use crate::breaker::state::State;
    use crate::retry::error::RetryError;

    #[derive(Debug)]
    struct Io;
    impl fmt::Display for Io {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("connection reset")
        }
    }
    impl Error for Io {}

    #[test]
    fn a_refusal_is_found_at_any_depth_and_a_failure_is_none() {
        let open = Rejected { state: State::Open, retry_after: Some(Duration::from_millis(250)) };
        let full = BulkheadFull { max: 8 };
        assert_eq!(refusal(&open), Some(RefusedBy::Breaker(open)));
        let deep: RetryError<CallError<CallError<Io>>> =
            RetryError::Exhausted { attempts: 3, last: CallError::Inner(CallError::Rejected(open)) };
        assert_eq!(refusal(&deep).map(|r| r.retry_after()), Some(Some(Duration::from_millis(250))));
        let e: CallError<BulkheadFull> = CallError::Inner(full);
        assert_eq!(refusal(&e), Some(RefusedBy::Bulkhead(full)));
        assert_eq!(refusal(&e).unwrap().retry_after(), None);

        let failed: RetryError<CallError<Io>> =
            RetryError::Exhausted { attempts: 3, last: CallError::Inner(Io) };
        assert_eq!(refusal(&failed), None);
        let budget: RetryError<Io> = RetryError::BudgetExhausted { attempts: 1, last: Io };
        assert_eq!(refusal(&budget), None, "the attempt that was made failed");
    }

    #[test]
    fn a_deadline_before_any_attempt_is_a_refusal_one_after_a_failure_is_not() {
        let none: RetryError<Io> = RetryError::Deadline { attempts: 0, last: None };
        assert_eq!(refusal(&none), Some(RefusedBy::Deadline(DeadlinePassed)));
        let some: RetryError<Io> = RetryError::Deadline { attempts: 2, last: Some(Io) };
        assert_eq!(refusal(&some), None);
    }
}
