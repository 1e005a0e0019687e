//! Waiting for a bulkhead slot in a future (feature `async`): the task
//! sleeps until a release wakes it or its deadline passes; it never spins
//! and blocks no thread.
//!
//! It follows the blocking wait's protocol (see `bulkhead_wait.rs`): the
//! same `waiters` handshake and the same `event-listener` list, whose
//! listeners are futures as well as parkable. A future dropped while it
//! waits takes itself off the waiter count (and gives back a slot it took
//! on the way out), so cancellation leaks nothing.
//!
//! # Orderings
//! Those of `bulkhead_wait.rs`: every look at the word is the bulkhead's
//! own `AcqRel` CAS, and a release that sees a waiter notifies it.

use core::pin::pin;
use core::task::Poll;
use core::time::Duration;

use crate::bulkhead::{Bulkhead, BulkheadFull, BulkheadPermit, MINUS_WAITER, WAITER};
use crate::layers::timeout::Timer;

/// Registered as a waiter until disarmed; dropped armed (the future was
/// cancelled), it leaves the count, giving back a slot it took in passing.
struct Waiting<'a> {
    bulkhead: &'a Bulkhead,
    armed: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.armed && self.bulkhead.look(MINUS_WAITER, MINUS_WAITER) {
            self.bulkhead.release_raw();
        }
    }
}

impl Bulkhead {
    /// Takes a slot, waiting until `deadline` at the latest for one to be
    /// freed, on `timer`'s clock; see [`acquire_async`](Self::acquire_async).
    ///
    /// # Examples
    /// ```
    /// # #[cfg(feature = "tokio")]
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// use core::time::Duration;
    /// use tripwire::timeout::TokioTimer;
    /// use tripwire::Bulkhead;
    ///
    /// let bulkhead = Bulkhead::new(1);
    /// let held = bulkhead.try_acquire().unwrap();
    /// let soon = std::time::Instant::now() + Duration::from_millis(5);
    /// let full = bulkhead.acquire_async_before(&TokioTimer, soon).await;
    /// assert!(full.is_err());
    /// drop(held);
    /// assert!(bulkhead.acquire_async(&TokioTimer, Duration::from_millis(5)).await.is_ok());
    /// # });
    /// ```
    pub async fn acquire_async_before<T: Timer>(
        &self,
        timer: &T,
        deadline: std::time::Instant,
    ) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        self.acquire_async(timer, deadline.saturating_duration_since(std::time::Instant::now())).await
    }

    /// Takes a slot, waiting up to `timeout` for one to be freed, on
    /// `timer`'s clock. Dropping the future stops the wait at once.
    pub async fn acquire_async<T: Timer>(
        &self,
        timer: &T,
        timeout: Duration,
    ) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        // A free slot, or one freed since? Else register as a waiter.
        if self.take() || self.look(0, WAITER) {
            return Ok(BulkheadPermit::taken(self));
        }
        let mut waiting = Waiting { bulkhead: self, armed: true };
        let mut sleep = pin!(timer.sleep(timeout));
        loop {
            let mut released = self.released.listen();
            // Freed while we started listening? (The handshake's look.)
            if self.look(MINUS_WAITER, 0) {
                waiting.armed = false;
                return Ok(BulkheadPermit::taken(self));
            }
            // Woken before the deadline?
            let woken = core::future::poll_fn(|cx| {
                if core::pin::Pin::new(&mut released).poll(cx).is_ready() {
                    return Poll::Ready(true);
                }
                sleep.as_mut().poll(cx).map(|()| false)
            })
            .await;
            if !woken {
                waiting.armed = false;
                // Leave, taking a slot freed just as the time ran out.
                if self.look(MINUS_WAITER, MINUS_WAITER) {
                    return Ok(BulkheadPermit::taken(self));
                }
                self.refused();
                return Err(self.full());
            }
        }
    }
}
