//! The fleets alive in this process, so that an export of breakers finds
//! the links they are joined to: a [`Registry`](tripwire::registry::Registry) (or a
//! binding's registry) whose breakers joined a fleet exports that fleet's
//! counters next to theirs, with nothing to add by hand: the first fleet
//! made adds the fleet's rows to the core's exports
//! ([`prometheus`](crate::prometheus)), which ask this list for them.
//!
//! The list holds weak references: a dropped [`Fleet`](crate::Fleet)
//! leaves it, and its counters the exports. Its mutex is taken when a
//! fleet is made and when an export runs, never on a call's path.

use std::string::String;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::vec::Vec;

use tripwire::Breaker;

use crate::counters::FleetSnapshot;
use crate::handle::Shared;

static LIVE: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Adds a new fleet's state to the list (and clears out the dropped ones).
pub(crate) fn register(shared: &Arc<Shared>) {
    crate::prometheus::add_source();
    // A panic while holding the lock cannot leave the list inconsistent
    // (every change is one retain or push), so a poisoned lock is usable.
    let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    live.retain(|w| w.strong_count() > 0);
    live.push(Arc::downgrade(shared));
}

/// The counters of every fleet alive in this process that one of
/// `breakers` is joined to (by [`Fleet::join`](crate::Fleet::join) or
/// [`Fleet::join_core`](crate::Fleet::join_core)), with its namespace,
/// sorted by namespace: the rows of
/// [`prometheus::write_fleets`](crate::prometheus::write_fleets), which
/// every export of breakers writes ([`prometheus`](crate::prometheus)).
///
/// Breakers are matched by address, not by name: a breaker that shares a
/// name with a joined one, but is another, brings in no fleet.
///
/// Two fleets of one namespace (two handles in one process, each its own
/// host) make one row, so that no series is exported twice: their message
/// and lease counters are added, and each connection counts as up only if
/// it is up in both.
pub fn joined_by(breakers: &[&Breaker]) -> Vec<(String, FleetSnapshot)> {
    let fleets: Vec<Arc<Shared>> =
        LIVE.lock().unwrap_or_else(PoisonError::into_inner).iter().filter_map(Weak::upgrade).collect();
    let mut rows: Vec<(String, FleetSnapshot)> = Vec::new();
    for shared in fleets {
        let joined =
            shared.members().iter().any(|m| breakers.iter().any(|b| core::ptr::eq(m.breaker.core(), *b)));
        if !joined {
            continue;
        }
        let snap = shared.counters.snapshot();
        let ns = shared.config.namespace.as_str();
        match rows.iter_mut().find(|(n, _)| n == ns) {
            Some((_, row)) => *row = merged(row, &snap),
            None => rows.push((String::from(ns), snap)),
        }
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

/// Two links' counters as one: messages and leases added, each connection
/// up only if it is up in both.
fn merged(a: &FleetSnapshot, b: &FleetSnapshot) -> FleetSnapshot {
    FleetSnapshot {
        sent: a.sent.saturating_add(b.sent),
        received: a.received.saturating_add(b.received),
        dropped: a.dropped.saturating_add(b.dropped),
        rejected: core::array::from_fn(|i| a.rejected[i].saturating_add(b.rejected[i])),
        applied: a.applied.saturating_add(b.applied),
        leases_won: a.leases_won.saturating_add(b.leases_won),
        leases_lost: a.leases_lost.saturating_add(b.leases_lost),
        reconnects: a.reconnects.saturating_add(b.reconnects),
        connect_failures: a.connect_failures.saturating_add(b.connect_failures),
        publisher_up: a.publisher_up.min(b.publisher_up),
        subscriber_up: a.subscriber_up.min(b.subscriber_up),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_adds_counts_and_is_up_only_where_both_are() {
        let a = FleetSnapshot {
            sent: 2,
            rejected: [1, 0, 0, 0, 3],
            reconnects: u64::MAX,
            publisher_up: 1,
            subscriber_up: 1,
            ..FleetSnapshot::default()
        };
        let b = FleetSnapshot { sent: 5, rejected: [0, 4, 0, 0, 1], reconnects: 1, publisher_up: 1, ..a };
        let m = merged(&a, &b);
        assert_eq!((m.sent, m.rejected, m.reconnects), (7, [1, 4, 0, 0, 4], u64::MAX));
        assert_eq!((m.publisher_up, m.subscriber_up), (1, 1));
        let c = FleetSnapshot { subscriber_up: 0, ..b };
        assert_eq!(merged(&a, &c).link_state(), crate::LinkState::Partial);
    }
}
