//! Where a Python breaker reads the time: the host's monotonic clock, or a
//! [`ManualClock`] that tests move by hand.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::args::short_repr;

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

/// The clock's end: it counts nanoseconds in a `u64`, and a clock there
/// could never move again (a breaker on it would never see a cool-down
/// end), so no time reaches it.
const END_NS: u64 = u64::MAX;

/// Nanoseconds as seconds, exactly (`18446744073.709551615`).
fn exact_secs(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// A time `arg` sets the clock to, in nanoseconds; a `ValueError` for one
/// at or past the clock's end.
fn time_ns(arg: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    let ns = tripwire::clock::duration_ns(crate::args::seconds(arg, v)?);
    if ns == END_NS {
        return Err(PyValueError::new_err(format!(
            "{arg} = {}, expected less than {} s (the ManualClock counts nanoseconds in 64 bits)",
            short_repr(v),
            exact_secs(END_NS)
        )));
    }
    Ok(ns)
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
            Some(s) => time_ns("start", s)?,
            None => 0,
        };
        Ok(Self { inner: Arc::new(tripwire::ManualClock::new(ns)) })
    }

    /// Moves the clock forward by `seconds` (≥ 0); `ValueError`, the clock
    /// unmoved, for a move that would take it to its end (18446744073.7 s).
    fn advance(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        use tripwire::Clock;
        let by = tripwire::clock::duration_ns(crate::args::seconds("seconds", seconds)?);
        // Checked and moved under the GIL, which every mover holds: no
        // other advance comes between.
        let now = self.inner.now();
        if now.checked_add(by).is_none_or(|t| t == END_NS) {
            return Err(PyValueError::new_err(format!(
                "seconds = {} would take the ManualClock from {:?} s past its end, {} s: expected less than {} s",
                short_repr(seconds),
                self.now(),
                exact_secs(END_NS),
                exact_secs(END_NS - now)
            )));
        }
        self.inner.advance(core::time::Duration::from_nanos(by));
        Ok(())
    }

    /// Sets the clock to `seconds` if that is not earlier than it reads
    /// now; `ValueError` for a time at or past its end.
    fn set(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.set(time_ns("seconds", seconds)?);
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
