//! The fleet links' counters in the Prometheus text format, and as the
//! rows the core's exports of breakers add (a [`RowSource`]): a
//! [`Registry`](tripwire::registry::Registry) whose breakers joined a fleet, or a
//! binding's registry, exports that link's `tripwire_fleet_*` families
//! next to its breakers', with nothing to add by hand. The source is added
//! when the process makes its first [`Fleet`](crate::Fleet).
//!
//! # Examples
//! ```
//! use tripwire_fleet::FleetSnapshot;
//! use tripwire_fleet::prometheus::write_fleets;
//!
//! let mut text = String::new();
//! write_fleets(&mut text, &[("prod", FleetSnapshot::default())])?;
//! assert!(text.contains("tripwire_fleet_link_state{fleet=\"prod\",state=\"down\"} 1\n"));
//! # Ok::<(), core::fmt::Error>(())
//! ```

use core::fmt::{self, Write};
use std::sync::Once;

use tripwire::Breaker;
use tripwire::prometheus::{Kind, RowSource, Sink, Text};

use crate::counters::{FleetSnapshot, LinkState, RejectReason};
use crate::live::joined_by;

/// A fleet link's row: its namespace and its counters.
pub type FleetRow<'a> = (&'a str, FleetSnapshot);

const FLEET_LINK: &str = "tripwire_fleet_link_state";
const FLEET_REJECTED: &str = "tripwire_fleet_rejected_total";
const FLEET_LEASES: &str = "tripwire_fleet_leases_total";

/// A per-fleet counter: name, help, where it is in a snapshot.
type FleetCounter = (&'static str, &'static str, fn(&FleetSnapshot) -> u64);

const FLEET_COUNTERS: [FleetCounter; 6] = [
    ("tripwire_fleet_sent_total", "Messages published to the fleet.", |s| s.sent),
    ("tripwire_fleet_received_total", "Messages from other hosts, checked and taken.", |s| s.received),
    ("tripwire_fleet_dropped_total", "Messages that could not be published (the link was down).", |s| {
        s.dropped
    }),
    ("tripwire_fleet_applied_total", "States of the fleet put into a local breaker.", |s| s.applied),
    ("tripwire_fleet_reconnects_total", "Connections to Redis made again.", |s| s.reconnects),
    ("tripwire_fleet_connect_failures_total", "Attempts to connect to Redis that failed.", |s| {
        s.connect_failures
    }),
];

/// Every fleet link's counters, each labelled `fleet="<namespace>"`:
/// `tripwire_fleet_sent_total`, `tripwire_fleet_received_total`,
/// `tripwire_fleet_dropped_total`, `tripwire_fleet_applied_total`,
/// `tripwire_fleet_reconnects_total`, `tripwire_fleet_connect_failures_total`
/// (what `last_error` says why of); `tripwire_fleet_rejected_total` by
/// `reason` (`malformed`, `signature`, `stale`, `future`, `replayed`);
/// `tripwire_fleet_leases_total` by `result` (`won`, `lost`); and
/// `tripwire_fleet_link_state`, a gauge per state (`down`, `partial`,
/// `up`): 1 for the current one.
pub fn write_fleets(out: &mut impl Write, rows: &[FleetRow<'_>]) -> fmt::Result {
    fleet_rows(&mut Text::new(out), rows)
}

/// The counters of every fleet link that one of `breakers` joined
/// ([`joined_by`]), as [`write_fleets`] writes them: what an export of
/// breakers adds, so that a scrape of any process of a fleet shows its
/// link. The core's exports write them through the fleet's
/// [`RowSource`].
pub fn write_joined_fleets(out: &mut impl Write, breakers: &[&Breaker]) -> fmt::Result {
    Joined.write_rows(breakers, &mut Text::new(out))
}

/// The families of [`write_fleets`], to any sink: text, or the `metrics`
/// recorder of `Registry::publish_metrics`.
fn fleet_rows(out: &mut dyn Sink, rows: &[FleetRow<'_>]) -> fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    out.family(FLEET_LINK, Kind::Gauge, "The link to Redis: 1 for the current state, 0 for the others.")?;
    for (ns, snap) in rows {
        for s in LinkState::ALL {
            out.sample(&[("fleet", ns), ("state", s.as_str())], u64::from(snap.link_state() == s))?;
        }
    }
    for (metric, help, get) in FLEET_COUNTERS {
        out.family(metric, Kind::Counter, help)?;
        for (ns, snap) in rows {
            out.sample(&[("fleet", ns)], get(snap))?;
        }
    }
    out.family(FLEET_REJECTED, Kind::Counter, "Messages refused, by reason.")?;
    for (ns, snap) in rows {
        for r in RejectReason::ALL {
            out.sample(&[("fleet", ns), ("reason", r.as_str())], snap.rejected(r))?;
        }
    }
    out.family(FLEET_LEASES, Kind::Counter, "Probe leases asked for, by result.")?;
    for (ns, snap) in rows {
        out.sample(&[("fleet", ns), ("result", "won")], snap.leases_won)?;
        out.sample(&[("fleet", ns), ("result", "lost")], snap.leases_lost)?;
    }
    Ok(())
}

/// The fleet's rows in the core's exports: the links the exported breakers
/// joined.
struct Joined;

impl RowSource for Joined {
    fn write_rows(&self, breakers: &[&Breaker], out: &mut dyn Sink) -> fmt::Result {
        let rows = joined_by(breakers);
        let rows: Vec<FleetRow<'_>> = rows.iter().map(|(ns, snap)| (ns.as_str(), *snap)).collect();
        fleet_rows(out, &rows)
    }
}

/// Adds the fleet's rows to the core's exports, once per process: when
/// the first fleet is made.
pub(crate) fn add_source() {
    static JOINED: Joined = Joined;
    static ADDED: Once = Once::new();
    ADDED.call_once(|| tripwire::prometheus::add_source(&JOINED));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleet_families() {
        let mut s = String::new();
        write_fleets(&mut s, &[]).unwrap();
        assert_eq!(s, "");
        let snap = FleetSnapshot::default();
        write_fleets(&mut s, &[("prod", snap)]).unwrap();
        for line in [
            "# HELP tripwire_fleet_link_state The link to Redis: 1 for the current state, 0 for the others.",
            "# TYPE tripwire_fleet_link_state gauge",
            r#"tripwire_fleet_link_state{fleet="prod",state="down"} 1"#,
            r#"tripwire_fleet_link_state{fleet="prod",state="up"} 0"#,
            "# TYPE tripwire_fleet_sent_total counter",
            r#"tripwire_fleet_sent_total{fleet="prod"} 0"#,
            r#"tripwire_fleet_reconnects_total{fleet="prod"} 0"#,
            r#"tripwire_fleet_connect_failures_total{fleet="prod"} 0"#,
            r#"tripwire_fleet_rejected_total{fleet="prod",reason="replayed"} 0"#,
            r#"tripwire_fleet_leases_total{fleet="prod",result="won"} 0"#,
        ] {
            assert!(s.lines().any(|l| l == line), "{line} in\n{s}");
        }
    }
}
