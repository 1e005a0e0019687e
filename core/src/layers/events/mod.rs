//! Events (feature `std`): a named breaker's state changes, and the
//! bulkhead refusals, waits and retries of the layers that are given an
//! [`Events`], as resilience4j's event publishers give them. Each is heard
//! by listeners (run once per event, on the thread that caused it, with no
//! lock held, allocating nothing), counted, logged with `tracing` (feature
//! `tracing`) and published to the `metrics` crate (feature `metrics`).

mod bulkhead;
mod hub;
mod list;
#[cfg(feature = "metrics")]
mod metrics;
mod retry;
mod state;

pub use bulkhead::BulkheadEvent;
#[cfg(feature = "tower")]
pub(crate) use bulkhead::refused;
pub(crate) use bulkhead::slot_wait;
pub(crate) use bulkhead::wait_slot;
#[cfg(feature = "async")]
pub(crate) use bulkhead::wait_slot_async;
pub use hub::{EventCounts, Events};
pub use retry::{RetryCause, RetryNotice};
pub(crate) use state::Listeners;
pub use state::StateChange;
