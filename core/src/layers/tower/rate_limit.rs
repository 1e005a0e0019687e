//! The rate limiter as a tower layer: each call takes its costs first,
//! waiting for them on a timer.

use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::boxed::Box;
use std::sync::Arc;

use tower_layer::Layer;
use tower_service::Service;

use crate::layers::clock::MonotonicClock;
use crate::layers::timeout::Timer;
use crate::limiter::{RateLimiter, Throttled};

/// Wraps services in a [`RateLimitService`] sharing one [`RateLimiter`]:
/// every call takes `cost(&request)` (one cost per limit) before it is
/// made, and waits for it on `timer` up to [`max_wait`](Self::max_wait)
/// (one period's units by default). A longer wait is
/// [`RateLimitError::Throttled`], a refusal that a breaker outside counts
/// as ignored and a retry layer never retries.
///
/// # Bounds
/// The wrapped service is `Clone` (a call that waits is made later, by
/// the clone that was made ready). The request, response and error may be
/// anything; [`RateLimitError`] implements `std::error::Error` when the
/// inner error does.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use tower_layer::Layer;
/// use tripwire::limiter::{LimitConfig, RateLimiter};
/// use tripwire::timeout::TokioTimer;
/// use tripwire::tower::RateLimitLayer;
///
/// let limiter = Arc::new(RateLimiter::new([LimitConfig::builder(6_000, Duration::from_secs(60)).build()?]));
/// // Every request weighs 5 here; a real cost reads the request's path.
/// let layer = RateLimitLayer::new(limiter, |_: &http::Request<()>| [5], TokioTimer);
/// # let client = ();
/// let paced = layer.layer(client);
/// # drop(paced);
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
pub struct RateLimitLayer<const N: usize, F, Tm> {
    limiter: Arc<RateLimiter<N>>,
    cost: Arc<F>,
    max_wait: Duration,
    timer: Tm,
}

impl<const N: usize, F, Tm: Clone> Clone for RateLimitLayer<N, F, Tm> {
    fn clone(&self) -> Self {
        Self {
            limiter: self.limiter.clone(),
            cost: self.cost.clone(),
            max_wait: self.max_wait,
            timer: self.timer.clone(),
        }
    }
}

impl<const N: usize, F, Tm> fmt::Debug for RateLimitLayer<N, F, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer").field("max_wait", &self.max_wait).finish_non_exhaustive()
    }
}

impl<const N: usize, F, Tm> RateLimitLayer<N, F, Tm> {
    /// A layer taking `cost(&request)` from `limiter` before each call,
    /// waiting on `timer`.
    pub fn new(limiter: Arc<RateLimiter<N>>, cost: F, timer: Tm) -> Self {
        Self { limiter, cost: Arc::new(cost), max_wait: Duration::MAX, timer }
    }

    /// The longest a call waits for its units (cut to what the limiter
    /// reserves ahead); zero: it never waits.
    #[must_use]
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = wait;
        self
    }
}

impl<S, const N: usize, F, Tm: Clone> Layer<S> for RateLimitLayer<N, F, Tm> {
    type Service = RateLimitService<S, N, F, Tm>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitService {
            inner,
            limiter: self.limiter.clone(),
            cost: self.cost.clone(),
            max_wait: self.max_wait,
            timer: self.timer.clone(),
        }
    }
}

/// A service whose calls take their costs from a [`RateLimiter`] first;
/// see [`RateLimitLayer`].
pub struct RateLimitService<S, const N: usize, F, Tm> {
    inner: S,
    limiter: Arc<RateLimiter<N>>,
    cost: Arc<F>,
    max_wait: Duration,
    timer: Tm,
}

impl<S: Clone, const N: usize, F, Tm: Clone> Clone for RateLimitService<S, N, F, Tm> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            limiter: self.limiter.clone(),
            cost: self.cost.clone(),
            max_wait: self.max_wait,
            timer: self.timer.clone(),
        }
    }
}

impl<S, const N: usize, F, Tm> fmt::Debug for RateLimitService<S, N, F, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitService").field("max_wait", &self.max_wait).finish_non_exhaustive()
    }
}

impl<S, const N: usize, F, Tm> RateLimitService<S, N, F, Tm> {
    /// The rate limiter.
    pub fn limiter(&self) -> &Arc<RateLimiter<N>> {
        &self.limiter
    }
}

/// A [`RateLimitService`]'s error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RateLimitError<E> {
    /// The limiter would not let the call go in time; it was not made.
    Throttled(Throttled),
    /// The inner service's error.
    Inner(E),
}

impl<E: fmt::Display> fmt::Display for RateLimitError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateLimitError::Throttled(t) => t.fmt(f),
            RateLimitError::Inner(e) => e.fmt(f),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for RateLimitError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            RateLimitError::Throttled(t) => Some(t),
            RateLimitError::Inner(e) => Some(e),
        }
    }
}

/// Costs taken for a call not made yet: given back if it never is (its
/// future dropped while it waits), where the limiter can. (The refund is
/// boxed: the future's type does not name the number of limits.)
struct Taken {
    give_back: Option<Box<dyn FnOnce() + Send>>,
}

impl Drop for Taken {
    fn drop(&mut self) {
        if let Some(give_back) = self.give_back.take() {
            give_back();
        }
    }
}

impl<S, Req, const N: usize, F, Tm> Service<Req> for RateLimitService<S, N, F, Tm>
where
    S: Service<Req> + Clone,
    F: Fn(&Req) -> [u32; N],
    Tm: Timer,
{
    type Response = S::Response;
    type Error = RateLimitError<S::Error>;
    type Future = RateLimitFuture<S, Req, Tm::Sleep>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(RateLimitError::Inner)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        let costs = (self.cost)(&req);
        match self.limiter.acquire(costs, self.max_wait, &MonotonicClock) {
            Err(t) => RateLimitFuture { state: State::Refused { throttled: Some(t) } },
            Ok(grant) if grant.ready_in().is_zero() => {
                RateLimitFuture { state: State::Calling { future: self.inner.call(req) } }
            }
            Ok(grant) => {
                // The call is made after the wait, by the service made
                // ready now; a fresh clone takes its place here.
                let fresh = self.inner.clone();
                let ready = core::mem::replace(&mut self.inner, fresh);
                let limiter = self.limiter.clone();
                let give_back = move || {
                    let _ = limiter.refund_costs(costs, &MonotonicClock);
                };
                let taken = Taken { give_back: Some(Box::new(give_back)) };
                RateLimitFuture {
                    state: State::Waiting {
                        sleep: self.timer.sleep(grant.ready_in()),
                        call: Some((ready, req, taken)),
                    },
                }
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// The response of a [`RateLimitService`]: its wait for the limiter's
    /// units, then the call. Dropped while it waits, it gives the units
    /// back where the limiter can.
    pub struct RateLimitFuture<S, Req, Sl>
    where
        S: Service<Req>,
    {
        #[pin]
        state: State<S, Req, Sl>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<S, Req, Sl>
    where
        S: Service<Req>,
    {
        Refused { throttled: Option<Throttled> },
        Waiting {
            #[pin]
            sleep: Sl,
            call: Option<(S, Req, Taken)>,
        },
        Calling {
            #[pin]
            future: S::Future,
        },
    }
}

impl<S: Service<Req>, Req, Sl> fmt::Debug for RateLimitFuture<S, Req, Sl> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitFuture").finish_non_exhaustive()
    }
}

impl<S, Req, Sl> Future for RateLimitFuture<S, Req, Sl>
where
    S: Service<Req>,
    Sl: Future<Output = ()>,
{
    type Output = Result<S::Response, RateLimitError<S::Error>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let next = match self.as_mut().project().state.project() {
                StateProj::Refused { throttled } => {
                    let t = throttled.take().expect("RateLimitFuture polled after completion");
                    return Poll::Ready(Err(RateLimitError::Throttled(t)));
                }
                StateProj::Calling { future } => {
                    return future.poll(cx).map_err(RateLimitError::Inner);
                }
                StateProj::Waiting { sleep, call } => {
                    core::task::ready!(sleep.poll(cx));
                    let (mut inner, req, mut taken) =
                        call.take().expect("RateLimitFuture polled after completion");
                    // Sent: the units stay spent.
                    taken.give_back = None;
                    State::Calling { future: inner.call(req) }
                }
            };
            self.as_mut().project().state.set(next);
        }
    }
}
