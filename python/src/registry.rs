//! Named breakers, and their counters in the Prometheus text format.
//!
//! The registry holds weak references to the breakers' shared parts, so a
//! breaker that is dropped leaves it. A name registered again replaces the
//! older breaker in the export (re-running a module or a notebook cell
//! makes a new breaker with the same name). The registry's mutex is taken
//! when a named breaker is made and when the registry is read, never on a
//! call's path.

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use pyo3::prelude::*;

use crate::core_breaker::CoreBreaker;

struct Entry {
    name: String,
    core: Weak<CoreBreaker>,
}

static REGISTRY: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

fn registry() -> MutexGuard<'static, Vec<Entry>> {
    // A panic while holding the lock cannot leave the list inconsistent
    // (every change is one push or retain), so a poisoned lock is usable.
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers `core` under `name`, replacing any breaker of that name.
pub(crate) fn register(name: &str, core: &Arc<CoreBreaker>) {
    let mut r = registry();
    r.retain(|e| e.name != name && e.core.strong_count() > 0);
    r.push(Entry { name: name.to_owned(), core: Arc::downgrade(core) });
}

fn live() -> Vec<(String, Arc<CoreBreaker>)> {
    let mut v: Vec<_> = registry().iter().filter_map(|e| Some((e.name.clone(), e.core.upgrade()?))).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The names of the named breakers alive now, sorted.
#[pyfunction]
pub(crate) fn breaker_names() -> Vec<String> {
    live().into_iter().map(|(n, _)| n).collect()
}

/// Every named breaker's state and counters in the Prometheus text
/// exposition format (version 0.0.4), written by the core's writer: the
/// families, labels and help texts of a Rust `Registry`.
#[pyfunction]
pub(crate) fn prometheus_text(py: Python<'_>) -> String {
    let breakers = py.detach(live);
    let rows: Vec<_> =
        breakers.iter().map(|(n, c)| (n.as_str(), c.breaker().state(), c.breaker().snapshot())).collect();
    let mut out = String::new();
    // Writing to a `String` cannot fail.
    let _ = tripwire::prometheus::write_breakers(&mut out, &rows);
    out
}
