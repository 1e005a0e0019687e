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

#[cfg(feature = "http")]
pub use classify::HttpClassifier;
pub use classify::{ClassifyFn, ClassifyResult};
pub use clock::{CachedClock, CoarseClock, MonotonicClock, Upkeep, UpkeepError};
pub use events::{BulkheadEvent, EventCounts, Events, RetryCause, RetryNotice, StateChange};
pub use fallback::{Served, StaleCache, StalePolicy, StaleSnapshot, StaleStats};
pub use liveness::RECLAIM_EVERY;
pub use named::{NamedBreaker, NamedPermit, OwnedNamedPermit};
pub use pipeline::{Nesting, Pipeline, PipelineBuilder, PipelineError};
pub use registry::Registry;
pub use retry::{CANCEL_CHECK, RetryEvent, Stop, retry, retry_notify};
#[cfg(feature = "async")]
pub use retry::{retry_async, retry_async_notify};
#[cfg(feature = "tokio")]
pub use timeout::TokioTimer;
#[cfg(feature = "async")]
pub use timeout::{Elapsed, Timeout, Timer, timeout};
