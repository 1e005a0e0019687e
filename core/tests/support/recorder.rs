//! A `metrics` recorder for tests: every value set, by
//! `name{label=value,…}`. Included by path from the core's and the fleet's
//! tests, which both read what a registry publishes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};

/// Every value set, by `name{label=value,…}`.
#[derive(Default, Clone)]
pub struct Values(pub Arc<Mutex<BTreeMap<String, f64>>>);

struct Handle(Values, String);

impl CounterFn for Handle {
    fn increment(&self, v: u64) {
        *self.0.0.lock().unwrap().entry(self.1.clone()).or_default() += v as f64;
    }
    fn absolute(&self, v: u64) {
        self.0.0.lock().unwrap().insert(self.1.clone(), v as f64);
    }
}

impl GaugeFn for Handle {
    fn increment(&self, v: f64) {
        *self.0.0.lock().unwrap().entry(self.1.clone()).or_default() += v;
    }
    fn decrement(&self, v: f64) {
        *self.0.0.lock().unwrap().entry(self.1.clone()).or_default() -= v;
    }
    fn set(&self, v: f64) {
        self.0.0.lock().unwrap().insert(self.1.clone(), v);
    }
}

pub fn name(key: &Key) -> String {
    let labels: Vec<_> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Recorder for Values {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Handle(self.clone(), name(key))))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Arc::new(Handle(self.clone(), name(key))))
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}
