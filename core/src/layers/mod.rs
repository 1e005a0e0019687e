//! Everything that needs `std`, behind the one `std` gate: the host's
//! clocks (read per call or cached by an upkeep thread), named breakers and their events, waits for a bulkhead slot,
//! the retry executors, timeouts, stale fallback, the pipeline, HTTP
//! assessment, the registry and its exporters, the `tower` layers and the
//! reqwest middleware.

pub(crate) mod bulkhead;
pub(crate) mod classify;
pub(crate) mod clock;
pub(crate) mod events;
pub(crate) mod fallback;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "keyed")]
pub mod keyed;
pub(crate) mod liveness;
#[cfg(feature = "metrics")]
pub(crate) mod metrics_export;
pub(crate) mod named;
pub(crate) mod pipeline;
pub mod prometheus;
pub(crate) mod registry;
#[cfg(feature = "reqwest")]
pub mod reqwest;
pub(crate) mod retry;
mod settle;
#[cfg(feature = "async")]
pub(crate) mod timeout;
#[cfg(feature = "tower")]
pub mod tower;
