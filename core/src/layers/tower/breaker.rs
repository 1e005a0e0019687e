//! The breaker as a tower layer.

use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::Arc;

use tower_layer::Layer;
use tower_service::Service;

use crate::assessment::Assessment;
use crate::breaker::permit::CallError;
use crate::breaker::ticket::Refused;
use crate::clock::Clock;
use crate::layers::classify::{ClassifyResult, HttpClassifier};
use crate::layers::clock::MonotonicClock;
use crate::layers::named::{NamedBreaker, OwnedNamedPermit};
use crate::layers::tower::bounds::ServiceError;
use crate::layers::tower::call_patterns::call_patterns;
use crate::layers::tower::classify_fn::ClassifyFn;
use crate::refusal::refusal;

/// Wraps services in a [`BreakerService`] sharing one breaker.
///
/// # Bounds
/// The wrapped service's error implements [`ServiceError`]
/// (`std::error::Error + 'static`), so that an inner guard's refusal in its
/// `source()` chain is found and counted as ignored. Its response is what
/// the classifier judges: an `http::Response<_>` for the default
/// [`HttpClassifier`]; [`classify`](Self::classify) takes a closure for any
/// other. The request may be anything. See the [module docs](super) for the
/// order of layers.
///
/// # Cost
/// A Closed call reads no clock (unless the breaker keeps a time window
/// or times slow calls); a refused one reads the breaker's clock once, for
/// its `retry_after`, and with [`MonotonicClock`] that read is most of the
/// refusal's cost. A breaker made with
/// [`NamedBreaker::with_clock`] and [`CachedClock::global`](crate::clock::CachedClock::global)
/// refuses with one load, its cool-downs then ending up to a millisecond
/// late: see the [guide's tower chapter](crate::guide::tower) for the
/// trade-off and the figures.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use tower_layer::Layer;
/// use tripwire::tower::BreakerLayer;
/// use tripwire::{BreakerConfig, NamedBreaker};
///
/// let breaker = Arc::new(NamedBreaker::new("bybit/rest", BreakerConfig::default()));
/// let layer = BreakerLayer::new(breaker);
/// // Any `Service<Request, Response = http::Response<_>>`, e.g. a hyper client.
/// # let client = ();
/// let guarded = layer.layer(client);
/// assert_eq!(guarded.breaker().name(), "bybit/rest");
/// ```
pub struct BreakerLayer<K = HttpClassifier, C: Clock = MonotonicClock> {
    breaker: Arc<NamedBreaker<C>>,
    classifier: K,
}

impl<K: Clone, C: Clock> Clone for BreakerLayer<K, C> {
    fn clone(&self) -> Self {
        Self { breaker: self.breaker.clone(), classifier: self.classifier.clone() }
    }
}

impl<K, C: Clock> fmt::Debug for BreakerLayer<K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerLayer").field("breaker", &self.breaker.name()).finish_non_exhaustive()
    }
}

impl<C: Clock> BreakerLayer<HttpClassifier, C> {
    /// A layer judging HTTP responses with [`HttpClassifier`].
    pub fn new(breaker: Arc<NamedBreaker<C>>) -> Self {
        Self { breaker, classifier: HttpClassifier }
    }
}

impl<K, C: Clock> BreakerLayer<K, C> {
    /// The same layer judging results with `f`, for services whose
    /// responses are not `http::Response`s or need other judgement.
    pub fn classify<F>(self, f: F) -> BreakerLayer<ClassifyFn<F>, C> {
        self.classifier(ClassifyFn(f))
    }

    /// The same layer with another [`ClassifyResult`].
    pub fn classifier<K2>(self, classifier: K2) -> BreakerLayer<K2, C> {
        BreakerLayer { breaker: self.breaker, classifier }
    }
}

impl<S, K: Clone, C: Clock> Layer<S> for BreakerLayer<K, C> {
    type Service = BreakerService<S, K, C>;

    fn layer(&self, inner: S) -> Self::Service {
        BreakerService { inner, breaker: self.breaker.clone(), classifier: self.classifier.clone() }
    }
}

/// A service whose calls the breaker admits and counts. Its error is
/// [`CallError`]: the breaker's refusal, or the inner service's error.
pub struct BreakerService<S, K = HttpClassifier, C: Clock = MonotonicClock> {
    inner: S,
    breaker: Arc<NamedBreaker<C>>,
    classifier: K,
}

impl<S: Clone, K: Clone, C: Clock> Clone for BreakerService<S, K, C> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone(), breaker: self.breaker.clone(), classifier: self.classifier.clone() }
    }
}

impl<S, K, C: Clock> fmt::Debug for BreakerService<S, K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerService").field("breaker", &self.breaker.name()).finish_non_exhaustive()
    }
}

impl<S, K, C: Clock> BreakerService<S, K, C> {
    /// The breaker.
    pub fn breaker(&self) -> &Arc<NamedBreaker<C>> {
        &self.breaker
    }
}

impl<S, Req, K, C> Service<Req> for BreakerService<S, K, C>
where
    S: Service<Req>,
    S::Error: ServiceError,
    K: ClassifyResult<S::Response, S::Error> + Clone,
    C: Clock,
{
    type Response = S::Response;
    type Error = CallError<S::Error>;
    type Future = ResponseFuture<S::Future, K, C>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Only the inner service's readiness: admission is in `call`.
        self.inner.poll_ready(cx).map_err(CallError::Inner)
    }

    #[inline(always)]
    fn call(&mut self, req: Req) -> Self::Future {
        admit(&self.breaker, &mut self.inner, req, &self.classifier)
    }
}

/// A call of `inner` if `breaker` admits it, or its refusal, as the future
/// that records the outcome: the call of the breaker's services, keyed or not.
#[inline(always)]
pub(crate) fn admit<S: Service<Req>, Req, K: Clone, C: Clock>(
    breaker: &Arc<NamedBreaker<C>>,
    inner: &mut S,
    req: Req,
    classifier: &K,
) -> ResponseFuture<S::Future, K, C> {
    match breaker.permit_owned_packed() {
        Ok(permit) => ResponseFuture {
            state: State::Running { future: inner.call(req), permit, classifier: classifier.clone() },
        },
        Err(refused) => ResponseFuture { state: State::Rejected { refused: Some(refused) } },
    }
}

pin_project_lite::pin_project! {
    /// The response of a [`BreakerService`]: records the call's assessment
    /// when it completes, or ignored when dropped before.
    pub struct ResponseFuture<F, K, C: Clock> {
        #[pin]
        state: State<F, K, C>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F, K, C: Clock> {
        // Packed in a word until polled: a refused future is moved (into
        // the caller's state machine) before it is polled, and one aligned
        // word moves and reads back without a stall.
        Rejected { refused: Option<Refused> },
        Running {
            #[pin]
            future: F,
            // Settled in place when the call completes, so that the
            // future's drop records nothing more; dropped unsettled (the
            // caller gave up), it records the call as ignored.
            permit: OwnedNamedPermit<C>,
            classifier: K,
        },
    }
}

impl<F, K, C: Clock> fmt::Debug for ResponseFuture<F, K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl<F, Res, Err, K, C> Future for ResponseFuture<F, K, C>
where
    F: Future<Output = Result<Res, Err>>,
    Err: ServiceError,
    K: ClassifyResult<Res, Err>,
    C: Clock,
{
    type Output = Result<Res, CallError<Err>>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Rejected { refused } => {
                let r = refused.take().expect("ResponseFuture polled after completion");
                Poll::Ready(Err(CallError::Rejected(r.expand())))
            }
            StateProj::Running { future, permit, classifier } => {
                let result = core::task::ready!(future.poll(cx));
                permit.settle_in_place(match &result {
                    Ok(_) => classifier.classify(&result),
                    Err(_) => assess_error(classifier, &result),
                });
                Poll::Ready(result.map_err(CallError::Inner))
            }
        }
    }
}

/// The assessment of a call that ended in an error, out of line so that
/// `poll` stays small enough to inline into its caller.
#[cold]
#[inline(never)]
fn assess_error<Res, Err: ServiceError, K: ClassifyResult<Res, Err>>(
    classifier: &K,
    result: &Result<Res, Err>,
) -> Assessment {
    match result {
        // An inner guard refused the call: it never reached the
        // dependency, so it says nothing of it.
        Err(e) if refusal(e).is_some() => Assessment::Ignored,
        _ => classifier.classify(result),
    }
}

call_patterns!(BreakerService<S, K, C> where C: Clock);
