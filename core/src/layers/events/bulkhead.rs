//! A bulkhead's events, and the acquires that report them.

use core::time::Duration;
use std::time::Instant;

use crate::bulkhead::{Bulkhead, BulkheadFull, BulkheadPermit};
use crate::layers::events::hub::Events;

/// What a bulkhead did with a call, as an [`Events`] listener hears it.
///
/// A refused call is heard once: as [`Refused`](Self::Refused) when the
/// layer does not wait for a slot, as [`TimedOut`](Self::TimedOut) when it
/// waited in vain. A call that found a free slot at once is no event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BulkheadEvent<'a> {
    /// The bulkhead was full; the call was not made.
    Refused {
        /// The name of the [`Events`].
        name: &'a str,
        /// Calls in flight, read just after the refusal.
        in_flight: u32,
        /// The bulkhead's cap.
        max: u32,
    },
    /// The call found the bulkhead full, waited, and got a slot.
    Waited {
        /// The name of the [`Events`].
        name: &'a str,
        /// How long it waited.
        waited: Duration,
    },
    /// The call found the bulkhead full and no slot was freed in time; it
    /// was not made.
    TimedOut {
        /// The name of the [`Events`].
        name: &'a str,
        /// How long it waited.
        waited: Duration,
        /// The bulkhead's cap.
        max: u32,
    },
}

impl BulkheadEvent<'_> {
    /// The name of the [`Events`] that heard it.
    pub fn name(&self) -> &str {
        match *self {
            BulkheadEvent::Refused { name, .. }
            | BulkheadEvent::Waited { name, .. }
            | BulkheadEvent::TimedOut { name, .. } => name,
        }
    }

    /// Whether the call was refused (not made).
    pub fn is_refusal(&self) -> bool {
        !matches!(self, BulkheadEvent::Waited { .. })
    }

    /// The event's kind in a word (`refused`, `waited`, `timed_out`): the
    /// `event` label of its metric.
    pub fn as_str(&self) -> &'static str {
        match self {
            BulkheadEvent::Refused { .. } => "refused",
            BulkheadEvent::Waited { .. } => "waited",
            BulkheadEvent::TimedOut { .. } => "timed_out",
        }
    }
}

/// The wait for a slot an attempt may begin: `wait`, cut to `left` (the
/// time left before a caller's deadline or a retry policy's total time),
/// so that no wait ends past it and no call starts after it; and whether
/// it was cut (a refusal then is the deadline's, not the bulkhead's).
pub(crate) fn slot_wait(wait: Duration, left: Option<Duration>) -> (Duration, bool) {
    match left {
        // Less time left than the wait configured?
        Some(left) if left < wait => (left, true),
        _ => (wait, false),
    }
}

/// A slot without waiting; a refusal is reported to `events`.
#[inline]
fn try_slot<'b>(bulkhead: &'b Bulkhead, events: Option<&Events>) -> Result<BulkheadPermit<'b>, BulkheadFull> {
    bulkhead.try_acquire().inspect_err(|full| refused(bulkhead, *full, events))
}

/// Reports a refusal without a wait.
#[cold]
pub(crate) fn refused(bulkhead: &Bulkhead, full: BulkheadFull, events: Option<&Events>) {
    if let Some(events) = events {
        events.bulkhead(BulkheadEvent::Refused {
            name: events.name(),
            in_flight: bulkhead.in_flight(),
            max: full.max,
        });
    }
}

/// A slot, waiting up to `wait` for one (parking the thread); a zero wait
/// is [`try_slot`]. A wait and its end are reported to `events`.
pub(crate) fn wait_slot<'b>(
    bulkhead: &'b Bulkhead,
    wait: Duration,
    events: Option<&Events>,
) -> Result<BulkheadPermit<'b>, BulkheadFull> {
    if wait.is_zero() {
        return try_slot(bulkhead, events);
    }
    let Some(events) = events else { return bulkhead.acquire_timeout(wait) };
    // A free slot: no wait, no event (and no refusal counted).
    if bulkhead.take() {
        return Ok(BulkheadPermit::taken(bulkhead));
    }
    let start = Instant::now();
    let slot = bulkhead.acquire_timeout(wait);
    waited(events, start.elapsed(), bulkhead, slot.is_ok());
    slot
}

/// [`wait_slot`] in a future, waiting on `timer`.
#[cfg(feature = "async")]
pub(crate) async fn wait_slot_async<'b, Tm: crate::layers::timeout::Timer>(
    bulkhead: &'b Bulkhead,
    timer: &Tm,
    wait: Duration,
    events: Option<&Events>,
) -> Result<BulkheadPermit<'b>, BulkheadFull> {
    if wait.is_zero() {
        return try_slot(bulkhead, events);
    }
    let Some(events) = events else { return bulkhead.acquire_async(timer, wait).await };
    // A free slot: no wait, no event (and no refusal counted).
    if bulkhead.take() {
        return Ok(BulkheadPermit::taken(bulkhead));
    }
    let start = Instant::now();
    let slot = bulkhead.acquire_async(timer, wait).await;
    waited(events, start.elapsed(), bulkhead, slot.is_ok());
    slot
}

#[cold]
fn waited(events: &Events, waited: Duration, bulkhead: &Bulkhead, got: bool) {
    let name = events.name();
    events.bulkhead(if got {
        BulkheadEvent::Waited { name, waited }
    } else {
        BulkheadEvent::TimedOut { name, waited, max: bulkhead.max() }
    });
}
