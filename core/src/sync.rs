//! The one place atomics come from.
//!
//! Under `cfg(loom)` these are loom's model-checked types; otherwise they are
//! `portable-atomic`'s, which are the native instructions where the target
//! has them. On targets without native 64-bit atomics (e.g.
//! `thumbv7em-none-eabihf`) portable-atomic emulates `AtomicU64` with a
//! seqlock guarded by a small global spinlock array: correct, but not
//! lock-free there.
//!
//! [`GlobalAtomicU64`] and [`GlobalAtomicPtr`] are always portable-atomic's:
//! they back process-wide statics, which need a `const fn new` that loom's
//! types lack, and which no loom model checks (they hand out seeds, or list
//! the cached clocks a forked child must stop, not a protocol).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use portable_atomic::{AtomicU32, AtomicU64, Ordering};

#[cfg(feature = "std")]
pub(crate) use portable_atomic::AtomicPtr as GlobalAtomicPtr;
pub(crate) use portable_atomic::AtomicU64 as GlobalAtomicU64;
