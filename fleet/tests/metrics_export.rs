//! A registry's export to a `metrics` recorder carries the links of the
//! fleets its breakers joined, with the names, labels and values of its
//! Prometheus text.

#[path = "../../core/tests/support/recorder.rs"]
mod recorder;

use std::collections::BTreeMap;
use std::time::Duration;

use recorder::Values;
use tripwire::{BreakerConfig, registry::Registry};
use tripwire_fleet::{Fleet, FleetConfig};

/// The fleet rows of `Registry::prometheus`, as `name{label=value,…}` →
/// value, the recorder's keys.
fn fleet_series(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| l.starts_with("tripwire_fleet_"))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series.replace('"', ""), value.parse().unwrap())
        })
        .collect()
}

#[test]
fn the_links_of_joined_fleets_reach_the_recorder_as_in_the_text_export() {
    // No Redis needed: a link that cannot connect is down, and exported so.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("redis://127.0.0.1:{port}");
    let config = FleetConfig::builder(&url, "metrics-export", *b"0123456789abcdef0123456789abcdef")
        .connect_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let fleet = Fleet::new(config).unwrap();
    let registry = Registry::new();
    let book = registry.breaker("binance/orderbook", BreakerConfig::default);
    fleet.join(&book).unwrap();

    // The link thread may move a counter between two reads: compare a
    // publication with a text export that reads the same before and after it.
    let (got, want) = loop {
        let before = fleet_series(&registry.prometheus());
        let values = Values::default();
        metrics::with_local_recorder(&values, || registry.publish_metrics());
        if fleet_series(&registry.prometheus()) == before {
            break (values.0.lock().unwrap().clone(), before);
        }
    };
    assert!(want.contains_key("tripwire_fleet_link_state{fleet=metrics-export,state=down}"), "{want:#?}");
    assert!(want.contains_key("tripwire_fleet_leases_total{fleet=metrics-export,result=won}"), "{want:#?}");
    let published: BTreeMap<String, f64> =
        got.into_iter().filter(|(k, _)| k.starts_with("tripwire_fleet_")).collect();
    assert_eq!(published, want);
}
