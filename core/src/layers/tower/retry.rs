//! Retries with a budget as a tower layer: the core's policy and budget
//! around any cloneable service whose requests can be cloned.

use core::fmt;
use core::future::poll_fn;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::boxed::Box;
use std::sync::Arc;

use tower_layer::Layer;
use tower_service::Service;

use crate::assessment::Assessment;
use crate::layers::classify::{ClassifyResult, HttpClassifier};
use crate::layers::clock::MonotonicClock;
use crate::layers::events::{Events, RetryCause};
use crate::layers::retry::answer;
use crate::layers::timeout::Timer;
use crate::layers::tower::bounds::{RetryRequest, ServiceError};
use crate::layers::tower::call_patterns::call_patterns;
use crate::layers::tower::classify_fn::ClassifyFn;
use crate::policy::future::{self, AsyncCalls};
use crate::policy::{Calls, Judged, Plan};
use crate::refusal::refusal;
use crate::retry::budget::RetryBudget;
use crate::retry::error::RetryError;
use crate::retry::policy::{RetryAll, RetryPolicy, Verdict};

/// Wraps services in a [`RetryService`].
///
/// # Bounds
/// Each attempt sends a clone of the request on a clone of the service,
/// from a boxed `Send` future: the request is a [`RetryRequest`]
/// (`Clone + Send + 'static`; a streamed body must be buffered first), the
/// service `Clone + Send + 'static` with `Send` futures and responses, its
/// error a [`ServiceError`] (`std::error::Error + 'static`) and `Send`. The
/// classifier judges the responses as for the breaker (`http::Response<_>`
/// for the default [`HttpClassifier`]), and the timer is a
/// [`Timer`](crate::timeout::Timer) such as [`TokioTimer`](crate::timeout::TokioTimer).
///
/// Put it outside a [`BreakerLayer`](crate::layers::tower::BreakerLayer): a
/// guard's refusal (any error whose [`source`](core::error::Error::source)
/// chain holds a [`Rejected`](crate::Rejected), a
/// [`BulkheadFull`](crate::BulkheadFull) or a
/// [`DeadlinePassed`](crate::DeadlinePassed): see [`refusal`](crate::refusal))
/// ends the retries at once, and so does anything the classifier calls a
/// success or ignored (a 400 is sent once).
///
/// # What is retried
/// The classifier judges each result once, as it does for the breaker:
/// [`Assessment::Failure`] (a 503, a connection error, a timeout) is
/// retried after the backoff's pause or the response's own pause
/// ([`ClassifyResult::retry_after`]: a 503's `Retry-After` for
/// [`HttpClassifier`]), capped at the policy's
/// [`max_retry_after`](RetryPolicy::max_retry_after) (a minute by
/// default) whatever its header says. [`Assessment::Backpressure`] (a 429,
/// a 418) is never retried: it is the answer at once, so that a breaker
/// around or inside these retries holds for its `Retry-After` before
/// anyone waits, and the caller learns the pause from the response. The
/// same rule holds in every integration ([`Assessment`]'s table).
///
/// # Examples
/// ```
/// # #[cfg(feature = "tokio")] {
/// use core::time::Duration;
/// use std::sync::Arc;
/// use tower_layer::Layer;
/// use tripwire::tower::RetryLayer;
/// use tripwire::retry::{RetryBudget, RetryBudgetConfig, RetryPolicy};
/// use tripwire::timeout::TokioTimer;
///
/// let layer = RetryLayer::new(RetryPolicy::builder().max_attempts(3).build()?, TokioTimer)
///     .budget(Arc::new(RetryBudget::new(RetryBudgetConfig::default())));
/// # let client = ();
/// let retrying = layer.layer(client);
/// # let _ = retrying;
/// # }
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct RetryLayer<K = HttpClassifier, Tm = ()> {
    policy: RetryPolicy<'static, RetryAll>,
    budget: Option<Arc<RetryBudget>>,
    events: Option<Arc<Events>>,
    classifier: K,
    timer: Tm,
}

impl<K, Tm> fmt::Debug for RetryLayer<K, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryLayer")
            .field("max_attempts", &self.policy.max_attempts())
            .finish_non_exhaustive()
    }
}

impl<Tm> RetryLayer<HttpClassifier, Tm> {
    /// Retries what [`HttpClassifier`] calls a failure (5xx, connection
    /// errors), waiting on `timer`: the backoff's pause, or the one the
    /// response names (`Retry-After`, up to the policy's
    /// [`max_retry_after`](RetryPolicy::max_retry_after)). Backpressure
    /// (429, 418) is the answer at once.
    pub fn new(policy: RetryPolicy<'static, RetryAll>, timer: Tm) -> Self {
        Self { policy, budget: None, events: None, classifier: HttpClassifier, timer }
    }
}

impl<K, Tm> RetryLayer<K, Tm> {
    /// The budget that caps retries to a fraction of calls.
    pub fn budget(mut self, budget: Arc<RetryBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Reports every retry, and retries that stop for want of budget or
    /// attempts, to `events` (see [`RetryNotice`](crate::events::RetryNotice)).
    pub fn events(mut self, events: Arc<Events>) -> Self {
        self.events = Some(events);
        self
    }

    /// The same layer judging results with `f`: only results it calls
    /// [`Assessment::Failure`] are retried.
    pub fn classify<F>(self, f: F) -> RetryLayer<ClassifyFn<F>, Tm> {
        self.classifier(ClassifyFn(f))
    }

    /// The same layer with another [`ClassifyResult`].
    pub fn classifier<K2>(self, classifier: K2) -> RetryLayer<K2, Tm> {
        RetryLayer {
            policy: self.policy,
            budget: self.budget,
            events: self.events,
            classifier,
            timer: self.timer,
        }
    }
}

impl<S, K: Clone, Tm: Clone> Layer<S> for RetryLayer<K, Tm> {
    type Service = RetryService<S, K, Tm>;

    fn layer(&self, inner: S) -> Self::Service {
        RetryService { inner, layer: self.clone() }
    }
}

/// A service that retries failed calls with a fresh clone of the request.
/// Its error is the core's [`RetryError`]; a response the classifier calls
/// a failure (a 503) is returned as the response once retries run out.
#[derive(Clone)]
pub struct RetryService<S, K = HttpClassifier, Tm = ()> {
    inner: S,
    layer: RetryLayer<K, Tm>,
}

impl<S, K, Tm> fmt::Debug for RetryService<S, K, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryService").field("layer", &self.layer).finish_non_exhaustive()
    }
}

/// One request's attempts: each sends a clone of the request on a clone of
/// the service, made ready for it.
struct Sends<S, Req, K> {
    svc: S,
    req: Req,
    classifier: K,
    /// The last attempt's service failed to get ready: its error is final.
    not_ready: bool,
}

impl<S, Req, K> Calls for Sends<S, Req, K>
where
    S: Service<Req>,
    S::Error: ServiceError,
    K: ClassifyResult<S::Response, S::Error>,
{
    type Answer = Result<S::Response, S::Error>;

    /// Judged once, as for the breaker: a failure is retried after the
    /// backoff's pause or the one its server named. Backpressure (a 429) is
    /// the answer at once, as everywhere: a breaker around these retries
    /// places its hold now, not after the caller slept through the
    /// `Retry-After`. A guard's refusal, here or further down the chain, is
    /// never retried.
    fn judge(&self, answer: &Self::Answer) -> Judged {
        let assessment = self.classifier.classify(answer);
        match answer {
            Ok(response) => Judged::of(assessment, self.classifier.retry_after(response)),
            Err(e) if self.not_ready || refusal(e).is_some() => {
                Judged { assessment: Assessment::Ignored, verdict: Verdict::Final }
            }
            // An error is never the success a value is.
            Err(_) if assessment == Assessment::Success => Judged::of(Assessment::Ignored, None),
            Err(_) => Judged::of(assessment, None),
        }
    }

    fn cause<'s>(&self, answer: &'s Self::Answer) -> RetryCause<'s> {
        match answer {
            Ok(response) => RetryCause::Response(self.classifier.status(response)),
            Err(error) => RetryCause::Error(error),
        }
    }
}

impl<S, Req, K> AsyncCalls for Sends<S, Req, K>
where
    S: Service<Req> + Clone,
    S::Error: ServiceError,
    Req: Clone,
    K: ClassifyResult<S::Response, S::Error>,
{
    fn call(&mut self, _attempt: u32) -> impl Future<Output = Self::Answer> {
        let (mut svc, req) = (self.svc.clone(), self.req.clone());
        let not_ready = &mut self.not_ready;
        async move {
            *not_ready = false;
            if let Err(error) = poll_fn(|cx| svc.poll_ready(cx)).await {
                *not_ready = true;
                return Err(error);
            }
            svc.call(req).await
        }
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, Req, K, Tm> Service<Req> for RetryService<S, K, Tm>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send,
    S::Error: ServiceError + Send,
    Req: RetryRequest,
    K: ClassifyResult<S::Response, S::Error> + Clone + Send + Sync + 'static,
    Tm: Timer + Clone + Send + Sync + 'static,
    Tm::Sleep: Send,
{
    type Response = S::Response;
    type Error = RetryError<S::Error>;
    type Future = BoxFuture<Result<S::Response, RetryError<S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(|error| RetryError::Final { attempts: 0, error })
    }

    fn call(&mut self, req: Req) -> Self::Future {
        // Every attempt runs on a clone made ready for it (the usual tower
        // retry pattern), so the service's own readiness is left as it was.
        let svc = self.inner.clone();
        let layer = self.layer.clone();
        Box::pin(async move {
            let RetryLayer { policy, budget, events, classifier, timer } = layer;
            let policy = match &budget {
                Some(b) => policy.budget(b),
                None => policy,
            };
            let plan = Plan::<MonotonicClock>::retries(&policy, events.as_deref());
            let mut sends = Sends { svc, req, classifier, not_ready: false };
            answer(future::drive(plan, &timer, None, &mut sends).await)
        })
    }
}

call_patterns!(RetryService<S, K, Tm>);
