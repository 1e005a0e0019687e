//! The Prometheus text exposition format (version 0.0.4), written from
//! rows of counters: one writer for every exporter, so that a Rust
//! [`Registry`] and a binding's own registry of breakers emit the same
//! families, labels and help texts.
//!
//! Each `write_*` function takes rows (a name and the counters read from
//! one breaker, bulkhead or stale cache) and writes one family
//! at a time, HELP and TYPE lines first, label values escaped. A family
//! with no rows is left out. The writers allocate nothing; they write into any
//! [`fmt::Write`], e.g. a `String`.
//!
//! Other crates add rows of their own to every export of breakers: a
//! [`RowSource`], added once with [`add_source`], writes its families to a
//! [`Sink`] ([`Text`] for this format), and [`write_sources`] writes every
//! source's rows for a list of breakers (see `source.rs`).
//!
//! # Examples
//! ```
//! use tripwire::{Breaker, BreakerConfig, prometheus};
//!
//! let breaker = Breaker::new(BreakerConfig::default());
//! let mut text = String::new();
//! prometheus::write_breakers(&mut text, &[("binance/orderbook", breaker.state(), breaker.snapshot())])?;
//! assert!(text.contains("tripwire_breaker_state{breaker=\"binance/orderbook\",state=\"closed\"} 1\n"));
//! assert!(text.contains("tripwire_breaker_calls_total{breaker=\"binance/orderbook\",outcome=\"success\"} 0\n"));
//! # Ok::<(), core::fmt::Error>(())
//! ```

use core::fmt::{self, Write};
use std::string::String;
use std::vec::Vec;

use crate::breaker::counters::Snapshot;
use crate::breaker::state::State;
use crate::bulkhead::BulkheadSnapshot;
use crate::layers::fallback::StaleSnapshot;
use crate::layers::registry::Registry;

mod source;

mod rate;

pub use rate::{LimitRow, RateLimitRow, RateLimitRows};
pub use source::{Kind, RowSource, Sink, Text, add_source, write_sources};

/// A breaker's row: its name, its state and its counters.
pub type BreakerRow<'a> = (&'a str, State, Snapshot);
/// A bulkhead's row: its name, its cap on calls in flight and its counters.
pub type BulkheadRow<'a> = (&'a str, u32, BulkheadSnapshot);
/// A stale cache's row: its name and its counters.
pub type StaleRow<'a> = (&'a str, StaleSnapshot);

// The metric names, shared with the `metrics` export.
pub(crate) const BREAKER_STATE: &str = "tripwire_breaker_state";
pub(crate) const BREAKER_CALLS: &str = "tripwire_breaker_calls_total";
pub(crate) const BREAKER_REJECTED: &str = "tripwire_breaker_rejected_total";
pub(crate) const BREAKER_SLOW: &str = "tripwire_breaker_slow_calls_total";
pub(crate) const BREAKER_TRANSITIONS: &str = "tripwire_breaker_transitions_total";
pub(crate) const BULKHEAD_IN_FLIGHT: &str = "tripwire_bulkhead_in_flight";
pub(crate) const BULKHEAD_MAX: &str = "tripwire_bulkhead_max";
pub(crate) const BULKHEAD_PEAK: &str = "tripwire_bulkhead_peak_in_flight";
pub(crate) const BULKHEAD_ACQUIRED: &str = "tripwire_bulkhead_acquired_total";
pub(crate) const BULKHEAD_REJECTED: &str = "tripwire_bulkhead_rejected_total";
pub(crate) const FALLBACK: &str = "tripwire_fallback_total";

/// A breaker's calls by outcome, as the `outcome` label names them.
pub(crate) fn outcomes(s: &Snapshot) -> [(&'static str, u64); 3] {
    [("success", s.successes), ("failure", s.failures), ("ignored", s.ignored)]
}

/// A stale cache's calls by result, as the `result` label names them.
pub(crate) fn results(s: &StaleSnapshot) -> [(&'static str, u64); 3] {
    [("fresh", s.fresh), ("stale", s.stale), ("refused", s.refused)]
}

/// A per-breaker counter: name, help, where it is in a snapshot.
type BreakerCounter = (&'static str, &'static str, fn(&Snapshot) -> u64);

const BREAKER_COUNTERS: [BreakerCounter; 3] = [
    (BREAKER_REJECTED, "Calls refused by the breaker.", |s| s.rejected),
    (BREAKER_SLOW, "Calls slower than the slow-call threshold.", |s| s.slow),
    (BREAKER_TRANSITIONS, "State transitions, manual ones included.", |s| s.transitions),
];

/// A per-bulkhead series: name, kind, help, its value from the cap and the
/// counters.
type BulkheadSeries = (&'static str, Kind, &'static str, fn(u32, &BulkheadSnapshot) -> u64);

const BULKHEAD_SERIES: [BulkheadSeries; 5] = [
    (BULKHEAD_IN_FLIGHT, Kind::Gauge, "Calls in flight now.", |_, s| s.in_flight.into()),
    (BULKHEAD_MAX, Kind::Gauge, "The cap on calls in flight.", |max, _| max.into()),
    (BULKHEAD_PEAK, Kind::Gauge, "The most calls ever in flight at once.", |_, s| s.peak_in_flight.into()),
    (BULKHEAD_ACQUIRED, Kind::Counter, "Slots handed out.", |_, s| s.acquired),
    (BULKHEAD_REJECTED, Kind::Counter, "Calls refused for want of a slot.", |_, s| s.rejected),
];

/// Every breaker's state (a gauge per state: 1 for the current one) and
/// counters: `tripwire_breaker_state`, `tripwire_breaker_calls_total` by
/// `outcome`, `tripwire_breaker_rejected_total`,
/// `tripwire_breaker_slow_calls_total`, `tripwire_breaker_transitions_total`,
/// each labelled `breaker="<name>"`.
pub fn write_breakers(out: &mut impl Write, rows: &[BreakerRow<'_>]) -> fmt::Result {
    breaker_families(&mut Text::new(out), rows)
}

/// Every bulkhead's calls in flight, cap, peak, slots handed out and calls
/// refused, each labelled `bulkhead="<name>"`.
pub fn write_bulkheads(out: &mut impl Write, rows: &[BulkheadRow<'_>]) -> fmt::Result {
    bulkhead_families(&mut Text::new(out), rows)
}

/// Every stale cache's calls by `result` (`fresh`, `stale`, `refused`),
/// labelled `cache="<name>"`.
pub fn write_stale_caches(out: &mut impl Write, rows: &[StaleRow<'_>]) -> fmt::Result {
    stale_families(&mut Text::new(out), rows)
}

// The families themselves, written once to any sink: the text format
// above, and the `metrics` recorder (`metrics_export.rs`).

pub(crate) fn breaker_families(sink: &mut impl Sink, rows: &[BreakerRow<'_>]) -> fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    sink.family(BREAKER_STATE, Kind::Gauge, "The breaker's state: 1 for the current one, 0 for the others.")?;
    for &(name, state, _) in rows {
        for s in State::ALL {
            sink.sample(&[("breaker", name), ("state", s.as_str())], u64::from(s == state))?;
        }
    }
    sink.family(BREAKER_CALLS, Kind::Counter, "Calls admitted and recorded, by outcome.")?;
    for (name, _, snap) in rows {
        for (outcome, v) in outcomes(snap) {
            sink.sample(&[("breaker", name), ("outcome", outcome)], v)?;
        }
    }
    for (metric, help, get) in BREAKER_COUNTERS {
        sink.family(metric, Kind::Counter, help)?;
        for (name, _, snap) in rows {
            sink.sample(&[("breaker", name)], get(snap))?;
        }
    }
    Ok(())
}

pub(crate) fn bulkhead_families(sink: &mut impl Sink, rows: &[BulkheadRow<'_>]) -> fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    for (metric, kind, help, get) in BULKHEAD_SERIES {
        sink.family(metric, kind, help)?;
        for (name, max, snap) in rows {
            sink.sample(&[("bulkhead", name)], get(*max, snap))?;
        }
    }
    Ok(())
}

pub(crate) fn stale_families(sink: &mut impl Sink, rows: &[StaleRow<'_>]) -> fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    let help = "Calls through a stale cache: fresh values stored, stale values served, errors passed on.";
    sink.family(FALLBACK, Kind::Counter, help)?;
    for (name, snap) in rows {
        for (result, v) in results(snap) {
            sink.sample(&[("cache", name), ("result", result)], v)?;
        }
    }
    Ok(())
}

impl Registry {
    /// Every breaker's, bulkhead's and stale cache's counters and states in
    /// the Prometheus text exposition format (see [`prometheus`](crate::layers::prometheus));
    /// then the rows every added [`RowSource`] writes for its breakers
    /// ([`write_sources`]): the counters of the fleet links they joined,
    /// with the `tripwire-fleet` crate.
    pub fn prometheus(&self) -> String {
        let mut out = String::new();
        // Writing to a `String` cannot fail.
        let _ = self.write_families(&mut Text::new(&mut out));
        out
    }

    /// Every family of the registry's rows, then the added sources' rows,
    /// to `sink`: the one list both exports write.
    pub(crate) fn write_families(&self, sink: &mut impl Sink) -> fmt::Result {
        let named = self.breakers();
        let breakers: Vec<BreakerRow<'_>> =
            named.iter().map(|b| (b.name(), b.state(), b.snapshot())).collect();
        let bulkheads = self.bulkheads();
        let bulkheads: Vec<BulkheadRow<'_>> =
            bulkheads.iter().map(|(n, b)| (n.as_str(), b.max(), b.snapshot())).collect();
        let stale = self.stale_caches();
        let stale: Vec<StaleRow<'_>> = stale.iter().map(|(n, s)| (n.as_str(), s.snapshot())).collect();
        let limiters = self.rate_limiters();
        let limiters: Vec<RateLimitRow<'_>> =
            limiters.iter().map(|(n, l)| (n.as_str(), l.limit_rows())).collect();
        breaker_families(sink, &breakers)?;
        bulkhead_families(sink, &bulkheads)?;
        stale_families(sink, &stale)?;
        rate::rate_families(sink, &limiters)?;
        #[cfg(feature = "keyed")]
        {
            let maps = self.keyed();
            let rows: Vec<_> = maps.iter().map(|m| (m.keyed_name(), m.keyed_row())).collect();
            crate::layers::keyed::keyed_families(sink, &rows)?;
        }
        let cores: Vec<&crate::breaker::Breaker> = named.iter().map(|b| b.breaker()).collect();
        source::source_rows(sink, &cores)
    }
}

/// Every rate limiter's limits (see [`RateLimitRows`]), each labelled
/// `limiter="<name>"` and `limit="<index>"`; nothing when `rows` is empty.
pub fn write_rate_limiters(out: &mut impl Write, rows: &[RateLimitRow<'_>]) -> fmt::Result {
    rate::rate_families(&mut Text::new(out), rows)
}

/// The HELP and TYPE lines of a family.
fn head(out: &mut (impl Write + ?Sized), name: &str, kind: &str, help: &str) -> fmt::Result {
    writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}")
}

/// One sample: `name{k="v",…} value`, the label values escaped; `name
/// value` without labels.
fn series(out: &mut (impl Write + ?Sized), name: &str, labels: &[(&str, &str)], value: u64) -> fmt::Result {
    out.write_str(name)?;
    for (i, (k, v)) in labels.iter().enumerate() {
        let open = if i == 0 { '{' } else { ',' };
        write!(out, "{open}{k}=\"")?;
        escape_label(out, v)?;
        out.write_char('"')?;
    }
    let close = if labels.is_empty() { "" } else { "}" };
    writeln!(out, "{close} {value}")
}

/// A label value escaped as the format asks: `\` → `\\`, `"` → `\"`,
/// newline → `\n`.
fn escape_label(out: &mut (impl Write + ?Sized), v: &str) -> fmt::Result {
    for c in v.chars() {
        match c {
            '\\' => out.write_str("\\\\")?,
            '"' => out.write_str("\\\"")?,
            '\n' => out.write_str("\\n")?,
            c => out.write_char(c)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BreakerConfig, Outcome};

    #[test]
    fn a_sample_without_labels_has_no_braces() {
        let mut s = String::new();
        let mut text = Text::new(&mut s);
        text.family("up", Kind::Gauge, "Up.").unwrap();
        text.sample(&[], 1).unwrap();
        text.sample(&[("a", "b")], 0).unwrap();
        assert_eq!(s, "# HELP up Up.\n# TYPE up gauge\nup 1\nup{a=\"b\"} 0\n");
    }

    #[test]
    fn labels_are_escaped() {
        let mut s = String::new();
        escape_label(&mut s, "a\\b\"c\nd").unwrap();
        assert_eq!(s, r#"a\\b\"c\nd"#);
    }

    #[test]
    fn no_rows_no_family() {
        let mut s = String::new();
        write_breakers(&mut s, &[]).unwrap();
        write_bulkheads(&mut s, &[]).unwrap();
        write_stale_caches(&mut s, &[]).unwrap();
        assert_eq!(s, "");
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
        let states = text.lines().filter(|l| l.starts_with("tripwire_breaker_state{")).count();
        assert_eq!(states, 2 * State::ALL.len(), "one series per breaker and state");
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
        let cache = crate::stale::StaleCache::<&str, u32>::new();
        let policy = crate::stale::StalePolicy::UpTo(core::time::Duration::from_secs(60));
        let _ = cache.serve("book", policy, || Ok::<_, ()>(1));
        let _ = cache.serve("book", policy, || Err(()));
        let _ = cache.serve("book", crate::stale::StalePolicy::Never, || Err(()));
        r.add_stale("binance/book", cache.stats().clone());
        let text = r.prometheus();
        for result in ["fresh", "stale", "refused"] {
            let line = std::format!(r#"tripwire_fallback_total{{cache="binance/book",result="{result}"}} 1"#);
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }
}
