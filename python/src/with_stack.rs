//! The tickets of open `with breaker:` blocks.
//!
//! `__enter__` and `__exit__` are two calls on the breaker, which threads
//! and asyncio tasks share, so the ticket between them cannot live in the
//! breaker. It lives in a `contextvars.ContextVar`: every thread and every
//! asyncio task has its own context, so blocks in different threads or
//! interleaved tasks never take each other's tickets, and nested blocks
//! restore the outer one on exit (the variable's `Token`).

use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use pyo3::{PyTraverseError, PyVisit};

/// The innermost open block of one breaker in one context: its ticket, and
/// the token that restores the block around it.
#[pyclass(module = "tripwire", frozen)]
pub(crate) struct Frame {
    ticket: tripwire::Ticket,
    token: OnceLock<Py<PyAny>>,
}

/// `get`, `set` and `reset` of one breaker's `ContextVar`, looked up once.
pub(crate) struct WithStack {
    get: Py<PyAny>,
    set: Py<PyAny>,
    reset: Py<PyAny>,
}

static CONTEXT_VAR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

impl WithStack {
    pub(crate) fn new(py: Python<'_>) -> PyResult<Self> {
        let class = CONTEXT_VAR
            .get_or_try_init(py, || py.import("contextvars")?.getattr("ContextVar").map(Bound::unbind))?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("default", py.None())?;
        let var = class.bind(py).call(("tripwire.Breaker.with_stack",), Some(&kwargs))?;
        Ok(Self {
            get: var.getattr("get")?.unbind(),
            set: var.getattr("set")?.unbind(),
            reset: var.getattr("reset")?.unbind(),
        })
    }

    /// Opens a block holding `ticket`.
    pub(crate) fn push(&self, py: Python<'_>, ticket: tripwire::Ticket) -> PyResult<()> {
        let frame = Bound::new(py, Frame { ticket, token: OnceLock::new() })?;
        let token = self.set.bind(py).call1((&frame,))?;
        // Only this thread has seen the new frame: the cell is empty.
        let _ = frame.get().token.set(token.unbind());
        Ok(())
    }

    /// Closes the innermost block of this context; its ticket.
    pub(crate) fn pop(&self, py: Python<'_>) -> PyResult<tripwire::Ticket> {
        let top = self.get.bind(py).call0()?;
        if top.is_none() {
            return Err(PyRuntimeError::new_err(
                "Breaker.__exit__ without a matching __enter__ in this context",
            ));
        }
        let top = top.cast_into::<Frame>()?;
        let frame = top.get();
        if let Some(token) = frame.token.get() {
            self.reset.bind(py).call1((token,))?;
        }
        Ok(frame.ticket)
    }

    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.get)?;
        visit.call(&self.set)?;
        visit.call(&self.reset)
    }
}
