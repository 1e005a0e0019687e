//! A retry budget: retries limited to a fraction of recent calls, so that
//! retrying cannot multiply the load on a dependency that is down.
//!
//! A token bucket in one atomic word: every call deposits `ratio` tokens,
//! every retry withdraws one; `min_per_second` tokens trickle in with time
//! so that a quiet client can still retry; the bucket holds at most
//! `capacity`. Tokens are counted in thousandths.
//!
//! # Bit layout
//! | bits   | field  | meaning |
//! | ------ | ------ | ------- |
//! | 0..32  | `tick` | when the trickle was last added, in ms since the budget was made (wrapping) |
//! | 32..64 | `milli` | tokens × 1000 |
//!
//! # Orderings
//! The word guards no other data; every access is `Relaxed`, and the CAS
//! loop alone keeps deposits and withdrawals from being lost.

use core::sync::atomic::{AtomicU64, Ordering};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use tripwire::Clock;

use crate::clock::{ClockSource, ManualClock};
use crate::config::{count, number};

const MILLI: u64 = 1000;

/// A retry budget shared by the callers of one dependency.
#[pyclass(module = "tripwire", frozen)]
pub struct RetryBudget {
    word: AtomicU64,
    /// Tokens × 1000 added by each call.
    deposit_milli: u64,
    /// Tokens × 1000 added per millisecond.
    trickle_milli_per_ms: f64,
    capacity_milli: u64,
    clock: ClockSource,
    manual_clock: Option<Py<ManualClock>>,
    /// The clock's reading when the budget was made (ns).
    origin: u64,
    ratio: f64,
    min_per_second: f64,
}

fn pack(milli: u64, tick: u32) -> u64 {
    (milli << 32) | u64::from(tick)
}

impl RetryBudget {
    fn tick(&self) -> u32 {
        // Milliseconds since the budget was made, wrapping after 49 days:
        // only differences between ticks are used.
        (self.clock.now().saturating_sub(self.origin) / 1_000_000) as u32
    }

    /// Applies `f` to (tokens × 1000) after adding the trickle; `f` returns
    /// the new amount, or `None` to leave the word as it is.
    fn update(&self, mut f: impl FnMut(u64) -> Option<u64>) -> bool {
        let tick = self.tick();
        // Relaxed: see the module's Orderings.
        let mut cur = self.word.load(Ordering::Relaxed);
        loop {
            let (milli, last) = (cur >> 32, cur as u32);
            let elapsed = tick.wrapping_sub(last);
            // A tick from the past (another thread moved on meanwhile) adds nothing.
            let elapsed = if elapsed > u32::MAX / 2 { 0 } else { elapsed };
            let trickled = (f64::from(elapsed) * self.trickle_milli_per_ms) as u64;
            let filled = milli.saturating_add(trickled).min(self.capacity_milli);
            let new_tick = if elapsed == 0 { last } else { tick };
            let Some(next) = f(filled) else { return false };
            let next = pack(next.min(self.capacity_milli), new_tick);
            // Relaxed: see the module's Orderings.
            match self.word.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }
}

#[pymethods]
impl RetryBudget {
    #[new]
    #[pyo3(signature = (ratio = None, *, min_per_second = None, capacity = None, clock = None))]
    fn new(
        ratio: Option<&Bound<'_, PyAny>>,
        min_per_second: Option<&Bound<'_, PyAny>>,
        capacity: Option<&Bound<'_, PyAny>>,
        clock: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let ratio_v = match ratio.filter(|v| !v.is_none()) {
            Some(v) => number("ratio", v)?,
            None => 0.1,
        };
        if !(0.0..=1000.0).contains(&ratio_v) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "invalid retry budget: ratio = {ratio_v}, expected 0 to 1000"
            )));
        }
        let per_second = match min_per_second.filter(|v| !v.is_none()) {
            Some(v) => number("min_per_second", v)?,
            None => 1.0,
        };
        if !(0.0..=1e6).contains(&per_second) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "invalid retry budget: min_per_second = {per_second}, expected 0 to 1000000"
            )));
        }
        let capacity = match capacity.filter(|c| !c.is_none()) {
            Some(c) => count("capacity", c)?,
            // Ten seconds' worth of trickle, and at least ten retries.
            None => ((per_second * 10.0).ceil() as u32).max(10),
        };
        if capacity == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "invalid retry budget: capacity = 0, expected at least 1",
            ));
        }
        let (clock, manual_clock) = match clock.filter(|c| !c.is_none()) {
            None => (ClockSource::Monotonic, None),
            Some(c) => match c.cast::<ManualClock>() {
                Ok(m) => (ClockSource::Manual(m.get().inner.clone()), Some(m.clone().unbind())),
                Err(_) => {
                    return Err(PyTypeError::new_err(format!(
                        "clock must be a tripwire.ManualClock or None, got {}",
                        c.repr()?
                    )));
                }
            },
        };
        let capacity_milli = u64::from(capacity) * MILLI;
        let origin = clock.now();
        Ok(Self {
            // A new budget starts full: a client's first failures may retry.
            word: AtomicU64::new(pack(capacity_milli, 0)),
            deposit_milli: (ratio_v * MILLI as f64) as u64,
            trickle_milli_per_ms: per_second,
            capacity_milli,
            clock,
            manual_clock,
            origin,
            ratio: ratio_v,
            min_per_second: per_second,
        })
    }

    /// Records a call (a first attempt): adds `ratio` tokens.
    fn deposit(&self) {
        let add = self.deposit_milli;
        self.update(|m| Some(m.saturating_add(add)));
    }

    /// Takes a token for a retry; False when the budget is spent.
    fn try_withdraw(&self) -> bool {
        self.update(|m| m.checked_sub(MILLI))
    }

    /// Tokens available now (retries allowed before more calls deposit).
    #[getter]
    fn available(&self) -> f64 {
        let mut seen = 0;
        self.update(|m| {
            seen = m;
            None
        });
        seen as f64 / MILLI as f64
    }

    /// Tokens each call deposits.
    #[getter]
    fn ratio(&self) -> f64 {
        self.ratio
    }

    /// Tokens added per second regardless of calls.
    #[getter]
    fn min_per_second(&self) -> f64 {
        self.min_per_second
    }

    /// The most tokens the budget holds.
    #[getter]
    fn capacity(&self) -> u64 {
        self.capacity_milli / MILLI
    }

    fn __repr__(&self) -> String {
        format!(
            "RetryBudget(ratio={:?}, min_per_second={:?}, capacity={}, available={:?})",
            self.ratio,
            self.min_per_second,
            self.capacity(),
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
