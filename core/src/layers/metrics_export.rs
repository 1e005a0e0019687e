//! The registry's counters through the `metrics` crate (feature `metrics`),
//! for services that already export with a `metrics` recorder.
//!
//! The core counts in its own atomics; [`Registry::publish_metrics`] copies
//! their current values to the installed recorder (counters as absolute
//! values, the state as a gauge per state), so call it from the scrape
//! handler or a periodic task. Names and labels match
//! [`Registry::prometheus`].

use core::fmt;
use std::borrow::ToOwned;
use std::string::String;
use std::vec::Vec;

use crate::breaker::state::State;
use crate::layers::prometheus::{
    BREAKER_CALLS, BREAKER_REJECTED, BREAKER_SLOW, BREAKER_STATE, BREAKER_TRANSITIONS, BULKHEAD_ACQUIRED,
    BULKHEAD_IN_FLIGHT, BULKHEAD_MAX, BULKHEAD_PEAK, BULKHEAD_REJECTED, FALLBACK, Kind, Sink, outcomes,
    results, sources,
};
use crate::layers::registry::Registry;

impl Registry {
    /// Copies every counter and state to the `metrics` recorder: breakers,
    /// bulkheads, stale caches; then the rows every added
    /// [`RowSource`](crate::prometheus::RowSource) writes for its breakers
    /// (the links of the fleets they joined, with the `tripwire-fleet`
    /// crate), as [`prometheus`](Registry::prometheus) writes them.
    ///
    /// # Examples
    /// ```
    /// use tripwire::registry::Registry;
    /// use tripwire::BreakerConfig;
    ///
    /// let registry = Registry::new();
    /// registry.breaker("coinbase/ticker", BreakerConfig::default);
    /// registry.publish_metrics(); // a no-op until a recorder is installed
    /// ```
    pub fn publish_metrics(&self) {
        for b in self.breakers() {
            let name: String = b.name().to_owned();
            let state = b.state();
            for s in State::ALL {
                let v = if s == state { 1.0 } else { 0.0 };
                metrics::gauge!(BREAKER_STATE, "breaker" => name.clone(), "state" => s.as_str()).set(v);
            }
            let snap = b.snapshot();
            for (outcome, v) in outcomes(&snap) {
                metrics::counter!(BREAKER_CALLS, "breaker" => name.clone(), "outcome" => outcome).absolute(v);
            }
            metrics::counter!(BREAKER_REJECTED, "breaker" => name.clone()).absolute(snap.rejected);
            metrics::counter!(BREAKER_SLOW, "breaker" => name.clone()).absolute(snap.slow);
            metrics::counter!(BREAKER_TRANSITIONS, "breaker" => name).absolute(snap.transitions);
        }
        for (name, b) in self.bulkheads() {
            let s = b.snapshot();
            metrics::gauge!(BULKHEAD_IN_FLIGHT, "bulkhead" => name.clone()).set(f64::from(s.in_flight));
            metrics::gauge!(BULKHEAD_MAX, "bulkhead" => name.clone()).set(f64::from(b.max()));
            metrics::gauge!(BULKHEAD_PEAK, "bulkhead" => name.clone()).set(f64::from(s.peak_in_flight));
            metrics::counter!(BULKHEAD_ACQUIRED, "bulkhead" => name.clone()).absolute(s.acquired);
            metrics::counter!(BULKHEAD_REJECTED, "bulkhead" => name).absolute(s.rejected);
        }
        for (name, stats) in self.stale_caches() {
            for (result, v) in results(&stats.snapshot()) {
                metrics::counter!(FALLBACK, "cache" => name.clone(), "result" => result).absolute(v);
            }
        }
        let named = self.breakers();
        let cores: Vec<&crate::breaker::Breaker> = named.iter().map(|b| b.breaker()).collect();
        let mut recorder = Recorder { family: "", kind: Kind::Counter };
        for source in sources() {
            // The recorder never fails.
            let _ = source.write_rows(&cores, &mut recorder);
        }
    }
}

/// A [`Sink`] that hands each sample to the installed `metrics` recorder:
/// a gauge is set to the value, a counter given it as its absolute value.
struct Recorder {
    /// The family begun last, and its kind.
    family: &'static str,
    kind: Kind,
}

impl Sink for Recorder {
    fn family(&mut self, name: &'static str, kind: Kind, _help: &'static str) -> fmt::Result {
        (self.family, self.kind) = (name, kind);
        Ok(())
    }

    fn sample(&mut self, labels: &[(&str, &str)], value: u64) -> fmt::Result {
        let labels: Vec<metrics::Label> =
            labels.iter().map(|&(k, v)| metrics::Label::new(k.to_owned(), v.to_owned())).collect();
        match self.kind {
            // A gauge is an f64: exact up to 2^53, beyond any gauge's value.
            Kind::Gauge => metrics::gauge!(self.family, labels).set(value as f64),
            Kind::Counter => metrics::counter!(self.family, labels).absolute(value),
        }
        Ok(())
    }
}
