//! The Rust classes' argument checks, for the Python modules that take the
//! same kinds of argument (`tripwire/_fallback.py`): one wording and one
//! set of rules for every argument of the package.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::classify::exception_tuple;
use crate::clock::{ManualClock, clock_arg};
use crate::config::seconds;

/// `value` in seconds, None staying None; `TypeError`/`ValueError` naming
/// `arg`.
#[pyfunction]
#[pyo3(name = "_seconds_or_none")]
pub(crate) fn seconds_or_none(arg: &str, value: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    if value.is_none() {
        return Ok(None);
    }
    Ok(Some(seconds(arg, value)?.as_secs_f64()))
}

/// `value` (an exception class, or a tuple or list of them) as a tuple;
/// `TypeError` naming `arg`.
#[pyfunction]
#[pyo3(name = "_exception_classes")]
pub(crate) fn exception_classes(arg: &str, value: &Bound<'_, PyAny>) -> PyResult<Py<PyTuple>> {
    exception_tuple(arg, value)
}

/// `clock=`: a `ManualClock` or None; `TypeError` otherwise.
#[pyfunction]
#[pyo3(name = "_manual_clock")]
pub(crate) fn manual_clock(value: &Bound<'_, PyAny>) -> PyResult<Option<Py<ManualClock>>> {
    Ok(clock_arg(Some(value))?.1)
}
