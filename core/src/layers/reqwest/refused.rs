//! The error a request gets when a guard of the middleware refused it.

use core::error::Error;
use core::fmt;
use core::time::Duration;

use crate::refusal::RefusedBy;

/// A request the middleware did not send: the breaker was open, the
/// bulkhead full, or the retries' time was up before any attempt.
///
/// The middleware returns it as `reqwest_middleware::Error::Middleware`.
/// [`refusal`](crate::refusal) finds the guard's refusal in that error's
/// [`source`](Error::source) chain, so "was I refused, and for how long?"
/// is one call on the error the client returns; `anyhow`'s `downcast_ref`
/// finds this type itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    by: RefusedBy,
}

impl Refused {
    pub(crate) fn new(by: RefusedBy) -> Self {
        Self { by }
    }

    /// Which guard refused the request, and what it said.
    pub fn by(&self) -> RefusedBy {
        self.by
    }

    /// When trying again makes sense, if the guard said (see
    /// [`RefusedBy::retry_after`]).
    pub fn retry_after(&self) -> Option<Duration> {
        self.by.retry_after()
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request not sent: {}", self.by)
    }
}

/// The guard's own error is the source, so that a chain walked from an
/// error that forwards its `source` past this one (as
/// `reqwest_middleware::Error` does) still reaches it.
impl Error for Refused {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match &self.by {
            RefusedBy::Breaker(r) => Some(r),
            RefusedBy::Bulkhead(b) => Some(b),
            RefusedBy::Deadline(d) => Some(d),
            RefusedBy::RateLimited(t) => Some(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::string::ToString;

    use super::*;
    use crate::{BulkheadFull, Rejected, State, refusal};

    #[test]
    fn the_guard_is_found_from_the_refusal_and_past_it() {
        let open = Rejected { state: State::Open, retry_after: Some(Duration::from_secs(2)) };
        let refused = Refused::new(RefusedBy::Breaker(open));
        assert_eq!(refusal(&refused), Some(RefusedBy::Breaker(open)));
        assert_eq!(refused.retry_after(), Some(Duration::from_secs(2)));
        // An error whose source skips `Refused` itself still leads to the guard.
        assert_eq!(refused.source().and_then(refusal), Some(RefusedBy::Breaker(open)));
        let full = Refused::new(RefusedBy::Bulkhead(BulkheadFull { max: 4 }));
        assert_eq!(
            (refusal(&full), full.retry_after()),
            (Some(RefusedBy::Bulkhead(BulkheadFull { max: 4 })), None)
        );
        assert_eq!(full.to_string(), "request not sent: bulkhead full: 4 calls already in flight");
    }
}
