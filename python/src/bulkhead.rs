//! A bulkhead: an atomic count of calls in flight, capped.
//!
//! Admission is one compare-and-swap; a full bulkhead either refuses at
//! once or, with `max_wait`, polls until a slot frees or the deadline
//! passes. The sync wait sleeps detached from the interpreter (other
//! threads run meanwhile); the asyncio wait lives in `tripwire/_aio.py`.
//! No lock anywhere.
//!
//! # Orderings
//! The count guards no other data: the calls it admits share nothing
//! through it. `Relaxed` is enough for every access; the CAS alone keeps
//! the count at or below the cap.

use core::sync::atomic::{AtomicU32, Ordering};
use core::time::Duration;
use std::time::Instant;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use pyo3::{PyTraverseError, PyVisit, intern};

use crate::config::{count, seconds};
use crate::errors;

/// The first and the longest pause between two looks at a full bulkhead.
const FIRST_PAUSE: Duration = Duration::from_micros(50);
const LONGEST_PAUSE: Duration = Duration::from_millis(2);

/// A cap on the calls in flight to one dependency.
///
/// `with bulkhead:` / `async with bulkhead:`, as a decorator (plain and
/// `async def` functions) or through `call` / `call_async`. A full bulkhead
/// raises `BulkheadFullError` at once, or after waiting up to `max_wait`
/// seconds for a slot.
#[pyclass(module = "tripwire", frozen, weakref)]
pub struct Bulkhead {
    in_flight: AtomicU32,
    max_concurrent: u32,
    max_wait: Option<Duration>,
    /// `str` or `None`.
    name: Py<PyAny>,
}

impl Bulkhead {
    /// Takes a slot if one is free.
    #[inline]
    fn take(&self) -> bool {
        // Relaxed: see the module's Orderings.
        self.in_flight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max_concurrent).then_some(n + 1)
            })
            .is_ok()
    }

    /// Takes a slot, waiting up to `max_wait`; `BulkheadFullError` if none.
    fn acquire(&self, py: Python<'_>) -> PyResult<()> {
        if self.take() {
            return Ok(());
        }
        let Some(max_wait) = self.max_wait else {
            return Err(errors::bulkhead_full(py, &self.name, self.max_concurrent));
        };
        let deadline = Instant::now() + max_wait;
        let mut pause = FIRST_PAUSE;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(errors::bulkhead_full(py, &self.name, self.max_concurrent));
            }
            let nap = pause.min(deadline - now);
            py.detach(|| std::thread::sleep(nap));
            py.check_signals()?;
            if self.take() {
                return Ok(());
            }
            pause = (pause * 2).min(LONGEST_PAUSE);
        }
    }

    fn give_back(&self) -> PyResult<()> {
        // Relaxed: see the module's Orderings.
        self.in_flight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .map(|_| ())
            .map_err(|_| PyRuntimeError::new_err("Bulkhead.release() without a slot taken"))
    }
}

#[pymethods]
impl Bulkhead {
    #[new]
    #[pyo3(signature = (max_concurrent, *, max_wait = None, name = None))]
    fn new(
        py: Python<'_>,
        max_concurrent: &Bound<'_, PyAny>,
        max_wait: Option<&Bound<'_, PyAny>>,
        name: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let max = count("max_concurrent", max_concurrent)?;
        if max == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "invalid bulkhead config: max_concurrent = 0, expected at least 1",
            ));
        }
        let max_wait = match max_wait.filter(|w| !w.is_none()) {
            Some(w) => Some(seconds("max_wait", w)?),
            None => None,
        };
        let name = match name.filter(|n| !n.is_none()) {
            None => py.None(),
            Some(n) if n.is_instance_of::<PyString>() => n.clone().unbind(),
            Some(n) => {
                return Err(PyTypeError::new_err(format!("name must be a str or None, got {}", n.repr()?)));
            }
        };
        Ok(Self { in_flight: AtomicU32::new(0), max_concurrent: max, max_wait, name })
    }

    /// The most calls in flight at once.
    #[getter]
    fn max_concurrent(&self) -> u32 {
        self.max_concurrent
    }

    /// How long a call waits for a slot, in seconds; None: it does not wait.
    #[getter]
    fn max_wait(&self) -> Option<f64> {
        self.max_wait.map(|d| d.as_secs_f64())
    }

    /// The bulkhead's name, or None.
    #[getter]
    fn name(&self, py: Python<'_>) -> Py<PyAny> {
        self.name.clone_ref(py)
    }

    /// Calls in flight now.
    #[getter]
    fn in_flight(&self) -> u32 {
        // Relaxed: a report.
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Free slots now.
    #[getter]
    fn available(&self) -> u32 {
        self.max_concurrent.saturating_sub(self.in_flight())
    }

    /// Takes a slot if one is free, without waiting. Pair with `release()`.
    fn try_acquire(&self) -> bool {
        self.take()
    }

    /// Frees a slot taken by `try_acquire()`.
    fn release(&self) -> PyResult<()> {
        self.give_back()
    }

    /// Calls `func(*args, **kwargs)` in a slot.
    #[pyo3(signature = (func, /, *args, **kwargs))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        func: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.acquire(py)?;
        let result = func.call(args, kwargs);
        self.give_back()?;
        result
    }

    /// Awaits `func(*args, **kwargs)` in a slot: a coroutine.
    #[pyo3(signature = (func, /, *args, **kwargs))]
    fn call_async<'py>(
        slf: &Bound<'py, Self>,
        func: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        crate::breaker::aio(py)?.getattr(intern!(py, "bulkhead_call_async"))?.call1((slf, func, args, kwargs))
    }

    /// Decorates a plain or `async def` function.
    fn __call__<'py>(slf: &Bound<'py, Self>, func: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if !func.is_callable() {
            return Err(PyTypeError::new_err(format!(
                "a Bulkhead decorates a function; got {}",
                func.repr()?
            )));
        }
        crate::breaker::aio(py)?.getattr(intern!(py, "bulkhead_wrap"))?.call1((slf, func))
    }

    fn __enter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        slf.get().acquire(slf.py())?;
        Ok(slf.clone())
    }

    #[pyo3(signature = (exc_type, exc, traceback))]
    fn __exit__(
        &self,
        exc_type: &Bound<'_, PyAny>,
        exc: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let _ = (exc_type, exc, traceback);
        self.give_back()?;
        Ok(false)
    }

    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        crate::breaker::aio(py)?.getattr(intern!(py, "bulkhead_enter"))?.call1((slf,))
    }

    #[pyo3(signature = (exc_type, exc, traceback))]
    fn __aexit__<'py>(
        slf: &Bound<'py, Self>,
        exc_type: &Bound<'py, PyAny>,
        exc: &Bound<'py, PyAny>,
        traceback: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let suppress = slf.get().__exit__(exc_type, exc, traceback)?;
        crate::breaker::aio(slf.py())?.getattr(intern!(slf.py(), "ready"))?.call1((suppress,))
    }

    /// Raises `BulkheadFullError` for this bulkhead (used by the asyncio wait).
    fn _full(&self, py: Python<'_>) -> PyErr {
        errors::bulkhead_full(py, &self.name, self.max_concurrent)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Bulkhead(name={}, max_concurrent={}, in_flight={})",
            self.name.bind(py).repr()?,
            self.max_concurrent,
            self.in_flight()
        ))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.name)
    }
}
