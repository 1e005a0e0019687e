//! Circuit breaker and friends for clients of APIs that go down: a
//! lock-free, allocation-free `no_std` core cheap enough for a trading
//! engine's hot path.
//!
//! # The breaker
//! - [`Breaker`]: Closed → Open → Half-Open, one `AtomicU64` state word moved
//!   by compare-and-swap; [`BreakerConfig`] and its builder; [`ConfigError`].
//! - [`Breaker::try_acquire`] → [`Ticket`] → [`Breaker::record`] with an
//!   [`Outcome`]; or the RAII [`Permit`]; or [`Breaker::call`] /
//!   [`Breaker::call_with`]. A refusal is a [`Rejected`] carrying
//!   `retry_after`; a change of state is a [`Transition`], reported to
//!   exactly one caller.
//! - Trip conditions, any that is configured: consecutive failures, failure
//!   rate or slow-call rate over a rolling window, of time buckets or of
//!   the last N calls ([`RollingWindow`]).
//! - Holds: [`Breaker::open_for`] keeps the breaker Open for the time a
//!   server's backpressure asks (capped by the config's `max_hold`), and
//!   every refusal meanwhile says when it ends; [`Breaker::hold_left`];
//!   [`Breaker::open_left`], the wait before the next probe, cool-down or hold.
//! - Manual modes: [`Breaker::force_open`], [`Breaker::disable`],
//!   [`Breaker::reset`]. Counters: [`Breaker::snapshot`] → [`Snapshot`].
//! - For bindings that inline the fast paths (the C header does):
//!   [`HotLine`], what they decide on and where it lies in a breaker, and
//!   [`Breaker::record_healthy_success`], the success fast path alone.
//!
//! # Bulkhead, backoff and retry
//! - [`Bulkhead`]: at most `max` calls in flight, one atomic counter moved
//!   by compare-and-swap; [`Bulkhead::try_acquire`] → RAII
//!   [`BulkheadPermit`] or [`BulkheadFull`]; raw calls for a C ABI;
//!   [`Bulkhead::acquire_timeout`] parks until a slot is freed (feature
//!   `std`); counters in [`BulkheadSnapshot`].
//! - [`SharedBulkhead`]: one cap for every process of a host, in a region
//!   of shared memory laid out by [`SharedBulkheadRegion`]; each slot names
//!   its [`Holder`], so a reclaim pass frees the slots of a process that
//!   died; receipts are [`SharedSlot`]s, counters [`SharedBulkheadSnapshot`];
//!   [`SlotTable`] holds the same layout in ordinary memory. With `std`,
//!   `try_acquire_here` and `reclaim_dead` bring this process's holder word
//!   and the liveness check.
//! - Shared regions: every kind ([`RegionKind`]: [`SharedRegion`] for a
//!   breaker, [`SharedBulkheadRegion`]) starts with one header, made and
//!   checked by one protocol, and fails with one [`RegionError`].
//! - [`Backoff`]: exponential delays with a cap and [`Jitter`] (none, full,
//!   equal, decorrelated), a random generator per instance, and
//!   [`Backoff::override_next`] for a server's `Retry-After`;
//!   [`BackoffConfig`] and its [`BackoffConfigBuilder`].
//! - [`RetryBudget`]: retries kept to a share of recent calls, a lock-free
//!   token bucket whose tokens expire; [`RetryBudgetConfig`] and its
//!   [`RetryBudgetConfigBuilder`].
//! - [`RetryPolicy`] ([`RetryPolicyBuilder`]): attempts, total time,
//!   backoff, budget, and a [`Classify`] (any `Fn(&E) -> `[`Assessment`], or
//!   [`RetryAll`]); [`RetryPolicy::next`] → [`Next`]. A [`Refusal`] (a
//!   breaker's [`Rejected`], a [`BulkheadFull`]) is never retried.
//! - [`refusal`]: the [`RefusedBy`] (breaker, bulkhead, [`DeadlinePassed`])
//!   anywhere in an error's `source()` chain, with its `retry_after`: "was
//!   I refused, and for how long?" in one call, from any layer's error.
//! - [`RetryLoop`]: those decisions one step at a time (start an attempt;
//!   after a failure, the wait or the [`RetryError`] that ends the loop),
//!   on the caller's clock, for a caller that runs attempts and waits
//!   itself: every executor below, and the bindings.
//! - [`retry()`] with a [`Stop`] (deadline, cancel flag; feature `std`):
//!   the blocking executor, which ends with a [`RetryError`] saying why;
//!   [`retry_notify`] (and `retry_async_notify`) call a hook with a
//!   [`RetryEvent`] (attempt, error, pause) before each retry.
//! - A bad backoff, budget or policy setting is the same [`ConfigError`]
//!   as a breaker's: the config, the field, its value and what is accepted.
//!
//! # Time
//! - [`Clock`]: monotonic nanoseconds, read only when a decision needs it.
//! - [`MonotonicClock`] and [`CoarseClock`] (feature `std`), [`ManualClock`]
//!   for tests, [`FixedClock`] for a timestamp the caller already has.
//! - [`CachedClock`] (feature `std`): `CLOCK_MONOTONIC` published by an
//!   upkeep thread, read with one load; [`CachedClock::global`], or
//!   [`CachedClock::start`] with its [`Upkeep`] handle and [`UpkeepError`].
//! - [`duration_ns`]: a `Duration` as the core's nanoseconds, saturating.
//!
//! # The std and async layer
//! - [`NamedBreaker`] (feature `std`): a breaker with a name, a clock and
//!   [`on_state_change`](NamedBreaker::on_state_change) listeners
//!   ([`StateChange`], which carries a hold's length); [`NamedPermit`],
//!   [`OwnedNamedPermit`]; [`Assessment`] for what a classifier decides.
//! - [`ClassifyResult`] (feature `std`): the classifier every integration
//!   judges a result with, and reads a 5xx's pause from: any closure
//!   `Fn(&Result<T, E>) -> Assessment`, [`ClassifyFn`], or
//!   [`HttpClassifier`] (feature `http`).
//! - [`Events`] (feature `std`): the bulkhead refusals and waits
//!   ([`BulkheadEvent`]) and the retries ([`RetryNotice`], with a
//!   [`RetryCause`]) of the layers it is given, heard by listeners,
//!   counted ([`EventCounts`]), logged with `tracing` and published to
//!   `metrics`, allocating nothing.
//! - [`Pipeline`] and [`PipelineBuilder`]: fallback → retry → breaker →
//!   bulkhead → timeout → call, sync and async (feature `async`), with
//!   [`PipelineError`] naming the layer that answered; [`Nesting`].
//! - Async waits (feature `async`): `Bulkhead::acquire_async` and
//!   `acquire_async_before`, woken on release, given up at a timeout or a
//!   deadline; `retry_async`, which sleeps on a [`Timer`] and stops at once
//!   when dropped or at its deadline.
//! - Timeouts (feature `async`): [`Timer`], [`timeout`], [`Timeout`],
//!   [`Elapsed`]; [`TokioTimer`] (feature `tokio`).
//! - Stale fallback: [`StaleCache`] with a [`StalePolicy`] per endpoint,
//!   [`Served`] values with their age, [`StaleStats`].
//! - HTTP (feature `http`): [`http::assess`] and, for a client's result,
//!   [`http::assess_result`] (5xx fail, 429/418 push back
//!   until `Retry-After`, other 4xx are ignored), [`http::retry_after`].
//! - `tower` (feature `tower`): [`tower::BreakerLayer`] and
//!   [`tower::BreakerService`], judging responses with a
//!   [`ClassifyResult`] ([`HttpClassifier`] by default, a closure in a
//!   [`ClassifyFn`]; also named under `tower::`) and counting an inner
//!   refusal as ignored; [`tower::BulkheadLayer`] and [`tower::BulkheadService`];
//!   [`tower::RetryLayer`] and [`tower::RetryService`] (retries with a
//!   budget, stopping at a refusal); [`tower::TimeoutLayer`] and
//!   [`tower::TimeoutService`] (per call, on a [`Timer`]). The bounds they ask of the wrapped
//!   service ([`tower::ServiceError`], [`tower::RetryRequest`]) and the
//!   consequence of each order of layers are in the [`tower`] module docs.
//!   With feature `reqwest` too, `tower::reqwest_service` makes a
//!   `reqwest::Client` a service of `http` requests that fits every layer.
//! - reqwest (feature `reqwest`): [`reqwest::GuardMiddleware`], a
//!   `reqwest_middleware::Middleware` with the breaker, an optional
//!   bulkhead, retries with a budget (for requests that can be cloned) and
//!   `Retry-After` holds, judging each response once with [`http::assess`];
//!   its refusals ([`reqwest::Refused`]) are read with [`refusal`].
//! - Metrics: [`Registry`] of named breakers, exported by
//!   [`Registry::prometheus`] (text format, written by [`prometheus`]'s
//!   row writers, which bindings call too) and `Registry::publish_metrics`
//!   (feature `metrics`, to the `metrics` crate's recorder), with the rows
//!   other crates add ([`prometheus::RowSource`]); `tracing` events on every
//!   state change (feature `tracing`).
//! - Fleet: breakers of many hosts sharing one outage through Redis are
//!   the `tripwire-fleet` crate's ([`guide::fleet`]); a registry's exports
//!   carry the links its breakers joined.
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
mod breaker;
mod bulkhead;
mod clock;
mod config_error;
mod refusal;
#[cfg(not(loom))]
mod region;
mod retry;
mod shared_bulkhead;
mod sync;

#[cfg(feature = "std")]
mod layers;
#[cfg(feature = "std")]
mod policy;

#[cfg(feature = "std")]
pub mod guide;

pub use assessment::Assessment;
pub use breaker::*;
pub use bulkhead::{Bulkhead, BulkheadFull, BulkheadPermit, BulkheadSnapshot};
pub use clock::{Clock, FixedClock, ManualClock, duration_ns};
pub use refusal::{DeadlinePassed, RefusedBy, refusal};
#[cfg(not(loom))]
pub use region::{RegionError, RegionKind};
pub use retry::*;
pub use shared_bulkhead::*;

#[cfg(feature = "std")]
pub use layers::*;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
