//! Named breakers, bulkheads, stale caches, rate limiters and keyed maps,
//! and their counters in the Prometheus text format.
//!
//! The registry holds weak references, so a breaker, bulkhead or cache that
//! is dropped leaves it. A name registered again replaces the older one of
//! the same kind in the export (re-running a module or a notebook cell
//! makes a new breaker with the same name). The registry's mutex is taken
//! when a named object is made and when the registry is read, never on a
//! call's path. The text is the core's writer's: the families, labels and
//! help texts of a Rust `Registry`.

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use pyo3::prelude::*;

use crate::core_breaker::CoreBreaker;
use crate::stale_counts::StaleCounts;

/// One kind of named object, weakly held.
struct Named<T: ?Sized> {
    entries: Mutex<Vec<(String, Weak<T>)>>,
}

impl<T: ?Sized> Named<T> {
    const fn new() -> Self {
        Self { entries: Mutex::new(Vec::new()) }
    }

    fn entries(&self) -> MutexGuard<'_, Vec<(String, Weak<T>)>> {
        // A panic while holding the lock cannot leave the list inconsistent
        // (every change is one push or retain), so a poisoned lock is usable.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `item` under `name`, replacing any of that name.
    fn register(&self, name: &str, item: &Arc<T>) {
        let mut entries = self.entries();
        entries.retain(|(n, w)| n != name && w.strong_count() > 0);
        entries.push((name.to_owned(), Arc::downgrade(item)));
    }

    /// The live ones, sorted by name.
    fn live(&self) -> Vec<(String, Arc<T>)> {
        let mut v: Vec<_> =
            self.entries().iter().filter_map(|(n, w)| Some((n.clone(), w.upgrade()?))).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

static BREAKERS: Named<CoreBreaker> = Named::new();
static BULKHEADS: Named<tripwire::Bulkhead> = Named::new();
static STALE_CACHES: Named<StaleCounts> = Named::new();
static RATE_LIMITERS: Named<dyn tripwire::prometheus::RateLimitRows> = Named::new();
static KEYED: Named<dyn tripwire::keyed::KeyedRows> = Named::new();

/// Registers a breaker's core under `name`.
pub(crate) fn register(name: &str, core: &Arc<CoreBreaker>) {
    BREAKERS.register(name, core);
}

/// Registers a bulkhead's core under `name`.
pub(crate) fn register_bulkhead(name: &str, core: &Arc<tripwire::Bulkhead>) {
    BULKHEADS.register(name, core);
}

/// Registers a stale cache's counters under `name`.
pub(crate) fn register_stale_cache(name: &str, counts: &Arc<StaleCounts>) {
    STALE_CACHES.register(name, counts);
}

/// A named rate limiter, exported while it lives.
pub(crate) fn register_rate_limiter(name: &str, limiter: &Arc<dyn tripwire::prometheus::RateLimitRows>) {
    RATE_LIMITERS.register(name, limiter);
}

/// A named keyed map, exported while it lives.
pub(crate) fn register_keyed(name: &str, map: &Arc<dyn tripwire::keyed::KeyedRows>) {
    KEYED.register(name, map);
}

/// The names of the named breakers alive now, sorted.
#[pyfunction]
pub(crate) fn breaker_names() -> Vec<String> {
    BREAKERS.live().into_iter().map(|(n, _)| n).collect()
}

/// Every named breaker's, bulkhead's and stale cache's state and counters,
/// and the counters of the fleet links those breakers joined, in the
/// Prometheus text exposition format (version 0.0.4), written by the
/// core's writer: the families, labels and help texts of a Rust
/// `Registry`.
#[pyfunction]
pub(crate) fn prometheus_text(py: Python<'_>) -> String {
    let (cores, bulkheads, stale, limiters, keyed) = py.detach(|| {
        (BREAKERS.live(), BULKHEADS.live(), STALE_CACHES.live(), RATE_LIMITERS.live(), KEYED.live())
    });
    let limiters: Vec<tripwire::prometheus::RateLimitRow<'_>> =
        limiters.iter().map(|(n, l)| (n.as_str(), l.limit_rows())).collect();
    let breakers: Vec<tripwire::prometheus::BreakerRow<'_>> =
        cores.iter().map(|(n, c)| (n.as_str(), c.breaker().state(), c.breaker().snapshot())).collect();
    let bulkheads: Vec<tripwire::prometheus::BulkheadRow<'_>> =
        bulkheads.iter().map(|(n, b)| (n.as_str(), b.max(), b.snapshot())).collect();
    let stale: Vec<tripwire::prometheus::StaleRow<'_>> =
        stale.iter().map(|(n, s)| (n.as_str(), s.snapshot())).collect();
    let mut out = String::new();
    // Writing to a `String` cannot fail.
    let _ = tripwire::prometheus::write_breakers(&mut out, &breakers)
        .and_then(|()| tripwire::prometheus::write_bulkheads(&mut out, &bulkheads))
        .and_then(|()| tripwire::prometheus::write_stale_caches(&mut out, &stale))
        .and_then(|()| tripwire::prometheus::write_rate_limiters(&mut out, &limiters));
    // Keyed maps, in the core's order (after the rate limiters): written
    // by a registry of their own, which holds nothing else.
    if !keyed.is_empty() {
        let maps = tripwire::registry::Registry::new();
        for (_, map) in keyed {
            maps.add_keyed(map);
        }
        out.push_str(&maps.prometheus());
    }
    // The rows other crates add for those breakers (the fleet links they
    // joined, which `tripwire-fleet` adds), written as a Rust registry
    // writes them.
    let cores: Vec<&tripwire::Breaker> = cores.iter().map(|(_, c)| c.breaker()).collect();
    let _ = tripwire::prometheus::write_sources(&mut out, &cores);
    out
}
