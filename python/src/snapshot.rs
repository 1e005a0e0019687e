//! A breaker's counters at one moment, as a small frozen Python object: the
//! core's [`tripwire::Snapshot`] and the state, read through.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use tripwire::State;

use crate::state::state_name;

/// The counters of a breaker at one moment, and its state.
#[pyclass(module = "tripwire", frozen, eq)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    counts: tripwire::Snapshot,
    state: State,
}

impl Snapshot {
    pub(crate) fn of(b: &tripwire::Breaker) -> Self {
        Self { counts: b.snapshot(), state: b.state() }
    }

    /// The counters by name, in the order `as_dict` and `repr` show them.
    fn counters(&self) -> [(&'static str, u64); 8] {
        let c = &self.counts;
        [
            ("calls", c.calls()),
            ("successes", c.successes),
            ("failures", c.failures),
            ("ignored", c.ignored),
            ("rejected", c.rejected),
            ("slow", c.slow),
            ("transitions", c.transitions),
            ("capped_holds", c.capped_holds),
        ]
    }
}

#[pymethods]
impl Snapshot {
    /// Calls recorded as successes.
    #[getter]
    fn successes(&self) -> u64 {
        self.counts.successes
    }

    /// Calls recorded as failures.
    #[getter]
    fn failures(&self) -> u64 {
        self.counts.failures
    }

    /// Calls recorded as ignored (neither success nor failure).
    #[getter]
    fn ignored(&self) -> u64 {
        self.counts.ignored
    }

    /// Calls the breaker refused.
    #[getter]
    fn rejected(&self) -> u64 {
        self.counts.rejected
    }

    /// Calls slower than the breaker's slow-call threshold.
    #[getter]
    fn slow(&self) -> u64 {
        self.counts.slow
    }

    /// State transitions, manual ones included.
    #[getter]
    fn transitions(&self) -> u64 {
        self.counts.transitions
    }

    /// Holds longer than the breaker's `max_hold`, cut to it.
    #[getter]
    fn capped_holds(&self) -> u64 {
        self.counts.capped_holds
    }

    /// Calls admitted and recorded: successes + failures + ignored.
    #[getter]
    fn calls(&self) -> u64 {
        self.counts.calls()
    }

    /// The state when the snapshot was taken.
    #[getter]
    fn state<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        state_name(py, self.state)
    }

    /// The snapshot as a plain dict.
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, v) in self.counters() {
            d.set_item(name, v)?;
        }
        d.set_item("state", self.state(py))?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let mut s = format!("Snapshot(state={:?}", self.state.as_str());
        for (name, v) in self.counters() {
            s += &format!(", {name}={v}");
        }
        s + ")"
    }
}
