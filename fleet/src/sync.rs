//! The one place the fleet's atomics come from: portable-atomic's, as the
//! core's outside loom, so that the fleet builds wherever the core's std
//! layers do (on a target without native 64-bit atomics, `AtomicU64` falls
//! back to a lock there). No loom model covers the fleet: its atomics are
//! flags and counters beside threads that wait on sockets, tested against
//! a real Redis (`tests/`).

pub(crate) use portable_atomic::{AtomicU32, AtomicU64, Ordering};
