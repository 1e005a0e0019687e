//! A stale cache's counters, apart from the Python class that counts them
//! (`stale_stats`) so that the registry can hold them without depending on
//! the class.
//!
//! # Orderings
//! The counters are `Relaxed`: statistics that order nothing.

use core::sync::atomic::{AtomicU64, Ordering};

/// Fresh values stored, stale values served, errors passed on.
#[derive(Debug, Default)]
pub(crate) struct StaleCounts {
    fresh: AtomicU64,
    stale: AtomicU64,
    refused: AtomicU64,
}

impl StaleCounts {
    /// The counters at this moment, as the core's writer takes them.
    pub(crate) fn snapshot(&self) -> tripwire::stale::StaleSnapshot {
        // Relaxed: see the module's Orderings.
        tripwire::stale::StaleSnapshot {
            fresh: self.fresh.load(Ordering::Relaxed),
            stale: self.stale.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn add_fresh(&self) {
        // Relaxed: see the module's Orderings.
        self.fresh.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_stale(&self) {
        // Relaxed: see the module's Orderings.
        self.stale.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_refused(&self) {
        // Relaxed: see the module's Orderings.
        self.refused.fetch_add(1, Ordering::Relaxed);
    }
}
