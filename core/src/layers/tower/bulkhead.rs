//! The bulkhead as a tower layer: at most `max` calls in flight through
//! the services it wraps.

use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::Arc;

use tower_layer::Layer;
use tower_service::Service;

use crate::bulkhead::{Bulkhead, BulkheadFull};
use crate::layers::events::{Events, refused};
use crate::layers::tower::call_patterns::call_patterns;

/// Wraps services in a [`BulkheadService`] sharing one bulkhead.
///
/// # Bounds
/// None: any service, any request, response and error. Its
/// [`BulkheadError`] implements `std::error::Error` when the inner error
/// does, so a breaker or retry layer outside it can read it (see the
/// [module docs](super) for the order of layers).
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use tower_layer::Layer;
/// use tripwire::Bulkhead;
/// use tripwire::tower::BulkheadLayer;
///
/// let layer = BulkheadLayer::new(Arc::new(Bulkhead::new(32)));
/// # let client = ();
/// let capped = layer.layer(client);
/// assert_eq!(capped.bulkhead().max(), 32);
/// ```
#[derive(Debug, Clone)]
pub struct BulkheadLayer {
    bulkhead: Arc<Bulkhead>,
    events: Option<Arc<Events>>,
}

impl BulkheadLayer {
    /// A layer around `bulkhead`.
    pub fn new(bulkhead: Arc<Bulkhead>) -> Self {
        Self { bulkhead, events: None }
    }

    /// Reports every refusal to `events` as a [`BulkheadEvent::Refused`](crate::events::BulkheadEvent::Refused).
    #[must_use]
    pub fn events(mut self, events: Arc<Events>) -> Self {
        self.events = Some(events);
        self
    }
}

impl<S> Layer<S> for BulkheadLayer {
    type Service = BulkheadService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BulkheadService { inner, bulkhead: self.bulkhead.clone(), events: self.events.clone() }
    }
}

/// A service that refuses calls beyond its bulkhead's cap with
/// [`BulkheadError::Full`] instead of queueing them.
///
/// The slot is taken in `call`, not in `poll_ready` (a ready service that
/// is never called holds none), and freed when the response future
/// completes or is dropped.
#[derive(Debug, Clone)]
pub struct BulkheadService<S> {
    inner: S,
    bulkhead: Arc<Bulkhead>,
    events: Option<Arc<Events>>,
}

impl<S> BulkheadService<S> {
    /// The bulkhead.
    pub fn bulkhead(&self) -> &Arc<Bulkhead> {
        &self.bulkhead
    }
}

/// A [`BulkheadService`]'s error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BulkheadError<E> {
    /// The bulkhead was full; the call was not made.
    Full(BulkheadFull),
    /// The inner service's error.
    Inner(E),
}

impl<E: fmt::Display> fmt::Display for BulkheadError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BulkheadError::Full(b) => b.fmt(f),
            BulkheadError::Inner(e) => e.fmt(f),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for BulkheadError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            BulkheadError::Full(b) => Some(b),
            BulkheadError::Inner(e) => Some(e),
        }
    }
}

/// A bulkhead slot owned by a response future; freed on drop.
#[derive(Debug)]
struct Slot(Arc<Bulkhead>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.release_raw();
    }
}

impl<S, Req> Service<Req> for BulkheadService<S>
where
    S: Service<Req>,
{
    type Response = S::Response;
    type Error = BulkheadError<S::Error>;
    type Future = BulkheadFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(BulkheadError::Inner)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        if !self.bulkhead.try_acquire_raw() {
            let full = BulkheadFull { max: self.bulkhead.max() };
            refused(&self.bulkhead, full, self.events.as_deref());
            return BulkheadFuture { future: None, slot: None, full: Some(full) };
        }
        let slot = Slot(self.bulkhead.clone());
        BulkheadFuture { future: Some(self.inner.call(req)), slot: Some(slot), full: None }
    }
}

pin_project_lite::pin_project! {
    /// The response of a [`BulkheadService`]; holds the slot until it
    /// completes or is dropped.
    #[derive(Debug)]
    pub struct BulkheadFuture<F> {
        #[pin]
        future: Option<F>,
        slot: Option<Slot>,
        full: Option<BulkheadFull>,
    }
}

impl<F, Res, Err> Future for BulkheadFuture<F>
where
    F: Future<Output = Result<Res, Err>>,
{
    type Output = Result<Res, BulkheadError<Err>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Some(future) = this.future.as_pin_mut() else {
            let full = this.full.take().expect("BulkheadFuture polled after completion");
            return Poll::Ready(Err(BulkheadError::Full(full)));
        };
        let result = core::task::ready!(future.poll(cx));
        // The call is over: free the slot now, not when the future is dropped.
        this.slot.take();
        Poll::Ready(result.map_err(BulkheadError::Inner))
    }
}

call_patterns!(BulkheadService<S>);
