//! The middleware's rate limiter: each request's costs, and what the
//! server's answers say of the budget.

use core::time::Duration;
use std::boxed::Box;
use std::sync::Arc;
use std::time::SystemTime;
use std::vec::Vec;

use ::reqwest::{Request, Response};
use http::StatusCode;

use crate::layers::clock::MonotonicClock;
use crate::layers::http::{UsageKind, usage};
use crate::limiter::RateLimiter;
use crate::policy::{Ration, Rationed};

/// A count a server reports, and the limit it is for: the first count of
/// `kind` over `window` (any window when `None`) goes to limit `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SyncRule {
    pub(crate) kind: UsageKind,
    pub(crate) window: Option<Duration>,
    pub(crate) limit: usize,
}

/// A rate limiter of any number of limits, with the costs of each request.
pub(crate) trait RateLimit: Send + Sync {
    /// The costs of `req`, to take before each of its attempts.
    fn ration(&self, req: &Request) -> Box<dyn Rationed + Send>;

    /// What an answer says: a 429 or 418 despite the limiter counts its
    /// first limit as spent for a period; the counts of `rules` raise the
    /// limits they are for.
    fn observe(&self, response: &Response, rules: &[SyncRule]);
}

/// [`RateLimit`] for a limiter of `N` limits and a cost function.
pub(crate) struct Limits<const N: usize, F> {
    pub(crate) limiter: Arc<RateLimiter<N>>,
    pub(crate) cost: F,
}

impl<const N: usize, F> RateLimit for Limits<N, F>
where
    F: Fn(&Request) -> [u32; N] + Send + Sync,
{
    fn ration(&self, req: &Request) -> Box<dyn Rationed + Send> {
        Box::new(Ration { limiter: self.limiter.clone(), costs: (self.cost)(req) })
    }

    fn observe(&self, response: &Response, rules: &[SyncRule]) {
        let configs = self.limiter.configs();
        let status = response.status();
        if status == StatusCode::TOO_MANY_REQUESTS || status.as_u16() == 418 {
            self.limiter.observe_used(0, configs[0].units().into(), &MonotonicClock);
            return;
        }
        if rules.is_empty() {
            return;
        }
        let found = usage(response.headers());
        // Read only when a count is found: the windows of Binance's counts
        // start on multiples of their length since the Unix epoch.
        let now = SystemTime::now();
        for rule in rules.iter().filter(|r| r.limit < N) {
            let Some(count) = found.find(rule.kind, rule.window) else { continue };
            let Some(used) = count.used_of(configs[rule.limit].units()) else { continue };
            match count.window_left_at(now) {
                Some(left) => self.limiter.observe_used_in(rule.limit, used, left, &MonotonicClock),
                None => self.limiter.observe_used(rule.limit, used, &MonotonicClock),
            };
        }
    }
}

/// The rules for a limiter, in the order given.
pub(crate) type SyncRules = Vec<SyncRule>;
