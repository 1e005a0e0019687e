//! The Prometheus text exposition format (version 0.0.4) for a
//! [`Registry`]: HELP and TYPE lines, one family at a time, labels escaped.

use core::fmt::Write;
use std::string::String;

use crate::bulkhead::BulkheadSnapshot;
use crate::registry::Registry;
use crate::state::State;

const STATES: [State; 5] = [State::Closed, State::Open, State::HalfOpen, State::ForcedOpen, State::Disabled];

/// Renders every breaker's, bulkhead's and stale cache's metrics.
pub(crate) fn render(registry: &Registry) -> String {
    let breakers = registry.breakers();
    let stale = registry.stale_caches();
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, rows: &mut dyn Iterator<Item = (String, u64)>| {
        let mut rows = rows.peekable();
        if rows.peek().is_none() {
            return;
        }
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in rows {
            let _ = writeln!(out, "{name}{{{labels}}} {value}");
        }
    };
    let snaps: std::vec::Vec<_> =
        breakers.iter().map(|b| (label(b.name()), b.state(), b.snapshot())).collect();
    family(
        "tripwire_breaker_state",
        "gauge",
        "The breaker's state: 1 for the current one, 0 for the others.",
        &mut snaps.iter().flat_map(|(n, state, _)| {
            STATES.iter().map(move |s| {
                (format_labels(&[("breaker", n), ("state", s.as_str())]), u64::from(s == state))
            })
        }),
    );
    family(
        "tripwire_breaker_calls_total",
        "counter",
        "Calls admitted and recorded, by outcome.",
        &mut snaps.iter().flat_map(|(n, _, s)| {
            [("success", s.successes), ("failure", s.failures), ("ignored", s.ignored)]
                .into_iter()
                .map(move |(o, v)| (format_labels(&[("breaker", n), ("outcome", o)]), v))
        }),
    );
    let mut one = |name: &str, help: &str, get: fn(&crate::Snapshot) -> u64| {
        family(
            name,
            "counter",
            help,
            &mut snaps.iter().map(|(n, _, s)| (format_labels(&[("breaker", n)]), get(s))),
        );
    };
    one("tripwire_breaker_rejected_total", "Calls refused by the breaker.", |s| s.rejected);
    one("tripwire_breaker_slow_calls_total", "Calls slower than the slow-call threshold.", |s| s.slow);
    one("tripwire_breaker_transitions_total", "State transitions, manual ones included.", |s| s.transitions);
    let bulkheads: std::vec::Vec<_> =
        registry.bulkheads().iter().map(|(n, b)| (label(n), b.max(), b.snapshot())).collect();
    let mut per_bulkhead = |name: &str, kind: &str, help: &str, get: fn(u32, &BulkheadSnapshot) -> u64| {
        family(
            name,
            kind,
            help,
            &mut bulkheads.iter().map(|(n, max, s)| (format_labels(&[("bulkhead", n)]), get(*max, s))),
        );
    };
    per_bulkhead("tripwire_bulkhead_in_flight", "gauge", "Calls in flight now.", |_, s| s.in_flight.into());
    per_bulkhead("tripwire_bulkhead_max", "gauge", "The cap on calls in flight.", |max, _| max.into());
    per_bulkhead(
        "tripwire_bulkhead_peak_in_flight",
        "gauge",
        "The most calls ever in flight at once.",
        |_, s| s.peak_in_flight.into(),
    );
    per_bulkhead("tripwire_bulkhead_acquired_total", "counter", "Slots handed out.", |_, s| s.acquired);
    per_bulkhead(
        "tripwire_bulkhead_rejected_total",
        "counter",
        "Calls refused for want of a slot.",
        |_, s| s.rejected,
    );
    let stale: std::vec::Vec<_> = stale.iter().map(|(n, s)| (label(n), s.snapshot())).collect();
    family(
        "tripwire_fallback_total",
        "counter",
        "Calls through a stale cache: fresh values stored, stale values served, errors passed on.",
        &mut stale.iter().flat_map(|(n, s)| {
            [("fresh", s.fresh), ("stale", s.stale), ("refused", s.refused)]
                .into_iter()
                .map(move |(r, v)| (format_labels(&[("cache", n), ("result", r)]), v))
        }),
    );
    out
}

/// `k="v",…` from already escaped values.
fn format_labels(pairs: &[(&str, &str)]) -> String {
    let mut s = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(s, "{sep}{k}=\"{v}\"");
    }
    s
}

/// A label value escaped as the format asks: `\` → `\\`, `"` → `\"`,
/// newline → `\n`.
pub(crate) fn label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BreakerConfig, Outcome};

    #[test]
    fn labels_are_escaped() {
        assert_eq!(label(r#"a\b"c"#), r#"a\\b\"c"#);
        assert_eq!(label("x\ny"), r"x\ny");
    }

    #[test]
    fn every_family_has_help_and_type_and_each_breaker_a_row() {
        let r = Registry::new();
        let b =
            r.breaker("binance/orderbook", || BreakerConfig::builder().failure_threshold(1).build().unwrap());
        r.breaker("we\"ird", BreakerConfig::default);
        let t = b.try_acquire().unwrap();
        b.record(t, Outcome::Failure);
        let _ = b.try_acquire();
        let text = r.prometheus();
        for family in [
            "tripwire_breaker_state gauge",
            "tripwire_breaker_calls_total counter",
            "tripwire_breaker_rejected_total counter",
            "tripwire_breaker_slow_calls_total counter",
            "tripwire_breaker_transitions_total counter",
        ] {
            assert!(text.contains(&std::format!("# TYPE {family}\n")), "{family} in\n{text}");
        }
        for line in [
            r#"tripwire_breaker_state{breaker="binance/orderbook",state="open"} 1"#,
            r#"tripwire_breaker_state{breaker="binance/orderbook",state="closed"} 0"#,
            r#"tripwire_breaker_calls_total{breaker="binance/orderbook",outcome="failure"} 1"#,
            r#"tripwire_breaker_rejected_total{breaker="binance/orderbook"} 1"#,
            r#"tripwire_breaker_state{breaker="we\"ird",state="closed"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(!text.contains("tripwire_fallback_total"), "no empty family");
        let orders = r.bulkhead("binance/orders", 4);
        let _slot = orders.try_acquire().unwrap();
        let text = r.prometheus();
        for line in [
            "# TYPE tripwire_bulkhead_in_flight gauge",
            r#"tripwire_bulkhead_in_flight{bulkhead="binance/orders"} 1"#,
            r#"tripwire_bulkhead_max{bulkhead="binance/orders"} 4"#,
            r#"tripwire_bulkhead_acquired_total{bulkhead="binance/orders"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }
}
