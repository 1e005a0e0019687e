//! [`Events`]' counts through the `metrics` crate (feature `metrics`).

use std::borrow::ToOwned;

use crate::layers::events::hub::Events;

/// Bulkhead events by kind: `{bulkhead, event = refused | waited | timed_out}`.
pub(crate) const BULKHEAD_EVENTS: &str = "tripwire_bulkhead_events_total";
/// Retry events by kind: `{retry, event = scheduled | pause_capped | budget_refused | exhausted}`.
pub(crate) const RETRY_EVENTS: &str = "tripwire_retry_events_total";

impl Events {
    /// Copies the counts to the `metrics` recorder as absolute counters,
    /// `tripwire_bulkhead_events_total{bulkhead, event}` (`refused`,
    /// `waited`, `timed_out`) and `tripwire_retry_events_total{retry,
    /// event}` (`scheduled`, `pause_capped`, `budget_refused`, `exhausted`), labelled with
    /// its name: call it where `Registry::publish_metrics` is called.
    ///
    /// # Examples
    /// ```
    /// use tripwire::events::Events;
    /// Events::new("coinbase/rest").publish_metrics(); // a no-op until a recorder is installed
    /// ```
    pub fn publish_metrics(&self) {
        let c = self.counts();
        for (event, v) in [
            ("refused", c.bulkhead_refused),
            ("waited", c.bulkhead_waited),
            ("timed_out", c.bulkhead_timed_out),
        ] {
            metrics::counter!(BULKHEAD_EVENTS, "bulkhead" => self.name().to_owned(), "event" => event)
                .absolute(v);
        }
        for (event, v) in [
            ("scheduled", c.retries_scheduled),
            ("pause_capped", c.retry_pauses_capped),
            ("budget_refused", c.retry_budget_refused),
            ("exhausted", c.retries_exhausted),
        ] {
            metrics::counter!(RETRY_EVENTS, "retry" => self.name().to_owned(), "event" => event).absolute(v);
        }
    }
}
