//! The core's retry budget: retries kept to a share of recent calls, so
//! that retrying cannot multiply the load on a dependency that is down.

use pyo3::prelude::*;
use tripwire::retry::RetryBudgetConfig;

use crate::args::{Secs, number};
use crate::as_given::AsGiven;
use crate::clock::{ClockSource, ManualClock, clock_arg};

/// A retry budget shared by the callers of one dependency: a lock-free
/// token bucket. Each call deposits `ratio` of a token, each retry takes a
/// whole one; deposits expire over about `ttl` seconds; a reserve of
/// `min_retries_per_sec × ttl` tokens lets a quiet client retry at all.
#[pyclass(module = "tripwire", frozen)]
pub struct RetryBudget {
    /// Boxed: the core's budget is aligned to a cache line (128 bytes),
    /// more than the interpreter aligns the objects it allocates (16).
    core: Box<tripwire::retry::RetryBudget>,
    clock: ClockSource,
    manual_clock: Option<Py<ManualClock>>,
}

impl RetryBudget {
    /// The core's budget.
    pub(crate) fn core(&self) -> &tripwire::retry::RetryBudget {
        &self.core
    }

    /// The clock the budget reads.
    pub(crate) fn clock(&self) -> &ClockSource {
        &self.clock
    }
}

#[pymethods]
impl RetryBudget {
    #[new]
    #[pyo3(signature = (ratio = None, *, ttl = None, min_retries_per_sec = None, clock = None))]
    fn new(
        ratio: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        min_retries_per_sec: Option<&Bound<'_, PyAny>>,
        clock: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut b = RetryBudgetConfig::builder();
        let mut g = AsGiven::default();
        if let Some(v) = ratio.filter(|v| !v.is_none()) {
            b = b.ratio(number("ratio", v)?);
        }
        if let Some(v) = ttl.filter(|v| !v.is_none()) {
            b = b.ttl(g.seconds("ttl", v)?);
        }
        if let Some(v) = min_retries_per_sec.filter(|v| !v.is_none()) {
            b = b.min_retries_per_sec(number("min_retries_per_sec", v)?);
        }
        let config = b.build().map_err(|e| g.error(e.field(), &e.to_string()))?;
        let (clock, manual_clock) = clock_arg(clock)?;
        Ok(Self { core: Box::new(tripwire::retry::RetryBudget::new(config)), clock, manual_clock })
    }

    /// Counts a call (a first attempt): adds `ratio` of a token.
    fn deposit(&self) {
        self.core.deposit(&self.clock);
    }

    /// Takes a token for a retry; False when less than one is left.
    fn try_withdraw(&self) -> bool {
        self.core.try_withdraw(&self.clock)
    }

    /// Tokens available now.
    #[getter]
    fn available(&self) -> f64 {
        f64::from(self.core.available_milli(&self.clock)) / 1000.0
    }

    /// The share of a token each call deposits.
    #[getter]
    fn ratio(&self) -> f64 {
        self.core.config().ratio()
    }

    /// How long a deposit counts, on average, in seconds.
    #[getter]
    fn ttl(&self) -> f64 {
        self.core.config().ttl().secs()
    }

    /// Retries per second allowed however few calls there are.
    #[getter]
    fn min_retries_per_sec(&self) -> f64 {
        self.core.config().min_retries_per_sec()
    }

    fn __repr__(&self) -> String {
        format!(
            "RetryBudget(ratio={:?}, ttl={:?}, min_retries_per_sec={:?}, available={:?})",
            self.ratio(),
            self.ttl(),
            self.min_retries_per_sec(),
            self.available()
        )
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        if let Some(c) = &self.manual_clock {
            visit.call(c)?;
        }
        Ok(())
    }
}
