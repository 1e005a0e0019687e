//! Named breakers, and their counters in the Prometheus text format.
//!
//! The registry holds weak references to the breakers' shared parts, so a
//! breaker that is dropped leaves it. A name registered again replaces the
//! older breaker in the export (re-running a module or a notebook cell
//! makes a new breaker with the same name). The registry's mutex is taken
//! when a named breaker is made and when the registry is read, never on a
//! call's path.

use core::fmt::Write;
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

/// Escapes a label value for the Prometheus text format.
fn label(v: &str) -> String {
    v.replace('\\', r"\\").replace('"', "\\\"").replace('\n', r"\n")
}

/// A counter's metric name, help text and where it is in a snapshot.
type Counter = (&'static str, &'static str, fn(&tripwire::Snapshot) -> u64);

const STATES: [&str; 5] = ["closed", "open", "half_open", "forced_open", "disabled"];

/// Every named breaker's state and counters in the Prometheus text
/// exposition format (version 0.0.4), one series per breaker labelled
/// `breaker="<name>"`.
#[pyfunction]
pub(crate) fn prometheus_text(py: Python<'_>) -> String {
    let breakers = py.detach(live);
    let mut out = String::new();
    let snaps: Vec<_> =
        breakers.iter().map(|(n, c)| (label(n), c.breaker().state(), c.breaker().snapshot())).collect();
    let _ = writeln!(
        out,
        "# HELP tripwire_breaker_state Current state of the breaker: 1 for the state it is in, 0 for the others."
    );
    let _ = writeln!(out, "# TYPE tripwire_breaker_state gauge");
    for (name, state, _) in &snaps {
        for s in STATES {
            let v = u8::from(state.as_str() == s);
            let _ = writeln!(out, "tripwire_breaker_state{{breaker=\"{name}\",state=\"{s}\"}} {v}");
        }
    }
    let counters: [Counter; 6] = [
        ("tripwire_breaker_successes_total", "Calls recorded as successes.", |s| s.successes),
        ("tripwire_breaker_failures_total", "Calls recorded as failures.", |s| s.failures),
        ("tripwire_breaker_ignored_total", "Calls recorded as neither success nor failure.", |s| s.ignored),
        ("tripwire_breaker_rejected_total", "Calls the breaker refused.", |s| s.rejected),
        ("tripwire_breaker_slow_calls_total", "Calls slower than the slow-call threshold.", |s| s.slow),
        ("tripwire_breaker_transitions_total", "State transitions, manual ones included.", |s| s.transitions),
    ];
    for (metric, help, get) in counters {
        let _ = writeln!(out, "# HELP {metric} {help}");
        let _ = writeln!(out, "# TYPE {metric} counter");
        for (name, _, snap) in &snaps {
            let _ = writeln!(out, "{metric}{{breaker=\"{name}\"}} {}", get(snap));
        }
    }
    out
}
