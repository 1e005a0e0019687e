//! The middleware: per request, the retry loop around attempts that the
//! breaker admits and the bulkhead lets through, each judged once by
//! [`assess`].

use core::fmt;
use core::time::Duration;
use std::boxed::Box;
use std::string::String;
use std::sync::Arc;

use ::reqwest::{Request, Response};
use http::Extensions;
use reqwest_middleware::{Error, Next, Result};

use crate::assessment::Assessment;
use crate::bulkhead::Bulkhead;
use crate::clock::Clock;
use crate::layers::clock::MonotonicClock;
use crate::layers::events::{Events, RetryCause};
use crate::layers::http::UsageKind;
use crate::layers::http::{assess, retry_after};
use crate::layers::keyed::Breakers;
use crate::layers::named::NamedBreaker;
use crate::layers::pipeline::Nesting;
use crate::layers::reqwest::rate::{Limits, RateLimit, SyncRule, SyncRules};
use crate::layers::reqwest::refused::Refused;
use crate::layers::timeout::{Elapsed, Timer, TokioTimer};
use crate::limiter::RateLimiter;
use crate::policy::future::{self, AsyncCalls};
use crate::policy::{Calls, Ended, Judged, Plan, Rationed, Tried};
use crate::refusal::{DeadlinePassed, RefusedBy, refusal};
use crate::retry::budget::RetryBudget;
use crate::retry::policy::{RetryAll, RetryPolicy, Verdict};

/// A `reqwest_middleware::Middleware` that guards every request with a
/// [`NamedBreaker`], an optional [`Bulkhead`], retries with backoff and a
/// [`RetryBudget`], and the holds a server asks for with `Retry-After`.
///
/// See the [module docs](super) for what it does with each answer, and an
/// example.
pub struct GuardMiddleware<C: Clock = MonotonicClock, Tm = TokioTimer> {
    breaker: Guard<C>,
    bulkhead: Option<Arc<Bulkhead>>,
    /// How long an attempt waits for a bulkhead slot; zero: not at all.
    bulkhead_wait: Duration,
    retry: Option<RetryPolicy<'static, RetryAll>>,
    budget: Option<Arc<RetryBudget>>,
    events: Option<Arc<Events>>,
    /// How long one attempt may take down the chain.
    timeout: Duration,
    /// The rate limiter, how long an attempt may wait for it, and the
    /// server's counts it reads.
    rate: Option<Arc<dyn RateLimit>>,
    rate_wait: Duration,
    rate_sync: SyncRules,
    timer: Tm,
}

/// The breaker a request goes through: one for all, or its host's.
enum Guard<C: Clock> {
    One(Arc<NamedBreaker<C>>),
    /// The map, and its lookup (made where its bounds hold).
    PerHost(Arc<Breakers<String, C>>, fn(&Breakers<String, C>, &str) -> Arc<NamedBreaker<C>>),
}

impl<C: Clock> Guard<C> {
    fn name(&self) -> &str {
        match self {
            Guard::One(b) => b.name(),
            Guard::PerHost(m, _) => m.name(),
        }
    }
}

/// The key of a request's host in a per-host map: the host and, where the
/// URL names one, the port (`api.binance.com`, `127.0.0.1:8080`).
/// No user name or password: they would end in the breaker's name and
/// the metrics labels. No allocation: a slice of the URL as it is written.
fn host_key(url: &::reqwest::Url) -> &str {
    let Some(host) = url.host_str() else { return "" };
    let all = url.as_str();
    // The host is a slice of the URL's text; the port follows it.
    let start = (host.as_ptr() as usize).wrapping_sub(all.as_ptr() as usize);
    let after = start.saturating_add(host.len());
    let port = match (url.port(), all.get(after..)) {
        (Some(_), Some(rest)) => rest.find(['/', '?', '#']).unwrap_or(rest.len()),
        _ => 0,
    };
    all.get(start..after + port).unwrap_or(host)
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
        Self::guarding(Guard::One(breaker))
    }

    /// Guards every request with the breaker of its host (and port) in
    /// `per_host`, made from the map's template the first time a host is
    /// seen; otherwise as [`new`](Self::new). A host that is down trips its
    /// own breaker and no other's.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use tripwire::keyed::Breakers;
    /// use tripwire::reqwest::GuardMiddleware;
    /// use tripwire::BreakerConfig;
    ///
    /// let per_host = Arc::new(Breakers::new("exchanges", BreakerConfig::default()));
    /// let client = GuardMiddleware::per_host(per_host.clone()).client(reqwest::Client::new());
    /// assert!(per_host.is_empty(), "a breaker is made by a host's first request");
    /// ```
    pub fn per_host(per_host: Arc<Breakers<String, C>>) -> Self
    where
        C: Clone + Send + Sync + 'static,
    {
        Self::guarding(Guard::PerHost(per_host, |map, host| map.get(host)))
    }

    fn guarding(breaker: Guard<C>) -> Self {
        Self {
            breaker,
            bulkhead: None,
            bulkhead_wait: Duration::ZERO,
            retry: None,
            budget: None,
            events: None,
            timeout: DEFAULT_TIMEOUT,
            rate: None,
            rate_wait: Duration::MAX,
            rate_sync: SyncRules::new(),
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
    /// [`Elapsed`](crate::timeout::Elapsed)). One cut short by the policy's total
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

    /// Takes each attempt's costs from `limiter` (`cost` of the request:
    /// one per limit, 0 where it does not count) after the breaker's
    /// admission and before the bulkhead, waiting for them up to
    /// [`rate_limit_wait`](Self::rate_limit_wait) (one period's units by
    /// default); a longer wait is a refusal
    /// ([`RefusedBy::RateLimited`](crate::RefusedBy)), never a breaker
    /// failure. A 429 or 418 despite it counts the limiter's first limit
    /// as spent for a period (the breaker holds, as for any 429); see
    /// [`rate_limit_sync`](Self::rate_limit_sync) for the server's counts.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use tripwire::http::UsageKind;
    /// use tripwire::limiter::{LimitConfig, RateLimiter};
    /// use tripwire::reqwest::GuardMiddleware;
    /// use tripwire::{BreakerConfig, NamedBreaker};
    ///
    /// // Binance: 6,000 weight a minute; an order book of 100 levels weighs 5.
    /// let limiter = Arc::new(RateLimiter::new([LimitConfig::builder(6_000, Duration::from_secs(60)).build()?]));
    /// let breaker = Arc::new(NamedBreaker::new("binance", BreakerConfig::default()));
    /// let guard = GuardMiddleware::new(breaker)
    ///     .rate_limit(limiter, |req: &reqwest::Request| if req.url().path() == "/api/v3/depth" { [5] } else { [1] })
    ///     .rate_limit_sync(UsageKind::Weight, Some(Duration::from_secs(60)), 0);
    /// let client = guard.client(reqwest::Client::new());
    /// # drop(client);
    /// # Ok::<(), tripwire::ConfigError>(())
    /// ```
    #[must_use]
    pub fn rate_limit<const N: usize>(
        mut self,
        limiter: Arc<RateLimiter<N>>,
        cost: impl Fn(&Request) -> [u32; N] + Send + Sync + 'static,
    ) -> Self {
        self.rate = Some(Arc::new(Limits { limiter, cost }));
        self
    }

    /// The longest an attempt waits for the rate limiter's units (cut to
    /// the policy's total time left); zero: it never waits.
    #[must_use]
    pub fn rate_limit_wait(mut self, wait: Duration) -> Self {
        self.rate_wait = wait;
        self
    }

    /// After every answer, the first count of `kind` over `window` (any
    /// window when `None`) that its headers report
    /// ([`http::usage`](crate::http::usage)) raises limit `limit` of the
    /// rate limiter ([`RateLimiter::observe_used_in`](crate::limiter::RateLimiter::observe_used_in),
    /// with the time left in Binance's fixed windows). Call it once per
    /// count to read.
    #[must_use]
    pub fn rate_limit_sync(mut self, kind: UsageKind, window: Option<Duration>, limit: usize) -> Self {
        self.rate_sync.push(SyncRule { kind, window, limit });
        self
    }

    /// Waits (the retries' backoff, a bulkhead slot) on `timer` instead.
    pub fn timer<Tm2: Timer>(self, timer: Tm2) -> GuardMiddleware<C, Tm2> {
        let Self {
            breaker,
            bulkhead,
            bulkhead_wait,
            retry,
            budget,
            events,
            timeout,
            rate,
            rate_wait,
            rate_sync,
            ..
        } = self;
        GuardMiddleware {
            breaker,
            bulkhead,
            bulkhead_wait,
            retry,
            budget,
            events,
            timeout,
            rate,
            rate_wait,
            rate_sync,
            timer,
        }
    }

    /// The breaker every request goes through; `None` for a middleware
    /// made with [`per_host`](Self::per_host).
    pub fn breaker(&self) -> Option<&Arc<NamedBreaker<C>>> {
        match &self.breaker {
            Guard::One(b) => Some(b),
            Guard::PerHost(..) => None,
        }
    }

    /// The map of per-host breakers, for a middleware made with
    /// [`per_host`](Self::per_host).
    pub fn breakers(&self) -> Option<&Arc<Breakers<String, C>>> {
        match &self.breaker {
            Guard::One(_) => None,
            Guard::PerHost(m, _) => Some(m),
        }
    }
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

fn refused(by: RefusedBy) -> Error {
    Error::middleware(Refused::new(by))
}

fn elapsed(after: Duration) -> Error {
    Error::middleware(Elapsed { after })
}

/// One request's attempts down the chain: the request for the next attempt
/// (a clone of the one before; `None` once a streamed body has been sent,
/// which is sent once), the chain, and the extensions every attempt sees.
struct Sends<'r, 'n> {
    req: Option<Request>,
    extensions: &'r mut Extensions,
    next: Next<'n>,
    /// The rate limiter that learns from each answer, and its rules.
    rate: Option<(&'r dyn RateLimit, &'r [SyncRule])>,
}

impl Calls for Sends<'_, '_> {
    type Answer = Result<Response>;

    /// A failure is retried after the backoff's pause or its 503's own
    /// `Retry-After`, if the request can be sent again.
    fn judge(&self, answer: &Result<Response>) -> Judged {
        if let (Some((rate, rules)), Ok(response)) = (self.rate, answer) {
            rate.observe(response, rules);
        }
        let hint = answer.as_ref().ok().and_then(|r| retry_after(r.headers()));
        let judged = Judged::of(judge(answer), hint);
        match self.req {
            Some(_) => judged,
            None => Judged { verdict: Verdict::Final, ..judged },
        }
    }

    fn cause<'s>(&self, answer: &'s Result<Response>) -> RetryCause<'s> {
        match answer {
            Ok(response) => RetryCause::Response(Some(response.status().as_u16())),
            Err(e) => RetryCause::Error(e),
        }
    }

    /// Only the head is kept across the pause (returned if the time runs
    /// out meanwhile): the body and its connection are let go now.
    fn keep(&mut self, answer: Result<Response>) -> Result<Response> {
        answer.map(head)
    }
}

impl AsyncCalls for Sends<'_, '_> {
    fn call(&mut self, _attempt: u32) -> impl Future<Output = Result<Response>> {
        let req = self.req.take();
        // The copy for the next attempt, taken before this one consumes
        // the request.
        self.req = req.as_ref().and_then(Request::try_clone);
        let (next, extensions) = (self.next.clone(), &mut *self.extensions);
        async move {
            match req {
                Some(req) => next.run(req, extensions).await,
                // Judged final when the request could not be cloned, so
                // never asked for again.
                None => Err(Error::middleware(StreamedBody)),
            }
        }
    }
}

/// A request with a streamed body, asked for a second time.
#[derive(Debug)]
struct StreamedBody;

impl fmt::Display for StreamedBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request with a streamed body is sent once")
    }
}

impl core::error::Error for StreamedBody {}

/// The caller's answer of a run: the last answer, or the refusal or
/// timeout that took its place.
fn answer(run: core::result::Result<Result<Response>, Ended<Result<Response>>>) -> Result<Response> {
    let tried = |tried: Tried<Result<Response>>| match tried {
        Tried::Answer(result) => result,
        Tried::TimedOut(after) => Err(elapsed(after)),
    };
    match run {
        Ok(result) => result,
        // Time up while waiting for a slot: the last answer, or a refusal
        // if there is none. Any other refusal ends the request, whatever
        // came before.
        Err(Ended::Refused { by: RefusedBy::Deadline(_), last: Some(last), .. }) => tried(last),
        Err(Ended::Refused { by, .. }) => Err(refused(by)),
        // Cut short by the policy's total time: the same error as the
        // attempt's own timeout, but the breaker ignored it.
        Err(Ended::CutShort { after, .. }) => Err(elapsed(after)),
        Err(Ended::Stopped(e)) => match e.into_last_error() {
            Some(last) => tried(last),
            // Time up before any attempt.
            None => Err(refused(RefusedBy::Deadline(DeadlinePassed))),
        },
    }
}

impl<C, Tm> GuardMiddleware<C, Tm>
where
    C: Clock,
    Tm: Timer,
{
    /// The request, retried while it fails, its body can be cloned, and
    /// the policy and the budget allow.
    async fn send(&self, req: Request, extensions: &mut Extensions, next: Next<'_>) -> Result<Response> {
        let ration = self.rate.as_ref().map(|r| r.ration(&req));
        let breaker = match &self.breaker {
            Guard::One(b) => b.clone(),
            Guard::PerHost(m, get) => get(m, host_key(req.url())),
        };
        let plan = Plan {
            breaker: Some(&*breaker),
            bulkhead: self.bulkhead.as_deref(),
            bulkhead_wait: self.bulkhead_wait,
            rate: ration.as_deref().map(|r| r as &dyn Rationed),
            rate_wait: self.rate_wait,
            retry: self.retry.as_ref(),
            budget: self.budget.as_deref(),
            timeout: Some(self.timeout),
            nesting: Nesting::RetryOutsideBreaker,
            events: self.events.as_deref(),
        };
        let rate = self.rate.as_deref().map(|r| (r, self.rate_sync.as_slice()));
        let mut sends = Sends { req: Some(req), extensions, next, rate };
        answer(future::drive(plan, &self.timer, None, &mut sends).await)
    }
}

impl<C: Clock, Tm> GuardMiddleware<C, Tm>
where
    Self: reqwest_middleware::Middleware,
{
    /// A client whose every request this middleware guards: what
    /// `ClientBuilder::new(client).with(self).build()` makes. Taking the
    /// `reqwest::Client` here, it names a version mismatch plainly: a
    /// client of another reqwest than the 0.13 this middleware is built
    /// for gets rustc's note that "there are multiple different versions
    /// of crate `reqwest` in the dependency graph", where
    /// `.with(self)` on a reqwest-middleware 0.4 builder can only say that
    /// a `Fn` is not implemented (see the [module docs](super#versions)).
    pub fn client(self, client: reqwest::Client) -> reqwest_middleware::ClientWithMiddleware {
        reqwest_middleware::ClientBuilder::new(client).with(self).build()
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
    fn a_host_key_is_host_and_port_as_written_without_credentials() {
        let key = |u: &str| std::string::ToString::to_string(host_key(&u.parse().unwrap()));
        assert_eq!(key("https://api.binance.com/api/v3/depth?symbol=BTCUSDT"), "api.binance.com");
        assert_eq!(key("http://127.0.0.1:8080/book"), "127.0.0.1:8080");
        assert_eq!(key("http://user:secret@127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(key("http://[::1]:9000/x"), "[::1]:9000");
        assert_eq!(key("https://Example.COM:443/"), "example.com", "the default port is not written");
        assert_eq!(key("http://h:1#frag"), "h:1");
        assert_eq!(key("data:text/plain,hi"), "", "no host");
    }

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
