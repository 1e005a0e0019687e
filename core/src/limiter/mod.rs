//! A rate limiter with weights: every request has a cost per limit, and
//! several limits hold at once, all or nothing.
//!
//! Exchanges limit by request weight per IP and per account, per minute,
//! per 10 s or per day, and answer overuse with 429 and then an IP ban. A
//! [`RateLimiter`] keeps a client under them: each limit allows `units`
//! in **any** stretch of time one `period` long, a sliding window, so every
//! fixed window the exchange counts in holds at most `units` too.
//!
//! # The algorithm: a weighted cell rate, not a window of counts
//! Each limit is the generic cell rate algorithm (GCRA), as governor uses
//! it: one `AtomicU64` holding the time its counted units reach to, moved
//! by compare-and-swap, with no buckets and no background thread. A check
//! costs one load and one compare-and-swap per limit, and its "wait `d`"
//! is exact.
//!
//! An exact sliding window would have to remember every request of the
//! last period (memory growing with the rate); a window of buckets either
//! lets a burst through at each bucket's edge or refuses early. A cell
//! rate needs one word, and keeping its guarantee is a matter of its two
//! constants: with a burst of `b` units, each unit stays counted for
//! `period / (units − b)`, so any one period sees at most `b` units at once
//! plus `units − b` paced ones: `units`, never more. The price is the
//! burst: the limit sustains `units − b` per period. The default burst is
//! a twentieth of the units, which sustains 95 % of them; a request whose
//! cost is above the burst never goes ([`Throttled::TooCostly`]).
//!
//! # Reserving ahead, giving back, learning from the server
//! [`RateLimiter::acquire`] with a `max_wait` takes the units now and says
//! how long to wait before sending, so waiting callers go in the order they
//! came and nobody polls. A request that is then never sent gives its
//! units back with [`RateLimiter::refund`]. When a server reports the
//! weight it has counted (Binance's `X-MBX-USED-WEIGHT-1M`), and that is
//! more than the limiter counts (other clients on the same IP, a restart),
//! [`RateLimiter::observe_used`] raises the count, so that the next calls
//! slow down at once; it never lowers it.
//!
//! # Time
//! Any clock value works, `u64::MAX` and a wrapping clock included. A
//! clock that goes back only lengthens waits; a count found further ahead
//! than two periods (written before the clock went back, or garbage) is
//! read as two periods: a limiter errs only towards sending less.

mod cell;
mod config;
#[allow(clippy::module_inception)]
pub(crate) mod limiter;
#[cfg(not(loom))]
pub(crate) mod region;
mod stats;

pub use cell::LimitWords;
pub use config::{LimitConfig, LimitConfigBuilder, MAX_PERIOD, MAX_UNITS, MIN_PERIOD};
pub use limiter::{Grant, RateLimiter, SharedRateLimiter, Throttled, Words};
pub use stats::{Counting, LimitCounts, NoStats, Stats};
