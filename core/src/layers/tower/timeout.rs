//! Per-attempt timeouts as a tower layer, on any runtime's
//! [`Timer`]: a call that runs out of time ends with
//! [`TimeoutError::Elapsed`], an `std::error::Error`, so a breaker outside
//! counts it as a failure and a retry layer outside retries it.

use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use tower_layer::Layer;
use tower_service::Service;

use crate::layers::timeout::{Elapsed, Timeout, Timer, timeout};
use crate::layers::tower::call_patterns::call_patterns;

/// Wraps services in a [`TimeoutService`]: each call gets at most `after`.
///
/// # Bounds
/// None on the wrapped service; the timer is a [`Timer`] such as
/// [`TokioTimer`](crate::timeout::TokioTimer). Unlike `tower::timeout`, whose error
/// is a `BoxError`, its [`TimeoutError`] implements `std::error::Error`
/// when the inner error does, as the breaker and retry layers ask.
///
/// # Examples
/// ```
/// # #[cfg(feature = "tokio")] {
/// use core::time::Duration;
/// use tower_layer::Layer;
/// use tripwire::timeout::TokioTimer;
/// use tripwire::tower::TimeoutLayer;
///
/// let layer = TimeoutLayer::new(Duration::from_millis(800), TokioTimer);
/// # let client = ();
/// let bounded = layer.layer(client);
/// assert_eq!(bounded.after(), Duration::from_millis(800));
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TimeoutLayer<Tm> {
    after: Duration,
    timer: Tm,
}

impl<Tm> TimeoutLayer<Tm> {
    /// A layer giving each call at most `after`, timed on `timer`. Any
    /// duration is accepted, as the timer takes it: with tokio's, zero
    /// leaves a call the timer's granularity (a millisecond), and a
    /// duration past what an `Instant` can hold never fires.
    pub fn new(after: Duration, timer: Tm) -> Self {
        Self { after, timer }
    }
}

impl<S, Tm: Clone> Layer<S> for TimeoutLayer<Tm> {
    type Service = TimeoutService<S, Tm>;

    fn layer(&self, inner: S) -> Self::Service {
        TimeoutService { inner, after: self.after, timer: self.timer.clone() }
    }
}

/// A service whose calls end with [`TimeoutError::Elapsed`] once they run
/// longer than its timeout; the inner call's future is then dropped.
#[derive(Debug, Clone)]
pub struct TimeoutService<S, Tm> {
    inner: S,
    after: Duration,
    timer: Tm,
}

impl<S, Tm> TimeoutService<S, Tm> {
    /// The time each call gets.
    pub fn after(&self) -> Duration {
        self.after
    }
}

/// A [`TimeoutService`]'s error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeoutError<E> {
    /// The call ran out of time: a failure of the dependency.
    Elapsed(Elapsed),
    /// The inner service's error.
    Inner(E),
}

impl<E: fmt::Display> fmt::Display for TimeoutError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeoutError::Elapsed(e) => e.fmt(f),
            TimeoutError::Inner(e) => e.fmt(f),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for TimeoutError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            TimeoutError::Elapsed(e) => Some(e),
            TimeoutError::Inner(e) => Some(e),
        }
    }
}

impl<S, Req, Tm> Service<Req> for TimeoutService<S, Tm>
where
    S: Service<Req>,
    Tm: Timer,
{
    type Response = S::Response;
    type Error = TimeoutError<S::Error>;
    type Future = TimeoutFuture<S::Future, Tm::Sleep>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Readiness is not timed: the clock starts with the call.
        self.inner.poll_ready(cx).map_err(TimeoutError::Inner)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        TimeoutFuture { inner: timeout(&self.timer, self.after, self.inner.call(req)) }
    }
}

pin_project_lite::pin_project! {
    /// The response of a [`TimeoutService`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless polled"]
    pub struct TimeoutFuture<F, Sl> {
        #[pin]
        inner: Timeout<F, Sl>,
    }
}

impl<F, Sl, Res, Err> Future for TimeoutFuture<F, Sl>
where
    F: Future<Output = Result<Res, Err>>,
    Sl: Future<Output = ()>,
{
    type Output = Result<Res, TimeoutError<Err>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(match core::task::ready!(self.project().inner.poll(cx)) {
            Ok(result) => result.map_err(TimeoutError::Inner),
            Err(elapsed) => Err(TimeoutError::Elapsed(elapsed)),
        })
    }
}

call_patterns!(TimeoutService<S, Tm>);
