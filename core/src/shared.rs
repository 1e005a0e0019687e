//! State in memory that several processes map: a breaker's region
//! ([`SharedRegion`]), a bulkhead for every process of a host
//! ([`SharedBulkhead`] in a [`SharedBulkheadRegion`]), one rate limit budget
//! for every process of a host (a [`SharedRateLimiter`](crate::limiter::SharedRateLimiter)
//! in a [`SharedRateLimiterRegion`]), and the one header
//! protocol and error ([`RegionKind`], [`RegionError`]) they share.

#[cfg(not(loom))]
pub use crate::breaker::shared::SharedRegion;
#[cfg(feature = "std")]
pub use crate::layers::liveness::RECLAIM_EVERY;
#[cfg(not(loom))]
pub use crate::limiter::region::SharedRateLimiterRegion;
#[cfg(not(loom))]
pub use crate::region::{RegionError, RegionKind};
#[cfg(not(loom))]
pub use crate::shared_bulkhead::SharedBulkheadRegion;
pub use crate::shared_bulkhead::{Holder, SharedBulkhead, SharedBulkheadSnapshot, SharedSlot, SlotTable};
