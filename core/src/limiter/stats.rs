//! What a limiter counts, if asked: per limit, the units taken, the takes
//! that had to wait, the refusals and the server's corrections.
//!
//! Counting costs one relaxed `fetch_add` per limit a take spends on, so it
//! is a choice: [`RateLimiter::new`](super::RateLimiter::new) counts
//! nothing ([`NoStats`], whose calls compile to nothing), and
//! [`counting`](super::RateLimiter::counting) makes one that does
//! ([`Counting`]), for the metrics exports.

use crate::sync::{AtomicU64, Ordering};

/// What a [`RateLimiter`](super::RateLimiter) counts: nothing
/// ([`NoStats`]) or every limit's [`LimitCounts`] ([`Counting`]).
/// Implemented by those two only.
pub trait Stats<const N: usize>: sealed::Sealed {
    /// A take of `costs`, which waited (reserved ahead) or went at once.
    fn took(&self, costs: &[u32; N], waited: bool);
    /// A refusal by limit `limit`.
    fn refused(&self, limit: usize);
    /// A server's count that raised limit `limit`'s.
    fn corrected(&self, limit: usize);
}

/// Counts nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoStats;

impl<const N: usize> Stats<N> for NoStats {
    #[inline(always)]
    fn took(&self, _: &[u32; N], _: bool) {}
    #[inline(always)]
    fn refused(&self, _: usize) {}
    #[inline(always)]
    fn corrected(&self, _: usize) {}
}

/// One limit's counts (read with [`RateLimiter::counts`](super::RateLimiter::counts)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitCounts {
    /// Units taken.
    pub spent: u64,
    /// Takes that waited for their units (reserved ahead).
    pub waits: u64,
    /// Requests this limit refused (the one that waits longest, or a cost
    /// above its burst).
    pub refusals: u64,
    /// Server counts that raised this limit's.
    pub corrections: u64,
}

/// Counts every limit's [`LimitCounts`], each a relaxed counter (they
/// order nothing).
#[derive(Debug)]
pub struct Counting<const N: usize> {
    limits: [[AtomicU64; 4]; N],
}

impl<const N: usize> Default for Counting<N> {
    fn default() -> Self {
        Counting { limits: core::array::from_fn(|_| core::array::from_fn(|_| AtomicU64::new(0))) }
    }
}

impl<const N: usize> Counting<N> {
    /// Every limit's counts now (each read separately).
    pub fn counts(&self) -> [LimitCounts; N] {
        core::array::from_fn(|i| {
            // Relaxed: see the type's docs.
            let [spent, waits, refusals, corrections] =
                self.limits[i].each_ref().map(|c| c.load(Ordering::Relaxed));
            LimitCounts { spent, waits, refusals, corrections }
        })
    }

    fn add(&self, limit: usize, which: usize, n: u64) {
        if let Some(c) = self.limits.get(limit) {
            // Relaxed: see the type's docs.
            c[which].fetch_add(n, Ordering::Relaxed);
        }
    }
}

impl<const N: usize> Stats<N> for Counting<N> {
    fn took(&self, costs: &[u32; N], waited: bool) {
        for (i, &cost) in costs.iter().enumerate().filter(|(_, c)| **c > 0) {
            self.add(i, 0, cost.into());
            if waited {
                self.add(i, 1, 1);
            }
        }
    }

    fn refused(&self, limit: usize) {
        self.add(limit, 2, 1);
    }

    fn corrected(&self, limit: usize) {
        self.add(limit, 3, 1);
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::NoStats {}
    impl<const N: usize> Sealed for super::Counting<N> {}
}
