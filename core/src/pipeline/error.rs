//! Which layer of a pipeline answered instead of the call.

use core::fmt;
use core::time::Duration;

use crate::ticket::Rejected;

/// Why a pipeline returned no value; each variant names the layer that
/// answered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PipelineError<E> {
    /// The breaker refused the call (open, or held open by a 429): come
    /// back after `retry_after`. The call was not made.
    Open(Rejected),
    /// The attempt ran out of time (async pipelines); counted by the
    /// breaker as a failure.
    Timeout(Duration),
    /// The call's own error, which the retry layer did not retry (there is
    /// none, or the error was final).
    Call(E),
}

impl<E> PipelineError<E> {
    /// The call's own error, if that is what this is.
    pub fn call_error(&self) -> Option<&E> {
        match self {
            PipelineError::Call(e) => Some(e),
            _ => None,
        }
    }

    /// When trying again makes sense, if a layer said so (an open breaker).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            PipelineError::Open(r) => r.retry_after,
            _ => None,
        }
    }
}

impl<E: fmt::Display> fmt::Display for PipelineError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PipelineError::Open(r) => r.fmt(f),
            PipelineError::Timeout(d) => write!(f, "call timed out after {d:?}"),
            PipelineError::Call(e) => e.fmt(f),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for PipelineError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            PipelineError::Open(r) => Some(r),
            PipelineError::Call(e) => Some(e),
            PipelineError::Timeout(_) => None,
        }
    }
}
