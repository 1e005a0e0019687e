//! The rolling window: a ring of time buckets counting calls, failures and
//! slow calls, rotated without locks.
//!
//! Time is cut into epochs of `bucket_ns`; epoch `e` counts in bucket
//! `e % buckets`. Each bucket is two words, each carrying its own epoch tag
//! next to its counts, so that "is this bucket current?" and "add one" are
//! the same compare-and-swap and a rotation can never lose or misfile a
//! count:
//!
//! | word   | bits 0..20 | bits 20..40 | bits 40..64 |
//! | ------ | ---------- | ----------- | ----------- |
//! | `calls` | calls     | failures    | epoch tag (epoch mod 2^24) |
//! | `slow`  | slow calls | —          | epoch tag |
//!
//! A bucket whose tag is older than the window counts as empty; the first
//! outcome of a new epoch replaces the stale word with fresh counts. Counts
//! saturate at 2^20 − 1 per bucket: once `calls` is full the bucket stops
//! counting, so rates stay those of a consistent sample. A tag aliases only
//! if a bucket is left untouched for a multiple of 2^24 epochs to within one
//! window (194 days at 1 s buckets), which this design accepts.
//!
//! The ring is striped like the counters: each thread writes the ring of
//! its stripe, so two threads recording at once do not write one cache
//! line; a trip decision sums every stripe.
//!
//! # Orderings
//! Every count changes by one CAS on one word, so none is lost. The CAS
//! that counts an outcome and the loads that sum the window are `SeqCst`:
//! they fall into one total order, so the outcome that brings a rate to its
//! threshold sees every count before it, on every stripe, and trips the
//! breaker then and there (with weaker orderings two threads counting on
//! different stripes could each miss the other's count, and the trip would
//! wait for the next failure). On x86 this costs nothing over `Relaxed`
//! (a locked CAS and a plain load either way). The window orders no other
//! data: the trip itself is published by the state word's CAS.

use crossbeam_utils::CachePadded;

use crate::counters::stripe;
use crate::sync::{AtomicU64, Ordering};

/// The most buckets a window may have.
pub const MAX_BUCKETS: u32 = 32;

#[cfg(not(loom))]
const STRIPES: usize = 4;
#[cfg(loom)]
const STRIPES: usize = 1;

const COUNT_BITS: u32 = 20;
const COUNT_MAX: u64 = (1 << COUNT_BITS) - 1;
const TAG_SHIFT: u32 = 40;
const TAG_MASK: u64 = (1 << 24) - 1;

#[repr(C)]
#[derive(Debug)]
struct Bucket {
    calls: AtomicU64,
    slow: AtomicU64,
}

/// Totals over the buckets still inside the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) calls: u64,
    pub(crate) failures: u64,
    pub(crate) slow: u64,
}

#[repr(C)]
#[derive(Debug)]
pub(crate) struct Window {
    rings: [CachePadded<[Bucket; MAX_BUCKETS as usize]>; STRIPES],
}

#[inline]
fn tag(word: u64) -> u64 {
    word >> TAG_SHIFT
}

#[inline]
/// Epochs from `word`'s tag to `epoch`, modulo the tag's range.
fn age(word: u64, epoch: u64) -> u64 {
    epoch.wrapping_sub(tag(word)) & TAG_MASK
}

#[inline]
fn fresh(epoch: u64) -> u64 {
    (epoch & TAG_MASK) << TAG_SHIFT
}

impl Window {
    #[inline]
    pub(crate) fn new() -> Self {
        Self {
            rings: core::array::from_fn(|_| {
                CachePadded::new(core::array::from_fn(|_| Bucket {
                    calls: AtomicU64::new(0),
                    slow: AtomicU64::new(0),
                }))
            }),
        }
    }

    /// Counts one outcome at `epoch` in a ring of `buckets` buckets.
    #[inline]
    pub(crate) fn add(&self, epoch: u64, buckets: u32, failed: bool, slow: bool) {
        self.add_in(stripe(STRIPES), epoch, buckets, failed, slow);
    }

    /// [`add`](Self::add) on a given stripe's ring.
    #[inline]
    fn add_in(&self, stripe: usize, epoch: u64, buckets: u32, failed: bool, slow: bool) {
        let bucket = &self.rings[stripe][(epoch % u64::from(buckets)) as usize];
        let delta = 1 | (u64::from(failed) << COUNT_BITS);
        bump(&bucket.calls, epoch, |w| {
            // Is the bucket full? Then it stops counting altogether.
            (w & COUNT_MAX < COUNT_MAX).then(|| w + delta)
        });
        if slow {
            bump(&bucket.slow, epoch, |w| (w & COUNT_MAX < COUNT_MAX).then(|| w + 1));
        }
    }

    #[inline]
    /// Sums the buckets of every stripe that lie within the `buckets`
    /// epochs ending at `epoch`.
    pub(crate) fn totals(&self, epoch: u64, buckets: u32) -> Totals {
        let mut t = Totals::default();
        for ring in &self.rings {
            for b in &ring[..buckets as usize] {
                // SeqCst: see the module's Orderings.
                let calls = b.calls.load(Ordering::SeqCst);
                if age(calls, epoch) < u64::from(buckets) {
                    t.calls += calls & COUNT_MAX;
                    t.failures += (calls >> COUNT_BITS) & COUNT_MAX;
                }
                // SeqCst: see the module's Orderings.
                let slow = b.slow.load(Ordering::SeqCst);
                if age(slow, epoch) < u64::from(buckets) {
                    t.slow += slow & COUNT_MAX;
                }
            }
        }
        t
    }

    #[inline]
    /// Empties every bucket. Only called while no outcome may enter the
    /// window (the breaker is not Closed), before the CAS that closes it.
    pub(crate) fn clear(&self) {
        for ring in &self.rings {
            for b in ring.iter() {
                // Relaxed: published by the Release CAS that closes the breaker.
                b.calls.store(0, Ordering::Relaxed);
                b.slow.store(0, Ordering::Relaxed);
            }
        }
    }
}

/// One CAS loop that either adds to a current bucket word or replaces a
/// stale one with fresh counts for `epoch`.
#[inline]
fn bump(word: &AtomicU64, epoch: u64, add: impl Fn(u64) -> Option<u64>) {
    // Relaxed: only a guess for the CAS below, which checks it.
    let mut w = word.load(Ordering::Relaxed);
    loop {
        let a = age(w, epoch);
        // Is the word from an epoch before this ring position came round
        // again? A word from a *later* epoch (this thread read the clock
        // just before the rotation) takes the outcome as it is.
        let base = if a != 0 && a < TAG_MASK / 2 { fresh(epoch) } else { w };
        let Some(next) = add(base) else { return };
        // SeqCst: see the module's Orderings; a failed CAS only refreshes the guess.
        match word.compare_exchange_weak(w, next, Ordering::SeqCst, Ordering::Relaxed) {
            Ok(_) => return,
            Err(actual) => w = actual,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_within_the_window_and_forgets_older_buckets() {
        let w = Window::new();
        w.add(100, 4, false, false);
        w.add(100, 4, true, true);
        w.add(101, 4, true, false);
        assert_eq!(w.totals(101, 4), Totals { calls: 3, failures: 2, slow: 1 });
        assert_eq!(w.totals(103, 4), Totals { calls: 3, failures: 2, slow: 1 });
        assert_eq!(w.totals(104, 4), Totals { calls: 1, failures: 1, slow: 0 }, "epoch 100 left the window");
        // Epoch 104 lands in 100's bucket and replaces it.
        w.add(104, 4, false, false);
        assert_eq!(w.totals(104, 4), Totals { calls: 2, failures: 1, slow: 0 });
    }

    #[test]
    fn an_idle_hour_starts_from_an_empty_window() {
        let w = Window::new();
        for e in 0..10 {
            w.add(e, 10, true, true);
        }
        assert_eq!(w.totals(9, 10).calls, 10);
        assert_eq!(w.totals(3609, 10), Totals::default());
        w.add(3609, 10, false, false);
        assert_eq!(w.totals(3609, 10), Totals { calls: 1, failures: 0, slow: 0 });
    }

    #[test]
    fn a_late_outcome_joins_the_newer_epoch_instead_of_wiping_it() {
        let w = Window::new();
        // One stripe, as when one thread records both.
        w.add_in(0, 8, 4, false, false);
        w.add_in(0, 4, 4, true, false); // read its clock before epoch 8 began
        assert_eq!(w.totals(8, 4), Totals { calls: 2, failures: 1, slow: 0 });
    }

    #[test]
    fn counts_saturate_instead_of_wrapping() {
        let w = Window::new();
        let b = &w.rings[0][0];
        b.calls.store(fresh(0) | (5 << COUNT_BITS) | COUNT_MAX, Ordering::Relaxed);
        for ring in &w.rings {
            ring[0].calls.store(b.calls.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        w.add(0, 1, true, false);
        let t = w.totals(0, 1);
        assert_eq!(t.calls, COUNT_MAX * STRIPES as u64);
        assert_eq!(t.failures, 5 * STRIPES as u64);
    }

    #[test]
    fn clear_empties_every_stripe() {
        let w = Window::new();
        w.add(1, 2, true, true);
        w.clear();
        assert_eq!(w.totals(1, 2), Totals::default());
    }
}
