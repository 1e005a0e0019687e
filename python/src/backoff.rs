//! The core's backoff: the delays between retries.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};
use tripwire::retry::{BackoffConfig, Jitter};

use crate::args::{Secs, number};
use crate::as_given::AsGiven;

/// Exponential delays with a cap and jitter: `"full"` (anywhere up to the
/// curve), `"equal"` (at least half of it), `"decorrelated"` (grows from the
/// previous delay) or `"none"`. One instance per retry loop: it remembers
/// the attempt.
/// Not frozen: its methods borrow it mutably, and a second thread using
/// the same instance at once gets a `RuntimeError`, never a torn state.
#[pyclass(module = "tripwire")]
pub struct Backoff {
    core: tripwire::retry::Backoff,
    config: BackoffConfig,
}

/// `jitter=`: a mode named as the core names it.
pub(crate) fn jitter(v: &Bound<'_, PyAny>) -> PyResult<Jitter> {
    let s = v.cast::<PyString>().map_err(|_| PyTypeError::new_err("jitter must be a str"))?.to_cow()?;
    s.parse().map_err(|e| PyValueError::new_err(format!("invalid backoff config: jitter = {s:?}, {e}")))
}

/// An argument given and not None.
pub(crate) fn given<'a, 'py>(v: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    v.filter(|v| !v.is_none())
}

/// `seed=`: an int the core keeps as a `u64`.
pub(crate) fn seed(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("seed must be an int, got {}", v.repr()?)));
    }
    let n: Result<u64, _> = v.extract();
    n.or_else(|_| {
        Err(PyValueError::new_err(format!("seed = {}, expected an int from 0 to 2**64 - 1", v.repr()?)))
    })
}

/// The backoff arguments (None: the core's default) → the core's config;
/// errors name the argument.
pub(crate) fn backoff_config(
    base: Option<&Bound<'_, PyAny>>,
    cap: Option<&Bound<'_, PyAny>>,
    factor: Option<&Bound<'_, PyAny>>,
    jitter: Option<&Bound<'_, PyAny>>,
) -> PyResult<BackoffConfig> {
    let mut b = BackoffConfig::builder();
    let mut g = AsGiven::default();
    if let Some(v) = given(base) {
        b = b.base(g.seconds("base", v)?);
    }
    if let Some(v) = given(cap) {
        b = b.cap(g.seconds("cap", v)?);
    }
    if let Some(v) = given(factor) {
        b = b.factor(number("factor", v)?);
    }
    if let Some(v) = given(jitter) {
        b = b.jitter(self::jitter(v)?);
    }
    b.build().map_err(|e| g.error(e.field(), &e.to_string()))
}

#[pymethods]
impl Backoff {
    #[new]
    #[pyo3(signature = (*, base = None, cap = None, factor = None, jitter = None, seed = None))]
    fn new(
        base: Option<&Bound<'_, PyAny>>,
        cap: Option<&Bound<'_, PyAny>>,
        factor: Option<&Bound<'_, PyAny>>,
        jitter: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let config = backoff_config(base, cap, factor, jitter)?;
        let core = match given(seed) {
            Some(s) => tripwire::retry::Backoff::seeded(config, self::seed(s)?),
            None => tripwire::retry::Backoff::new(config),
        };
        Ok(Self { core, config })
    }

    /// The delay before the next retry, in seconds.
    fn next_delay(&mut self) -> f64 {
        self.core.next_delay().secs()
    }

    /// Makes the next delay exactly `seconds` (e.g. a server's Retry-After).
    fn override_next(&mut self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        self.core.override_next(crate::args::seconds("seconds", seconds)?);
        Ok(())
    }

    /// Back to the first delay.
    fn reset(&mut self) {
        self.core.reset();
    }

    /// Delays handed out since it was made or reset.
    #[getter]
    fn attempt(&self) -> u32 {
        self.core.attempt()
    }

    /// The first delay, in seconds.
    #[getter]
    fn base(&self) -> f64 {
        self.config.base().secs()
    }

    /// The longest computed delay, in seconds.
    #[getter]
    fn cap(&self) -> f64 {
        self.config.cap().secs()
    }

    /// Growth between two points of the curve.
    #[getter]
    fn factor(&self) -> f64 {
        self.config.factor()
    }

    /// The jitter mode.
    #[getter]
    fn jitter(&self) -> &'static str {
        self.config.jitter().as_str()
    }

    fn __repr__(&self) -> String {
        format!(
            "Backoff(base={:?}, cap={:?}, factor={:?}, jitter={:?})",
            self.base(),
            self.cap(),
            self.factor(),
            self.jitter()
        )
    }
}
