//! The Python `Breaker`: the core's breaker, its clock, a classifier and
//! the listeners told of each transition.

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple};
use pyo3::{PyTraverseError, PyVisit, intern};
use tripwire::{Outcome, Transition};

use crate::aio::aio;
use crate::args::Secs;
use crate::classify::{Classifier, Judgement};
use crate::clock::{ClockSource, ManualClock, clock_arg};
use crate::config::BreakerArgs;
use crate::core_breaker::CoreBreaker;
use crate::errors;
// `Guarded` calls back into `Breaker::guard`: a decorator and the breaker
// it decorates with are one pair, kept in two files because `Guarded` is a
// Python class of its own (`@breaker` returns it).
use crate::guarded::Guarded;
use crate::listeners::{self, Listeners};
use crate::registry;
use crate::shared::Mapping;
use crate::snapshot::Snapshot;
use crate::state::state_name;
use crate::ticket::HeldTicket;
use crate::with_stack::WithStack;

/// A circuit breaker.
///
/// Use it as a decorator on plain and `async def` functions, as a context
/// manager (`with` / `async with`), or through `call` / `call_async`.
/// Every argument is keyword-only; see the stub for the full signature.
///
/// Timeouts: give the breaker `timeout=` (seconds) rather than wrapping a
/// guarded coroutine in `asyncio.wait_for(guarded(), 2)`. A timeout from
/// outside reaches the guarded call as a cancellation, which says nothing
/// about the server and is not counted: a hanging exchange never trips the
/// breaker. `timeout=` runs inside the guard and counts as a failure.
#[pyclass(module = "tripwire", frozen, weakref)]
pub struct Breaker {
    core: Arc<CoreBreaker>,
    clock: ClockSource,
    /// The `ManualClock` object, if one was given (for `clock`).
    manual_clock: Option<Py<ManualClock>>,
    classifier: Classifier,
    listeners: Listeners,
    /// `str` or `None`.
    name: Py<PyAny>,
    /// The tickets of the `with breaker:` blocks open in each thread or task.
    with_stack: WithStack,
    /// The longest an awaited call may take, in seconds (`timeout=`).
    timeout: Option<f64>,
}

static ISCOROUTINEFUNCTION: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

impl Breaker {
    #[inline]
    pub(crate) fn core(&self) -> &tripwire::Breaker {
        self.core.breaker()
    }

    /// What a fleet joins: the core breaker, its clock and its name.
    pub(crate) fn joinable(&self, py: Python<'_>) -> (Arc<CoreBreaker>, ClockSource, Py<PyAny>) {
        (self.core.clone(), self.clock.clone(), self.name.clone_ref(py))
    }

    /// This breaker's settings (clock, classification, timeout) around
    /// another core, named `name`, telling `listeners`: what a keyed map
    /// whose template this is hands out for one key.
    pub(crate) fn around(
        &self,
        py: Python<'_>,
        core: Arc<CoreBreaker>,
        name: Py<PyAny>,
        listeners: &Listeners,
    ) -> Self {
        Self {
            core,
            clock: self.clock.clone(),
            manual_clock: self.manual_clock.as_ref().map(|c| c.clone_ref(py)),
            classifier: self.classifier.clone_ref(py),
            listeners: listeners.share(),
            name,
            with_stack: self.with_stack.another(py),
            timeout: self.timeout,
        }
    }

    /// The clock it reads.
    /// How it judges a call's result or error.
    pub(crate) fn classifier(&self) -> &Classifier {
        &self.classifier
    }

    pub(crate) fn clock_source(&self) -> &ClockSource {
        &self.clock
    }

    /// Its listeners now, in a list of their own.
    pub(crate) fn listener_list(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.listeners.current().iter().map(|l| l.clone_ref(py)).collect()
    }

    /// Asks to make a call: a ticket, or `CircuitOpenError`.
    #[inline]
    pub(crate) fn acquire(slf: &Bound<'_, Self>) -> PyResult<tripwire::Ticket> {
        let this = slf.get();
        match this.core().try_acquire(&this.clock) {
            Ok(ticket) => {
                if let Some(t) = ticket.transition() {
                    Self::notify(slf, t);
                }
                Ok(ticket)
            }
            Err(r) => {
                Err(errors::circuit_open(slf.py(), r.retry_after.map(|d| d.secs()), &this.name, r.state))
            }
        }
    }

    /// Records an outcome and tells the listeners of any transition.
    #[inline]
    pub(crate) fn record(slf: &Bound<'_, Self>, ticket: tripwire::Ticket, outcome: Outcome) {
        let this = slf.get();
        if let Some(t) = this.core().record(ticket, outcome, &this.clock) {
            Self::notify(slf, t);
        }
    }

    /// Records a call that raised `err`: for backpressure, an ignored call
    /// and a hold for the wait its headers ask (the `open_timeout` when
    /// they ask none), as `_settle` records a 429 response.
    #[inline]
    pub(crate) fn record_error(slf: &Bound<'_, Self>, ticket: tripwire::Ticket, err: &PyErr) {
        match slf.get().classifier.error(slf.py(), err) {
            Judgement::Outcome(outcome) => Self::record(slf, ticket, outcome),
            Judgement::Backpressure(asked) => {
                Self::record(slf, ticket, Outcome::Ignored);
                let d = asked.unwrap_or_else(|| slf.get().core().config().open_timeout());
                // The core caps the hold at `max_hold`, and counts it when it does.
                Self::open_for(slf, d);
            }
        }
    }

    /// Records a call that returned `result`; raises what `failure_if`
    /// raised, after recording the call as ignored.
    #[inline]
    pub(crate) fn record_result(
        slf: &Bound<'_, Self>,
        ticket: tripwire::Ticket,
        result: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        match slf.get().classifier.result(result) {
            Ok(outcome) => {
                Self::record(slf, ticket, outcome);
                Ok(())
            }
            Err(e) => {
                Self::record(slf, ticket, Outcome::Ignored);
                Err(e)
            }
        }
    }

    /// Calls every listener with `(breaker, from, to)`. A listener that
    /// raises is reported through `sys.unraisablehook` and does not stop
    /// the others, nor the call whose outcome caused the transition.
    #[cold]
    pub(crate) fn notify(slf: &Bound<'_, Self>, t: Transition) {
        let py = slf.py();
        let listeners = slf.get().listeners.current();
        if listeners.is_empty() {
            return;
        }
        let args = (slf, state_name(py, t.from), state_name(py, t.to));
        for listener in listeners.iter() {
            let listener = listener.bind(py);
            if let Err(e) = listener.call1(args.clone()) {
                e.write_unraisable(py, Some(listener));
            }
        }
    }

    /// Runs `func(*args, **kwargs)` under the breaker.
    #[inline]
    pub(crate) fn guard<'py>(
        slf: &Bound<'py, Self>,
        func: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ticket = Self::acquire(slf)?;
        match func.call(args, kwargs) {
            Ok(result) => {
                Self::record_result(slf, ticket, &result)?;
                Ok(result)
            }
            Err(err) => {
                Self::record_error(slf, ticket, &err);
                Err(err)
            }
        }
    }

    /// Holds the breaker open for `d` (the core caps it at `max_hold`)
    /// and tells the listeners; true when this placed or lengthened a hold.
    pub(crate) fn open_for(slf: &Bound<'_, Self>, d: core::time::Duration) -> bool {
        let this = slf.get();
        match this.core().open_for(d, &this.clock) {
            Some(t) => {
                Self::notify(slf, t);
                true
            }
            None => false,
        }
    }

    /// Seconds left on the hold in place, or None.
    pub(crate) fn hold_left_secs(&self) -> Option<f64> {
        self.core().hold_left(&self.clock).map(|d| d.secs())
    }

    fn manual(slf: &Bound<'_, Self>, t: Transition) {
        Self::notify(slf, t);
    }

    /// Builds a breaker from its keyword arguments; in the file at `shared`
    /// if given.
    fn make(py: Python<'_>, args: BreakerArgs<'_>, shared: Option<&std::path::Path>) -> PyResult<Self> {
        let timeout = args.timeout()?;
        let config = args.config()?;
        let name = args.name(py)?;
        let listeners = args.listeners()?;
        let (clock, manual_clock) = clock_arg(args.clock.as_ref())?;
        let classifier =
            Classifier::new(py, args.failure_on.as_ref(), args.ignore_on.as_ref(), args.failure_if.as_ref())?;
        let with_stack = WithStack::new(py)?;

        let core = Arc::new(match shared {
            None => CoreBreaker::Owned(tripwire::Breaker::new(config)),
            Some(path) => CoreBreaker::Mapped(Mapping::open(py, path, config)?),
        });
        if let Ok(s) = name.cast::<PyString>() {
            registry::register(&s.to_cow()?, &core);
        }
        Ok(Self {
            core,
            clock,
            manual_clock,
            classifier,
            listeners: Listeners::new(listeners),
            name: name.unbind(),
            with_stack,
            timeout,
        })
    }
}

#[pymethods]
impl Breaker {
    // Keyword-only: `BreakerArgs` reads them (its macro says why `**kwargs`).
    #[new]
    #[pyo3(signature = (**kwargs))]
    fn new(py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Self::make(py, BreakerArgs::from_kwargs("Breaker.__new__()", kwargs)?, None)
    }

    /// A breaker in the memory-mapped file at `path`, shared by every
    /// process that opens it: they all see one state, so when the exchange
    /// goes down they all stop calling it at once. The keyword arguments are
    /// those of `Breaker(...)` but `clock` (every process must read the
    /// host's monotonic clock); a process asking for another config than
    /// the file's is refused. A path that cannot be opened raises the
    /// `OSError` subclass Python's `open` would (`FileNotFoundError`,
    /// `PermissionError`, ...) with its `errno` and `filename`.
    #[classmethod]
    #[pyo3(signature = (path, /, **kwargs))]
    fn shared(
        cls: &Bound<'_, pyo3::types::PyType>,
        path: std::path::PathBuf,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        // Refused even as None: the stub has no `clock` here.
        if let Some(kwargs) = kwargs
            && kwargs.contains("clock")?
        {
            return Err(PyTypeError::new_err(
                "a shared breaker reads the host's monotonic clock: clock is not accepted",
            ));
        }
        let args = BreakerArgs::from_kwargs("Breaker.shared()", kwargs)?;
        Self::make(cls.py(), args, Some(&path))
    }

    /// The breaker's name, or None.
    #[getter]
    fn name(&self, py: Python<'_>) -> Py<PyAny> {
        self.name.clone_ref(py)
    }

    /// The current state: "closed", "open", "half_open", "forced_open" or
    /// "disabled". An open breaker whose cool-down has passed reads "open"
    /// until a call arrives and becomes its probe.
    #[getter]
    fn state<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        state_name(py, self.core().state())
    }

    /// Incremented by every transition.
    #[getter]
    fn generation(&self) -> u32 {
        self.core().generation()
    }

    /// Consecutive failures that trip the breaker.
    #[getter]
    fn failure_threshold(&self) -> u32 {
        self.core().config().failure_threshold()
    }

    /// The first cool-down after a trip, in seconds.
    #[getter]
    fn open_timeout(&self) -> f64 {
        self.core().config().open_timeout().secs()
    }

    /// The cap on the growing cool-down, in seconds.
    #[getter]
    fn open_timeout_max(&self) -> f64 {
        self.core().config().open_timeout_max().secs()
    }

    /// Seconds a Half-Open probe may run before it counts as lost and a
    /// new probe may take over.
    #[getter]
    fn probe_timeout(&self) -> f64 {
        self.core().config().probe_timeout().secs()
    }

    /// The longest hold a server's backpressure may place, in seconds.
    #[getter]
    fn max_hold(&self) -> f64 {
        self.core().config().max_hold().secs()
    }

    /// Probes allowed in flight at once in half-open.
    #[getter]
    fn half_open_max(&self) -> u32 {
        self.core().config().half_open_max()
    }

    /// Successful probes that close a half-open breaker.
    #[getter]
    fn half_open_successes(&self) -> u32 {
        self.core().config().half_open_successes()
    }

    /// The time-based rolling window's shape: (buckets, bucket width in
    /// seconds); kept when a count-based window is chosen instead.
    #[getter]
    fn window(&self) -> (u32, f64) {
        let (n, width) = self.core().config().window();
        (n, width.secs())
    }

    /// The count-based rolling window's calls, or None when the window is
    /// time-based.
    #[getter]
    fn count_window(&self) -> Option<u32> {
        match self.core().config().rolling_window() {
            tripwire::breaker::RollingWindow::Count { calls } => Some(calls),
            tripwire::breaker::RollingWindow::Time { .. } => None,
        }
    }

    /// Calls the window must hold before a rate can trip the breaker.
    #[getter]
    fn min_calls(&self) -> u32 {
        self.core().config().min_calls()
    }

    /// Failure rate over the window that trips the breaker (0: off).
    #[getter]
    fn failure_rate(&self) -> f64 {
        self.core().config().failure_rate()
    }

    /// Calls at least this long (seconds) count as slow; None: not measured.
    #[getter]
    fn slow_call(&self) -> Option<f64> {
        let d = self.core().config().slow_call();
        (!d.is_zero()).then_some(d.secs())
    }

    /// Slow-call rate over the window that trips the breaker (0: off).
    #[getter]
    fn slow_rate(&self) -> f64 {
        self.core().config().slow_rate()
    }

    /// The longest an awaited call may take, in seconds; None: no limit.
    /// A guarded coroutine (decorated, through `call_async`, or an `async
    /// with` block) still running then is cancelled inside the breaker, and
    /// the caller gets `TimeoutError`, counted as a failure. A sync call
    /// cannot be cut short: one that takes longer counts as slow
    /// (`slow_call` defaults to `timeout`), and its I/O client's own timeout
    /// is what ends it.
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.timeout
    }

    /// The `ManualClock` the breaker reads, or None for the host's clock.
    #[getter]
    fn clock(&self, py: Python<'_>) -> Option<Py<ManualClock>> {
        self.manual_clock.as_ref().map(|c| c.clone_ref(py))
    }

    /// The counters at this moment, and the state.
    fn snapshot(&self) -> Snapshot {
        Snapshot::of(self.core())
    }

    /// Rejects every call until `reset()`.
    fn force_open(slf: &Bound<'_, Self>) {
        let t = slf.get().core().force_open();
        Self::manual(slf, t);
    }

    /// Holds the breaker open for `seconds` (at most the breaker's
    /// `max_hold`, one hour), as a server's `Retry-After` asks: every call is
    /// refused with the time left, and the first call after the hold is a
    /// probe. True when this placed the hold or made it longer; False when
    /// a hold at least as long is in place, `seconds` is 0, or an
    /// operator's `force_open()` / `disable()` rules (a hold never ends
    /// those).
    fn hold(slf: &Bound<'_, Self>, seconds: &Bound<'_, PyAny>) -> PyResult<bool> {
        let d = crate::args::seconds("seconds", seconds)?;
        Ok(Self::open_for(slf, d))
    }

    /// Seconds left on the hold in place (`hold()`), or None when the
    /// breaker is not held or the hold has ended.
    #[getter]
    fn hold_left(&self) -> Option<f64> {
        self.hold_left_secs()
    }

    /// Permits every call and never trips, still counting, until `reset()`.
    fn disable(slf: &Bound<'_, Self>) {
        let t = slf.get().core().disable();
        Self::manual(slf, t);
    }

    /// Closes the breaker: the core's reset. The trip conditions start
    /// afresh (consecutive failures, the rolling window, a grown cool-down)
    /// and outcomes of calls admitted before no longer affect it. It is a
    /// transition like any other, a new generation, so listeners hear it
    /// (`closed -> closed` too) and `snapshot().transitions` counts it; the
    /// snapshot's other counters are totals since the breaker was made
    /// (what Prometheus exports) and are kept.
    fn reset(slf: &Bound<'_, Self>) {
        let t = slf.get().core().reset();
        Self::manual(slf, t);
    }

    /// Adds `listener`, called with `(breaker, from, to)` after every later
    /// transition, after those given before; returns it, so that it works
    /// as a decorator. A listener added during a transition hears the next.
    #[pyo3(signature = (listener, /))]
    fn on_state_change<'py>(&self, listener: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let f = listeners::listener("on_state_change", listener)?;
        self.listeners.add(listener.py(), f);
        Ok(listener.clone())
    }

    /// Calls `func(*args, **kwargs)` under the breaker and returns its result.
    #[pyo3(signature = (func, /, *args, **kwargs))]
    fn call<'py>(
        slf: &Bound<'py, Self>,
        func: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Self::guard(slf, func, args, kwargs)
    }

    /// Awaits `func(*args, **kwargs)` under the breaker: a coroutine.
    #[pyo3(signature = (func, /, *args, **kwargs))]
    fn call_async<'py>(
        slf: &Bound<'py, Self>,
        func: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        aio(slf.py())?.getattr(intern!(slf.py(), "call_async"))?.call1((slf, func, args, kwargs))
    }

    /// Decorates a plain or `async def` function (or method).
    fn __call__<'py>(slf: &Bound<'py, Self>, func: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if !func.is_callable() {
            return Err(PyTypeError::new_err(format!(
                "a Breaker decorates a function; got {}",
                func.repr()?
            )));
        }
        let is_coroutine_function = ISCOROUTINEFUNCTION
            .get_or_try_init(py, || py.import("inspect")?.getattr("iscoroutinefunction").map(Bound::unbind))?
            .bind(py)
            .call1((func,))?
            .is_truthy()?;
        if is_coroutine_function {
            aio(py)?.getattr(intern!(py, "wrap"))?.call1((slf, func))
        } else {
            Guarded::wrap(slf, func)
        }
    }

    fn __enter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        let ticket = Self::acquire(slf)?;
        slf.get().with_stack.push(slf.py(), ticket)?;
        Ok(slf.clone())
    }

    #[pyo3(signature = (exc_type, exc, traceback))]
    fn __exit__(
        slf: &Bound<'_, Self>,
        exc_type: &Bound<'_, PyAny>,
        exc: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let _ = (exc_type, traceback);
        let (ticket, _scope) = slf.get().with_stack.pop(slf.py())?;
        if exc.is_none() {
            Self::record(slf, ticket, Outcome::Success);
        } else {
            let err = PyErr::from_value(exc.clone());
            Self::record_error(slf, ticket, &err);
        }
        // None: the block's exception, if any, goes on.
        Ok(())
    }

    /// With `timeout=`, the block runs within it (an asyncio timeout scope
    /// entered here, left in `__aexit__`), and a block it cuts short is a
    /// failure.
    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let Some(timeout) = slf.get().timeout else {
            let me = Self::__enter__(slf)?;
            return aio(py)?.getattr(intern!(py, "ready"))?.call1((me,));
        };
        let ticket = Self::acquire(slf)?;
        let scope = aio(py)?.getattr(intern!(py, "_timeout"))?.call1((timeout,))?;
        slf.get().with_stack.push_scoped(py, ticket, scope.clone().unbind())?;
        aio(py)?.getattr(intern!(py, "enter_within"))?.call1((slf, scope))
    }

    #[pyo3(signature = (exc_type, exc, traceback))]
    fn __aexit__<'py>(
        slf: &Bound<'py, Self>,
        exc_type: &Bound<'py, PyAny>,
        exc: &Bound<'py, PyAny>,
        traceback: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let (ticket, scope) = slf.get().with_stack.pop(py)?;
        let Some(scope) = scope else {
            if exc.is_none() {
                Self::record(slf, ticket, Outcome::Success);
            } else {
                Self::record_error(slf, ticket, &PyErr::from_value(exc.clone()));
            }
            return aio(py)?.getattr(intern!(py, "ready"))?.call1((py.None(),));
        };
        aio(py)?.getattr(intern!(py, "exit_within"))?.call1((
            slf,
            HeldTicket(ticket),
            scope,
            exc_type,
            exc,
            traceback,
        ))
    }

    /// Closes the innermost block without an outcome (its `__aenter__`
    /// failed after taking the ticket): recorded as ignored.
    fn _abandon_block(slf: &Bound<'_, Self>) -> PyResult<()> {
        let (ticket, _scope) = slf.get().with_stack.pop(slf.py())?;
        Self::record(slf, ticket, Outcome::Ignored);
        Ok(())
    }

    /// Asks to make a call: a ticket (an `int`, or a `Ticket` if it carries
    /// a start time), or raises `CircuitOpenError`.
    fn _acquire(slf: &Bound<'_, Self>) -> PyResult<HeldTicket> {
        Ok(HeldTicket(Self::acquire(slf)?))
    }

    /// Records a call that returned `result`.
    fn _record_result(slf: &Bound<'_, Self>, ticket: HeldTicket, result: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::record_result(slf, ticket.0, result)
    }

    /// Records a call that raised `exc`.
    fn _record_error(slf: &Bound<'_, Self>, ticket: HeldTicket, exc: &Bound<'_, PyAny>) {
        let err = PyErr::from_value(exc.clone());
        Self::record_error(slf, ticket.0, &err);
    }

    /// Records an outcome given by name: "success", "failure" or "ignored".
    fn _record(slf: &Bound<'_, Self>, ticket: HeldTicket, outcome: &str) -> PyResult<()> {
        let outcome = match outcome {
            "success" => Outcome::Success,
            "failure" => Outcome::Failure,
            "ignored" => Outcome::Ignored,
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "outcome must be \"success\", \"failure\" or \"ignored\", got {other:?}"
                )));
            }
        };
        Self::record(slf, ticket.0, outcome);
        Ok(())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("Breaker(name={}, state={:?})", self.name.bind(py).repr()?, self.core().state().as_str()))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        self.classifier.traverse(&visit)?;
        self.listeners.traverse(&visit)?;
        if let Some(c) = &self.manual_clock {
            visit.call(c)?;
        }
        visit.call(&self.name)?;
        self.with_stack.traverse(&visit)
    }
}
