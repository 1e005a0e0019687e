//! Shared pieces of the benches: the guarded function every breaker wraps,
//! the error it fails with, and a counting allocator.
#![allow(missing_docs, reason = "bench support, not an API")]

pub mod counting;
pub mod redis;

use core::fmt;

/// The dependency every breaker guards: returns its argument, opaque to the
/// optimiser.
#[inline(never)]
pub fn guarded(x: u64) -> Result<u64, Failed> {
    Ok(core::hint::black_box(x))
}

/// The dependency, failing.
#[inline(never)]
pub fn failing(_: u64) -> Result<u64, Failed> {
    Err(core::hint::black_box(Failed))
}

/// The error of a failed call (`std::error::Error`, as some peers demand).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failed;

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dependency failed")
    }
}

impl std::error::Error for Failed {}
