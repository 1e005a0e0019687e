//! `tower` layers (feature `tower`): the breaker, the bulkhead and retries
//! with a budget around any [`Service`](tower_service::Service), judging
//! results with a response classifier.
//!
//! Admission happens in `call`, never in `poll_ready`: a service that was
//! made ready but never called holds no breaker permit and no bulkhead
//! slot, so nothing leaks.
//! The response future owns the permit: dropped before it completes (the
//! caller gave up, a timeout layer outside fired), it records the call as
//! ignored.

mod breaker;
mod bulkhead;
mod classify;
mod retry;

pub use breaker::{BreakerLayer, BreakerService, ResponseFuture};
pub use bulkhead::{BulkheadError, BulkheadFuture, BulkheadLayer, BulkheadService};
pub use classify::{ClassifyResult, HttpClassifier, ServiceError};
pub use retry::{RetryLayer, RetryService};
