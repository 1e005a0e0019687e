//! The host's clocks (feature `std`): read on every call
//! ([`MonotonicClock`], [`CoarseClock`]), or published by an upkeep thread
//! and read with one load ([`CachedClock`]). All of them read
//! `CLOCK_MONOTONIC`'s absolute nanoseconds, so they may be mixed on one
//! breaker and shared between processes.

mod cached;
mod fork;
mod host;

pub use cached::{CachedClock, Upkeep, UpkeepError};
pub(crate) use host::monotonic_at;
pub use host::{CoarseClock, MonotonicClock};
