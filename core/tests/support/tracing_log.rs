//! A `tracing` subscriber for tests: each event at the `tripwire` target,
//! its level and its fields. Included by path from the core's and the
//! fleet's tests.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Keeps each event's level and fields.
#[derive(Clone, Default)]
pub struct Log(pub Arc<Mutex<Vec<(Level, String)>>>);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.push_str(&format!("{}={:?} ", field.name(), value));
    }
}

impl Subscriber for Log {
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
