//! The one place atomics come from.
//!
//! Under `cfg(loom)` these are loom's model-checked types; otherwise they are
//! `portable-atomic`'s, which are the native instructions where the target
//! has them. On targets without native 64-bit atomics (e.g.
//! `thumbv7em-none-eabihf`) portable-atomic emulates `AtomicU64` with a
//! seqlock guarded by a small global spinlock array: correct, but not
//! lock-free there.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use portable_atomic::{AtomicU64, Ordering};
