//! Rows another crate adds with `prometheus::add_source` follow a
//! registry's own families in its text export, for its own breakers only,
//! and a binding's export writes them with `write_sources`.
#![cfg(all(feature = "std", not(loom)))]

use std::fmt;
use std::sync::{Arc, Mutex};

use tripwire::prometheus::{self, Kind, RowSource, Sink};
use tripwire::{Breaker, BreakerConfig, Outcome, registry::Registry};

/// The breakers the source reports on, by address, with a label each.
static WATCHED: Mutex<Vec<(usize, &'static str)>> = Mutex::new(Vec::new());

/// A rejection count per watched breaker among those exported.
struct Watched;

impl RowSource for Watched {
    fn write_rows(&self, breakers: &[&Breaker], out: &mut dyn Sink) -> fmt::Result {
        let watched = WATCHED.lock().unwrap().clone();
        let rows: Vec<(&str, u64)> = watched
            .iter()
            .filter(|(addr, _)| breakers.iter().any(|b| std::ptr::from_ref(*b) as usize == *addr))
            .map(|&(_, label)| (label, 0))
            .collect();
        if rows.is_empty() {
            return Ok(());
        }
        out.family("test_watched", Kind::Gauge, "Watched breakers in this export.")?;
        for (label, v) in &rows {
            out.sample(&[("watch", label)], *v)?;
        }
        let rejected: u64 = breakers.iter().map(|b| b.snapshot().rejected).sum();
        out.family("test_watched_rejected_total", Kind::Counter, "Refusals of the exported breakers.")?;
        out.sample(&[], rejected)
    }
}

static SOURCE: Watched = Watched;

fn watch(b: &Breaker, label: &'static str) {
    static ADDED: std::sync::Once = std::sync::Once::new();
    ADDED.call_once(|| prometheus::add_source(&SOURCE));
    WATCHED.lock().unwrap().push((std::ptr::from_ref(b) as usize, label));
}

#[test]
fn an_added_source_writes_after_the_registry_and_only_for_its_breakers() {
    let registry = Registry::new();
    let book = registry
        .breaker("binance/orderbook", || BreakerConfig::builder().failure_threshold(1).build().unwrap());
    let quiet = Registry::new();
    quiet.breaker("binance/orderbook", BreakerConfig::default);
    watch(book.breaker(), "book");
    let t = book.try_acquire().unwrap();
    book.record(t, Outcome::Failure);
    let _ = book.try_acquire();

    let text = registry.prometheus();
    let own = text.find("# HELP tripwire_breaker_state").expect(&text);
    let added =
        text.find("# HELP test_watched Watched breakers in this export.\n# TYPE test_watched gauge\n");
    assert!(added.is_some_and(|a| a > own), "after the registry's own families\n{text}");
    assert!(text.contains("\ntest_watched{watch=\"book\"} 0\n"), "{text}");
    assert!(
        text.contains("# TYPE test_watched_rejected_total counter\ntest_watched_rejected_total 1\n"),
        "{text}"
    );
    assert!(!quiet.prometheus().contains("test_watched"), "not for another registry's breakers");
}

#[test]
fn a_binding_writes_the_sources_for_its_own_breakers() {
    let core = Arc::new(Breaker::new(BreakerConfig::default()));
    watch(&core, "bound");
    let mut text = String::new();
    prometheus::write_sources(&mut text, &[&core]).unwrap();
    assert!(text.contains("test_watched{watch=\"bound\"} 0\n"), "{text}");
    let mut none = String::new();
    prometheus::write_sources(&mut none, &[]).unwrap();
    assert_eq!(none, "");
}
