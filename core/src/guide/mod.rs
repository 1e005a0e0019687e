//! The guide: how tripwire behaves and how to put it around your calls,
//! one chapter per topic. Every Rust snippet in it is compiled, and run
//! where it can be, as a doctest of this crate.
//!
//! | chapter | what |
//! | --- | --- |
//! | [`breaker`] | states, generations, probes, manual modes, `no_std` targets |
//! | [`windows`] | failure and slow-call rates over a time or count window; clocks |
//! | [`keyed`] | a breaker per host, endpoint or symbol: bounded, evicted when idle, one metrics family |
//! | [`holds`] | 429 and 418: holding the breaker open for `Retry-After`, and its cap |
//! | [`rate_limits`] | staying under an exchange's weight limits: several limits, waits, refunds, the server's counts |
//! | [`composition`] | bulkhead, retries and their budget, the pipeline, nesting, stale data, events |
//! | [`tower`] | the tower layers, and a reqwest or hyper client inside them |
//! | [`reqwest`] | the `reqwest-middleware` middleware |
//! | [`fleet`] | breakers of many hosts sharing one outage through Redis: the `tripwire-fleet` crate |
//! | [`other_languages`] | the C ABI and the Python wheel |
//! | [`performance`] | what each path costs, next to peers, and the commands that measure it |
//!
//! The chapters are modules with no items: documentation only.

#[doc = include_str!("breaker.md")]
pub mod breaker {}

#[doc = include_str!("windows.md")]
pub mod windows {}

#[cfg(feature = "keyed")]
#[doc = include_str!("keyed.md")]
pub mod keyed {}

#[doc = include_str!("holds.md")]
#[doc = include_str!("../layers/conformance.md")]
pub mod holds {}

#[doc = include_str!("rate_limits.md")]
pub mod rate_limits {}

#[doc = include_str!("composition.md")]
pub mod composition {}

#[doc = include_str!("tower.md")]
pub mod tower {}

#[doc = include_str!("reqwest.md")]
pub mod reqwest {}

#[doc = include_str!("fleet.md")]
pub mod fleet {}

#[doc = include_str!("other_languages.md")]
pub mod other_languages {}

#[doc = include_str!("performance.md")]
pub mod performance {}
