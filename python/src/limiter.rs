//! The core's rate limiter: weighted costs on one to four limits at once,
//! taken all or nothing (`tripwire.RateLimiter`; the waits that sleep and
//! await are `tripwire/_limiter.py`).
//!
//! The core's limiter is generic over its number of limits; [`Limits`]
//! holds one of four sizes, and every method converts the costs it is given
//! into an array of that size, or raises.

use core::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyInt, PyList, PyString, PyTuple, PyType};
use std::path::{Path, PathBuf};
use tripwire::MonotonicClock;

use memmap2::MmapRaw;
use std::sync::Arc;

use tripwire::limiter::{Counting, LimitConfig, LimitCounts, LimitWords, RateLimiter as Core, Throttled};
use tripwire::prometheus::{LimitRow, RateLimitRows};
use tripwire::shared::SharedRateLimiterRegion;

use crate::args::{count, seconds, short_repr, type_name};
use crate::registry;
use crate::shared::map_region;

/// One limit: `units` in any stretch of `period` seconds, `burst` of them
/// at once.
#[pyclass(module = "tripwire", frozen)]
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    config: LimitConfig,
}

#[pymethods]
impl Limit {
    #[new]
    #[pyo3(signature = (units, period, *, burst = None))]
    fn new(
        units: &Bound<'_, PyAny>,
        period: &Bound<'_, PyAny>,
        burst: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let units = count("rate limit", "units", units, 0)?;
        let period = seconds("period", period)?;
        let mut builder = LimitConfig::builder(units, period);
        if let Some(b) = burst.filter(|b| !b.is_none()) {
            builder = builder.burst(count("rate limit", "burst", b, 0)?);
        }
        let config = builder.build().map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Limit { config })
    }

    /// Units allowed in any stretch of one period.
    #[getter]
    fn units(&self) -> u32 {
        self.config.units()
    }

    /// The period, in seconds.
    #[getter]
    fn period(&self) -> f64 {
        self.config.period().as_secs_f64()
    }

    /// Units that may go at once after a quiet period.
    #[getter]
    fn burst(&self) -> u32 {
        self.config.burst()
    }

    /// The longest a wait may be reserved ahead, in seconds.
    #[getter]
    fn max_wait(&self) -> f64 {
        self.config.max_wait().as_secs_f64()
    }

    fn __repr__(&self) -> String {
        format!(
            "Limit({}, {}, burst={})",
            self.config.units(),
            self.config.period().as_secs_f64(),
            self.config.burst()
        )
    }
}

/// A limiter of this process, counting for the exports.
type Own<const N: usize> = Core<N, [LimitWords; N], Counting<N>>;

/// A limiter in a shared mapping, and the mapping, which outlives it
/// (fields drop in order). Behind an `Arc` that the export may hold too,
/// so the mapping lives as long as anyone reads the limiter.
struct Mapped<const N: usize> {
    // `'static` stands for "as long as `_map`".
    limiter: Core<N, &'static [LimitWords; N], Counting<N>>,
    _map: MmapRaw,
}

// SAFETY:
// - `limiter`'s words point into `_map`, which lives as long as `self`
//   and drops after `limiter`; they are reached only through `&self`.
// - The words are atomics, shared between threads and processes by design.
unsafe impl<const N: usize> Send for Mapped<N> {}
// SAFETY: as for `Send`.
unsafe impl<const N: usize> Sync for Mapped<N> {}

impl<const N: usize> core::ops::Deref for Mapped<N> {
    type Target = Core<N, &'static [LimitWords; N], Counting<N>>;
    fn deref(&self) -> &Self::Target {
        &self.limiter
    }
}

impl<const N: usize> core::fmt::Debug for Mapped<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.limiter.fmt(f)
    }
}

impl<const N: usize> RateLimitRows for Mapped<N> {
    fn limit_rows(&self) -> Vec<LimitRow> {
        self.limiter.limit_rows()
    }
}

/// The core's limiter, of as many limits as it was given, in this process
/// or in a shared mapping.
enum Limits {
    One(Arc<Own<1>>),
    Two(Arc<Own<2>>),
    Three(Arc<Own<3>>),
    Four(Arc<Own<4>>),
    SharedOne(Arc<Mapped<1>>),
    SharedTwo(Arc<Mapped<2>>),
    SharedThree(Arc<Mapped<3>>),
    SharedFour(Arc<Mapped<4>>),
}

impl Limits {
    /// The limiter, for the exports.
    fn rows(&self) -> Arc<dyn RateLimitRows> {
        match self {
            Limits::One(l) => l.clone(),
            Limits::Two(l) => l.clone(),
            Limits::Three(l) => l.clone(),
            Limits::Four(l) => l.clone(),
            Limits::SharedOne(l) => l.clone(),
            Limits::SharedTwo(l) => l.clone(),
            Limits::SharedThree(l) => l.clone(),
            Limits::SharedFour(l) => l.clone(),
        }
    }
}

/// `$body` with `$l` bound to the limiter and `$costs` to `$given` as an
/// array of its size.
macro_rules! with_costs {
    ($self:expr, $given:expr, |$l:ident, $costs:ident| $body:expr) => {
        match &$self.limits {
            Limits::One($l) => with_costs!(@ 1, $given, $costs, $body),
            Limits::Two($l) => with_costs!(@ 2, $given, $costs, $body),
            Limits::Three($l) => with_costs!(@ 3, $given, $costs, $body),
            Limits::Four($l) => with_costs!(@ 4, $given, $costs, $body),
            Limits::SharedOne($l) => with_costs!(@ 1, $given, $costs, $body),
            Limits::SharedTwo($l) => with_costs!(@ 2, $given, $costs, $body),
            Limits::SharedThree($l) => with_costs!(@ 3, $given, $costs, $body),
            Limits::SharedFour($l) => with_costs!(@ 4, $given, $costs, $body),
        }
    };
    (@ $n:literal, $given:expr, $costs:ident, $body:expr) => {{
        let given = costs($given, $n)?;
        let $costs: [u32; $n] = core::array::from_fn(|i| given[i]);
        $body
    }};
}

/// `$body` with `$l` bound to the limiter, whatever its size.
macro_rules! with_limiter {
    ($self:expr, |$l:ident| $body:expr) => {
        match &$self.limits {
            Limits::One($l) => $body,
            Limits::Two($l) => $body,
            Limits::Three($l) => $body,
            Limits::Four($l) => $body,
            Limits::SharedOne($l) => $body,
            Limits::SharedTwo($l) => $body,
            Limits::SharedThree($l) => $body,
            Limits::SharedFour($l) => $body,
        }
    };
}

/// The costs of one request, one per limit: an `int` for a limiter of one
/// limit, else a sequence of `n` ints.
fn costs(given: &Bound<'_, PyAny>, n: usize) -> PyResult<[u32; 4]> {
    let cost = |v: &Bound<'_, PyAny>| {
        // An exact int (not a bool) in range: the common case, one extract.
        if v.is_exact_instance_of::<PyInt>()
            && let Ok(c) = v.extract::<u32>()
        {
            return Ok(c);
        }
        count("rate limit", "cost", v, 0)
    };
    let mut out = [0u32; 4];
    if given.is_instance_of::<PyInt>() {
        if n != 1 {
            return Err(PyTypeError::new_err(format!(
                "cost must be a sequence of {n} ints, one per limit (0 for a limit it does not count on), got {}",
                short_repr(given)
            )));
        }
        out[0] = cost(given)?;
        return Ok(out);
    }
    let wrong_length = |len: usize| {
        PyValueError::new_err(format!("cost has {len} values, the limiter {n} limits: one cost per limit"))
    };
    // A tuple, read in place.
    if let Ok(t) = given.cast::<PyTuple>() {
        if t.len() != n {
            return Err(wrong_length(t.len()));
        }
        for (slot, item) in out.iter_mut().zip(t.iter()) {
            *slot = cost(&item)?;
        }
        return Ok(out);
    }
    let Ok(items) = given.try_iter() else {
        return Err(PyTypeError::new_err(format!(
            "cost must be an int or a sequence of ints, got {}",
            type_name(given)
        )));
    };
    let mut len = 0;
    for item in items {
        let c = cost(&item?)?;
        if len < n {
            out[len] = c;
        }
        len += 1;
    }
    if len != n {
        return Err(wrong_length(len));
    }
    Ok(out)
}

/// The limiter of `configs` in the region of the file at `path`, made or
/// attached to, and its mapping.
fn shared<const N: usize>(
    py: Python<'_>,
    path: &Path,
    configs: [LimitConfig; N],
    wrap: fn(Arc<Mapped<N>>) -> Limits,
) -> PyResult<Limits> {
    let needed = SharedRateLimiterRegion::size_for(N).expect("1 to 4 limits");
    let (limiter, map) = map_region(py, path, needed, |mem, len| {
        // SAFETY:
        // - `mem` is a shared read-write mapping of `len` bytes,
        //   page-aligned, valid for as long as the map `map_region` returns,
        //   which `RateLimiter` keeps next to the limiter and drops after it.
        // - The region's bytes are only accessed through the core's region
        //   functions and the limiter they return, in this process and (by
        //   contract of the file) in every other one; the file is never
        //   truncated by this code.
        unsafe { SharedRateLimiterRegion::open_in::<N>(mem, len, configs) }
    })
    .map_err(|e| e.into_py(path))?;
    Ok(wrap(Arc::new(Mapped { limiter: limiter.counting(), _map: map })))
}

static RATE_LIMITED: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// A refusal: `RateLimitedError(retry_after, limit)`, or a `ValueError`
/// for a cost above a limit's burst, which never goes.
fn refused(py: Python<'_>, t: Throttled) -> PyErr {
    match t {
        Throttled::Wait { limit, wait } => {
            match RATE_LIMITED.import(py, "tripwire._errors", "RateLimitedError") {
                Ok(ty) => PyErr::from_type(ty.clone(), (wait.as_secs_f64(), limit)),
                Err(e) => e,
            }
        }
        too_costly => PyValueError::new_err(too_costly.to_string()),
    }
}

/// A rate limiter of weighted costs on one to four limits, taken all or
/// nothing; see `tripwire.RateLimiter`.
#[pyclass(module = "tripwire", frozen, subclass)]
pub struct RateLimiter {
    limits: Limits,
    /// `str` or `None`.
    name: Py<PyAny>,
}

#[pymethods]
impl RateLimiter {
    #[new]
    #[pyo3(signature = (limits, *, path = None, name = None))]
    fn new(
        py: Python<'_>,
        limits: &Bound<'_, PyAny>,
        path: Option<PathBuf>,
        name: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let name = match name.filter(|n| !n.is_none()) {
            None => None,
            Some(n) => Some(
                n.cast::<PyString>()
                    .map_err(|_| {
                        PyTypeError::new_err(format!("name must be a str or None, got {}", type_name(n)))
                    })?
                    .to_cow()?
                    .into_owned(),
            ),
        };
        let given = if let Ok(one) = limits.cast::<Limit>() {
            vec![one.get().config]
        } else {
            let Ok(items) = limits.try_iter() else {
                return Err(PyTypeError::new_err(format!(
                    "limits must be a Limit or a sequence of Limits, got {}",
                    type_name(limits)
                )));
            };
            items
                .map(|item| {
                    let item = item?;
                    item.cast::<Limit>().map(|l| l.get().config).map_err(|_| {
                        PyTypeError::new_err(format!("limits must hold Limits, got {}", type_name(&item)))
                    })
                })
                .collect::<PyResult<Vec<_>>>()?
        };
        if !(1..=4).contains(&given.len()) {
            return Err(PyValueError::new_err(format!("limits: 1 to 4 Limits, got {}", given.len())));
        }
        let limits = match (path, given.as_slice()) {
            (None, [a]) => Limits::One(Arc::new(Core::new([*a]).counting())),
            (None, [a, b]) => Limits::Two(Arc::new(Core::new([*a, *b]).counting())),
            (None, [a, b, c]) => Limits::Three(Arc::new(Core::new([*a, *b, *c]).counting())),
            (None, [a, b, c, d]) => Limits::Four(Arc::new(Core::new([*a, *b, *c, *d]).counting())),
            (Some(path), [a]) => shared(py, &path, [*a], Limits::SharedOne)?,
            (Some(path), [a, b]) => shared(py, &path, [*a, *b], Limits::SharedTwo)?,
            (Some(path), [a, b, c]) => shared(py, &path, [*a, *b, *c], Limits::SharedThree)?,
            (Some(path), [a, b, c, d]) => shared(py, &path, [*a, *b, *c, *d], Limits::SharedFour)?,
            _ => unreachable!("1 to 4, checked"),
        };
        if let Some(n) = name.as_deref().filter(|n| !n.is_empty()) {
            registry::register_rate_limiter(n, &limits.rows());
        }
        let name = match name {
            Some(n) => PyString::new(py, &n).into_any().unbind(),
            None => py.None(),
        };
        Ok(RateLimiter { limits, name })
    }

    /// Whether the limits live in a shared mapping (`path=`).
    #[getter]
    fn is_shared(&self) -> bool {
        matches!(
            self.limits,
            Limits::SharedOne(_) | Limits::SharedTwo(_) | Limits::SharedThree(_) | Limits::SharedFour(_)
        )
    }

    /// The name `prometheus_text()` exports it under, or None.
    #[getter]
    fn name(&self, py: Python<'_>) -> Py<PyAny> {
        self.name.clone_ref(py)
    }

    /// What each limit counted: `spent` (units taken), `waits` (takes that
    /// waited), `refusals`, `corrections` (server counts that raised it).
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let counts: Vec<LimitCounts> = with_limiter!(self, |l| l.counts().to_vec());
        counts
            .into_iter()
            .map(|c| {
                let d = PyDict::new(py);
                d.set_item("spent", c.spent)?;
                d.set_item("waits", c.waits)?;
                d.set_item("refusals", c.refusals)?;
                d.set_item("corrections", c.corrections)?;
                Ok(d)
            })
            .collect()
    }

    /// The limits, in order.
    #[getter]
    fn limits(&self) -> Vec<Limit> {
        with_limiter!(self, |l| l.configs().iter().map(|&config| Limit { config }).collect())
    }

    /// Takes `cost` if every limit lets it go now; else takes nothing and
    /// raises `RateLimitedError`.
    #[pyo3(signature = (cost = None), text_signature = "(self, /, cost=1)")]
    fn try_acquire(&self, py: Python<'_>, cost: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let one = PyInt::new(py, 1);
        let cost = cost.unwrap_or(one.as_any());
        with_costs!(self, cost, |l, costs| match l.try_acquire(costs, &MonotonicClock) {
            Ok(_) => Ok(()),
            Err(t) => Err(refused(py, t)),
        })
    }

    /// Takes `cost` if it can go within `max_wait` seconds (None: as far
    /// ahead as the limits reserve), and returns the seconds to wait before
    /// sending; else takes nothing and raises `RateLimitedError`.
    #[pyo3(signature = (cost = None, max_wait = None), text_signature = "(self, /, cost=1, max_wait=None)")]
    fn acquire(
        &self,
        py: Python<'_>,
        cost: Option<&Bound<'_, PyAny>>,
        max_wait: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<f64> {
        let one = PyInt::new(py, 1);
        let cost = cost.unwrap_or(one.as_any());
        let max_wait = match max_wait.filter(|w| !w.is_none()) {
            Some(w) => seconds("max_wait", w)?,
            None => Duration::MAX,
        };
        with_costs!(self, cost, |l, costs| match l.acquire(costs, max_wait, &MonotonicClock) {
            Ok(grant) => Ok(grant.ready_in().as_secs_f64()),
            Err(t) => Err(refused(py, t)),
        })
    }

    /// Gives back `cost` of a request that was never sent, on each limit
    /// where that is safe; the limits that took it back.
    #[pyo3(signature = (cost = None), text_signature = "(self, /, cost=1)")]
    fn refund(&self, py: Python<'_>, cost: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<bool>> {
        let one = PyInt::new(py, 1);
        let cost = cost.unwrap_or(one.as_any());
        with_costs!(self, cost, |l, costs| Ok(l.refund_costs(costs, &MonotonicClock).to_vec()))
    }

    /// Seconds until `cost` would go at once; takes nothing.
    #[pyo3(signature = (cost = None), text_signature = "(self, /, cost=1)")]
    fn wait_for(&self, py: Python<'_>, cost: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
        let one = PyInt::new(py, 1);
        let cost = cost.unwrap_or(one.as_any());
        with_costs!(self, cost, |l, costs| match l.wait_for(costs, &MonotonicClock) {
            Ok(wait) => Ok(wait.as_secs_f64()),
            Err(t) => Err(refused(py, t)),
        })
    }

    /// Counts at least `used` units on limit `limit` from now on (what a
    /// server reports having seen, in a window that ends `window_left`
    /// seconds from now if given); whether that raised the count.
    #[pyo3(signature = (limit, used, window_left = None))]
    fn observe_used(
        &self,
        limit: &Bound<'_, PyAny>,
        used: &Bound<'_, PyAny>,
        window_left: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let n = with_limiter!(self, |l| l.configs().len());
        let index = limit
            .extract::<usize>()
            .ok()
            .filter(|&i| i < n && !limit.is_instance_of::<pyo3::types::PyBool>())
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "limit must be an int from 0 to {}, got {}",
                    n - 1,
                    short_repr(limit)
                ))
            })?;
        if used.is_instance_of::<pyo3::types::PyBool>() || !used.is_instance_of::<PyInt>() {
            return Err(PyTypeError::new_err(format!("used must be an int, got {}", type_name(used))));
        }
        // A count beyond u64 is a count past any limit.
        let used = used.extract::<u64>().or_else(|_| {
            if used.lt(0)? {
                Err(PyValueError::new_err(format!("used must be at least 0, got {}", short_repr(used))))
            } else {
                Ok(u64::MAX)
            }
        })?;
        let left = match window_left.filter(|w| !w.is_none()) {
            Some(w) => Some(seconds("window_left", w)?),
            None => None,
        };
        Ok(with_limiter!(self, |l| match left {
            Some(left) => l.observe_used_in(index, used, left, &MonotonicClock),
            None => l.observe_used(index, used, &MonotonicClock),
        }))
    }

    /// The units each limit counts now.
    fn in_use<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        with_limiter!(self, |l| PyList::new(py, l.in_use(&MonotonicClock)))
    }
}
