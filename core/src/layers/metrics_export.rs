//! The registry's counters through the `metrics` crate (feature `metrics`),
//! for services that already export with a `metrics` recorder.
//!
//! The core counts in its own atomics; [`Registry::publish_metrics`] copies
//! their current values to the installed recorder (counters as absolute
//! values, the state as a gauge per state), so call it from the scrape
//! handler or a periodic task. Names and labels are
//! [`Registry::prometheus`]'s: both exports write the same families, once,
//! to a [`Sink`] of their own.

use core::fmt;
use std::borrow::ToOwned;
use std::vec::Vec;

use crate::layers::prometheus::{Kind, Sink};
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
        // The recorder never fails.
        let _ = self.write_families(&mut Recorder { family: "", kind: Kind::Counter });
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
