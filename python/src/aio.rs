//! The asyncio helpers of `tripwire/_aio.py`, imported once: a coroutine
//! has to be a Python frame, so the breaker's and the bulkhead's `async`
//! paths call into it.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

static AIO: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The `tripwire._aio` module.
pub(crate) fn aio(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(AIO.get_or_try_init(py, || py.import("tripwire._aio").map(Bound::unbind))?.bind(py))
}
