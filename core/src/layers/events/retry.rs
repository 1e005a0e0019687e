//! A retry layer's events.

use core::fmt;
use core::time::Duration;

/// Why an attempt is retried, as far as the layer can tell without
/// allocating: a response's status, a timeout, or the error's text.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum RetryCause<'a> {
    /// A response the classifier called a failure (a 503), with its HTTP
    /// status when the layer's classifier knows it.
    Response(Option<u16>),
    /// The attempt ran out of time after this long.
    Timeout(Duration),
    /// The attempt's error, to be written with `Display`.
    Error(&'a (dyn fmt::Display + 'a)),
    /// An error of a type the layer cannot write (a pipeline's calls may
    /// fail with any type).
    Failed,
}

impl fmt::Debug for RetryCause<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryCause::Response(status) => f.debug_tuple("Response").field(status).finish(),
            RetryCause::Timeout(d) => f.debug_tuple("Timeout").field(d).finish(),
            RetryCause::Error(e) => f.debug_tuple("Error").field(&format_args!("{e}")).finish(),
            RetryCause::Failed => f.write_str("Failed"),
        }
    }
}

impl fmt::Display for RetryCause<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryCause::Response(Some(status)) => write!(f, "HTTP {status}"),
            RetryCause::Response(None) => f.write_str("a response judged a failure"),
            RetryCause::Timeout(d) => write!(f, "timed out after {d:?}"),
            RetryCause::Error(e) => e.fmt(f),
            RetryCause::Failed => f.write_str("the call failed"),
        }
    }
}

/// What a retry layer did with a request, as an
/// [`Events`](crate::events::Events) listener hears it.
///
/// Each retry is heard once, as [`Scheduled`](Self::Scheduled), before its
/// pause. A request whose retries stop is heard once more if they stopped
/// for want of a budget token ([`BudgetRefused`](Self::BudgetRefused)) or
/// of attempts ([`Exhausted`](Self::Exhausted)); not when it succeeded, or
/// stopped at a refusal, a final error or its deadline.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum RetryNotice<'a> {
    /// An attempt failed and another follows after `delay`.
    Scheduled {
        /// The name of the [`Events`](crate::events::Events).
        name: &'a str,
        /// The attempt that failed, from 1.
        attempt: u32,
        /// The pause before the next attempt.
        delay: Duration,
        /// What the attempt failed with.
        cause: RetryCause<'a>,
        /// The pause the server asked for, when it was longer than the
        /// policy's [`max_retry_after`](crate::retry::RetryPolicy::max_retry_after)
        /// and `delay` is that cap instead.
        capped_from: Option<Duration>,
    },
    /// An attempt failed and the retry budget had no token for another.
    BudgetRefused {
        /// The name of the [`Events`](crate::events::Events).
        name: &'a str,
        /// Attempts made.
        attempts: u32,
    },
    /// Every attempt the policy allows failed.
    Exhausted {
        /// The name of the [`Events`](crate::events::Events).
        name: &'a str,
        /// Attempts made.
        attempts: u32,
    },
}

impl RetryNotice<'_> {
    /// The name of the [`Events`](crate::events::Events) that heard it.
    pub fn name(&self) -> &str {
        match *self {
            RetryNotice::Scheduled { name, .. }
            | RetryNotice::BudgetRefused { name, .. }
            | RetryNotice::Exhausted { name, .. } => name,
        }
    }

    /// The notice's kind in a word (`scheduled`, `budget_refused`,
    /// `exhausted`): the `event` label of its metric.
    pub fn as_str(&self) -> &'static str {
        match self {
            RetryNotice::Scheduled { .. } => "scheduled",
            RetryNotice::BudgetRefused { .. } => "budget_refused",
            RetryNotice::Exhausted { .. } => "exhausted",
        }
    }
}
