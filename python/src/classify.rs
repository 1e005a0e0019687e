//! Which outcomes count as failures: `failure_on`, `ignore_on`, `failure_if`.

use core::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};
use tripwire::{Assessment, Outcome};

/// What a breaker makes of a raised exception.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Judgement {
    /// Recorded as this outcome, and nothing more.
    Outcome(Outcome),
    /// Backpressure (an HTTP 429 or 418): recorded as ignored, and the
    /// breaker held open for the wait asked (its `open_timeout` when none
    /// is), capped at `max_hold`, as the core settles it.
    Backpressure(Option<Duration>),
}

/// How a breaker classifies what a guarded call did.
#[derive(Debug)]
pub(crate) struct Classifier {
    /// Exceptions that count as failures.
    failure_on: Py<PyTuple>,
    /// Exceptions that count as neither (checked first).
    ignore_on: Option<Py<PyTuple>>,
    /// A predicate on results: truthy means the call failed.
    failure_if: Option<Py<PyAny>>,
    /// `failure_on` left at its default: an HTTP client's own error for a
    /// response is judged by its status, as `tripwire.http` judges the
    /// response (a 4xx the caller's fault, a 5xx a failure, a 429 or 418
    /// a hold).
    judges_statuses: bool,
}

/// Exceptions that say nothing about the dependency, whatever `failure_on`
/// says: cancellation and the interpreter shutting a call down.
static NEUTRAL: PyOnceLock<Py<PyTuple>> = PyOnceLock::new();

fn neutral(py: Python<'_>) -> PyResult<&Bound<'_, PyTuple>> {
    let t = NEUTRAL.get_or_try_init(py, || -> PyResult<_> {
        let cancelled = py.import("asyncio")?.getattr("CancelledError")?;
        let builtins = py.import("builtins")?;
        let items = [
            cancelled,
            builtins.getattr("KeyboardInterrupt")?,
            builtins.getattr("SystemExit")?,
            builtins.getattr("GeneratorExit")?,
        ];
        Ok(PyTuple::new(py, items)?.unbind())
    })?;
    Ok(t.bind(py))
}

/// `value` as a tuple of exception classes, or a `TypeError` naming `arg`.
pub(crate) fn exception_tuple(arg: &str, value: &Bound<'_, PyAny>) -> PyResult<Py<PyTuple>> {
    let py = value.py();
    let base = py.get_type::<pyo3::exceptions::PyBaseException>();
    let is_exc_class = |v: &Bound<'_, PyAny>| -> bool {
        v.cast::<PyType>().is_ok_and(|t| t.is_subclass(&base).unwrap_or(false))
    };
    if is_exc_class(value) {
        return Ok(PyTuple::new(py, [value])?.unbind());
    }
    let bad = || {
        PyTypeError::new_err(format!(
            "{arg} must be an exception class or a tuple of exception classes, got {}",
            value.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into())
        ))
    };
    let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = value.cast::<PyTuple>() {
        t.iter().collect()
    } else if value.is_instance_of::<pyo3::types::PyList>() || value.is_instance_of::<pyo3::types::PySet>() {
        value.try_iter()?.collect::<PyResult<_>>()?
    } else {
        return Err(bad());
    };
    if !items.iter().all(is_exc_class) {
        return Err(bad());
    }
    Ok(PyTuple::new(py, items)?.unbind())
}

impl Classifier {
    /// From a breaker's arguments; `None` for one not given (`BreakerArgs`
    /// reads Python's `None` as not given).
    pub(crate) fn new(
        py: Python<'_>,
        failure_on: Option<&Bound<'_, PyAny>>,
        ignore_on: Option<&Bound<'_, PyAny>>,
        failure_if: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        neutral(py)?;
        let judges_statuses = failure_on.is_none();
        let failure_on = match failure_on {
            Some(v) => exception_tuple("failure_on", v)?,
            None => PyTuple::new(py, [py.get_type::<pyo3::exceptions::PyException>()])?.unbind(),
        };
        let ignore_on = match ignore_on {
            Some(v) => Some(exception_tuple("ignore_on", v)?).filter(|t| !t.bind(py).is_empty()),
            None => None,
        };
        let failure_if = match failure_if {
            Some(f) if !f.is_callable() => {
                return Err(PyTypeError::new_err(format!(
                    "failure_if must be a callable taking the result, got {}",
                    f.repr()?
                )));
            }
            Some(f) => Some(f.clone().unbind()),
            None => None,
        };
        Ok(Self { failure_on, ignore_on, failure_if, judges_statuses })
    }

    /// The judgement of a call that raised `err`: its outcome, or, for an
    /// HTTP client's own error for a 429 or 418 (`failure_on` left at its
    /// default), backpressure with the wait its response's headers ask for.
    #[inline]
    pub(crate) fn error(&self, py: Python<'_>, err: &PyErr) -> Judgement {
        if let Some(ignore) = &self.ignore_on
            && err.is_instance(py, ignore.bind(py).as_any())
        {
            return Judgement::Outcome(Outcome::Ignored);
        }
        // `neutral` was initialised in `new`, so this cannot fail.
        if let Ok(neutral) = neutral(py)
            && err.is_instance(py, neutral.as_any())
        {
            return Judgement::Outcome(Outcome::Ignored);
        }
        // A refusal from a guard inside this breaker (a full bulkhead, an
        // inner breaker): the call never reached the dependency.
        if crate::errors::is_refusal(err.value(py)).unwrap_or(false) {
            return Judgement::Outcome(Outcome::Ignored);
        }
        if self.judges_statuses
            && let Some(a) = crate::http::raised_assessment(err.value(py))
        {
            return match a {
                Assessment::Backpressure(_) => {
                    Judgement::Backpressure(crate::http::raised_wait(err.value(py)))
                }
                a => Judgement::Outcome(a.outcome()),
            };
        }
        Judgement::Outcome(if err.is_instance(py, self.failure_on.bind(py).as_any()) {
            Outcome::Failure
        } else {
            Outcome::Ignored
        })
    }

    /// The outcome of a call that returned `result`; an error if the
    /// predicate itself raised.
    #[inline]
    pub(crate) fn result(&self, result: &Bound<'_, PyAny>) -> PyResult<Outcome> {
        match &self.failure_if {
            None => Ok(Outcome::Success),
            Some(f) => {
                let failed = f.bind(result.py()).call1((result,))?.is_truthy()?;
                Ok(if failed { Outcome::Failure } else { Outcome::Success })
            }
        }
    }

    /// The same judgement, for another breaker.
    pub(crate) fn clone_ref(&self, py: Python<'_>) -> Self {
        Self {
            failure_on: self.failure_on.clone_ref(py),
            ignore_on: self.ignore_on.as_ref().map(|t| t.clone_ref(py)),
            failure_if: self.failure_if.as_ref().map(|f| f.clone_ref(py)),
            judges_statuses: self.judges_statuses,
        }
    }

    /// For the garbage collector.
    pub(crate) fn traverse(&self, visit: &pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.failure_on)?;
        if let Some(t) = &self.ignore_on {
            visit.call(t)?;
        }
        if let Some(f) = &self.failure_if {
            visit.call(f)?;
        }
        Ok(())
    }
}
