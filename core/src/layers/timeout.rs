//! Per-attempt timeouts for futures (feature `async`), on any runtime's
//! timer: [`Timer`] is the one thing the async layer asks of a runtime;
//! [`TokioTimer`] (feature `tokio`) is tokio's.

use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

/// Sleeps for the async layer: timeouts and the waits between retries.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `tripwire::timeout::Timer`: the async layers sleep on one",
    label = "a timer is needed here",
    note = "pass `tripwire::timeout::TokioTimer` (feature `tokio`), or implement `Timer` for your runtime's sleep"
)]
pub trait Timer {
    /// The future [`sleep`](Self::sleep) returns.
    type Sleep: Future<Output = ()>;
    /// A future that completes after `d`.
    fn sleep(&self, d: Duration) -> Self::Sleep;
}

impl<T: Timer + ?Sized> Timer for &T {
    type Sleep = T::Sleep;
    fn sleep(&self, d: Duration) -> Self::Sleep {
        (**self).sleep(d)
    }
}

/// tokio's timer (`tokio::time::sleep`); needs a tokio runtime with time
/// enabled.
#[cfg(feature = "tokio")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokioTimer;

#[cfg(feature = "tokio")]
impl Timer for TokioTimer {
    type Sleep = tokio::time::Sleep;
    fn sleep(&self, d: Duration) -> Self::Sleep {
        tokio::time::sleep(d)
    }
}

/// A call took longer than its timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Elapsed {
    /// The timeout that passed.
    pub after: Duration,
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "call timed out after {:?}", self.after)
    }
}

impl core::error::Error for Elapsed {}

pin_project_lite::pin_project! {
    /// A future that resolves to its inner future's output, or to
    /// [`Elapsed`] once its timer fires first. Made by [`timeout`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless polled"]
    pub struct Timeout<F, S> {
        #[pin]
        inner: F,
        #[pin]
        sleep: S,
        after: Duration,
    }
}

/// Runs `future` for at most `after`.
///
/// # Examples
/// ```
/// # #[cfg(feature = "tokio")]
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use core::time::Duration;
/// use tripwire::timeout::{Elapsed, TokioTimer, timeout};
///
/// let slow = tokio::time::sleep(Duration::from_secs(5));
/// let got = timeout(&TokioTimer, Duration::from_millis(10), slow).await;
/// assert_eq!(got, Err(Elapsed { after: Duration::from_millis(10) }));
/// # });
/// ```
pub fn timeout<T: Timer, F: Future>(timer: &T, after: Duration, future: F) -> Timeout<F, T::Sleep> {
    Timeout { inner: future, sleep: timer.sleep(after), after }
}

impl<F: Future, S: Future<Output = ()>> Future for Timeout<F, S> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // The call first: an answer that arrives with the deadline wins.
        if let Poll::Ready(v) = this.inner.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match this.sleep.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed { after: *this.after })),
            Poll::Pending => Poll::Pending,
        }
    }
}
