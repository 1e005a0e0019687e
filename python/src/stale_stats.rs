//! A stale cache's counters (`tripwire.StaleCache`, in Python): what it
//! served, counted here (in [`StaleCounts`]) so that the Prometheus export
//! is the core's `tripwire_fallback_total` family, the one a Rust
//! `StaleCache` exports.

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::registry;
use crate::stale_counts::StaleCounts;

/// The counters of one `tripwire.StaleCache`; named, it is exported by
/// `prometheus_text()`.
#[pyclass(module = "tripwire", frozen)]
pub struct StaleStats {
    counts: Arc<StaleCounts>,
}

#[pymethods]
impl StaleStats {
    #[new]
    #[pyo3(signature = (name = None))]
    fn new(name: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let counts = Arc::new(StaleCounts::default());
        match name.filter(|n| !n.is_none()) {
            None => {}
            Some(n) => match n.cast::<PyString>() {
                Ok(s) if !s.to_cow()?.is_empty() => registry::register_stale_cache(&s.to_cow()?, &counts),
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "name must be a non-empty str or None, got {}",
                        n.repr()?
                    )));
                }
            },
        }
        Ok(Self { counts })
    }

    /// A call succeeded; its value was stored.
    fn fresh(&self) {
        self.counts.add_fresh();
    }

    /// A call failed and was answered with stale data.
    fn stale(&self) {
        self.counts.add_stale();
    }

    /// A call failed and its error went to the caller.
    fn refused(&self) {
        self.counts.add_refused();
    }

    /// The counters: `{"fresh": …, "stale": …, "refused": …}`.
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.counts.snapshot();
        let d = PyDict::new(py);
        d.set_item("fresh", s.fresh)?;
        d.set_item("stale", s.stale)?;
        d.set_item("refused", s.refused)?;
        Ok(d)
    }
}
