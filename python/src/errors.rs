//! Raising the exceptions defined in `tripwire/_errors.py`.
//!
//! The hierarchy is plain Python (so that `CircuitOpenError` can keep its
//! fields in `args` and format its message only when read); the types are
//! looked up once and then raised from Rust with their arguments.
//!
//! A refusal is made as the exception object itself (the type called with
//! its arguments), not as a lazy error: pyo3 raises a lazy one by setting
//! the type and its arguments and then normalizing them back into the
//! object, more work on an open breaker's hot path for the same object.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static CIRCUIT_OPEN: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static BULKHEAD_FULL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static BUDGET_EXHAUSTED: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The rejection of a call by the breaker called `name` (None if unnamed).
#[inline]
pub(crate) fn circuit_open(
    py: Python<'_>,
    retry_after: Option<f64>,
    name: &Py<PyAny>,
    state: tripwire::State,
) -> PyErr {
    let state = crate::state::state_name(py, state);
    match CIRCUIT_OPEN.import(py, "tripwire._errors", "CircuitOpenError") {
        Ok(ty) => raised(ty, (retry_after, name.bind(py), state)),
        Err(e) => e,
    }
}

/// The exception `ty(*args)`, made now (see the module's docs).
#[inline]
fn raised<'py>(ty: &Bound<'py, PyType>, args: impl pyo3::call::PyCallArgs<'py>) -> PyErr {
    match ty.call1(args) {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

/// A full bulkhead.
pub(crate) fn bulkhead_full(py: Python<'_>, name: &Py<PyAny>, max_concurrent: u32) -> PyErr {
    match BULKHEAD_FULL.import(py, "tripwire._errors", "BulkheadFullError") {
        Ok(ty) => raised(ty, (name.bind(py), max_concurrent)),
        Err(e) => e,
    }
}

/// Whether `exc` is a guard's refusal (`CircuitOpenError`,
/// `BulkheadFullError`): what the core's `Refusal` means, which a retry
/// never retries.
pub(crate) fn is_refusal(exc: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = exc.py();
    Ok(exc.is_instance(CIRCUIT_OPEN.import(py, "tripwire._errors", "CircuitOpenError")?)?
        || exc.is_instance(BULKHEAD_FULL.import(py, "tripwire._errors", "BulkheadFullError")?)?)
}

/// `RetryBudgetExhausted(message)` raised from `cause`, the last attempt's
/// error.
pub(crate) fn budget_exhausted(cause: &Bound<'_, PyAny>, message: String) -> PyErr {
    let py = cause.py();
    let err = match BUDGET_EXHAUSTED.import(py, "tripwire._errors", "RetryBudgetExhausted") {
        Ok(ty) => PyErr::from_type(ty.clone(), (message,)),
        Err(e) => return e,
    };
    err.set_cause(py, Some(PyErr::from_value(cause.clone())));
    err
}
