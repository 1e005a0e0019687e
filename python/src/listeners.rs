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

/// A breaker's listeners, in the order they were given; one list may be
/// shared by several breakers (the breakers of a keyed map).
#[derive(Debug)]
pub(crate) struct Listeners {
    list: Arc<Mutex<Arc<Vec<Py<PyAny>>>>>,
    /// Made the list, rather than [`share`](Self::share)d it: see
    /// [`traverse`](Self::traverse).
    owner: bool,
}

impl Listeners {
    pub(crate) fn new(list: Vec<Py<PyAny>>) -> Self {
        Self { list: Arc::new(Mutex::new(Arc::new(list))), owner: true }
    }

    /// The same list: a listener added to either is heard by both.
    pub(crate) fn share(&self) -> Self {
        Self { list: Arc::clone(&self.list), owner: false }
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
    ///
    /// A list holds one reference to each listener, so one holder visits
    /// it: the one that made it (a keyed map), or a sharer left alone with
    /// it. Visited by every sharer, a listener would look less referenced
    /// than it is, and the collector could free it while it is in use;
    /// visited by none, a cycle through it leaks, which is safe.
    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        if !self.owner && Arc::strong_count(&self.list) > 1 {
            return Ok(());
        }
        if let Ok(list) = self.list.try_lock() {
            for l in list.iter() {
                visit.call(l)?;
            }
        }
        Ok(())
    }
}
