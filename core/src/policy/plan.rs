//! What the engine reads: the parts of a composition, and what an
//! integration tells it about each answer.

use core::time::Duration;
use std::sync::Arc;

use crate::assessment::Assessment;
use crate::bulkhead::Bulkhead;
use crate::clock::Clock;
use crate::layers::clock::MonotonicClock;
use crate::layers::events::{Events, RetryCause};
use crate::layers::named::NamedBreaker;
use crate::layers::pipeline::Nesting;
use crate::limiter::{RateLimiter, Throttled};
use crate::retry::budget::RetryBudget;
use crate::retry::policy::{RetryAll, RetryPolicy, Verdict};

/// The layers around one call, each optional, and where the breaker sits
/// relative to the retries. The retry policy carries its budget, if any.
pub(crate) struct Plan<'a, C: Clock> {
    pub(crate) breaker: Option<&'a NamedBreaker<C>>,
    pub(crate) bulkhead: Option<&'a Bulkhead>,
    /// How long an attempt may wait for a bulkhead slot; zero: not at all.
    pub(crate) bulkhead_wait: Duration,
    /// The rate limiter each attempt asks before the bulkhead, with the
    /// request's costs.
    pub(crate) rate: Option<&'a dyn Rationed>,
    /// How long an attempt may wait for the rate limiter (cut to the
    /// request's time left).
    pub(crate) rate_wait: Duration,
    /// `None`: one attempt. Borrowed, not copied: a run reads it in place.
    pub(crate) retry: Option<&'a RetryPolicy<'a, RetryAll>>,
    /// The budget every retry draws on (the one in `retry` is not read).
    pub(crate) budget: Option<&'a RetryBudget>,
    /// Each call's own bound, for the driver that can cut a call short
    /// (the async one).
    #[cfg_attr(not(feature = "async"), allow(dead_code))]
    pub(crate) timeout: Option<Duration>,
    pub(crate) nesting: Nesting,
    pub(crate) events: Option<&'a Events>,
}

impl<'a, C: Clock> Plan<'a, C> {
    /// Retries alone, drawing on the policy's own budget: no breaker,
    /// bulkhead or timeout.
    pub(crate) fn retries(policy: &'a RetryPolicy<'a, RetryAll>, events: Option<&'a Events>) -> Self {
        Plan {
            breaker: None,
            bulkhead: None,
            bulkhead_wait: Duration::ZERO,
            rate: None,
            rate_wait: Duration::ZERO,
            retry: Some(policy),
            budget: policy.retry_budget(),
            timeout: None,
            nesting: Nesting::RetryOutsideBreaker,
            events,
        }
    }
}

/// A rate limiter with one request's costs: the engine takes them before
/// each attempt, and gives them back for an attempt that was not sent.
pub(crate) trait Rationed: Sync {
    /// Takes the costs if they can go within `max_wait`: the wait before
    /// sending, or the refusal (nothing taken).
    fn take(&self, max_wait: Duration) -> Result<Duration, Throttled>;

    /// Gives the costs back: the attempt they were taken for was not sent.
    fn give_back(&self);
}

/// The rate limiter of a [`Pipeline`](crate::Pipeline) or a middleware,
/// with the costs of its every request, read on [`MonotonicClock`].
pub(crate) struct Ration<const N: usize> {
    pub(crate) limiter: Arc<RateLimiter<N>>,
    pub(crate) costs: [u32; N],
}

impl<const N: usize> Rationed for Ration<N> {
    fn take(&self, max_wait: Duration) -> Result<Duration, Throttled> {
        self.limiter.acquire(self.costs, max_wait, &MonotonicClock).map(|grant| grant.ready_in())
    }

    fn give_back(&self) {
        let _ = self.limiter.refund_costs(self.costs, &MonotonicClock);
    }
}

/// One judgement of an attempt's answer: what the breaker records (and
/// whether it holds), and whether another attempt may help and after what
/// pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Judged {
    pub(crate) assessment: Assessment,
    pub(crate) verdict: Verdict,
}

impl Judged {
    /// A call that ran out of its own time: the dependency's failure.
    #[cfg(feature = "async")]
    pub(crate) const TIMED_OUT: Judged = Judged { assessment: Assessment::Failure, verdict: Verdict::Retry };

    /// The rule of every integration: only a failure of the dependency is
    /// retried, after `after` if its server named a pause; success,
    /// the caller's own fault and backpressure are the answer at once.
    pub(crate) fn of(assessment: Assessment, after: Option<Duration>) -> Self {
        Judged { assessment, verdict: Verdict::of(assessment, after) }
    }
}

/// What a driver needs from an integration besides the call itself: the
/// judgement of each answer, and what to say of a retry.
pub(crate) trait Calls {
    /// One attempt's answer, as the integration returns it.
    type Answer;

    /// The breaker's and the retries' judgement of `answer`.
    fn judge(&self, answer: &Self::Answer) -> Judged;

    /// What a failed attempt failed with, for a retry's event.
    fn cause<'s>(&self, _answer: &'s Self::Answer) -> RetryCause<'s> {
        RetryCause::Failed
    }

    /// A retry is about to wait `delay` after attempt `attempt` failed with
    /// `answer` (`capped_from`: the longer pause its server asked for).
    fn retrying(
        &mut self,
        _attempt: u32,
        _delay: Duration,
        _capped_from: Option<Duration>,
        _answer: &Self::Answer,
    ) {
    }

    /// What is kept of a failed answer across the pause, returned if no
    /// attempt follows it (a response's head, its body let go).
    fn keep(&mut self, answer: Self::Answer) -> Self::Answer {
        answer
    }
}
