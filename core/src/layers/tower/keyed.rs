//! The breaker as a tower layer with a breaker per key: a host, a route,
//! a symbol, whatever a function of the request says.

use core::fmt;
use core::hash::{BuildHasher, Hash};
use core::task::{Context, Poll};
use std::sync::Arc;

use tower_layer::Layer;
use tower_service::Service;

use crate::breaker::permit::CallError;
use crate::clock::Clock;
use crate::layers::classify::{ClassifyResult, HttpClassifier};
use crate::layers::clock::MonotonicClock;
use crate::layers::keyed::{Breakers, DefaultHasher};
use crate::layers::tower::bounds::ServiceError;
use crate::layers::tower::breaker::{ResponseFuture, admit};
use crate::layers::tower::call_patterns::call_patterns;
use crate::layers::tower::classify_fn::ClassifyFn;

/// Wraps services in a [`KeyedBreakerService`]: each request goes through
/// the breaker of its key in one [`Breakers`] map, the key being what
/// `key_of` makes of the request ([`host`] for a breaker per host). Bounds
/// and judgement as for [`BreakerLayer`](super::BreakerLayer).
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use tower_layer::Layer;
/// use tripwire::keyed::Breakers;
/// use tripwire::tower::{Host, KeyedBreakerLayer, host};
/// use tripwire::BreakerConfig;
///
/// let per_host: Arc<Breakers<Host>> = Arc::new(Breakers::new("rest", BreakerConfig::default()));
/// // `host` of requests with this body type.
/// let layer = KeyedBreakerLayer::new(per_host.clone(), host::<http_body_util::Empty<bytes::Bytes>>);
/// // Any `Service<http::Request<Empty<Bytes>>, Response = http::Response<_>>`, e.g. a hyper client.
/// # let client = ();
/// let guarded = layer.layer(client);
/// assert!(Arc::ptr_eq(guarded.breakers(), &per_host));
/// ```
pub struct KeyedBreakerLayer<F, Key, K = HttpClassifier, C: Clock = MonotonicClock, H = DefaultHasher> {
    breakers: Arc<Breakers<Key, C, H>>,
    key_of: F,
    classifier: K,
}

impl<F: Clone, Key, K: Clone, C: Clock, H> Clone for KeyedBreakerLayer<F, Key, K, C, H> {
    fn clone(&self) -> Self {
        Self {
            breakers: self.breakers.clone(),
            key_of: self.key_of.clone(),
            classifier: self.classifier.clone(),
        }
    }
}

impl<F, Key, K, C: Clock, H> fmt::Debug for KeyedBreakerLayer<F, Key, K, C, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedBreakerLayer").field("breakers", &self.breakers).finish_non_exhaustive()
    }
}

impl<F, Key, C: Clock, H> KeyedBreakerLayer<F, Key, HttpClassifier, C, H> {
    /// A layer taking each request's key from `key_of` and judging HTTP
    /// responses with [`HttpClassifier`].
    pub fn new(breakers: Arc<Breakers<Key, C, H>>, key_of: F) -> Self {
        Self { breakers, key_of, classifier: HttpClassifier }
    }
}

impl<F, Key, K, C: Clock, H> KeyedBreakerLayer<F, Key, K, C, H> {
    /// The same layer judging results with `f`.
    pub fn classify<G>(self, f: G) -> KeyedBreakerLayer<F, Key, ClassifyFn<G>, C, H> {
        self.classifier(ClassifyFn(f))
    }

    /// The same layer with another [`ClassifyResult`].
    pub fn classifier<K2>(self, classifier: K2) -> KeyedBreakerLayer<F, Key, K2, C, H> {
        KeyedBreakerLayer { breakers: self.breakers, key_of: self.key_of, classifier }
    }
}

impl<S, F: Clone, Key, K: Clone, C: Clock, H> Layer<S> for KeyedBreakerLayer<F, Key, K, C, H> {
    type Service = KeyedBreakerService<S, F, Key, K, C, H>;

    fn layer(&self, inner: S) -> Self::Service {
        KeyedBreakerService {
            inner,
            breakers: self.breakers.clone(),
            key_of: self.key_of.clone(),
            classifier: self.classifier.clone(),
        }
    }
}

/// A service whose calls go through their key's breaker. Its error and
/// future are [`BreakerService`](super::BreakerService)'s.
pub struct KeyedBreakerService<S, F, Key, K = HttpClassifier, C: Clock = MonotonicClock, H = DefaultHasher> {
    inner: S,
    breakers: Arc<Breakers<Key, C, H>>,
    key_of: F,
    classifier: K,
}

impl<S: Clone, F: Clone, Key, K: Clone, C: Clock, H> Clone for KeyedBreakerService<S, F, Key, K, C, H> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            breakers: self.breakers.clone(),
            key_of: self.key_of.clone(),
            classifier: self.classifier.clone(),
        }
    }
}

impl<S, F, Key, K, C: Clock, H> fmt::Debug for KeyedBreakerService<S, F, Key, K, C, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedBreakerService").field("breakers", &self.breakers).finish_non_exhaustive()
    }
}

impl<S, F, Key, K, C: Clock, H> KeyedBreakerService<S, F, Key, K, C, H> {
    /// The map of breakers.
    pub fn breakers(&self) -> &Arc<Breakers<Key, C, H>> {
        &self.breakers
    }
}

impl<S, Req, F, Key, K, C, H> Service<Req> for KeyedBreakerService<S, F, Key, K, C, H>
where
    S: Service<Req>,
    S::Error: ServiceError,
    F: Fn(&Req) -> Key,
    Key: Hash + Eq + fmt::Display + Clone + Send + Sync + 'static,
    K: ClassifyResult<S::Response, S::Error> + Clone,
    C: Clock + Clone + Send + Sync + 'static,
    H: BuildHasher,
{
    type Response = S::Response;
    type Error = CallError<S::Error>;
    type Future = ResponseFuture<S::Future, K, C>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Only the inner service's readiness: admission is in `call`.
        self.inner.poll_ready(cx).map_err(CallError::Inner)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        let key = (self.key_of)(&req);
        let (inner, classifier) = (&mut self.inner, &self.classifier);
        self.breakers.with(&key, |breaker| admit(breaker, inner, req, classifier))
    }
}

call_patterns!(KeyedBreakerService<S, F, Key, K, C, H> where C: Clock);

/// A request's host and port, as [`host`] takes it: the key of a breaker
/// per host. Cloning it copies no bytes (the URI's are shared).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Host(Option<http::uri::Authority>);

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(a) => f.write_str(a.as_str()),
            // A relative URI: one breaker for every request without a host.
            None => f.write_str("(no host)"),
        }
    }
}

/// The key of a breaker per host: the request URI's authority (host and
/// port as written), or one shared key for requests whose URI has none.
pub fn host<B>(req: &http::Request<B>) -> Host {
    Host(req.uri().authority().cloned())
}
