//! The core's bulkhead: a capped count of calls in flight.
//!
//! Admission is one compare-and-swap. With `max_wait`, a sync caller that
//! finds no free slot parks in the core (detached from the interpreter, so
//! other threads run) until a release wakes it or the deadline passes; an
//! asyncio caller awaits the core's awaitable acquire, which a release
//! wakes through the same list (`bulkhead_wait.rs`), never blocking the
//! event loop. Only a final refusal is counted: a call that waited and got
//! a slot was not refused.

use core::time::Duration;
use std::sync::Arc;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use pyo3::{PyTraverseError, PyVisit, intern};

use crate::args::{Secs, positive_count, seconds};
// `BulkheadWait` refers back to its `Bulkhead`: a bulkhead and the
// awaitable wait it hands a coroutine are one pair, kept in two files
// because the wait is a Python class of its own (`await bulkhead`).
use crate::bulkhead_wait::{BulkheadWait, Wakeups};
use crate::errors;
use crate::registry;

/// A cap on the calls in flight to one dependency.
///
/// `with bulkhead:` / `async with bulkhead:`, as a decorator (plain and
/// `async def` functions) or through `call` / `call_async`. A full bulkhead
/// raises `BulkheadFullError` at once, or after waiting up to `max_wait`
/// seconds for a slot. A named bulkhead is exported by `prometheus_text()`.
#[pyclass(module = "tripwire", frozen, weakref)]
pub struct Bulkhead {
    /// Behind an `Arc`: a coroutine's wait holds it too. (And not inline:
    /// the core's bulkhead is aligned to a cache line, 128 bytes, more than
    /// the interpreter aligns the objects it allocates, 16.)
    core: Arc<tripwire::Bulkhead>,
    /// Coroutines' waits woken by a release, until their loops are told.
    wakeups: Arc<Wakeups>,
    max_concurrent: u32,
    max_wait: Option<Duration>,
    /// `str` or `None`.
    name: Py<PyAny>,
}

impl Bulkhead {
    pub(crate) fn wakeups(&self) -> &Wakeups {
        &self.wakeups
    }

    /// Takes a slot, waiting up to `max_wait`; `BulkheadFullError` if none.
    fn acquire(&self, py: Python<'_>) -> PyResult<()> {
        let Some(max_wait) = self.max_wait else {
            // No wait: this refusal is final, and the core counts it.
            return if self.core.try_acquire_raw() { Ok(()) } else { Err(self.full(py)) };
        };
        // A free slot, taken without letting go of the interpreter.
        if self.core.try_acquire_raw_before_wait() {
            return Ok(());
        }
        // The slot is released by `give_back`, on `__exit__` or when the
        // call returns, not when the core's permit would drop.
        let took = py.detach(|| self.core.acquire_timeout(max_wait).map(core::mem::forget).is_ok());
        // The wait's end may have passed a notification on to a coroutine.
        self.wakeups.deliver(py);
        if took { Ok(()) } else { Err(self.full(py)) }
    }

    /// Frees a slot, and tells the loops of coroutines the release woke.
    pub(crate) fn give_back(&self, py: Python<'_>) -> PyResult<()> {
        let released = self.core.release_raw();
        self.wakeups.deliver(py);
        if released {
            Ok(())
        } else {
            Err(PyRuntimeError::new_err("Bulkhead.release() without a slot taken"))
        }
    }

    fn full(&self, py: Python<'_>) -> PyErr {
        errors::bulkhead_full(py, &self.name, self.max_concurrent)
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
        let max = positive_count("bulkhead", "max_concurrent", max_concurrent)?;
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
        let core = Arc::new(tripwire::Bulkhead::new(max));
        if let Ok(n) = name.bind(py).cast::<PyString>()
            && !n.to_cow()?.is_empty()
        {
            registry::register_bulkhead(&n.to_cow()?, &core);
        }
        Ok(Self { core, wakeups: Arc::default(), max_concurrent: max, max_wait, name })
    }

    /// The most calls in flight at once.
    #[getter]
    fn max_concurrent(&self) -> u32 {
        self.max_concurrent
    }

    /// How long a call waits for a slot, in seconds; None: it does not wait.
    #[getter]
    fn max_wait(&self) -> Option<f64> {
        self.max_wait.map(|d| d.secs())
    }

    /// The bulkhead's name, or None.
    #[getter]
    fn name(&self, py: Python<'_>) -> Py<PyAny> {
        self.name.clone_ref(py)
    }

    /// Calls in flight now.
    #[getter]
    fn in_flight(&self) -> u32 {
        self.core.in_flight()
    }

    /// Counters: slots handed out, calls refused, in flight now, peak.
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.core.snapshot();
        let d = PyDict::new(py);
        d.set_item("acquired", s.acquired)?;
        d.set_item("rejected", s.rejected)?;
        d.set_item("in_flight", s.in_flight)?;
        d.set_item("peak_in_flight", s.peak_in_flight)?;
        Ok(d)
    }

    /// Free slots now.
    #[getter]
    fn available(&self) -> u32 {
        self.max_concurrent.saturating_sub(self.in_flight())
    }

    /// Takes a slot if one is free, without waiting (a refusal counts).
    /// Pair with `release()`.
    fn try_acquire(&self) -> bool {
        self.core.try_acquire_raw()
    }

    /// Frees a slot taken by `try_acquire()`.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        self.give_back(py)
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
        self.give_back(py)?;
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
        crate::aio::aio(py)?.getattr(intern!(py, "bulkhead_call_async"))?.call1((slf, func, args, kwargs))
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
        crate::aio::aio(py)?.getattr(intern!(py, "bulkhead_wrap"))?.call1((slf, func))
    }

    fn __enter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        slf.get().acquire(slf.py())?;
        Ok(slf.clone())
    }

    #[pyo3(signature = (exc_type, exc, traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let _ = (exc_type, exc, traceback);
        // None: the block's exception, if any, goes on.
        self.give_back(py)
    }

    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        crate::aio::aio(py)?.getattr(intern!(py, "bulkhead_enter"))?.call1((slf,))
    }

    #[pyo3(signature = (exc_type, exc, traceback))]
    fn __aexit__<'py>(
        slf: &Bound<'py, Self>,
        exc_type: &Bound<'py, PyAny>,
        exc: &Bound<'py, PyAny>,
        traceback: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        slf.get().__exit__(slf.py(), exc_type, exc, traceback)?;
        crate::aio::aio(slf.py())?.getattr(intern!(slf.py(), "ready"))?.call1((slf.py().None(),))
    }

    /// `BulkheadFullError` for this bulkhead (raised by the asyncio wait).
    fn _full(&self, py: Python<'_>) -> PyErr {
        self.full(py)
    }

    /// A coroutine's wait for a slot, up to `max_wait`, on `event_loop`
    /// (`tripwire/_aio.py` awaits it); None with a free slot taken at once.
    #[pyo3(signature = (event_loop, /))]
    fn _wait<'py>(
        slf: &Bound<'py, Self>,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, BulkheadWait>>> {
        let this = slf.get();
        if this.core.try_acquire_raw_before_wait() {
            return Ok(None);
        }
        let max_wait = this.max_wait.unwrap_or(Duration::ZERO);
        BulkheadWait::start(slf, Arc::clone(&this.core), Arc::clone(&this.wakeups), max_wait, event_loop)
            .map(Some)
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
