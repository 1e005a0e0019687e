//! Python arguments → the core's `BreakerConfig`, with errors that name the
//! argument: `TypeError` for a wrong type, `ValueError` for a wrong value
//! (the core's `ConfigError` text, which names the field).

use core::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tripwire::{BreakerConfig, BreakerConfigBuilder};

use crate::args;

/// An `int` argument the core keeps as a `u32`; the core checks its range
/// (its message names the field), so any `u32` passes here.
fn count(arg: &str, v: &Bound<'_, PyAny>) -> PyResult<u32> {
    args::count("breaker", arg, v, 0)
}

use args::{number, seconds};

/// The breaker's config arguments as Python passed them; `None` (or
/// Python's `None`) leaves the core's default.
pub(crate) struct ConfigArgs<'a, 'py> {
    pub failure_threshold: Option<&'a Bound<'py, PyAny>>,
    pub open_timeout: Option<&'a Bound<'py, PyAny>>,
    pub open_timeout_max: Option<&'a Bound<'py, PyAny>>,
    pub open_timeout_growth: Option<&'a Bound<'py, PyAny>>,
    pub open_timeout_jitter: Option<&'a Bound<'py, PyAny>>,
    pub half_open_max: Option<&'a Bound<'py, PyAny>>,
    pub half_open_successes: Option<&'a Bound<'py, PyAny>>,
    pub window: Option<&'a Bound<'py, PyAny>>,
    pub count_window: Option<&'a Bound<'py, PyAny>>,
    pub min_calls: Option<&'a Bound<'py, PyAny>>,
    pub failure_rate: Option<&'a Bound<'py, PyAny>>,
    pub slow_call: Option<&'a Bound<'py, PyAny>>,
    pub slow_rate: Option<&'a Bound<'py, PyAny>>,
}

fn given<'a, 'py>(v: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    v.filter(|v| !v.is_none())
}

/// `window=(buckets, bucket_width_seconds)`.
fn window(v: &Bound<'_, PyAny>) -> PyResult<(u32, Duration)> {
    let bad = || {
        PyTypeError::new_err(format!(
            "window must be a (buckets, bucket_width_seconds) tuple, got {}",
            v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into())
        ))
    };
    let t = v.cast::<PyTuple>().map_err(|_| bad())?;
    if t.len() != 2 {
        return Err(bad());
    }
    Ok((count("window_buckets", &t.get_item(0)?)?, seconds("window_bucket_width", &t.get_item(1)?)?))
}

impl ConfigArgs<'_, '_> {
    pub(crate) fn build(&self) -> PyResult<BreakerConfig> {
        let mut b: BreakerConfigBuilder = BreakerConfig::builder();
        if let Some(v) = given(self.failure_threshold) {
            b = b.failure_threshold(count("failure_threshold", v)?);
        }
        if let Some(v) = given(self.open_timeout) {
            b = b.open_timeout(seconds("open_timeout", v)?);
        }
        if let Some(v) = given(self.open_timeout_max) {
            b = b.open_timeout_max(seconds("open_timeout_max", v)?);
        }
        if let Some(v) = given(self.open_timeout_growth) {
            b = b.open_timeout_growth(number("open_timeout_growth", v)?);
        }
        if let Some(v) = given(self.open_timeout_jitter) {
            b = b.open_timeout_jitter(number("open_timeout_jitter", v)?);
        }
        if let Some(v) = given(self.half_open_max) {
            b = b.half_open_max(count("half_open_max", v)?);
        }
        if let Some(v) = given(self.half_open_successes) {
            b = b.half_open_successes(count("half_open_successes", v)?);
        }
        if let Some(v) = given(self.window) {
            let (buckets, width) = window(v)?;
            b = b.window(buckets, width);
        }
        // After `window`, which would choose the time-based window again.
        if let Some(v) = given(self.count_window) {
            b = b.count_window(count("count_window", v)?);
        }
        if let Some(v) = given(self.min_calls) {
            b = b.min_calls(count("min_calls", v)?);
        }
        if let Some(v) = given(self.failure_rate) {
            b = b.failure_rate(number("failure_rate", v)?);
        }
        if let Some(v) = given(self.slow_call) {
            b = b.slow_call(seconds("slow_call", v)?);
        }
        if let Some(v) = given(self.slow_rate) {
            b = b.slow_rate(number("slow_rate", v)?);
        }
        b.build().map_err(|e| PyValueError::new_err(e.to_string()))
    }
}
