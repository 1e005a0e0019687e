//! Waiting for a bulkhead slot (feature `std`): the thread parks until a
//! release wakes it or its deadline passes; it never spins.
//!
//! The waiting list is an [`event_listener::Event`], which serves threads
//! and futures alike, so an awaitable acquire can be built on the same
//! list and the same handshake.
//!
//! # Orderings
//! A waiter registers in the bulkhead's word, starts listening, then looks
//! at the word again with an `AcqRel` read-modify-write, which takes a slot
//! if one is free. A release's CAS is `AcqRel` too and sees the waiter
//! count in the value it replaces. Either the look comes after the release
//! in the word's modification order (it takes the freed slot), or before
//! it (the release sees the waiter and notifies, and the look's `Release`
//! makes the listener visible to that notification). See
//! `bulkhead.rs` for the pairing in full.

use core::time::Duration;
use std::time::Instant;

use event_listener::{Listener, listener};

use crate::bulkhead::{Bulkhead, BulkheadFull, BulkheadPermit, MINUS_WAITER, WAITER};

impl Bulkhead {
    /// Takes a slot, waiting up to `timeout` for one to be freed.
    ///
    /// The thread parks while it waits (no spinning) and is woken by the
    /// release that frees a slot. Waiters are not queued ahead of
    /// [`try_acquire`](Self::try_acquire): a caller that arrives as a slot
    /// is freed may take it first, and the woken waiter waits again. A
    /// refusal after the wait is counted once in
    /// [`BulkheadSnapshot::rejected`](crate::bulkhead::BulkheadSnapshot::rejected).
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
    /// assert_eq!(bulkhead.snapshot().acquired, 2);
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
        // A free slot, or one freed since? Else register as a waiter.
        if self.take() || self.look(0, WAITER) {
            return Ok(BulkheadPermit::taken(self));
        }
        loop {
            listener!(self.released => released);
            // Freed while we started listening? (The handshake's look.)
            if self.look(MINUS_WAITER, 0) {
                return Ok(BulkheadPermit::taken(self));
            }
            // Woken before the deadline?
            let woken = match deadline {
                None => {
                    released.wait();
                    true
                }
                Some(deadline) => released.wait_deadline(deadline).is_some(),
            };
            if !woken {
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
