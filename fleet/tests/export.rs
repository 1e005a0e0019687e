//! A registry's Prometheus export carries the counters of the fleet links
//! its breakers joined, and only theirs.

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{KEY, free_port, namespace, redis_url, wait_for};
use tripwire::{BreakerConfig, NamedBreaker, Outcome, registry::Registry};
use tripwire_fleet::{Fleet, FleetConfig};

fn config() -> BreakerConfig {
    BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_secs(5)).build().unwrap()
}

fn has(text: &str, line: &str) -> bool {
    text.lines().any(|l| l == line)
}

#[test]
fn a_registry_exports_the_link_of_a_fleet_its_breaker_joined() {
    let Some(url) = redis_url("a_registry_exports_the_link_of_a_fleet_its_breaker_joined") else { return };
    let ns = namespace("export");
    let registry = Registry::new();
    let book = registry.breaker("binance/orderbook", config);
    let fleet = Fleet::new(FleetConfig::builder(&url, &ns, *KEY).build().unwrap()).unwrap();
    fleet.join(&book).unwrap();
    assert!(fleet.wait_linked(Duration::from_secs(5)), "{:?}", fleet.snapshot());
    let t = book.try_acquire().unwrap();
    book.record(t, Outcome::Failure);
    wait_for(Duration::from_secs(2), || fleet.snapshot().sent == 1).expect("the trip published");
    let text = registry.prometheus();
    for line in [
        "# TYPE tripwire_fleet_link_state gauge".to_string(),
        format!(r#"tripwire_fleet_link_state{{fleet="{ns}",state="up"}} 1"#),
        format!(r#"tripwire_fleet_sent_total{{fleet="{ns}"}} 1"#),
        format!(r#"tripwire_fleet_received_total{{fleet="{ns}"}} 0"#),
        format!(r#"tripwire_fleet_dropped_total{{fleet="{ns}"}} 0"#),
        format!(r#"tripwire_fleet_reconnects_total{{fleet="{ns}"}} 0"#),
        format!(r#"tripwire_fleet_rejected_total{{fleet="{ns}",reason="signature"}} 0"#),
        r#"tripwire_breaker_state{breaker="binance/orderbook",state="open"} 1"#.to_string(),
    ] {
        assert!(has(&text, &line), "{line} in\n{text}");
    }
    // The same families and values as the fleet's own export.
    let own = fleet.prometheus();
    let fleet_lines: Vec<&str> = text.lines().filter(|l| l.contains("tripwire_fleet_")).collect();
    assert_eq!(fleet_lines, own.lines().collect::<Vec<_>>());
    // Dropped, the fleet leaves the export.
    drop(fleet);
    assert!(!registry.prometheus().contains("tripwire_fleet_"), "{}", registry.prometheus());
}

#[test]
fn only_the_fleets_of_its_own_breakers_and_each_namespace_once() {
    // No Redis needed: a link that cannot connect is down, and exported so.
    let url = format!("redis://127.0.0.1:{}", free_port());
    let quick = |ns: &str| {
        let b = FleetConfig::builder(&url, ns, *KEY).connect_timeout(Duration::from_millis(50));
        Fleet::new(b.build().unwrap()).unwrap()
    };
    let (mine, other) = (namespace("mine"), namespace("other"));
    let registry = Registry::new();
    let book = registry.breaker("binance/orderbook", config);
    let quiet = Registry::new();
    quiet.breaker("binance/orderbook", config);
    // The same name, another breaker: it brings in nothing.
    let twin = Arc::new(NamedBreaker::new("binance/orderbook", config()));
    let (fa, fb, fc) = (quick(&mine), quick(&mine), quick(&other));
    fa.join(&book).unwrap();
    fc.join(&twin).unwrap();
    // A second host in this process, on the same namespace, with another
    // breaker of the registry.
    let trades = registry.breaker("binance/trades", config);
    fb.join(&trades).unwrap();
    let text = registry.prometheus();
    let state = format!(r#"tripwire_fleet_link_state{{fleet="{mine}",state="down"}} 1"#);
    assert!(has(&text, &state), "{state} in\n{text}");
    let sent: Vec<&str> = text.lines().filter(|l| l.starts_with("tripwire_fleet_sent_total{")).collect();
    assert_eq!(sent, [format!(r#"tripwire_fleet_sent_total{{fleet="{mine}"}} 0"#)], "one row\n{text}");
    assert!(!text.contains(&other), "a fleet none of its breakers joined\n{text}");
    assert!(!quiet.prometheus().contains("tripwire_fleet_"), "{}", quiet.prometheus());
    // The link's failed attempts to connect are exported, summed over the
    // namespace's two links, as its snapshot counts them.
    wait_for(Duration::from_secs(5), || {
        fa.snapshot().connect_failures > 0 && fb.snapshot().connect_failures > 0
    })
    .expect("both links tried and failed to connect");
    let text = registry.prometheus();
    let family = format!(r#"tripwire_fleet_connect_failures_total{{fleet="{mine}"}} "#);
    let line = text.lines().find(|l| l.starts_with(&family)).unwrap_or_else(|| panic!("{family} in\n{text}"));
    let exported: u64 = line[family.len()..].parse().unwrap();
    assert!(exported >= 2, "{line}: both links' failures");
    drop((fa, fb, fc));
}
