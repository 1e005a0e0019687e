//! The callables a breaker tells of its transitions, `(breaker, from, to)`:
//! given when it is made (`on_state_change=`, `listeners=`) or added later
//! (`breaker.on_state_change(f)`, as Rust's `NamedBreaker::on_state_change`).
//!
//! The list is replaced whole when one is added, and a transition calls the
//! list it found: the mutex is held for an `Arc` clone or a swap, never
//! while a listener runs, so a listener may add another (heard from the
//! next transition on). Transitions are rare; the calls that cause none
//! never touch it.

use std::sync::{Arc, Mutex, PoisonError};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::{PyTraverseError, PyVisit};

/// `f` as a listener, or the `TypeError` naming `arg`.
pub(crate) fn listener(arg: &str, f: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    if !f.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "{arg} must be a callable taking (breaker, from, to), got {}",
            f.repr()?
        )));
    }
    Ok(f.clone().unbind())
}

/// A breaker's listeners, in the order they were given.
#[derive(Debug)]
pub(crate) struct Listeners {
    list: Mutex<Arc<Vec<Py<PyAny>>>>,
}

impl Listeners {
    pub(crate) fn new(list: Vec<Py<PyAny>>) -> Self {
        Self { list: Mutex::new(Arc::new(list)) }
    }

    /// The listeners now, to call without the lock.
    pub(crate) fn current(&self) -> Arc<Vec<Py<PyAny>>> {
        self.list.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Adds `f` after the others.
    pub(crate) fn add(&self, py: Python<'_>, f: Py<PyAny>) {
        let mut list = self.list.lock().unwrap_or_else(PoisonError::into_inner);
        let mut more: Vec<Py<PyAny>> = list.iter().map(|l| l.clone_ref(py)).collect();
        more.push(f);
        *list = Arc::new(more);
    }

    /// For the garbage collector. The lock is only ever held for a clone or
    /// a swap by a thread holding the GIL, so it is free here; were it not,
    /// the listeners go unvisited this once rather than the collector block.
    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(list) = self.list.try_lock() {
            for l in list.iter() {
                visit.call(l)?;
            }
        }
        Ok(())
    }
}
