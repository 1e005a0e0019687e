//! The composition engine (feature `std`): the layers of defence around a
//! call, held as data, and one sans-IO step machine that decides what
//! happens next; two drivers perform its steps.
//!
//! ```text
//! retry → breaker → rate limit → bulkhead → timeout → call   (Nesting::RetryOutsideBreaker)
//! breaker → retry → rate limit → bulkhead → timeout → call   (Nesting::BreakerOutsideRetry)
//! ```
//!
//! A [`Plan`] names the parts (each optional) and their nesting. A [`Run`](run::Run)
//! takes one request through it: it admits through the breaker, takes the
//! attempt's units from the rate limiter (and says how long to wait for
//! them), says how long the attempt may wait for a bulkhead slot and how long its call may
//! take, records each attempt's [`Judged`] verdict (placing a hold for
//! backpressure), and answers with the pause before the next attempt or
//! the end of the request. It never sleeps, parks or polls: that is the
//! drivers' part, [`blocking::drive`] for a thread and [`future::drive`]
//! on a [`Timer`](crate::timeout::Timer). Every integration (the pipeline, the
//! retry executors, the tower retry layer, the reqwest middleware) is one
//! of these two loops around its own [`Calls`].

pub(crate) mod blocking;
#[cfg(feature = "async")]
pub(crate) mod future;
mod plan;
mod run;

pub(crate) use plan::{Calls, Judged, Plan, Ration, Rationed};
pub(crate) use run::{Ended, Tried};
