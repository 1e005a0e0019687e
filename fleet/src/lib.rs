//! Breakers of [`tripwire`](https://docs.rs/tripwire-breaker) (the
//! `tripwire-breaker` package) that share what they learn across hosts,
//! through Redis.
//!
//! Decisions stay local: a joined breaker admits and refuses calls with the
//! same lock-free core, and no call touches a socket or a lock. News travels
//! in the background: a [`Fleet`]'s two threads own the Redis connections,
//! publish each joined breaker's trips, holds and closes, and put the other
//! hosts' into it.
//!
//! - **Publish**: on a transition, the breaker's listener flags it and wakes
//!   the publisher, which publishes "opened" (with the time until its
//!   cool-down ends), "held" (a `Retry-After`, with the time until it ends)
//!   or "closed" on the namespace's channel, and keeps the last one in a key
//!   whose TTL is that wait, for hosts that join or reconnect later.
//! - **Receive**: "opened" or "held" holds the local breaker of that name
//!   open for the wait (`open_for`); "closed" closes it. Waits travel as
//!   durations, never as one host's clock readings.
//! - **One probe**: before a cool-down ends, each host asks for the
//!   breaker's lease (`SET` if absent, with a TTL); the winner's breaker
//!   probes, the others hold theirs until the lease ends. See `lease`.
//! - **Faults**: every command is bounded by a timeout and runs on the
//!   link's threads; a failed connection is made again with backoff and the
//!   keys read again. While unlinked, each host is a plain local breaker.
//!   Why the link last failed is in words in [`Fleet::last_error`] (a
//!   refused `AUTH` or `SELECT`, a TLS handshake, a port nothing listens
//!   on), logged with `tracing` (feature `tracing`), and failed attempts
//!   are counted ([`FleetSnapshot::connect_failures`]): a misconfigured
//!   link is never silent.
//! - **Security**: AUTH and ACL user and password, TLS (feature
//!   `tls`); every message and lease is signed with HMAC-SHA256 over
//!   a shared key; malformed, unsigned, stale, replayed and future messages
//!   are dropped and counted ([`RejectReason`]). Hosts whose keys differ
//!   link, and refuse each other's messages: each says so in its
//!   [`Fleet::last_error`] (`"3 messages with a bad signature: is the key
//!   the same on every host?"`). A key shorter than [`MIN_KEY_LEN`], or of
//!   one byte repeated, is refused when the config is built.
//!
//! Counters: [`Fleet::snapshot`] → [`FleetSnapshot`], and
//! [`Fleet::prometheus`]; a [`Registry`](tripwire::registry::Registry) whose breakers
//! joined a fleet exports its counters too ([`joined_by`], [`prometheus`]).
//!
//! The [`guide`] shows a fleet set up, what it does when Redis fails, and
//! what it costs.
//!
//! # Example
//! ```no_run
//! use std::sync::Arc;
//! use tripwire::{BreakerConfig, NamedBreaker};
//! use tripwire_fleet::{Fleet, FleetConfig};
//!
//! let key = std::env::var("TRIPWIRE_FLEET_KEY")?; // the same random 32 bytes on every host
//! let config = FleetConfig::builder("redis://10.0.0.5:6379", "prod", key).build()?;
//! let fleet = Fleet::new(config)?; // returns at once; connects in the background
//! let binance = Arc::new(NamedBreaker::new("binance", BreakerConfig::default()));
//! fleet.join(&binance)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Clocks
//! A receiver holds its breaker for the wait a message carries, from when
//! it arrives: the time in transit (about a millisecond on a LAN) is added
//! to the wait, never taken from it. Messages are stamped on Redis's clock
//! (`TIME`, read by each host when it connects and every second), so
//! hosts' own clocks need not agree: the stamps serve to refuse stale
//! messages (older than [`max_skew`](FleetConfigBuilder::max_skew), 5 s
//! by default) and replays, those of messages a host never saw included:
//! a message stamped before a host's subscription began is refused there
//! (the bound: one round trip to Redis, plus 1 ms). The link's ACL user
//! needs `TIME` (in `@fast`).

// Feature gates show in the docs (docs.rs builds with `--cfg docsrs`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod clock;
mod config;
mod connect;
mod counters;
mod fault;
mod handle;
mod keys;
mod lease;
mod listen;
mod live;
mod member;
mod message;
mod publish;
mod rate;
mod replay;
mod sign;
mod sync;

pub mod prometheus;

// The guide: a fleet set up, what it does when Redis fails, what it
// costs, and several client processes on one fleet. Documentation only.
#[doc = include_str!("guide.md")]
pub mod guide {}

pub use config::{FleetConfig, FleetConfigBuilder, FleetError, MAX_NAMESPACE};
pub use counters::{FleetSnapshot, LinkState, RejectReason};
pub use handle::Fleet;
pub use live::joined_by;
pub use member::AsBreaker;
pub use rate::{FleetRateLimiter, FleetThrottled, OnRedisLoss};
pub use sign::MIN_KEY_LEN;

/// The README's example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
