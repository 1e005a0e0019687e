//! The shared bulkhead (`no_std`): one cap for every process that maps a
//! region, kept by a table of slot words each owned by one [`Holder`]
//! ([`slots`]), so that the slots of a process that died can be reclaimed;
//! the region's layout and its checks ([`region`]). The `std` layer
//! (`layers/liveness.rs`) says who this process is and whether another one
//! is still alive.

pub(crate) mod holder;
#[cfg(not(loom))]
pub(crate) mod region;
pub(crate) mod slots;

pub use holder::Holder;
#[cfg(not(loom))]
pub use region::SharedBulkheadRegion;
pub use slots::{SharedBulkhead, SharedBulkheadSnapshot, SharedSlot, SlotTable};
