//! The circuit breaker: [`Breaker`] (`no_std`, one packed state word moved
//! by compare-and-swap) and [`NamedBreaker`] (feature `std`: a name, a
//! clock and listeners), their config and its limits, where a breaker
//! keeps its counts ([`Windows`]: its memory follows its config), the tickets and
//! permits that pass between a breaker and its caller, the counters, and
//! [`HotLine`] for bindings that inline the fast paths. The common names
//! are at the crate root too.

pub(crate) mod circuit;
pub(crate) mod config;
pub(crate) mod cooldown;
pub(crate) mod counters;
pub(crate) mod deadline;
pub(crate) mod hot;
pub(crate) mod permit;
pub(crate) mod rate;
#[cfg(not(loom))]
pub(crate) mod shared;
pub(crate) mod state;
pub(crate) mod storage;
pub(crate) mod ticket;
pub(crate) mod window;

pub use circuit::Breaker;
pub use config::{
    BreakerConfig, BreakerConfigBuilder, ConfigError, DEFAULT_MAX_HOLD, DEFAULT_PROBE_TIMEOUT,
    MAX_BUCKET_WIDTH, MAX_BUCKETS, MAX_COUNT_WINDOW, MAX_FAILURE_THRESHOLD, MAX_GROWTH, MAX_HALF_OPEN,
    MAX_MIN_CALLS, MAX_OPEN_TIMEOUT, MIN_BUCKET_WIDTH, MIN_OPEN_TIMEOUT, RollingWindow,
};
pub use counters::Snapshot;
pub use hot::HotLine;
pub use permit::{CallError, Permit};
pub use state::State;
pub use storage::{AnyWindow, CountOnly, NoWindow, TimeOnly, Windows};
pub use ticket::{Outcome, Rejected, Ticket, Transition};

#[cfg(feature = "std")]
pub use crate::layers::named::{NamedBreaker, NamedPermit, OwnedNamedPermit};
