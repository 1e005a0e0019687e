//! State-change listeners (feature `std`): callbacks run once per
//! transition, never while a lock is held, and `tracing` events (feature
//! `tracing`).
//!
//! The core reports each transition to exactly one caller, the one whose
//! compare-and-swap made it; [`NamedBreaker`](crate::NamedBreaker) hands that
//! report to [`Listeners::fire`], so every listener runs exactly once per
//! transition, on the thread that caused it.

use core::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::vec::Vec;

use crate::breaker::state::State;
use crate::breaker::ticket::Transition;

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

type Listener = Arc<dyn Fn(&StateChange<'_>) + Send + Sync>;

/// The listeners of one breaker.
#[derive(Default)]
pub(crate) struct Listeners {
    list: RwLock<Vec<Listener>>,
    // Relaxed: a hint that spares the lock when nobody listens; a listener
    // added concurrently with a transition may or may not hear of it.
    any: AtomicBool,
}

impl core::fmt::Debug for Listeners {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let n = self.list.read().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("Listeners").field("len", &n).finish()
    }
}

impl Listeners {
    pub(crate) fn add(&self, f: Listener) {
        self.list.write().unwrap_or_else(PoisonError::into_inner).push(f);
        // Relaxed: see the field's comment.
        self.any.store(true, Ordering::Relaxed);
    }

    /// Runs every listener for `t`, after the list's lock is released (a
    /// listener may add listeners or call the breaker).
    #[cold]
    pub(crate) fn fire(&self, name: &str, t: Transition, hold: Option<core::time::Duration>) {
        let change = StateChange { name, from: t.from, to: t.to, generation: t.generation, hold };
        #[cfg(feature = "tracing")]
        trace(&change);
        // Relaxed: see the field's comment.
        if !self.any.load(Ordering::Relaxed) {
            return;
        }
        // One listener at a time, by index: the read lock is held only to
        // take a reference on the next one (a count, not an allocation), so
        // no listener runs under it and no copy of the list is made. The
        // list only grows: a listener added meanwhile is heard too, or not.
        let mut i = 0;
        while let Some(listener) = self.nth(i) {
            listener(&change);
            i += 1;
        }
    }

    /// The `i`-th listener, if there are that many; the read lock ends with
    /// this call.
    fn nth(&self, i: usize) -> Option<Listener> {
        self.list.read().unwrap_or_else(PoisonError::into_inner).get(i).cloned()
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
