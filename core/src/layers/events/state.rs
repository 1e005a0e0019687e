//! State-change listeners: callbacks run once per transition, never while
//! a lock is held, and `tracing` events (feature `tracing`).
//!
//! The core reports each transition to exactly one caller, the one whose
//! compare-and-swap made it; [`NamedBreaker`](crate::NamedBreaker) hands that
//! report to [`Listeners::fire`], so every listener runs exactly once per
//! transition, on the thread that caused it.

use std::sync::Arc;

use crate::breaker::state::State;
use crate::breaker::ticket::Transition;
use crate::layers::events::list::List;

/// One change of a named breaker's state, as listeners see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateChange<'a> {
    /// The breaker's name, e.g. `binance/orderbook`.
    pub name: &'a str,
    /// The state left.
    pub from: State,
    /// The state entered.
    pub to: State,
    /// The generation of the state entered.
    pub generation: u32,
    /// For a breaker held open by
    /// [`NamedBreaker::open_for`](crate::NamedBreaker::open_for) (a 429's
    /// `Retry-After`): how long the hold lasts, as capped by the config's
    /// `max_hold`. The change itself reads like any other: `to` is
    /// [`State::Open`]. `None` for every other change.
    pub hold: Option<core::time::Duration>,
}

type Listener = dyn Fn(&StateChange<'_>) + Send + Sync;

/// The listeners of one breaker.
#[derive(Default, Debug)]
pub(crate) struct Listeners {
    list: List<Listener>,
}

impl Listeners {
    pub(crate) fn add(&self, f: Arc<Listener>) {
        self.list.add(f);
    }

    /// Runs every listener for `t`, with no lock held.
    #[cold]
    pub(crate) fn fire(&self, name: &str, t: Transition, hold: Option<core::time::Duration>) {
        let change = StateChange { name, from: t.from, to: t.to, generation: t.generation, hold };
        #[cfg(feature = "tracing")]
        trace(&change);
        self.list.each(|listener| listener(&change));
    }
}

/// A `tracing` event for a change: `warn` when calls start being refused,
/// `info` otherwise.
#[cfg(feature = "tracing")]
fn trace(c: &StateChange<'_>) {
    let (from, to) = (c.from.as_str(), c.to.as_str());
    let hold_ms = c.hold.map(|d| d.as_millis() as u64);
    if matches!(c.to, State::Open | State::ForcedOpen) {
        tracing::warn!(target: "tripwire", breaker = c.name, from, to, generation = c.generation, hold_ms, "circuit breaker opened");
    } else {
        tracing::info!(target: "tripwire", breaker = c.name, from, to, generation = c.generation, "circuit breaker state changed");
    }
}
