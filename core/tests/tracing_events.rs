//! With feature `tracing`, every state change is one event at the
//! `tripwire` target, naming the breaker and both states.
#![cfg(all(feature = "tracing", not(loom)))]

use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};
use tripwire::{BreakerConfig, ManualClock, NamedBreaker, Outcome};

/// Keeps each event's level and fields.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<(Level, String)>>>);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.push_str(&format!("{}={:?} ", field.name(), value));
    }
}

impl Subscriber for Events {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.target() == "tripwire"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, e: &Event<'_>) {
        let mut fields = Fields(String::new());
        e.record(&mut fields);
        self.0.lock().unwrap().push((*e.metadata().level(), fields.0));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn each_transition_is_one_event() {
    let events = Events::default();
    let b = NamedBreaker::with_clock(
        "kraken/ws",
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_secs(1)).build().unwrap(),
        ManualClock::new(1),
    );
    tracing::subscriber::with_default(events.clone(), || {
        let t = b.try_acquire().unwrap();
        b.record(t, Outcome::Failure);
        b.clock().advance(Duration::from_secs(1));
        let probe = b.try_acquire().unwrap();
        b.record(probe, Outcome::Success);
    });
    let got = events.0.lock().unwrap().clone();
    assert_eq!(got.len(), 3, "{got:#?}");
    assert_eq!(got[0].0, Level::WARN);
    assert!(got[0].1.contains(r#"breaker="kraken/ws""#) && got[0].1.contains(r#"to="open""#), "{}", got[0].1);
    assert!(got[2].1.contains(r#"from="half_open""#) && got[2].1.contains(r#"to="closed""#), "{}", got[2].1);
    assert_eq!(got[2].0, Level::INFO);
}
