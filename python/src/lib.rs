//! The `tripwire._tripwire` extension module: the core's breaker behind a
//! Python API (`import tripwire`).
//!
//! - [`breaker::Breaker`]: the breaker, usable as a decorator, a context
//!   manager (`with` / `async with`) and through `call`.
//! - [`guarded::Guarded`]: what decorating a plain function returns; its
//!   `__call__` is the whole hot path, in Rust. [`with_stack`]: the
//!   tickets of open `with breaker:` blocks, per thread.
//! - [`config::BreakerArgs`]: a breaker's keyword arguments, read once
//!   for `Breaker(...)` and `Breaker.shared`, → the core's
//!   `BreakerConfig`; [`classify`]: which exceptions and results count as
//!   failures; [`listeners`]: the callables told of each transition;
//!   [`snapshot`]: a breaker's counters as a frozen object;
//!   [`ticket`]: an admitted call's ticket as Python code holds it.
//! - [`clock::ManualClock`]: a clock that only moves when told to, for tests.
//! - [`core_breaker`]: the core breaker a `Breaker` wraps, in this
//!   process or in a shared mapping; [`state`]: states' names.
//! - [`errors`]: raising the exceptions of `tripwire/_errors.py`;
//!   [`aio`]: the asyncio helpers of `tripwire/_aio.py`.
//! - [`args`]: the argument checks, for the Python modules too;
//!   [`as_given`]: a wrong value shown as the caller gave it;
//!   [`http`]: the core's classification of HTTP responses and its
//!   reading of `Retry-After` and reset headers.
//! - [`registry`]: named breakers, bulkheads and stale caches and their
//!   Prometheus export (the core's writer, so the families are a Rust
//!   `Registry`'s); [`stale_stats::StaleStats`]: a Python stale cache's
//!   counters, kept in [`stale_counts`] where the registry reads them.
//! - [`shared`]: breakers in a memory-mapped file (`Breaker.shared`).
//! - [`bulkhead::Bulkhead`]: a cap on calls in flight;
//!   [`bulkhead_wait::BulkheadWait`]: a coroutine's wait for a slot, woken
//!   by a release.
//! - [`keyed::Breakers`]: a breaker per key, the core's keyed map; its
//!   keys are [`keyed::Key`]s.
//! - [`fleet::Fleet`]: the fleet link over Redis (`tripwire-fleet`), for named breakers.
//! - [`limiter::RateLimiter`] and [`limiter::Limit`]: the core's rate
//!   limiter, whose waits `tripwire/_limiter.py` sleeps and awaits.
//! - [`budget::RetryBudget`], [`backoff::Backoff`]: the core's retry budget
//!   and backoff; [`retry::RetryPolicy`] and [`retry::RetryRun`]: the
//!   core's retry loop, whose decisions `tripwire.retry`
//!   (`tripwire/_retry.py`) follows while it sleeps and awaits.
//!
//! Nothing here takes a lock on a call's path or holds one across a call:
//! admission and recording are the core's atomic operations, done while the
//! calling thread is attached to the interpreter; the guarded call runs
//! between them like any other Python call.

// The crate's API is the Python module; these docs map its private modules
// for maintainers (`cargo doc --document-private-items` resolves the links).
#![allow(rustdoc::private_intra_doc_links)]

mod aio;
mod args;
mod as_given;
mod backoff;
mod breaker;
mod budget;
mod bulkhead;
mod bulkhead_wait;
mod classify;
mod clock;
mod config;
mod core_breaker;
mod errors;
mod fleet;
mod guarded;
mod http;
mod keyed;
mod limiter;
mod listeners;
mod registry;
mod retry;
mod shared;
mod snapshot;
mod stale_counts;
mod stale_stats;
mod state;
mod ticket;
mod with_stack;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _tripwire(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<breaker::Breaker>()?;
    // The names a `(**kwargs)` signature hides, for `help()` and stubtest.
    py.get_type::<breaker::Breaker>().setattr("__signature__", config::BreakerArgs::signature(py)?)?;
    m.add_class::<guarded::Guarded>()?;
    m.add_class::<clock::ManualClock>()?;
    m.add_class::<snapshot::Snapshot>()?;
    m.add_class::<ticket::Ticket>()?;
    m.add_class::<bulkhead::Bulkhead>()?;
    m.add_class::<bulkhead_wait::BulkheadWait>()?;
    m.add_class::<stale_stats::StaleStats>()?;
    m.add_class::<budget::RetryBudget>()?;
    m.add_class::<backoff::Backoff>()?;
    m.add_class::<retry::RetryPolicy>()?;
    m.add_class::<retry::RetryRun>()?;
    m.add_class::<fleet::Fleet>()?;
    m.add_class::<limiter::Limit>()?;
    m.add_class::<limiter::RateLimiter>()?;
    m.add_class::<keyed::Breakers>()?;
    m.add_function(wrap_pyfunction!(registry::prometheus_text, m)?)?;
    m.add_function(wrap_pyfunction!(registry::breaker_names, m)?)?;
    m.add_function(wrap_pyfunction!(args::seconds_or_none, m)?)?;
    m.add_function(wrap_pyfunction!(args::exception_classes, m)?)?;
    m.add_function(wrap_pyfunction!(clock::manual_clock, m)?)?;
    m.add_function(wrap_pyfunction!(http::retry_after, m)?)?;
    m.add_function(wrap_pyfunction!(http::raised_retry_after, m)?)?;
    m.add_function(wrap_pyfunction!(http::assess, m)?)?;
    m.add_function(wrap_pyfunction!(http::assess_response, m)?)?;
    m.add_function(wrap_pyfunction!(http::settle, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_fits_in_an_object_as_the_interpreter_aligns_it() {
        // CPython aligns the objects it allocates to 16 bytes (pymalloc's
        // ALIGNMENT, and malloc's on 64-bit targets); a class whose value
        // needs more (a core type padded to a cache line) must box it.
        const OBJECT_ALIGN: usize = 16;
        let classes = [
            ("Backoff", align_of::<backoff::Backoff>()),
            ("Breaker", align_of::<breaker::Breaker>()),
            ("Breakers", align_of::<keyed::Breakers>()),
            ("Ticket", align_of::<ticket::Ticket>()),
            ("RetryBudget", align_of::<budget::RetryBudget>()),
            ("Bulkhead", align_of::<bulkhead::Bulkhead>()),
            ("BulkheadWait", align_of::<bulkhead_wait::BulkheadWait>()),
            ("Fleet", align_of::<fleet::Fleet>()),
            ("ManualClock", align_of::<clock::ManualClock>()),
            ("Guarded", align_of::<guarded::Guarded>()),
            ("RetryPolicy", align_of::<retry::RetryPolicy>()),
            ("RetryRun", align_of::<retry::RetryRun>()),
            ("Snapshot", align_of::<snapshot::Snapshot>()),
            ("StaleStats", align_of::<stale_stats::StaleStats>()),
            ("with_stack.Frame", align_of::<with_stack::Frame>()),
        ];
        for (name, align) in classes {
            assert!(align <= OBJECT_ALIGN, "{name} needs {align}-byte alignment");
        }
    }
}
