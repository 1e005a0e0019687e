//! Retries with a budget as a tower layer: the core's policy and budget
//! around any cloneable service whose requests can be cloned.

use core::fmt;
use core::future::poll_fn;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::boxed::Box;
use std::sync::Arc;

use tower_layer::Layer;
use tower_service::Service;

use crate::layers::assessment::Assessment;
use crate::layers::events::{Events, RetryCause};
use crate::layers::retry::blocking::RetryEvent;
use crate::layers::retry::future::retry_async_notify;
use crate::layers::timeout::Timer;
use crate::layers::tower::classify::{
    ClassifyFn, ClassifyResult, HttpClassifier, RetryRequest, ServiceError,
};
use crate::refusal::refusal;
use crate::retry::budget::RetryBudget;
use crate::retry::error::RetryError;
use crate::retry::policy::{Refusal, RetryAll, RetryPolicy, Verdict};

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
/// [`Timer`](crate::Timer) such as [`TokioTimer`](crate::TokioTimer).
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
/// use tripwire::{RetryBudget, RetryBudgetConfig, RetryPolicy, TokioTimer};
///
/// let layer = RetryLayer::new(RetryPolicy::builder().max_attempts(3).build()?, TokioTimer)
///     .budget(Arc::new(RetryBudget::new(RetryBudgetConfig::default())));
/// # let client = ();
/// let retrying = layer.layer(client);
/// # let _ = retrying;
/// # }
/// # Ok::<(), tripwire::RetryConfigError>(())
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
    /// attempts, to `events` (see [`RetryNotice`](crate::RetryNotice)).
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

/// One failed attempt: a response judged a failure (with its HTTP status,
/// when the classifier reads one, and the pause its server asked for, if
/// it named one), or an error.
enum Attempt<Res, Err> {
    Response { response: Res, status: Option<u16>, after: Option<Duration> },
    Error { error: Err, retryable: bool },
}

impl<Res, Err> Attempt<Res, Err> {
    /// Whether to try again, and after what pause if the server said.
    fn verdict(&self) -> Verdict {
        match *self {
            Attempt::Response { after: Some(d), .. } => Verdict::RetryAfter(d),
            Attempt::Response { .. } | Attempt::Error { retryable: true, .. } => Verdict::Retry,
            Attempt::Error { retryable: false, .. } => Verdict::Final,
        }
    }
}

impl<Res, Err: core::error::Error> Attempt<Res, Err> {
    /// What the attempt failed with, for a retry's event.
    fn cause(&self) -> RetryCause<'_> {
        match self {
            Attempt::Response { status, .. } => RetryCause::Response(*status),
            Attempt::Error { error, .. } => RetryCause::Error(error),
        }
    }
}

impl<Res, Err: core::error::Error + 'static> Refusal for Attempt<Res, Err> {
    fn is_refusal(&self) -> bool {
        // A guard's refusal, here or further down the chain?
        matches!(self, Attempt::Error { error, .. } if refusal(error).is_some())
    }
}

/// The service's answer once the retries stopped: the last response if
/// that was what failed, else the error.
fn settle<Res, Err>(e: RetryError<Attempt<Res, Err>>) -> Result<Res, RetryError<Err>> {
    let (attempts, last) = (e.attempts(), e);
    let rebuild = |last: Attempt<Res, Err>, make: fn(u32, Err) -> RetryError<Err>| match last {
        Attempt::Response { response, .. } => Ok(response),
        Attempt::Error { error, .. } => Err(make(attempts, error)),
    };
    match last {
        RetryError::Exhausted { last, .. } => {
            rebuild(last, |attempts, last| RetryError::Exhausted { attempts, last })
        }
        RetryError::Final { error, .. } => {
            rebuild(error, |attempts, error| RetryError::Final { attempts, error })
        }
        RetryError::BudgetExhausted { last, .. } => {
            rebuild(last, |attempts, last| RetryError::BudgetExhausted { attempts, last })
        }
        RetryError::Deadline { last: Some(last), .. } => {
            rebuild(last, |attempts, last| RetryError::Deadline { attempts, last: Some(last) })
        }
        RetryError::Cancelled { last: Some(last), .. } => {
            rebuild(last, |attempts, last| RetryError::Cancelled { attempts, last: Some(last) })
        }
        RetryError::Deadline { last: None, .. } => Err(RetryError::Deadline { attempts, last: None }),
        RetryError::Cancelled { last: None, .. } => Err(RetryError::Cancelled { attempts, last: None }),
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
            let policy = policy.classify(Attempt::<S::Response, S::Error>::verdict);
            let policy = match &budget {
                Some(b) => policy.budget(b),
                None => policy,
            };
            // Each attempt owns its clones, so the future it makes is `'static`.
            let attempt = move |_: u32| {
                let (mut svc, req, classifier) = (svc.clone(), req.clone(), classifier.clone());
                async move {
                    poll_fn(|cx| svc.poll_ready(cx))
                        .await
                        .map_err(|error| Attempt::Error { error, retryable: false })?;
                    let result = svc.call(req).await;
                    // Judged once: a failure is retried after the backoff's
                    // pause or the one its server named. Backpressure (a
                    // 429) is the answer at once, as everywhere: a breaker
                    // around these retries places its hold now, not after
                    // the caller slept through the `Retry-After`.
                    let retryable = classifier.classify(&result) == Assessment::Failure;
                    match result {
                        Ok(response) if retryable => {
                            let status = classifier.status(&response);
                            let after = classifier.retry_after(&response);
                            Err(Attempt::Response { response, status, after })
                        }
                        Ok(response) => Ok(response),
                        Err(error) => Err(Attempt::Error { error, retryable }),
                    }
                }
            };
            let on_retry = |e: RetryEvent<'_, Attempt<S::Response, S::Error>>| {
                if let Some(events) = &events {
                    events.retry_scheduled(e.attempt, e.delay, e.capped_from, e.error.cause());
                }
            };
            let result = retry_async_notify(&policy, &timer, None, on_retry, attempt).await;
            if let (Err(e), Some(events)) = (&result, &events) {
                events.retry_ended(e);
            }
            result.or_else(settle)
        })
    }
}
