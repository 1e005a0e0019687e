//! Where a Python breaker reads the time: the host's monotonic clock, or a
//! [`ManualClock`] that tests move by hand.

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// The clock a breaker reads (only when a decision needs the time).
#[derive(Debug, Clone)]
pub(crate) enum ClockSource {
    /// `CLOCK_MONOTONIC`, the same in every process on the host.
    Monotonic,
    /// A clock moved by hand, shared with the Python `ManualClock` object.
    Manual(Arc<tripwire::ManualClock>),
}

impl tripwire::Clock for ClockSource {
    #[inline]
    fn now(&self) -> u64 {
        match self {
            ClockSource::Monotonic => tripwire::MonotonicClock.now(),
            ClockSource::Manual(c) => c.now(),
        }
    }
}

/// `clock=`: a `ManualClock`, or None for the host's monotonic clock.
pub(crate) fn clock_arg(
    clock: Option<&Bound<'_, PyAny>>,
) -> PyResult<(ClockSource, Option<Py<ManualClock>>)> {
    match clock.filter(|c| !c.is_none()) {
        None => Ok((ClockSource::Monotonic, None)),
        Some(c) => match c.cast::<ManualClock>() {
            Ok(m) => Ok((ClockSource::Manual(m.get().inner.clone()), Some(m.clone().unbind()))),
            Err(_) => Err(PyTypeError::new_err(format!(
                "clock must be a tripwire.ManualClock or None, got {}",
                c.repr()?
            ))),
        },
    }
}

/// A number of seconds as the clock's nanoseconds (saturating).
fn nanos(arg: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    let d = crate::args::seconds(arg, v)?;
    Ok(tripwire::duration_ns(d))
}

/// A clock that only moves when told to, for tests and simulations: pass it
/// as `clock=` to a `Breaker`.
///
/// ```python
/// clock = tripwire.ManualClock()
/// breaker = tripwire.Breaker(failure_threshold=1, open_timeout=5.0, clock=clock)
/// clock.advance(5.0)
/// ```
#[pyclass(module = "tripwire", frozen)]
#[derive(Debug)]
pub struct ManualClock {
    pub(crate) inner: Arc<tripwire::ManualClock>,
}

#[pymethods]
impl ManualClock {
    #[new]
    #[pyo3(signature = (start = None))]
    fn new(start: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let ns = match start.filter(|s| !s.is_none()) {
            Some(s) => nanos("start", s)?,
            None => 0,
        };
        Ok(Self { inner: Arc::new(tripwire::ManualClock::new(ns)) })
    }

    /// Moves the clock forward by `seconds` (≥ 0).
    fn advance(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.advance(core::time::Duration::from_nanos(nanos("seconds", seconds)?));
        Ok(())
    }

    /// Sets the clock to `seconds` if that is not earlier than it reads now.
    fn set(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.set(nanos("seconds", seconds)?);
        Ok(())
    }

    /// The time it reads, in seconds.
    fn now(&self) -> f64 {
        use tripwire::Clock;
        self.inner.now() as f64 / 1e9
    }

    fn __repr__(&self) -> String {
        format!("ManualClock({:?})", self.now())
    }
}

/// `clock=`: a `ManualClock` or None; `TypeError` otherwise.
#[pyfunction]
#[pyo3(name = "_manual_clock")]
pub(crate) fn manual_clock(value: &Bound<'_, PyAny>) -> PyResult<Option<Py<ManualClock>>> {
    Ok(clock_arg(Some(value))?.1)
}
