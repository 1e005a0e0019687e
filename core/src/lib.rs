//! Circuit breaker and friends for clients of APIs that go down: a
//! lock-free, allocation-free `no_std` core cheap enough for a trading
//! engine's hot path.
//!
//! # The root
//! What every user touches: the [`Breaker`] ([`BreakerConfig`] and its
//! [`BreakerConfigBuilder`], [`ConfigError`] for any bad setting), the
//! [`Ticket`] of an admitted call (or its RAII
//! [`Permit`](breaker::Permit)), the [`Outcome`] a
//! breaker counts, its [`State`], [`Snapshot`] and [`Transition`]s; the one
//! judgement of a result, [`Assessment`] (success, failure, ignored, or
//! backpressure with a wait), and (feature `std`) the [`ClassifyResult`]
//! that makes it;
//! the one refusal, [`RefusedBy`] (a breaker's [`Rejected`], a
//! [`BulkheadFull`], a [`DeadlinePassed`]), found in any error's
//! `source()` chain by [`refusal()`]; a [`CallError`]; the [`Bulkhead`]
//! (its permit is [`bulkhead::BulkheadPermit`]); the [`Clock`] with [`ManualClock`]; and, with
//! feature `std`, [`MonotonicClock`], the [`NamedBreaker`] and the
//! [`Pipeline`].
//!
//! # The modules
//! | module | what is in it |
//! | --- | --- |
//! | [`breaker`] | the breaker's config limits and defaults, [`RollingWindow`](breaker::RollingWindow), the permits of a [`NamedBreaker`], [`HotLine`](breaker::HotLine) for bindings that inline the fast paths |
//! | [`bulkhead`] | the bulkhead and its counters |
//! | [`shared`] | state several processes map: a breaker's region, a bulkhead for every process of a host, the one header protocol and [`RegionError`](shared::RegionError) |
//! | [`retry`] | the [`RetryPolicy`](retry::RetryPolicy) and its [`Classify`](retry::Classify), [`Backoff`](retry::Backoff), the [`RetryBudget`](retry::RetryBudget), the sans-IO [`RetryLoop`](retry::RetryLoop) and the executors that wait (`std`, `async`) |
//! | [`clock`] | every clock: monotonic, coarse, cached by an upkeep thread, manual, fixed |
//! | [`limiter`] | a rate limiter with weights and several limits at once, taken all or nothing |
//! | `keyed` | a breaker per key (host, endpoint, symbol), looked up per call without a lock, bounded and evicted when idle (`keyed`) |
//! | `pipeline` | the composition (`std`): fallback → retry → breaker → rate limit → bulkhead → timeout → call, in either nesting, sync and async |
//! | `timeout` | timeouts on a runtime's timer (`async`), `TokioTimer` (`tokio`) |
//! | `stale` | last-good values served with their age (`std`) |
//! | `events` | what the layers report, to listeners, counters, `tracing`, `metrics` (`std`) |
//! | `registry`, `prometheus` | named breakers exported as Prometheus text and to `metrics` (`std`) |
//! | `http` | a response's [`Assessment`] and its `Retry-After` (`http`) |
//! | `tower`, `reqwest` | the layers for tower services and the reqwest middleware (`tower`, `reqwest`) |
//! | `guide` | one chapter per topic (`std`) |
//!
//! The breakers of many hosts share an outage through Redis in the
//! `tripwire-fleet` crate.
//!
//! # Example
//! ```
//! use tripwire::{Breaker, BreakerConfig, CallError, MonotonicClock};
//!
//! let breaker = Breaker::new(BreakerConfig::builder().failure_threshold(3).build()?);
//! let price = breaker.call(&MonotonicClock, || fetch_price("BTC-USD"));
//! match price {
//!     Ok(p) => println!("BTC {p}"),
//!     Err(CallError::Rejected(r)) => println!("exchange down, retry in {:?}", r.retry_after),
//!     Err(CallError::Inner(e)) => println!("request failed: {e}"),
//! }
//! # fn fetch_price(_: &str) -> Result<f64, std::io::Error> { Ok(97_000.0) }
//! # Ok::<(), tripwire::ConfigError>(())
//! ```
//!
//! # Targets
//! The core is `#![no_std]` and needs only atomic compare-and-swap. On
//! targets without native 64-bit atomics (e.g. `thumbv7em-none-eabihf`),
//! `portable-atomic` emulates `AtomicU64` with a seqlock behind a small
//! global spinlock array: still correct, no longer lock-free.
#![no_std]
// Feature gates show in the docs (docs.rs builds with `--cfg docsrs`).
#![cfg_attr(docsrs, feature(doc_cfg))]
// The crate docs link to items of every feature; with some features off,
// those links have nothing to point at. The all-features build (CI's
// rustdoc step, docs.rs) still checks every link.
#![cfg_attr(
    not(all(feature = "reqwest", feature = "tower", feature = "metrics", feature = "tracing")),
    allow(rustdoc::broken_intra_doc_links)
)]
#![warn(missing_docs)]
// Only the no_std crate needs these; its tests and the std crates do not.
#![warn(clippy::std_instead_of_core, clippy::alloc_instead_of_core)]

#[cfg(any(test, feature = "std"))]
extern crate std;

mod assessment;
pub mod breaker;
pub mod bulkhead;
pub mod clock;
mod config_error;
pub mod limiter;
mod refusal;
#[cfg(not(loom))]
mod region;
pub mod retry;
pub mod shared;
mod shared_bulkhead;
mod sync;

#[cfg(feature = "std")]
mod layers;
#[cfg(feature = "std")]
mod policy;

#[cfg(feature = "std")]
pub mod guide;

// The root: what every user touches. The rest is in the modules above and
// below, each named for its concept.
pub use assessment::Assessment;
pub use breaker::{
    Breaker, BreakerConfig, BreakerConfigBuilder, CallError, Outcome, Rejected, Snapshot, State, Ticket,
    Transition,
};
pub use bulkhead::{Bulkhead, BulkheadFull};
pub use clock::{Clock, ManualClock};
pub use config_error::ConfigError;
pub use refusal::{DeadlinePassed, RefusedBy, refusal};

#[cfg(feature = "std")]
pub use layers::classify::ClassifyResult;
#[cfg(feature = "std")]
pub use layers::clock::MonotonicClock;
#[cfg(feature = "http")]
pub use layers::http;
#[cfg(feature = "keyed")]
pub use layers::keyed;
#[cfg(feature = "std")]
pub use layers::named::NamedBreaker;
#[cfg(feature = "std")]
pub use layers::pipeline::Pipeline;
#[cfg(feature = "std")]
pub use layers::prometheus;
#[cfg(feature = "reqwest")]
pub use layers::reqwest;
#[cfg(feature = "tower")]
pub use layers::tower;

/// The pipeline (feature `std`; async calls with feature `async`): the
/// layers of defence around one call, as one [`Pipeline`].
#[cfg(feature = "std")]
pub mod pipeline {
    pub use crate::layers::pipeline::{Nesting, Pipeline, PipelineBuilder, PipelineError};
}

/// Timeouts on a runtime's timer (feature `async`): [`Timer`](timeout::Timer),
/// [`timeout()`](timeout::timeout), [`TokioTimer`](timeout::TokioTimer)
/// (feature `tokio`).
#[cfg(feature = "async")]
pub mod timeout {
    #[cfg(feature = "tokio")]
    pub use crate::layers::timeout::TokioTimer;
    pub use crate::layers::timeout::{Elapsed, Timeout, Timer, timeout};
}

/// Stale-data fallback (feature `std`): the last good value per key, served
/// with its age where a [`StalePolicy`](stale::StalePolicy) allows it.
#[cfg(feature = "std")]
pub mod stale {
    pub use crate::layers::fallback::{Served, StaleCache, StalePolicy, StaleSnapshot, StaleStats};
}

/// What the layers report (feature `std`): bulkhead refusals and waits,
/// retries, a named breaker's changes of state, to listeners, counters,
/// `tracing` and `metrics`.
#[cfg(feature = "std")]
pub mod events {
    pub use crate::layers::events::{
        BulkheadEvent, EventCounts, Events, RetryCause, RetryNotice, StateChange,
    };
}

/// Named breakers in one place (feature `std`), exported to Prometheus
/// and to the `metrics` crate.
#[cfg(feature = "std")]
pub mod registry {
    pub use crate::layers::registry::Registry;
}

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
