//! Waiting for a bulkhead slot: a parked thread ([`blocking`]), or a future
//! woken on release ([`future`], feature `async`).

pub(crate) mod blocking;
#[cfg(feature = "async")]
pub(crate) mod future;
