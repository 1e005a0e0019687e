//! A breaker with a name, a clock and listeners (feature `std`): the handle
//! services keep in a registry, pass to the pipeline and the tower layers.
//!
//! It adds listeners to the core [`Breaker`]: they fire from the
//! [`Transition`]s the core reports, once each. Everything else, holds
//! ([`open_for`](NamedBreaker::open_for), which a 429 with `Retry-After`
//! needs) included, is the core's, reading the breaker's clock.
use core::fmt;
use core::time::Duration;
use std::boxed::Box;
use std::string::String;
use std::sync::Arc;

use crate::breaker::circuit::Breaker;
use crate::breaker::config::BreakerConfig;
use crate::breaker::counters::Snapshot;
use crate::breaker::permit::CallError;
use crate::breaker::state::State;
use crate::breaker::ticket::{Outcome, Rejected, Ticket, Transition};
use crate::clock::Clock;
use crate::layers::clock::MonotonicClock;
use crate::layers::events::{Listeners, StateChange};

/// A [`Breaker`] with a name (e.g. `binance/orderbook`), the clock it reads
/// and its state-change listeners.
///
/// # Examples
/// ```
/// use std::sync::{Arc, Mutex};
/// use core::time::Duration;
/// use tripwire::{BreakerConfig, ManualClock, NamedBreaker, Outcome, State};
///
/// let breaker = NamedBreaker::with_clock(
///     "binance/orderbook",
///     BreakerConfig::builder().failure_threshold(1).build()?,
///     ManualClock::new(0),
/// );
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = seen.clone();
/// breaker.on_state_change(move |c| log.lock().unwrap().push((c.from, c.to)));
///
/// let ticket = breaker.try_acquire()?;
/// breaker.record(ticket, Outcome::Failure);
/// assert_eq!(*seen.lock().unwrap(), [(State::Closed, State::Open)]);
///
/// // A 429 said "come back in 2 s": refused until then, whatever the config;
/// // then one probe goes first.
/// breaker.reset();
/// breaker.open_for(Duration::from_secs(2));
/// assert_eq!(breaker.try_acquire().unwrap_err().retry_after, Some(Duration::from_secs(2)));
/// breaker.clock().advance(Duration::from_secs(2));
/// assert!(breaker.try_acquire()?.is_probe());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct NamedBreaker<C: Clock = MonotonicClock> {
    breaker: Breaker,
    name: Box<str>,
    clock: C,
    listeners: Listeners,
}

impl<C: Clock> fmt::Debug for NamedBreaker<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedBreaker")
            .field("name", &self.name)
            .field("state", &self.state())
            .field("listeners", &self.listeners)
            .finish_non_exhaustive()
    }
}

impl NamedBreaker<MonotonicClock> {
    /// A Closed breaker reading [`MonotonicClock`].
    pub fn new(name: impl Into<String>, config: BreakerConfig) -> Self {
        Self::with_clock(name, config, MonotonicClock)
    }
}

impl<C: Clock> NamedBreaker<C> {
    /// A Closed breaker reading `clock`.
    pub fn with_clock(name: impl Into<String>, config: BreakerConfig, clock: C) -> Self {
        Self {
            breaker: Breaker::new(config),
            name: name.into().into_boxed_str(),
            clock,
            listeners: Listeners::default(),
        }
    }

    /// The name it was made with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The core breaker (transitions made on it directly reach no listener).
    pub fn breaker(&self) -> &Breaker {
        &self.breaker
    }

    /// The clock it reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The current state; a breaker held open by
    /// [`open_for`](Self::open_for) reads [`State::Open`].
    pub fn state(&self) -> State {
        self.breaker.state()
    }

    /// The counters at this moment.
    pub fn snapshot(&self) -> Snapshot {
        self.breaker.snapshot()
    }

    /// Runs `f` once for every later transition, on the thread that caused
    /// it, with no lock held.
    pub fn on_state_change(&self, f: impl Fn(&StateChange<'_>) + Send + Sync + 'static) {
        self.listeners.add(Arc::new(f));
    }

    fn fire(&self, t: Transition, hold: Option<Duration>) {
        self.listeners.fire(&self.name, t, hold);
    }

    /// Asks to make a call (see [`Breaker::try_acquire`]); fires the
    /// Open → Half-Open transition if this call is the probe that causes it.
    #[inline]
    pub fn try_acquire(&self) -> Result<Ticket, Rejected> {
        let ticket = self.breaker.try_acquire(&self.clock)?;
        if let Some(t) = ticket.transition() {
            self.fire(t, None);
        }
        Ok(ticket)
    }

    /// Reports how an admitted call ended (see [`Breaker::record`]) and
    /// fires the transition it caused, if any.
    #[inline]
    pub fn record(&self, ticket: Ticket, outcome: Outcome) -> Option<Transition> {
        let t = self.breaker.record(ticket, outcome, &self.clock)?;
        self.fire(t, None);
        Some(t)
    }

    /// Asks to make a call; the permit records its outcome, or
    /// [`Outcome::Ignored`] when dropped.
    #[inline]
    pub fn permit(&self) -> Result<NamedPermit<'_, C>, Rejected> {
        Ok(NamedPermit { breaker: self, ticket: Some(self.try_acquire()?) })
    }

    /// A permit that owns a reference to the breaker, for futures that must
    /// be `'static`.
    #[inline]
    pub fn permit_owned(self: &Arc<Self>) -> Result<OwnedNamedPermit<C>, Rejected> {
        Ok(OwnedNamedPermit { breaker: self.clone(), ticket: Some(self.try_acquire()?) })
    }

    /// Runs `f` if admitted; `Ok` is a success, `Err` a failure.
    pub fn call<T, E>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, CallError<E>> {
        self.call_with(|r: &Result<T, E>| if r.is_ok() { Outcome::Success } else { Outcome::Failure }, f)
    }

    /// Runs `f` if admitted and records what `classify` makes of its result.
    pub fn call_with<T, E>(
        &self,
        classify: impl FnOnce(&Result<T, E>) -> Outcome,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, CallError<E>> {
        let permit = self.permit().map_err(CallError::Rejected)?;
        let result = f();
        permit.record(classify(&result));
        result.map_err(CallError::Inner)
    }

    /// Holds the breaker open for `d` from now, whatever its config says
    /// (a 429 or 418 whose `Retry-After` names the time to come back), up
    /// to the config's `max_hold`: see [`Breaker::open_for`]. Listeners
    /// hear the transition with the hold's length (as capped).
    pub fn open_for(&self, d: Duration) -> Option<Transition> {
        let t = self.breaker.open_for(d, &self.clock)?;
        self.fire(t, Some(d.min(self.breaker.config().max_hold())));
        Some(t)
    }

    /// The time left on the current hold, if there is one (see
    /// [`Breaker::hold_left`]).
    pub fn hold_left(&self) -> Option<Duration> {
        self.breaker.hold_left(&self.clock)
    }

    /// Rejects every call until [`reset`](Self::reset); ends any hold.
    pub fn force_open(&self) -> Transition {
        self.manual(Breaker::force_open)
    }

    /// Permits every call and never trips until [`reset`](Self::reset);
    /// ends any hold.
    pub fn disable(&self) -> Transition {
        self.manual(Breaker::disable)
    }

    /// Closes the breaker with fresh counts; ends any hold.
    pub fn reset(&self) -> Transition {
        self.manual(Breaker::reset)
    }

    fn manual(&self, set: fn(&Breaker) -> Transition) -> Transition {
        let t = set(&self.breaker);
        self.fire(t, None);
        t
    }
}

/// An admitted call on a [`NamedBreaker`]: records its outcome once, and
/// fires the transition it causes; dropped unrecorded, it counts as
/// [`Outcome::Ignored`].
#[must_use = "dropping a permit at once records the call as ignored"]
#[derive(Debug)]
pub struct NamedPermit<'a, C: Clock = MonotonicClock> {
    pub(crate) breaker: &'a NamedBreaker<C>,
    pub(crate) ticket: Option<Ticket>,
}

impl<C: Clock> NamedPermit<'_, C> {
    /// Starts the call's time again, for a permit taken before a wait that
    /// is no part of the call (for a bulkhead slot on this host): a slow
    /// call is the dependency's slowness, measured from here, not local
    /// queueing. Reads the clock only if the breaker times calls.
    pub(crate) fn restart_clock(&mut self) {
        if let Some(ticket) = &mut self.ticket
            && !self.breaker.breaker().config().slow_call().is_zero()
        {
            ticket.started_at = self.breaker.clock().now();
        }
    }

    /// The time left before this probe counts as lost
    /// ([`Breaker::probe_left`]); `None` for a permit that is no probe.
    #[inline(always)]
    pub(crate) fn probe_left(&self) -> Option<Duration> {
        let ticket = self.ticket.as_ref().filter(|t| t.is_probe())?;
        self.breaker.breaker().probe_left(ticket, self.breaker.clock())
    }

    /// Records the outcome; returns the transition it caused, if any.
    pub fn record(mut self, outcome: Outcome) -> Option<Transition> {
        let ticket = self.ticket.take()?;
        self.breaker.record(ticket, outcome)
    }
}

impl<C: Clock> Drop for NamedPermit<'_, C> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.breaker.record(ticket, Outcome::Ignored);
        }
    }
}

/// A [`NamedPermit`] that owns an `Arc` of its breaker.
#[must_use = "dropping a permit at once records the call as ignored"]
#[derive(Debug)]
pub struct OwnedNamedPermit<C: Clock = MonotonicClock> {
    pub(crate) breaker: Arc<NamedBreaker<C>>,
    pub(crate) ticket: Option<Ticket>,
}

impl<C: Clock> OwnedNamedPermit<C> {
    /// Records the outcome; returns the transition it caused, if any.
    pub fn record(mut self, outcome: Outcome) -> Option<Transition> {
        let ticket = self.ticket.take()?;
        self.breaker.record(ticket, outcome)
    }
}

impl<C: Clock> Drop for OwnedNamedPermit<C> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.breaker.record(ticket, Outcome::Ignored);
        }
    }
}
