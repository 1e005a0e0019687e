//! The registry's counters through the `metrics` crate (feature `metrics`),
//! for services that already export with a `metrics` recorder.
//!
//! The core counts in its own atomics; [`Registry::publish_metrics`] copies
//! their current values to the installed recorder (counters as absolute
//! values, the state as a gauge per state), so call it from the scrape
//! handler or a periodic task. Names and labels match
//! [`Registry::prometheus`].

use std::borrow::ToOwned;
use std::string::String;

use crate::registry::Registry;
use crate::state::State;

const STATES: [State; 5] = [State::Closed, State::Open, State::HalfOpen, State::ForcedOpen, State::Disabled];

impl Registry {
    /// Copies every counter and state to the `metrics` recorder.
    ///
    /// # Examples
    /// ```
    /// use tripwire::{BreakerConfig, Registry};
    ///
    /// let registry = Registry::new();
    /// registry.breaker("coinbase/ticker", BreakerConfig::default);
    /// registry.publish_metrics(); // a no-op until a recorder is installed
    /// ```
    pub fn publish_metrics(&self) {
        for b in self.breakers() {
            let name: String = b.name().to_owned();
            let state = b.state();
            for s in STATES {
                let v = if s == state { 1.0 } else { 0.0 };
                metrics::gauge!("tripwire_breaker_state", "breaker" => name.clone(), "state" => s.as_str())
                    .set(v);
            }
            let snap = b.snapshot();
            for (outcome, v) in
                [("success", snap.successes), ("failure", snap.failures), ("ignored", snap.ignored)]
            {
                metrics::counter!("tripwire_breaker_calls_total", "breaker" => name.clone(), "outcome" => outcome)
                    .absolute(v);
            }
            metrics::counter!("tripwire_breaker_rejected_total", "breaker" => name.clone())
                .absolute(snap.rejected);
            metrics::counter!("tripwire_breaker_slow_calls_total", "breaker" => name.clone())
                .absolute(snap.slow);
            metrics::counter!("tripwire_breaker_transitions_total", "breaker" => name)
                .absolute(snap.transitions);
        }
        for (name, b) in self.bulkheads() {
            let s = b.snapshot();
            metrics::gauge!("tripwire_bulkhead_in_flight", "bulkhead" => name.clone())
                .set(f64::from(s.in_flight));
            metrics::gauge!("tripwire_bulkhead_max", "bulkhead" => name.clone()).set(f64::from(b.max()));
            metrics::gauge!("tripwire_bulkhead_peak_in_flight", "bulkhead" => name.clone())
                .set(f64::from(s.peak_in_flight));
            metrics::counter!("tripwire_bulkhead_acquired_total", "bulkhead" => name.clone())
                .absolute(s.acquired);
            metrics::counter!("tripwire_bulkhead_rejected_total", "bulkhead" => name).absolute(s.rejected);
        }
        for (name, stats) in self.stale_caches() {
            let s = stats.snapshot();
            for (result, v) in [("fresh", s.fresh), ("stale", s.stale), ("refused", s.refused)] {
                metrics::counter!("tripwire_fallback_total", "cache" => name.clone(), "result" => result)
                    .absolute(v);
            }
        }
    }
}
