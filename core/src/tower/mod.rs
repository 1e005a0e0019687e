//! `tower` layers (feature `tower`): the breaker around any
//! [`Service`](tower_service::Service), with a response classifier.
//!
//! Admission happens in `call`, never in `poll_ready`: a service that was
//! made ready but never called holds no breaker permit, so nothing leaks.
//! The response future owns the permit: dropped before it completes (the
//! caller gave up, a timeout layer outside fired), it records the call as
//! ignored.

mod breaker;
mod classify;

pub use breaker::{BreakerLayer, BreakerService, ResponseFuture};
pub use classify::{Classify, HttpClassifier};
