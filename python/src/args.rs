//! The Rust classes' argument checks, for the Python modules that take the
//! same kinds of argument (`tripwire/_fallback.py`): one wording and one
//! set of rules for every argument of the package. A wrong type is a
//! `TypeError`, a wrong value (negative, too large for the core, not a
//! number) a `ValueError`; both name the argument. No argument can raise
//! `OverflowError`: an int too large for the core is a wrong value.

use core::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyFloat, PyInt, PyTuple, PyType};

use crate::classify::exception_tuple;

/// The name of `v`'s type, for messages.
pub(crate) fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// `repr(v)`, cut short: an int of a thousand digits says no more than its
/// first few.
pub(crate) fn short_repr(v: &Bound<'_, PyAny>) -> String {
    let r = v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
    match r.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &r[..cut]),
        None => r,
    }
}

/// An `int` argument the core keeps as a `u32`, at least `min`;
/// `owner` names the config in the message ("bulkhead", "retry").
pub(crate) fn count(owner: &str, arg: &str, v: &Bound<'_, PyAny>, min: u32) -> PyResult<u32> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("{arg} must be an int, got {}", type_name(v))));
    }
    v.extract::<u32>().ok().filter(|n| *n >= min).ok_or_else(|| {
        PyValueError::new_err(format!(
            "invalid {owner} config: {arg} = {}, expected an int from {min} to {}",
            short_repr(v),
            u32::MAX
        ))
    })
}

/// An `int` argument the core keeps as a `u32`, at least 1.
pub(crate) fn positive_count(owner: &str, arg: &str, v: &Bound<'_, PyAny>) -> PyResult<u32> {
    count(owner, arg, v, 1)
}

/// A float argument (an `int` is accepted too, a `bool` is not).
pub(crate) fn number(arg: &str, v: &Bound<'_, PyAny>) -> PyResult<f64> {
    if v.is_instance_of::<PyBool>() || !(v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>()) {
        return Err(PyTypeError::new_err(format!("{arg} must be a number, got {}", type_name(v))));
    }
    // Only an int beyond a float's range fails here.
    v.extract::<f64>()
        .map_err(|_| PyValueError::new_err(format!("{arg} = {}, too large for a float", short_repr(v))))
}

/// Seconds as a float → nanoseconds, or a `ValueError` naming `arg`.
pub(crate) fn seconds_to_ns(arg: &str, seconds: f64) -> PyResult<u64> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(PyValueError::new_err(format!(
            "{arg} must be a finite, non-negative number of seconds, got {seconds}"
        )));
    }
    // The nearest nanosecond: the product is often a hair below the whole
    // number meant (1.001 s is 1000999999.9999999 ns), which a cut would
    // take one short.
    // A positive time is never 0 ns: that reads as "off" (slow_call) or is
    // refused as nothing at all (a timeout), which it was not.
    let ns = (seconds * 1e9).round().max(if seconds > 0.0 { 1.0 } else { 0.0 });
    // Saturate beyond 584 years; the config's own range check reports it.
    Ok(if ns >= u64::MAX as f64 { u64::MAX } else { ns as u64 })
}

static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `datetime.timedelta`, looked up once.
fn timedelta(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    TIMEDELTA.import(py, "datetime", "timedelta")
}

/// A duration in seconds: an int, a float or a `datetime.timedelta`,
/// finite and not negative; more than 584 years is taken as 584 years
/// (the core's range check, where there is one, reports it).
pub(crate) fn seconds(arg: &str, v: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let s = if v.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{arg} must be a number of seconds (int, float or timedelta), got bool"
        )));
    } else if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() {
        match v.extract::<f64>() {
            Ok(s) => s,
            // An int beyond a float's range: too long, or too negative.
            Err(_) if v.lt(0)? => f64::NEG_INFINITY,
            Err(_) => f64::INFINITY,
        }
    } else if v.is_instance(timedelta(v.py())?)? {
        // Any timedelta, subclasses too (pandas' Timedelta, pendulum's
        // Duration): the stubs' `Seconds` takes them all.
        v.call_method0("total_seconds")?.extract()?
    } else {
        return Err(PyTypeError::new_err(format!(
            "{arg} must be a number of seconds (int, float or timedelta), got {}",
            type_name(v)
        )));
    };
    // Saturated before the conversion rejects an infinite one: an int too
    // large for a float is a long time, not "inf".
    let s = if s == f64::INFINITY && v.is_instance_of::<PyInt>() { f64::MAX } else { s };
    Ok(Duration::from_nanos(seconds_to_ns(arg, s)?))
}

/// A duration as Python's seconds: the nanoseconds divided once, the
/// nearest float to what they are. `Duration::as_secs_f64` adds the
/// fraction to the whole seconds, a second rounding that reads 1.118 s
/// back as 1.1179999999999999.
pub(crate) trait Secs {
    fn secs(self) -> f64;
}

impl Secs for Duration {
    #[inline]
    fn secs(self) -> f64 {
        match u64::try_from(self.as_nanos()) {
            Ok(ns) => ns as f64 / 1e9,
            // Beyond 584 years (a header's absurd wait): as long as it is.
            Err(_) => self.as_secs_f64(),
        }
    }
}

/// `value` in seconds, None staying None; `TypeError`/`ValueError` naming
/// `arg`.
#[pyfunction]
#[pyo3(name = "_seconds_or_none")]
pub(crate) fn seconds_or_none(arg: &str, value: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    if value.is_none() {
        return Ok(None);
    }
    Ok(Some(seconds(arg, value)?.secs()))
}

/// `value` (an exception class, or a tuple or list of them) as a tuple;
/// `TypeError` naming `arg`.
#[pyfunction]
#[pyo3(name = "_exception_classes")]
pub(crate) fn exception_classes(arg: &str, value: &Bound<'_, PyAny>) -> PyResult<Py<PyTuple>> {
    exception_tuple(arg, value)
}
