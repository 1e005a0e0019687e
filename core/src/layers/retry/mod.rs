//! The retry executors: they run the core's [`RetryLoop`](crate::RetryLoop)
//! and do the waiting, blocking ([`blocking`]) or in a future ([`future`],
//! feature `async`).

pub(crate) mod blocking;
#[cfg(feature = "async")]
pub(crate) mod future;

pub use blocking::{CANCEL_CHECK, RetryEvent, Stop, retry, retry_notify};
#[cfg(feature = "async")]
pub use future::{retry_async, retry_async_notify};
