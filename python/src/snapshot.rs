//! A breaker's counters at one moment, as a small frozen Python object.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The counters of a breaker at one moment, and its state.
#[pyclass(module = "tripwire", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Calls recorded as successes.
    pub successes: u64,
    /// Calls recorded as failures.
    pub failures: u64,
    /// Calls recorded as ignored (neither success nor failure).
    pub ignored: u64,
    /// Calls the breaker refused.
    pub rejected: u64,
    /// Calls slower than the breaker's slow-call threshold.
    pub slow: u64,
    /// State transitions, manual ones included.
    pub transitions: u64,
    /// Calls admitted and recorded: successes + failures + ignored.
    pub calls: u64,
    /// The state when the snapshot was taken.
    pub state: &'static str,
}

impl Snapshot {
    pub(crate) fn of(b: &tripwire::Breaker) -> Self {
        let s = b.snapshot();
        Self {
            successes: s.successes,
            failures: s.failures,
            ignored: s.ignored,
            rejected: s.rejected,
            slow: s.slow,
            transitions: s.transitions,
            calls: s.calls(),
            state: b.state().as_str(),
        }
    }
}

#[pymethods]
impl Snapshot {
    /// The snapshot as a plain dict.
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("successes", self.successes)?;
        d.set_item("failures", self.failures)?;
        d.set_item("ignored", self.ignored)?;
        d.set_item("rejected", self.rejected)?;
        d.set_item("slow", self.slow)?;
        d.set_item("transitions", self.transitions)?;
        d.set_item("calls", self.calls)?;
        d.set_item("state", self.state)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "Snapshot(state={:?}, calls={}, successes={}, failures={}, ignored={}, rejected={}, slow={}, transitions={})",
            self.state,
            self.calls,
            self.successes,
            self.failures,
            self.ignored,
            self.rejected,
            self.slow,
            self.transitions
        )
    }
}
