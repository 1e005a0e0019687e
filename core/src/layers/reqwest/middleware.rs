//! The middleware: per request, the retry loop around attempts that the
//! breaker admits and the bulkhead lets through, each judged once by
//! [`assess`].

use core::fmt;
use core::time::Duration;
use std::boxed::Box;
use std::sync::Arc;
use std::time::Instant;

use ::reqwest::{Request, Response};
use http::Extensions;
use reqwest_middleware::{Error, Next, Result};

use crate::bulkhead::{Bulkhead, BulkheadPermit};
use crate::clock::Clock;
use crate::layers::assessment::Assessment;
use crate::layers::clock::{MonotonicClock, instant_at};
use crate::layers::events::{Events, RetryCause, slot_wait, wait_slot_async};
use crate::layers::http::{assess, retry_after};
use crate::layers::named::NamedBreaker;
use crate::layers::reqwest::refused::Refused;
use crate::layers::timeout::{Timer, TokioTimer, timeout};
use crate::refusal::{DeadlinePassed, RefusedBy, refusal};
use crate::retry::budget::RetryBudget;
use crate::retry::policy::{Refusal, RetryAll, RetryPolicy, Verdict};
use crate::retry::step::RetryLoop;

/// A `reqwest_middleware::Middleware` that guards every request with a
/// [`NamedBreaker`], an optional [`Bulkhead`], retries with backoff and a
/// [`RetryBudget`], and the holds a server asks for with `Retry-After`.
///
/// See the [module docs](super) for what it does with each answer, and an
/// example.
pub struct GuardMiddleware<C: Clock = MonotonicClock, Tm = TokioTimer> {
    breaker: Arc<NamedBreaker<C>>,
    bulkhead: Option<Arc<Bulkhead>>,
    /// How long an attempt waits for a bulkhead slot; zero: not at all.
    bulkhead_wait: Duration,
    retry: Option<RetryPolicy<'static, RetryAll>>,
    budget: Option<Arc<RetryBudget>>,
    events: Option<Arc<Events>>,
    /// How long one attempt may take down the chain.
    timeout: Duration,
    timer: Tm,
}

/// How long one attempt may take unless [`GuardMiddleware::timeout`] says
/// otherwise: a hung exchange never holds a caller, or a probe, for longer.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

impl<C: Clock, Tm> fmt::Debug for GuardMiddleware<C, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardMiddleware")
            .field("breaker", &self.breaker.name())
            .field("bulkhead", &self.bulkhead.as_ref().map(|b| b.max()))
            .field("bulkhead_wait", &self.bulkhead_wait)
            .field("max_attempts", &self.retry.as_ref().map(RetryPolicy::max_attempts))
            .field("budget", &self.budget.is_some())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl<C: Clock> GuardMiddleware<C, TokioTimer> {
    /// Guards every request with `breaker`: one attempt each, of at most
    /// 30 s ([`timeout`](Self::timeout)), no bulkhead, waits on tokio's
    /// timer.
    pub fn new(breaker: Arc<NamedBreaker<C>>) -> Self {
        Self {
            breaker,
            bulkhead: None,
            bulkhead_wait: Duration::ZERO,
            retry: None,
            budget: None,
            events: None,
            timeout: DEFAULT_TIMEOUT,
            timer: TokioTimer,
        }
    }
}

impl<C: Clock, Tm> GuardMiddleware<C, Tm> {
    /// Caps the attempts in flight at once with `bulkhead`; an attempt that
    /// finds it full is refused at once (see
    /// [`bulkhead_wait`](Self::bulkhead_wait)).
    #[must_use]
    pub fn bulkhead(mut self, bulkhead: Arc<Bulkhead>) -> Self {
        self.bulkhead = Some(bulkhead);
        self
    }

    /// Lets an attempt wait up to `wait` for a bulkhead slot before it is
    /// refused. The wait is no part of the request's time: a slow call is
    /// timed from the slot on.
    #[must_use]
    pub fn bulkhead_wait(mut self, wait: Duration) -> Self {
        self.bulkhead_wait = wait;
        self
    }

    /// Retries what the breaker counts as a failure (a 5xx, a connection
    /// error, a timeout) under `policy`: its attempts, total time and
    /// backoff. Only a request whose body can be cloned
    /// ([`Request::try_clone`]) is retried; a streamed one is sent once.
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy<'static, RetryAll>) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Bounds each attempt, from its bulkhead slot to the answer's head, by
    /// `after` (30 s by default), and by the retry policy's total time
    /// where that ends first. An attempt that runs out of its own time is
    /// a failure, as a client's own timeout would be: counted by the
    /// breaker, retried, and the error of the request if it is the last
    /// (`reqwest_middleware::Error::Middleware` holding an
    /// [`Elapsed`](crate::Elapsed)). One cut short by the policy's total
    /// time is the same error but ignored by the breaker: the caller ran
    /// out of time, not the dependency. A client timeout shorter than this
    /// still fires first.
    #[must_use]
    pub fn timeout(mut self, after: Duration) -> Self {
        self.timeout = after;
        self
    }

    /// Draws every retry from `budget` (each request deposits once), so
    /// that retries stay a fraction of the traffic.
    #[must_use]
    pub fn budget(mut self, budget: Arc<RetryBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Reports the bulkhead's refusals and waits and the retries to
    /// `events` (its listeners, counts, `tracing` and `metrics`).
    #[must_use]
    pub fn events(mut self, events: Arc<Events>) -> Self {
        self.events = Some(events);
        self
    }

    /// Waits (the retries' backoff, a bulkhead slot) on `timer` instead.
    pub fn timer<Tm2: Timer>(self, timer: Tm2) -> GuardMiddleware<C, Tm2> {
        let Self { breaker, bulkhead, bulkhead_wait, retry, budget, events, timeout, .. } = self;
        GuardMiddleware { breaker, bulkhead, bulkhead_wait, retry, budget, events, timeout, timer }
    }

    /// The breaker.
    pub fn breaker(&self) -> &Arc<NamedBreaker<C>> {
        &self.breaker
    }
}

/// A failed attempt, as the retry loop sees it: the pause its server
/// asked for (a 503's `Retry-After`), if any; the result itself stays with
/// the middleware, which returns the last one.
struct Failed(Option<Duration>);

impl Failed {
    /// The 503's own pause, if it named one, else the backoff's; the loop
    /// caps a server's pause at the policy's `max_retry_after`.
    fn verdict(&self) -> Verdict {
        self.0.map_or(Verdict::Retry, Verdict::RetryAfter)
    }
}

/// Refusals end the loop before it is asked.
impl Refusal for Failed {}

/// How one attempt ended.
enum Attempt {
    /// A guard refused it: nothing was sent.
    Refused(RefusedBy),
    /// Sent; the answer and what the breaker made of it.
    Sent(Result<Response>, Assessment),
}

/// What the breaker makes of an answer: a response by its status and
/// headers ([`assess`]), an error a failure unless it is an inner guard's
/// refusal, which says nothing of the dependency.
fn judge(result: &Result<Response>) -> Assessment {
    match result {
        Ok(response) => assess(response.status(), response.headers()),
        Err(e) if refusal(e).is_some() => Assessment::Ignored,
        Err(_) => Assessment::Failure,
    }
}

/// The response's status, version, headers and URL, with an empty body:
/// what is kept of an answer across a pause.
fn head(response: Response) -> Response {
    use ::reqwest::ResponseBuilderExt;

    // The URL travels as an extension, which `Response::from` reads back.
    let mut url = http::Response::builder().url(response.url().clone());
    let (parts, body) = http::Response::from(response).into_parts();
    // Let go of the body, and with it the connection, now.
    drop(body);
    let mut head = http::Response::from_parts(parts, ::reqwest::Body::from(std::vec::Vec::new()));
    if let Some(url) = url.extensions_mut() {
        head.extensions_mut().extend(core::mem::take(url));
    }
    Response::from(head)
}

/// What an attempt failed with, for a retry's event.
fn cause(result: &Result<Response>) -> RetryCause<'_> {
    match result {
        Ok(response) => RetryCause::Response(Some(response.status().as_u16())),
        Err(e) => RetryCause::Error(e),
    }
}

fn refused(by: RefusedBy) -> Error {
    Error::middleware(Refused::new(by))
}

impl<C, Tm> GuardMiddleware<C, Tm>
where
    C: Clock,
    Tm: Timer,
{
    /// A bulkhead slot for one attempt, if there is a bulkhead, waited for
    /// until `until` at the latest (the retry policy's total time): a wait
    /// so cut that gets no slot is the deadline's refusal.
    async fn slot(
        &self,
        until: Option<Instant>,
    ) -> core::result::Result<Option<BulkheadPermit<'_>>, RefusedBy> {
        let Some(bulkhead) = &self.bulkhead else { return Ok(None) };
        let (wait, cut) = slot_wait(self.bulkhead_wait, until);
        let permit = wait_slot_async(bulkhead, &self.timer, wait, self.events.as_deref()).await;
        permit
            .map(Some)
            .map_err(|full| if cut { RefusedBy::Deadline(DeadlinePassed) } else { RefusedBy::Bulkhead(full) })
    }

    /// One attempt: admitted by the breaker, then the bulkhead (waiting
    /// until `until` at the latest), sent down the chain and settled.
    /// Dropped mid-way, the permit records the call as ignored and the slot
    /// is freed.
    async fn attempt(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
        until: Option<Instant>,
    ) -> Attempt {
        let mut permit = match self.breaker.permit() {
            Ok(permit) => permit,
            Err(rejected) => return Attempt::Refused(RefusedBy::Breaker(rejected)),
        };
        // A full bulkhead drops the permit: the call counts as ignored.
        let _slot = match self.slot(until).await {
            Ok(slot) => slot,
            Err(by) => return Attempt::Refused(by),
        };
        // The wait for the slot is no part of the request's time.
        if self.bulkhead.is_some() {
            permit.restart_clock();
        }
        // Never past the policy's total time either.
        let after = until
            .map_or(self.timeout, |until| self.timeout.min(until.saturating_duration_since(Instant::now())));
        let (result, assessment) = match timeout(&self.timer, after, next.run(req, extensions)).await {
            Ok(result) => {
                let assessment = judge(&result);
                (result, assessment)
            }
            // Cut short by the policy's total time, not the attempt's own
            // bound: says nothing of the dependency, as in the pipeline.
            Err(elapsed) if after < self.timeout => (Err(Error::middleware(elapsed)), Assessment::Ignored),
            Err(elapsed) => (Err(Error::middleware(elapsed)), Assessment::Failure),
        };
        permit.settle(assessment);
        Attempt::Sent(result, assessment)
    }

    /// The request, retried while it fails, its body can be cloned, and
    /// the policy and the budget allow.
    async fn send(&self, req: Request, extensions: &mut Extensions, next: Next<'_>) -> Result<Response> {
        let Some(policy) = self.retry else {
            return match self.attempt(req, extensions, next, None).await {
                Attempt::Refused(by) => Err(refused(by)),
                Attempt::Sent(result, _) => result,
            };
        };
        let policy = policy.classify(Failed::verdict);
        let policy = match &self.budget {
            Some(budget) => policy.budget(budget),
            None => policy,
        };
        let clock = MonotonicClock;
        let mut run = RetryLoop::new(&policy, &clock, None);
        // The policy's total time, which the waits for a slot end by too.
        let until = run.deadline().and_then(instant_at);
        let mut req = req;
        // The answer of the last attempt, returned if the loop ends after
        // a wait.
        let mut last: Option<Result<Response>> = None;
        loop {
            let Ok(n) = run.start(&clock) else {
                // Time up after a wait: the last answer; before any attempt: a refusal.
                return last.unwrap_or_else(|| Err(refused(RefusedBy::Deadline(DeadlinePassed))));
            };
            // The last answer (its body, and with it its connection, let
            // go already), in case the time runs out while this attempt
            // waits for a bulkhead slot.
            let before = last.take();
            // The copy for the next attempt, taken before this one consumes
            // the request: `None` for a streamed body, which is sent once.
            let spare = req.try_clone();
            let (result, assessment) = match self.attempt(req, extensions, next.clone(), until).await {
                // Time up while waiting for a slot: as when it is up before an
                // attempt, the last answer, or a refusal if there is none.
                Attempt::Refused(RefusedBy::Deadline(d)) => {
                    return before.unwrap_or_else(|| Err(refused(RefusedBy::Deadline(d))));
                }
                // A refusal is never retried: it ends the request, whatever
                // came before.
                Attempt::Refused(by) => return Err(refused(by)),
                Attempt::Sent(result, assessment) => (result, assessment),
            };
            drop(before);
            // Worth another attempt, and can one be made?
            let Some(spare) = spare.filter(|_| assessment == Assessment::Failure) else { return result };
            let hint = result.as_ref().ok().and_then(|r| retry_after(r.headers()));
            match run.failed(&policy, &clock, Failed(hint)) {
                Ok(delay) => {
                    if let Some(events) = &self.events {
                        events.retry_scheduled(n, delay, run.capped_hint(), cause(&result));
                    }
                    // Only the head is kept across the pause (returned if
                    // the time runs out meanwhile): the body and its
                    // connection are let go now.
                    last = Some(result.map(head));
                    self.timer.sleep(delay).await;
                    req = spare;
                }
                // Attempts, time or budget used up: this answer is the answer.
                Err(e) => {
                    if let Some(events) = &self.events {
                        events.retry_ended(&e);
                    }
                    return result;
                }
            }
        }
    }
}

#[async_trait::async_trait]
impl<C, Tm> reqwest_middleware::Middleware for GuardMiddleware<C, Tm>
where
    C: Clock + Send + Sync + 'static,
    Tm: Timer + Send + Sync + 'static,
    Tm::Sleep: Send,
{
    async fn handle(&self, req: Request, extensions: &mut Extensions, next: Next<'_>) -> Result<Response> {
        self.send(req, extensions, next).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_keeps_status_headers_and_url_and_drops_the_body() {
        use ::reqwest::ResponseBuilderExt;

        let url: ::reqwest::Url = "http://127.0.0.1:8080/book?depth=5".parse().unwrap();
        let full = http::Response::builder()
            .status(503)
            .header("retry-after", "7")
            .url(url.clone())
            .body(::reqwest::Body::from("maintenance until 02:30"))
            .unwrap();
        let head = head(Response::from(full));
        assert_eq!((head.status().as_u16(), head.url()), (503, &url));
        assert_eq!(head.headers()["retry-after"], "7");
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert!(rt.block_on(head.bytes()).unwrap().is_empty());
    }
}
