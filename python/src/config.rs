//! A breaker's keyword arguments, read once into [`BreakerArgs`] for both
//! `Breaker(...)` and `Breaker.shared(path, ...)`, and checked there: the
//! core's `BreakerConfig`, the timeout, the name and the listeners. Errors
//! name the argument: `TypeError` for a wrong type, `ValueError` for a
//! wrong value (the core's `ConfigError` text, which names the field).

use core::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyDict, PyString, PyTuple};
use tripwire::{BreakerConfig, BreakerConfigBuilder};

use crate::args::{Secs, number, seconds};
use crate::as_given::AsGiven;
use crate::listeners::listener;

/// Declares [`BreakerArgs`] from the one list of keyword names: its
/// fields, [`BreakerArgs::KEYWORDS`] and the lookup of a field by name.
///
/// Why `Breaker(...)` and `Breaker.shared` take `**kwargs` rather than a
/// pyo3 `signature = (...)`: pyo3 reads a signature from the tokens written
/// in the attribute, so each entry point would spell every name twice more
/// (in the signature and as parameters), and no macro can write them there:
/// `#[pymethods]` sees the macro call, not the method it expands to. What
/// `(**kwargs)` hides, [`BreakerArgs::signature`] gives back to `help()`
/// and `mypy.stubtest`; `tests/test_keywords.py` holds the stub's names
/// for `Breaker.shared`, which has no `__signature__`, to the same list.
macro_rules! breaker_args {
    ($($key:ident),+ $(,)?) => {
        /// A breaker's keyword arguments as Python passed them; `None` for
        /// one left out or given as Python's `None`: its default.
        #[derive(Default)]
        pub(crate) struct BreakerArgs<'py> {
            $(pub(crate) $key: Option<Bound<'py, PyAny>>,)+
        }

        impl<'py> BreakerArgs<'py> {
            /// Every keyword a breaker takes, in the stub's order.
            pub(crate) const KEYWORDS: &'static [&'static str] = &[$(stringify!($key)),+];

            /// The field of the keyword `key`, if a breaker takes it.
            fn field(&mut self, key: &str) -> Option<&mut Option<Bound<'py, PyAny>>> {
                match key {
                    $(stringify!($key) => Some(&mut self.$key),)+
                    _ => None,
                }
            }
        }
    };
}

breaker_args! {
    failure_threshold,
    open_timeout,
    open_timeout_max,
    open_timeout_growth,
    open_timeout_jitter,
    half_open_max,
    half_open_successes,
    window,
    count_window,
    min_calls,
    failure_rate,
    slow_call,
    slow_rate,
    probe_timeout,
    max_hold,
    timeout,
    name,
    failure_on,
    ignore_on,
    failure_if,
    on_state_change,
    listeners,
    clock,
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

impl<'py> BreakerArgs<'py> {
    /// Reads `kwargs`. `callee` names the callable in the `TypeError` for a
    /// keyword a breaker does not take, worded as pyo3 words its own.
    pub(crate) fn from_kwargs(callee: &str, kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Self> {
        let mut args = Self::default();
        for (key, value) in kwargs.into_iter().flat_map(|k| k.iter()) {
            let key: String = key.extract()?;
            let Some(field) = args.field(&key) else {
                return Err(PyTypeError::new_err(format!(
                    "{callee} got an unexpected keyword argument '{key}'"
                )));
            };
            // None is the default, given or not: a wrapper may forward its own.
            *field = Some(value).filter(|v| !v.is_none());
        }
        Ok(args)
    }

    /// What `inspect.signature(Breaker)` and `help()` show: every keyword,
    /// keyword-only, None by default, as pyo3 would have written it from a
    /// `signature = (...)`.
    pub(crate) fn signature(py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inspect = py.import("inspect")?;
        let parameter = inspect.getattr("Parameter")?;
        let keyword_only = parameter.getattr("KEYWORD_ONLY")?;
        let default = [("default", py.None())].into_py_dict(py)?;
        let parameters = Self::KEYWORDS
            .iter()
            .map(|k| parameter.call((k, &keyword_only), Some(&default)))
            .collect::<PyResult<Vec<_>>>()?;
        inspect.getattr("Signature")?.call1((parameters,))
    }

    /// `timeout=` in seconds, more than 0; None: no timeout.
    pub(crate) fn timeout(&self) -> PyResult<Option<f64>> {
        let Some(t) = &self.timeout else { return Ok(None) };
        match seconds("timeout", t)? {
            d if d.is_zero() => {
                Err(PyValueError::new_err("timeout must be more than 0 seconds, or None for no timeout"))
            }
            d => Ok(Some(d.secs())),
        }
    }

    /// The core's config.
    pub(crate) fn config(&self) -> PyResult<BreakerConfig> {
        // A sync call cannot be cut short: one that outlasts the timeout
        // counts as slow (and `slow_rate` trips on those), unless
        // `slow_call` says otherwise. Errors name the argument that set it.
        let (slow_call, slow_call_arg) = match (&self.slow_call, &self.timeout) {
            (None, Some(t)) => (Some(t), "timeout"),
            (s, _) => (s.as_ref(), "slow_call"),
        };
        let mut b: BreakerConfigBuilder = BreakerConfig::builder();
        let mut g = AsGiven::default();
        if let Some(v) = &self.failure_threshold {
            b = b.failure_threshold(g.count("failure_threshold", v)?);
        }
        if let Some(v) = &self.open_timeout {
            b = b.open_timeout(g.seconds("open_timeout", v)?);
        }
        if let Some(v) = &self.open_timeout_max {
            b = b.open_timeout_max(g.seconds("open_timeout_max", v)?);
        }
        if let Some(v) = &self.open_timeout_growth {
            b = b.open_timeout_growth(number("open_timeout_growth", v)?);
        }
        if let Some(v) = &self.open_timeout_jitter {
            b = b.open_timeout_jitter(number("open_timeout_jitter", v)?);
        }
        if let Some(v) = &self.half_open_max {
            b = b.half_open_max(g.count("half_open_max", v)?);
        }
        if let Some(v) = &self.half_open_successes {
            b = b.half_open_successes(g.count("half_open_successes", v)?);
        }
        if let Some(v) = &self.window {
            let (buckets, width) = window(&mut g, v)?;
            b = b.window(buckets, width);
        }
        // After `window`, which would choose the time-based window again.
        if let Some(v) = &self.count_window {
            b = b.count_window(g.count("count_window", v)?);
        }
        if let Some(v) = &self.min_calls {
            b = b.min_calls(g.count("min_calls", v)?);
        }
        if let Some(v) = &self.failure_rate {
            b = b.failure_rate(number("failure_rate", v)?);
        }
        if let Some(v) = slow_call {
            b = b.slow_call(g.seconds(slow_call_arg, v)?);
        }
        if let Some(v) = &self.slow_rate {
            b = b.slow_rate(number("slow_rate", v)?);
        }
        if let Some(v) = &self.probe_timeout {
            b = b.probe_timeout(g.seconds("probe_timeout", v)?);
        }
        if let Some(v) = &self.max_hold {
            b = b.max_hold(g.seconds("max_hold", v)?);
        }
        b.build().map_err(|e| {
            let arg = if e.field() == "slow_call" { slow_call_arg } else { e.field() };
            g.error(arg, &e.to_string())
        })
    }

    /// `name=`: a non-empty `str`, or Python's `None`.
    pub(crate) fn name(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let Some(n) = &self.name else { return Ok(py.None().into_bound(py)) };
        match n.cast::<PyString>() {
            Ok(s) if !s.to_cow()?.is_empty() => Ok(s.clone().into_any()),
            _ => {
                Err(PyTypeError::new_err(format!("name must be a non-empty str or None, got {}", n.repr()?)))
            }
        }
    }

    /// `on_state_change=`, then each of `listeners=`.
    pub(crate) fn listeners(&self) -> PyResult<Vec<Py<PyAny>>> {
        let mut all = Vec::new();
        if let Some(f) = &self.on_state_change {
            all.push(listener("on_state_change", f)?);
        }
        if let Some(ls) = &self.listeners {
            let bad = || {
                PyTypeError::new_err("listeners must be an iterable of callables taking (breaker, from, to)")
            };
            for l in ls.try_iter().map_err(|_| bad())? {
                let l = l?;
                if !l.is_callable() {
                    return Err(bad());
                }
                all.push(l.unbind());
            }
        }
        Ok(all)
    }
}
