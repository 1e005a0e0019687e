//! Python arguments → the core's `BreakerConfig`, with errors that name the
//! argument: `TypeError` for a wrong type, `ValueError` for a wrong value
//! (the core's `ConfigError` text, which names the field).

use core::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};
use tripwire::{BreakerConfig, BreakerConfigBuilder};

use crate::clock::seconds_to_ns;

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// An `int` argument that the core keeps as a `u32`.
pub(crate) fn count(arg: &str, v: &Bound<'_, PyAny>) -> PyResult<u32> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("{arg} must be an int, got {}", type_name(v))));
    }
    let n: i128 = v.extract()?;
    u32::try_from(n).map_err(|_| {
        PyValueError::new_err(format!("invalid breaker config: {arg} = {n}, expected a positive int"))
    })
}

/// A float argument (an `int` is accepted too).
pub(crate) fn number(arg: &str, v: &Bound<'_, PyAny>) -> PyResult<f64> {
    if v.is_instance_of::<PyBool>() || !(v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>()) {
        return Err(PyTypeError::new_err(format!("{arg} must be a number, got {}", type_name(v))));
    }
    v.extract()
}

/// A duration in seconds: an int, a float or a `datetime.timedelta`.
pub(crate) fn seconds(arg: &str, v: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let s = if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() {
        number(arg, v)?
    } else if v.hasattr("total_seconds")? && type_name(v) == "timedelta" {
        v.call_method0("total_seconds")?.extract()?
    } else {
        return Err(PyTypeError::new_err(format!(
            "{arg} must be a number of seconds (int, float or timedelta), got {}",
            type_name(v)
        )));
    };
    Ok(Duration::from_nanos(seconds_to_ns(arg, s)?))
}

/// The breaker's config arguments as Python passed them.
pub(crate) struct ConfigArgs<'a, 'py> {
    pub failure_threshold: &'a Bound<'py, PyAny>,
    pub open_timeout: &'a Bound<'py, PyAny>,
    pub open_timeout_max: Option<&'a Bound<'py, PyAny>>,
    pub open_timeout_growth: &'a Bound<'py, PyAny>,
    pub open_timeout_jitter: &'a Bound<'py, PyAny>,
    pub half_open_max: &'a Bound<'py, PyAny>,
    pub half_open_successes: &'a Bound<'py, PyAny>,
}

impl ConfigArgs<'_, '_> {
    pub(crate) fn build(&self) -> PyResult<BreakerConfig> {
        let mut b: BreakerConfigBuilder = BreakerConfig::builder()
            .failure_threshold(count("failure_threshold", self.failure_threshold)?)
            .open_timeout(seconds("open_timeout", self.open_timeout)?)
            .open_timeout_growth(number("open_timeout_growth", self.open_timeout_growth)?)
            .open_timeout_jitter(number("open_timeout_jitter", self.open_timeout_jitter)?)
            .half_open_max(count("half_open_max", self.half_open_max)?)
            .half_open_successes(count("half_open_successes", self.half_open_successes)?);
        if let Some(max) = self.open_timeout_max.filter(|v| !v.is_none()) {
            b = b.open_timeout_max(seconds("open_timeout_max", max)?);
        }
        b.build().map_err(|e| PyValueError::new_err(e.to_string()))
    }
}
