//! One key's breaker in a [`Breakers`](super::Breakers) map, and the word
//! that decides between its use and its eviction.
//!
//! # The `seen` word
//! It holds the number of the last sweep period in which the entry was
//! used, or [`RETIRED`] once a sweep has chosen to evict it. A call *takes*
//! the entry by raising the word to the current period (nothing is written
//! when it already holds it: a hot key costs one load). A sweep *retires*
//! an entry whose word is older than the last period, with a CAS from the
//! very value it judged idle. The two race on one word, so exactly one of
//! them wins: a call that took the entry made the sweep's CAS fail, and a
//! sweep that retired it makes the call's take fail, and the call looks the
//! key up again (finding it gone, or helping remove it, then making a new
//! one). So a breaker is never evicted under a call that took it in the
//! current period, and no call uses a breaker once it is evicted.
//!
//! A take that finds the word at its period already writes nothing, so it
//! excludes the sweeps that judge "idle before" that period or an earlier
//! one: the next sweep, which starts the period after the one the call
//! read. What this does not cover, by design: a call that read the period,
//! then stalled or ran across two more sweeps (two whole periods of
//! `idle_after`), may use or record into a breaker the map has since
//! dropped, as a late ticket of a past generation would be; the outcome is
//! lost, and the key's next call gets a new, Closed breaker.
//!
//! # Orderings
//! Every access is `SeqCst` on one word, which is all the argument above
//! needs (one total order of the take's and the retire's RMWs on `seen`).
//! The entry's breaker is reached through the map, whose own protocol
//! publishes it.

use crate::sync::{AtomicU64, Ordering};

/// The `seen` value of an entry a sweep has evicted.
pub(crate) const RETIRED: u64 = u64::MAX;

/// The entry's eviction word.
#[derive(Debug)]
pub struct Seen(AtomicU64);

// `pub` items for the loom model (`tests/loom_keyed.rs`), which reaches
// them as `tripwire::keyed::LoomSeen`; elsewhere the type is crate-private.
#[allow(missing_docs, unreachable_pub)]
impl Seen {
    /// Seen in `period`, the period it is made in.
    pub fn new(period: u64) -> Self {
        Self(AtomicU64::new(period))
    }

    /// Marks the entry used in `period`: `false` if a sweep retired it.
    #[inline]
    pub fn take(&self, period: u64) -> bool {
        // SeqCst: see the module's Orderings (as below).
        let mut seen = self.0.load(Ordering::SeqCst);
        loop {
            if seen == RETIRED {
                return false;
            }
            if seen >= period {
                return true;
            }
            match self.0.compare_exchange_weak(seen, period, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return true,
                Err(actual) => seen = actual,
            }
        }
    }

    /// Retires the entry if it was last used before period `before`:
    /// `true` if this call retired it (and the caller removes it).
    pub fn retire_if_idle(&self, before: u64) -> bool {
        let seen = self.0.load(Ordering::SeqCst);
        seen < before && self.0.compare_exchange(seen, RETIRED, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    }

    /// Whether a sweep has retired the entry.
    pub fn is_retired(&self) -> bool {
        self.0.load(Ordering::SeqCst) == RETIRED
    }

    /// The last period the entry was used in.
    #[cfg(test)]
    pub fn last(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_take_and_a_retire_exclude_each_other() {
        let s = Seen::new(1);
        assert!(!s.retire_if_idle(1), "used in period 1: not idle before 1");
        assert!(s.retire_if_idle(2));
        assert!(s.is_retired());
        assert!(!s.take(3), "a retired entry is never taken");
        let s = Seen::new(1);
        assert!(s.take(3));
        assert_eq!(s.last(), 3);
        assert!(!s.retire_if_idle(3));
        assert!(s.take(2), "an older period never lowers the word");
        assert_eq!(s.last(), 3);
    }
}
