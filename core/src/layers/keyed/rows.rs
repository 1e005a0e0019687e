//! A keyed map as the metrics export shows it: one family for all its keys,
//! with a cap on how many keys are named in labels.

use core::fmt::{self, Display};
use core::hash::{BuildHasher, Hash};
use std::format;
use std::string::String;
use std::vec::Vec;

use crate::breaker::state::State;
use crate::breaker::storage::Windows;
use crate::clock::Clock;
use crate::layers::prometheus::{Kind, Sink};

use super::{Breakers, KeyedCounts};

/// One keyed map, as the export shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedRow {
    /// The map's counts.
    pub counts: KeyedCounts,
    /// Keys in each state, every key counted: in the order of
    /// [`State::ALL`].
    pub in_state: [u64; State::ALL.len()],
    /// The keys named one by one, at most the map's label cap: those not
    /// Closed first, then the others in no particular order.
    pub named: Vec<(String, State)>,
}

/// A keyed map an export can read. Added to a
/// [`Registry`](crate::registry::Registry) with
/// [`add_keyed`](crate::registry::Registry::add_keyed).
pub trait KeyedRows: fmt::Debug + Send + Sync {
    /// The map's name (the `breakers` label).
    fn keyed_name(&self) -> &str;
    /// Its row.
    fn keyed_row(&self) -> KeyedRow;
}

impl<K, C, S, W, X> KeyedRows for Breakers<K, C, S, W, X>
where
    K: Hash + Eq + Display + Send + Sync + 'static,
    C: Clock + Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync,
    W: Windows,
    X: Default + Send + Sync + 'static,
{
    fn keyed_name(&self) -> &str {
        self.name()
    }

    fn keyed_row(&self) -> KeyedRow {
        let mut in_state = [0; State::ALL.len()];
        let (mut open, mut closed) = (Vec::new(), Vec::new());
        self.for_each(|key, breaker| {
            let state = breaker.state();
            in_state[state as usize] += 1;
            let list = if state == State::Closed { &mut closed } else { &mut open };
            if list.len() < self.label_cap {
                list.push((format!("{key}"), state));
            }
        });
        open.extend(closed);
        open.truncate(self.label_cap);
        KeyedRow { counts: self.counts(), in_state, named: open }
    }
}

/// A map's name and row.
pub(crate) type NamedKeyedRow<'a> = (&'a str, KeyedRow);

/// The families, labelled `breakers="<map>"` (and `key`, `state`);
/// nothing when there is no keyed map.
pub(crate) fn keyed_families(sink: &mut impl Sink, rows: &[NamedKeyedRow<'_>]) -> fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    type Get = fn(&KeyedRow) -> u64;
    let totals: [(&str, Kind, &str, Get); 5] = [
        ("tripwire_keyed_breakers", Kind::Gauge, "Keys with a breaker of their own.", |r| r.counts.live),
        (
            "tripwire_keyed_unnamed_breakers",
            Kind::Gauge,
            "Keys with a breaker of their own left out of tripwire_keyed_breaker_state by the label cap.",
            |r| r.counts.live.saturating_sub(r.named.len() as u64),
        ),
        ("tripwire_keyed_created_total", Kind::Counter, "Breakers made for new keys.", |r| r.counts.created),
        ("tripwire_keyed_evicted_total", Kind::Counter, "Breakers evicted as idle.", |r| r.counts.evicted),
        (
            "tripwire_keyed_overflow_calls_total",
            Kind::Counter,
            "Calls through the overflow breaker, by keys that found the map full.",
            |r| r.counts.overflow_calls,
        ),
    ];
    for (name, kind, help, get) in totals {
        sink.family(name, kind, help)?;
        for (map, row) in rows {
            sink.sample(&[("breakers", map)], get(row))?;
        }
    }
    sink.family("tripwire_keyed_breakers_in_state", Kind::Gauge, "Keys whose breaker is in each state.")?;
    for (map, row) in rows {
        for (state, n) in State::ALL.iter().zip(row.in_state) {
            sink.sample(&[("breakers", map), ("state", state.as_str())], n)?;
        }
    }
    sink.family(
        "tripwire_keyed_breaker_state",
        Kind::Gauge,
        "A named key's breaker state: 1 for the current one, 0 for the others.",
    )?;
    for (map, row) in rows {
        for (key, current) in &row.named {
            for state in State::ALL {
                sink.sample(
                    &[("breakers", map), ("key", key), ("state", state.as_str())],
                    u64::from(state == *current),
                )?;
            }
        }
    }
    Ok(())
}
