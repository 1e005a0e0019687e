//! The one judgement of a call's result, richer than an [`Outcome`]: a
//! dependency may also push back ("too many requests, come back in 30 s").
//! The breaker records it (holding for backpressure) and the retries act
//! on it (only a failure is worth another attempt).

use core::time::Duration;

use crate::breaker::ticket::Outcome;

/// How a call ended, as a classifier sees it: the one judgement of a
/// result that the breaker records and the retries act on.
///
/// # One rule in every integration
/// The [`Pipeline`](crate::Pipeline) (sync and async, in both nestings),
/// the retry executors, the tower retry layer and the reqwest middleware
/// are one composition engine, run by one blocking and one async driver,
/// so they treat each judgement alike; the Python and C bindings judge
/// with this crate's classifier and hold alike:
///
/// | judgement | the breaker | retried | the caller gets |
/// | --- | --- | --- | --- |
/// | `Success` (1xx–3xx) | a success | no | the answer |
/// | `Failure` (5xx, 408, a status outside 100–599, a timeout, a connection error) | a failure | yes, after the backoff's pause, or after the 5xx's `Retry-After` where the classifier reads it ([`HttpClassifier`](crate::http::HttpClassifier) in the pipeline and the tower layers, always in the reqwest middleware and Python's retries), capped at the policy's [`max_retry_after`](crate::retry::RetryPolicy::max_retry_after) (a minute by default) | the last answer once the retries stop |
/// | `Ignored` (any other 4xx: the caller's fault; a cancelled call) | nothing counted; a probe slot freed | no | the answer |
/// | `Backpressure` (429, 418) | held open from that moment, for the `Retry-After` or reset header, capped at the breaker's [`max_hold`](crate::BreakerConfig::max_hold) (one hour by default; a capped hold counts in [`capped_holds`](crate::Snapshot::capped_holds)), else for its `open_timeout` | never: the hold refuses the next attempt | the 429 at once; others are refused with the time left |
///
/// The hold is placed before anything waits, so a breaker outside the
/// retries holds everyone as soon as the 429 is seen, as one inside does.
/// One difference remains: `tripwire.ccxt` cuts a server's pause to its own
/// `max_retry_after` (300 s unless set) before its breaker holds, so its
/// holds end there rather than at `max_hold`.
///
/// # What each nesting does
/// The conformance matrix (`core/tests/conformance.rs`) runs each case
/// through every integration against a real server, and fails when an
/// integration differs from the others of its nesting other than as listed;
/// this table is its output (`python/tests/test_conformance.py` holds the
/// Python integrations to the same cells):
///
#[doc = include_str!("layers/conformance.md")]
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::{Assessment, Outcome};
///
/// assert_eq!(Assessment::from(Outcome::Failure).outcome(), Outcome::Failure);
/// // A 429: neither the dependency's failure nor the caller's; hold the breaker open.
/// assert_eq!(Assessment::Backpressure(Some(Duration::from_secs(3))).outcome(), Outcome::Ignored);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Assessment {
    /// The dependency did its job.
    Success,
    /// The dependency failed (5xx, timeout, connection refused…).
    Failure,
    /// Says nothing about the dependency (a 4xx the caller caused, a
    /// cancelled call).
    Ignored,
    /// The dependency asked for less traffic (429, 418): the breaker is held
    /// open for this long, or for its `open_timeout` when no time was given.
    Backpressure(Option<Duration>),
}

impl Assessment {
    /// The outcome the breaker records: backpressure is recorded as
    /// ignored, since the hold that follows says more than a failure would.
    pub fn outcome(self) -> Outcome {
        match self {
            Assessment::Success => Outcome::Success,
            Assessment::Failure => Outcome::Failure,
            Assessment::Ignored | Assessment::Backpressure(_) => Outcome::Ignored,
        }
    }
}

impl From<Outcome> for Assessment {
    fn from(o: Outcome) -> Self {
        match o {
            Outcome::Success => Assessment::Success,
            Outcome::Failure => Assessment::Failure,
            Outcome::Ignored => Assessment::Ignored,
        }
    }
}
