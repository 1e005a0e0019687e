//! The core's retry decisions for `tripwire.retry` (`tripwire/_retry.py`).
//!
//! [`RetryPolicy`] validates the arguments once and judges each failed
//! attempt's exception; [`RetryRun`] is one call's [`tripwire::retry::RetryLoop`].
//! Python runs the attempts and sleeps (`time.sleep`, or `await
//! asyncio.sleep`); how long it waits and when it gives up are the core's
//! decisions, as in a Rust retry: a refusal (`CircuitOpenError`,
//! `BulkheadFullError`) and backpressure (a 429 or 418, which the breaker's
//! hold answers) are never retried, a server's hint is the wait exactly, a
//! wait past the deadline is not begun, each retry takes a token from the
//! budget.

use core::time::Duration;

use pyo3::exceptions::{PyTimeoutError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyTuple};
use pyo3::{PyTraverseError, PyVisit};
use tripwire::{
    Assessment, ConfigError,
    retry::{Classify, Refusal, RetryError, RetryLoop},
};

use crate::args::{Secs, seconds};
use crate::as_given::AsGiven;
use crate::backoff::{backoff_config, given, seed};
use crate::budget::RetryBudget;
use crate::classify::exception_tuple;
use crate::clock::ClockSource;
use crate::errors;

/// What the binding made of one failed attempt's exception: the error the
/// core's loop judges.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    /// A guard's refusal, which the core never retries.
    refusal: bool,
    /// What `retry_on`, `give_up_on`, `retry_if` and the HTTP statuses
    /// say: only a failure is retried.
    assessment: Assessment,
    /// The pause `retry_after` named for a failure, if any.
    hint: Option<Duration>,
}

impl Attempt {
    /// An attempt no retry follows: the caller's fault or a `give_up_on`
    /// (ignored), or backpressure that the breaker's hold answers.
    const fn last(assessment: Assessment) -> Self {
        Attempt { refusal: false, assessment, hint: None }
    }
}

impl Refusal for Attempt {
    fn is_refusal(&self) -> bool {
        self.refusal
    }
}

/// The core's classifier for an [`Attempt`]: the judgement reached, and
/// the pause `retry_after` named.
#[derive(Debug, Clone, Copy)]
struct Classifier;

impl Classify<Attempt> for Classifier {
    fn classify(&self, a: &Attempt) -> Assessment {
        a.assessment
    }

    fn retry_after(&self, a: &Attempt) -> Option<Duration> {
        a.hint
    }
}

/// A `retry_after` hint in seconds. An infinite one is the longest wait
/// there is, which the core cuts to `max_retry_after` as it does any wait
/// too long (an int beyond a float's range is taken so by `seconds`); a
/// negative or NaN one, or one of another type, is the callable's bug.
fn hint_seconds(v: &Bound<'_, PyAny>) -> PyResult<Duration> {
    if v.is_instance_of::<PyFloat>() && v.extract::<f64>()? == f64::INFINITY {
        // As long as `seconds` saturates any other wait: 584 years.
        return Ok(Duration::from_nanos(u64::MAX));
    }
    seconds("retry_after's result", v)
}

/// The core's message under the Python argument's name, with the value as
/// given.
fn policy_error(g: &AsGiven, e: ConfigError) -> PyErr {
    let e = match e.field() {
        "max_attempts" => e.with_field("attempts"),
        "max_total" => e.with_field("deadline"),
        _ => e,
    };
    g.error(e.field(), &e.to_string())
}

/// `None`, or a callable (`retry_if`, `retry_after`).
fn callable(arg: &str, v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Py<PyAny>>> {
    match given(v) {
        None => Ok(None),
        Some(f) if f.is_callable() => Ok(Some(f.clone().unbind())),
        Some(f) => Err(PyTypeError::new_err(format!("{arg} must be a callable or None, got {}", f.repr()?))),
    }
}

/// A retry policy: attempts, backoff, budget and deadline, and which
/// exceptions are worth another attempt. `tripwire.retry(...)` wraps one.
#[pyclass(module = "tripwire", frozen)]
pub struct RetryPolicy {
    core: tripwire::retry::RetryPolicy<'static, Classifier>,
    budget: Option<Py<RetryBudget>>,
    retry_on: Py<PyTuple>,
    give_up_on: Py<PyTuple>,
    retry_if: Option<Py<PyAny>>,
    retry_after: Option<Py<PyAny>>,
    seed: Option<u64>,
    /// `retry_on` left at its default: an HTTP client's own error for a
    /// response the core calls the caller's fault (a 4xx but 408, 429 and
    /// 418) is final, as `tripwire.http` never retries one.
    judges_statuses: bool,
}

impl RetryPolicy {
    /// The judgement of an attempt that raised `exc`; the user's
    /// `retry_if` and `retry_after` are asked only of a failure.
    fn judge(&self, exc: &Bound<'_, PyAny>) -> PyResult<Attempt> {
        let py = exc.py();
        if errors::is_refusal(exc)? {
            return Ok(Attempt { refusal: true, ..Attempt::last(Assessment::Ignored) });
        }
        let last = Attempt::last(Assessment::Ignored);
        // Backpressure (an HTTP client's own error, or `tripwire.http`'s,
        // for a 429 or 418)? The breaker's hold answers it: never retried,
        // whatever `retry_on` says, and the caller gets it at once.
        if let Some(held @ Assessment::Backpressure(_)) = crate::http::raised_assessment(exc) {
            return Ok(Attempt::last(held));
        }
        // Final, or not among the retryable ones?
        if exc.is_instance(self.give_up_on.bind(py).as_any())?
            || !exc.is_instance(self.retry_on.bind(py).as_any())?
        {
            return Ok(last);
        }
        // The caller's own mistake, which no retry mends?
        if self.judges_statuses && crate::http::raised_assessment(exc) == Some(Assessment::Ignored) {
            return Ok(last);
        }
        if let Some(f) = &self.retry_if
            && !f.bind(py).call1((exc,))?.is_truthy()?
        {
            return Ok(last);
        }
        let hint = match &self.retry_after {
            None => None,
            Some(f) => {
                let v = f.bind(py).call1((exc,))?;
                if v.is_none() { None } else { Some(hint_seconds(&v)?) }
            }
        };
        Ok(Attempt { refusal: false, assessment: Assessment::Failure, hint })
    }

    /// The core's policy with the budget, for one step.
    fn with_budget(&self) -> tripwire::retry::RetryPolicy<'_, Classifier> {
        match &self.budget {
            Some(b) => self.core.budget(b.get().core()),
            None => self.core,
        }
    }

    /// The clock a run reads: the budget's (a `ManualClock` there drives
    /// the deadline too), else the host's monotonic clock.
    fn clock(&self) -> ClockSource {
        self.budget.as_ref().map_or(ClockSource::Monotonic, |b| b.get().clock().clone())
    }
}

#[pymethods]
impl RetryPolicy {
    #[new]
    #[pyo3(signature = (
        attempts = None,
        *,
        base = None,
        cap = None,
        factor = None,
        jitter = None,
        retry_on = None,
        give_up_on = None,
        retry_if = None,
        retry_after = None,
        max_retry_after = None,
        budget = None,
        deadline = None,
        seed = None,
    ))]
    #[allow(clippy::too_many_arguments, reason = "keyword arguments of a Python constructor")]
    fn new(
        py: Python<'_>,
        attempts: Option<&Bound<'_, PyAny>>,
        base: Option<&Bound<'_, PyAny>>,
        cap: Option<&Bound<'_, PyAny>>,
        factor: Option<&Bound<'_, PyAny>>,
        jitter: Option<&Bound<'_, PyAny>>,
        retry_on: Option<&Bound<'_, PyAny>>,
        give_up_on: Option<&Bound<'_, PyAny>>,
        retry_if: Option<&Bound<'_, PyAny>>,
        retry_after: Option<&Bound<'_, PyAny>>,
        max_retry_after: Option<&Bound<'_, PyAny>>,
        budget: Option<&Bound<'_, PyAny>>,
        deadline: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut b =
            tripwire::retry::RetryPolicy::builder().backoff(backoff_config(base, cap, factor, jitter)?);
        let mut g = AsGiven::default();
        if let Some(v) = given(attempts) {
            b = b.max_attempts(g.count("attempts", v)?);
        }
        if let Some(v) = given(deadline) {
            b = b.max_total(g.seconds("deadline", v)?);
        }
        if let Some(v) = given(max_retry_after) {
            b = b.max_retry_after(g.seconds("max_retry_after", v)?);
        }
        let core = b.build().map_err(|e| policy_error(&g, e))?.classify(Classifier);
        let judges_statuses = given(retry_on).is_none();
        let retry_on = match given(retry_on) {
            Some(v) => exception_tuple("retry_on", v)?,
            None => PyTuple::new(py, [py.get_type::<pyo3::exceptions::PyException>()])?.unbind(),
        };
        let give_up_on = match given(give_up_on) {
            Some(v) => exception_tuple("give_up_on", v)?,
            None => PyTuple::empty(py).unbind(),
        };
        let budget = match given(budget) {
            None => None,
            Some(v) => Some(v.cast::<RetryBudget>().map(|b| b.clone().unbind()).map_err(|_| {
                PyTypeError::new_err(format!(
                    "budget must be a tripwire.RetryBudget or None, got {}",
                    v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into())
                ))
            })?),
        };
        Ok(Self {
            core,
            budget,
            retry_on,
            give_up_on,
            retry_if: callable("retry_if", retry_if)?,
            retry_after: callable("retry_after", retry_after)?,
            seed: given(seed).map(self::seed).transpose()?,
            judges_statuses,
        })
    }

    /// Starts one call's loop: deposits the call in the budget; the first
    /// attempt may begin. `TimeoutError` if the deadline is so short that
    /// it has passed already.
    fn run(slf: &Bound<'_, Self>) -> PyResult<RetryRun> {
        let this = slf.get();
        let clock = this.clock();
        let mut core = RetryLoop::new(&this.with_budget(), &clock, None);
        if let Some(s) = this.seed {
            core = core.seeded(s);
        }
        if core.start(&clock).is_err() {
            let d = this.deadline().unwrap_or_default();
            return Err(PyTimeoutError::new_err(format!(
                "the retry deadline ({d}s) passed before the first attempt"
            )));
        }
        Ok(RetryRun { policy: slf.clone().unbind(), core, clock })
    }

    /// The pauses before the 2nd, 3rd, … attempts, without hints.
    fn delays(&self) -> Vec<f64> {
        let config = *self.core.backoff_config();
        let mut backoff = match self.seed {
            Some(s) => tripwire::retry::Backoff::seeded(config, s),
            None => tripwire::retry::Backoff::new(config),
        };
        (1..self.core.max_attempts()).map(|_| backoff.next_delay().secs()).collect()
    }

    /// Attempts in all, the first included.
    #[getter]
    fn attempts(&self) -> u32 {
        self.core.max_attempts()
    }

    /// The first pause of the backoff, in seconds.
    #[getter]
    fn base(&self) -> f64 {
        self.core.backoff_config().base().secs()
    }

    /// The longest pause the backoff computes, in seconds.
    #[getter]
    fn cap(&self) -> f64 {
        self.core.backoff_config().cap().secs()
    }

    /// Growth between two pauses of the backoff.
    #[getter]
    fn factor(&self) -> f64 {
        self.core.backoff_config().factor()
    }

    /// The backoff's jitter mode.
    #[getter]
    fn jitter(&self) -> &'static str {
        self.core.backoff_config().jitter().as_str()
    }

    /// Seconds after which no attempt starts and no pause ends; None: no
    /// deadline.
    /// The longest pause a `retry_after` hint may impose (seconds); a
    /// longer one waits this long.
    #[getter]
    fn max_retry_after(&self) -> f64 {
        self.core.max_retry_after().secs()
    }

    #[getter]
    fn deadline(&self) -> Option<f64> {
        self.core.max_total().map(|d| d.secs())
    }

    /// Exceptions worth another attempt.
    #[getter]
    fn retry_on(&self, py: Python<'_>) -> Py<PyTuple> {
        self.retry_on.clone_ref(py)
    }

    /// Exceptions that are final.
    #[getter]
    fn give_up_on(&self, py: Python<'_>) -> Py<PyTuple> {
        self.give_up_on.clone_ref(py)
    }

    /// The further predicate on a retryable exception, or None.
    #[getter]
    fn retry_if(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.retry_if.as_ref().map(|f| f.clone_ref(py))
    }

    /// What reads the wait a failure asks for, or None.
    #[getter]
    fn retry_after(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.retry_after.as_ref().map(|f| f.clone_ref(py))
    }

    /// The retry budget, or None.
    #[getter]
    fn budget(&self, py: Python<'_>) -> Option<Py<RetryBudget>> {
        self.budget.as_ref().map(|b| b.clone_ref(py))
    }

    /// The backoff's seed, or None.
    #[getter]
    fn seed(&self) -> Option<u64> {
        self.seed
    }

    fn __repr__(&self) -> String {
        format!(
            "RetryPolicy(attempts={}, base={:?}, cap={:?}, factor={:?}, jitter={:?})",
            self.attempts(),
            self.base(),
            self.cap(),
            self.factor(),
            self.jitter()
        )
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.retry_on)?;
        visit.call(&self.give_up_on)?;
        for f in [&self.retry_if, &self.retry_after].into_iter().flatten() {
            visit.call(f)?;
        }
        if let Some(b) = &self.budget {
            visit.call(b)?;
        }
        Ok(())
    }
}

/// One call's retry loop (`RetryPolicy.run()`): `failed(exc)` after each
/// failed attempt, `start()` after each pause.
#[pyclass(module = "tripwire")]
pub struct RetryRun {
    policy: Py<RetryPolicy>,
    core: RetryLoop<Attempt>,
    clock: ClockSource,
}

#[pymethods]
impl RetryRun {
    /// After a pause: whether the next attempt may start (False: the
    /// deadline has passed; re-raise the last error).
    fn start(&mut self) -> bool {
        self.core.start(&self.clock).is_ok()
    }

    /// After an attempt raised `exc`: the pause before the next, in
    /// seconds, or None when `exc` ends the retries (re-raise it). Raises
    /// `RetryBudgetExhausted` from `exc` when the budget has no token left.
    fn failed(&mut self, exc: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
        let policy = self.policy.get();
        let attempt = policy.judge(exc)?;
        match self.core.failed(&policy.with_budget(), &self.clock, attempt) {
            Ok(pause) => Ok(Some(pause.secs())),
            Err(e @ RetryError::BudgetExhausted { .. }) => {
                Err(errors::budget_exhausted(exc, e.summary().to_string()))
            }
            Err(_) => Ok(None),
        }
    }

    /// Attempts started so far.
    #[getter]
    fn attempts(&self) -> u32 {
        self.core.attempts()
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.policy)
    }
}
