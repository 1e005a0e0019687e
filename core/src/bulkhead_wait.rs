//! Waiting for a bulkhead slot (feature `std`): the thread parks until a
//! release wakes it or its deadline passes; it never spins.
//!
//! The waiting list is an [`event_listener::Event`], which serves threads
//! and futures alike, so an awaitable acquire can be built on the same
//! list and the same `waiters` handshake.
//!
//! # Orderings
//! A waiter increments `waiters` (`SeqCst`), registers a listener, then
//! tries to take a slot with a `SeqCst` first load and `SeqCst` CAS. This
//! pairs with the `SeqCst` decrement and `SeqCst` load of `waiters` in
//! [`Bulkhead::release_raw`]: if the waiter's load misses the freed slot, it
//! comes before the release in the single total order of `SeqCst`
//! operations, so the release's load of `waiters` sees the waiter and
//! notifies. `event-listener` then guarantees that a notification sent after
//! the listener registered reaches it. Decrementing `waiters` on the way out
//! is `Relaxed`: a stale non-zero count only costs a needless notify.

use core::time::Duration;
use std::time::Instant;

use event_listener::{Listener, listener};

use crate::bulkhead::{Bulkhead, BulkheadFull, BulkheadPermit};
use crate::sync::Ordering;

impl Bulkhead {
    /// Takes a slot, waiting up to `timeout` for one to be freed.
    ///
    /// The thread parks while it waits (no spinning) and is woken by the
    /// release that frees a slot; a refusal after the wait is counted once
    /// in [`BulkheadSnapshot::rejected`](crate::BulkheadSnapshot::rejected).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use tripwire::Bulkhead;
    ///
    /// let bulkhead = Bulkhead::new(1);
    /// let held = bulkhead.try_acquire()?;
    /// std::thread::scope(|s| {
    ///     let waiter = s.spawn(|| bulkhead.acquire_timeout(Duration::from_secs(5)).is_ok());
    ///     std::thread::sleep(Duration::from_millis(10));
    ///     drop(held); // wakes the waiter
    ///     assert!(waiter.join().unwrap());
    /// });
    /// assert!(bulkhead.try_acquire()?.bulkhead().max() == 1);
    /// # Ok::<(), tripwire::BulkheadFull>(())
    /// ```
    pub fn acquire_timeout(&self, timeout: Duration) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        // A timeout too long to represent waits without bound.
        self.wait(Instant::now().checked_add(timeout))
    }

    /// Takes a slot, waiting until `deadline` at the latest.
    pub fn acquire_deadline(&self, deadline: Instant) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        self.wait(Some(deadline))
    }

    /// Takes a slot, waiting as long as it takes.
    pub fn acquire(&self) -> BulkheadPermit<'_> {
        match self.wait(None) {
            Ok(permit) => permit,
            // A wait without deadline only returns with a slot.
            Err(_) => unreachable!("an unbounded wait returned without a slot"),
        }
    }

    fn wait(&self, deadline: Option<Instant>) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        // Relaxed: the fast path, as `try_acquire`.
        if self.take(Ordering::Relaxed, Ordering::Acquire, Ordering::Relaxed) {
            return Ok(BulkheadPermit::taken(self));
        }
        // SeqCst: pairs with the SeqCst load in `release_raw` (see the
        // module's Orderings).
        self.waiters().fetch_add(1, Ordering::SeqCst);
        let _registered = Registered(self);
        loop {
            listener!(self.released => released);
            // SeqCst: the waiter's side of the handshake.
            if self.take(Ordering::SeqCst, Ordering::SeqCst, Ordering::SeqCst) {
                return Ok(BulkheadPermit::taken(self));
            }
            // Was a slot freed before the deadline?
            let woken = match deadline {
                None => {
                    released.wait();
                    true
                }
                Some(deadline) => released.wait_deadline(deadline).is_some(),
            };
            if !woken {
                // One last look: a slot freed just as the time ran out.
                if self.take(Ordering::SeqCst, Ordering::SeqCst, Ordering::SeqCst) {
                    return Ok(BulkheadPermit::taken(self));
                }
                self.refused();
                return Err(self.full());
            }
        }
    }
}

/// Takes the waiter off the count however `wait` ends (a panic included).
struct Registered<'a>(&'a Bulkhead);

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        // Relaxed: see the module's Orderings.
        self.0.waiters().fetch_sub(1, Ordering::Relaxed);
    }
}
