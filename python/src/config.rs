//! Python arguments → the core's `BreakerConfig`, with errors that name the
//! argument: `TypeError` for a wrong type, `ValueError` for a wrong value
//! (the core's `ConfigError` text, which names the field).

use core::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tripwire::{BreakerConfig, BreakerConfigBuilder};

use crate::args::number;
use crate::as_given::AsGiven;

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
    pub probe_timeout: Option<&'a Bound<'py, PyAny>>,
    pub max_hold: Option<&'a Bound<'py, PyAny>>,
    /// The argument that set `slow_call`: itself, or `timeout` (which a
    /// sync call's slow-call time defaults to).
    pub slow_call_arg: &'static str,
}

fn given<'a, 'py>(v: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    v.filter(|v| !v.is_none())
}

/// `window=(buckets, bucket_width_seconds)`.
fn window(given: &mut AsGiven, v: &Bound<'_, PyAny>) -> PyResult<(u32, Duration)> {
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
    let buckets = given.count("window_buckets", &t.get_item(0)?)?;
    Ok((buckets, given.seconds("window_bucket_width", &t.get_item(1)?)?))
}

impl ConfigArgs<'_, '_> {
    pub(crate) fn build(&self) -> PyResult<BreakerConfig> {
        let mut b: BreakerConfigBuilder = BreakerConfig::builder();
        let mut g = AsGiven::default();
        if let Some(v) = given(self.failure_threshold) {
            b = b.failure_threshold(g.count("failure_threshold", v)?);
        }
        if let Some(v) = given(self.open_timeout) {
            b = b.open_timeout(g.seconds("open_timeout", v)?);
        }
        if let Some(v) = given(self.open_timeout_max) {
            b = b.open_timeout_max(g.seconds("open_timeout_max", v)?);
        }
        if let Some(v) = given(self.open_timeout_growth) {
            b = b.open_timeout_growth(number("open_timeout_growth", v)?);
        }
        if let Some(v) = given(self.open_timeout_jitter) {
            b = b.open_timeout_jitter(number("open_timeout_jitter", v)?);
        }
        if let Some(v) = given(self.half_open_max) {
            b = b.half_open_max(g.count("half_open_max", v)?);
        }
        if let Some(v) = given(self.half_open_successes) {
            b = b.half_open_successes(g.count("half_open_successes", v)?);
        }
        if let Some(v) = given(self.window) {
            let (buckets, width) = window(&mut g, v)?;
            b = b.window(buckets, width);
        }
        // After `window`, which would choose the time-based window again.
        if let Some(v) = given(self.count_window) {
            b = b.count_window(g.count("count_window", v)?);
        }
        if let Some(v) = given(self.min_calls) {
            b = b.min_calls(g.count("min_calls", v)?);
        }
        if let Some(v) = given(self.failure_rate) {
            b = b.failure_rate(number("failure_rate", v)?);
        }
        if let Some(v) = given(self.slow_call) {
            b = b.slow_call(g.seconds(self.slow_call_arg, v)?);
        }
        if let Some(v) = given(self.slow_rate) {
            b = b.slow_rate(number("slow_rate", v)?);
        }
        if let Some(v) = given(self.probe_timeout) {
            b = b.probe_timeout(g.seconds("probe_timeout", v)?);
        }
        if let Some(v) = given(self.max_hold) {
            b = b.max_hold(g.seconds("max_hold", v)?);
        }
        b.build().map_err(|e| {
            let arg = if e.field() == "slow_call" { self.slow_call_arg } else { e.field() };
            g.error(arg, &e.to_string())
        })
    }
}
