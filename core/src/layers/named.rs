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
use crate::breaker::storage::{AnyWindow, Windows};
use crate::breaker::ticket::{Outcome, Refused, Rejected, Ticket, Transition};
use crate::clock::Clock;
use crate::config_error::ConfigError;
use crate::layers::clock::MonotonicClock;
use crate::layers::events::{Listeners, StateChange};

/// A [`Breaker`] with a name (e.g. `binance/orderbook`), the clock it reads
/// and its state-change listeners.
///
/// Its breaker keeps its counts in the storage `W`, as [`Breaker`]'s does:
/// the default, [`AnyWindow`], runs every config and is what
/// [`new`](Self::new) and [`with_clock`](Self::with_clock) make; a
/// breaker that trips on consecutive failures alone can take
/// [`NoWindow`](crate::breaker::NoWindow), a quarter of the memory, from
/// [`try_new`](Self::try_new) or [`try_with_clock`](Self::try_with_clock),
/// which refuse a config the storage cannot run.
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
pub struct NamedBreaker<C: Clock = MonotonicClock, W: Windows = AnyWindow> {
    breaker: Breaker<W>,
    name: Box<str>,
    clock: C,
    listeners: Listeners,
}

impl<C: Clock, W: Windows> fmt::Debug for NamedBreaker<C, W> {
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
        Self::of(name.into(), Breaker::new(config), clock)
    }
}

impl<W: Windows> NamedBreaker<MonotonicClock, W> {
    /// A Closed breaker reading [`MonotonicClock`], if its storage `W` can
    /// run `config` (see [`Breaker::try_new`]).
    ///
    /// # Examples
    /// ```
    /// use tripwire::breaker::NoWindow;
    /// use tripwire::{BreakerConfig, NamedBreaker};
    ///
    /// let consecutive = BreakerConfig::builder().failure_threshold(3).build()?;
    /// let per_symbol: NamedBreaker<_, NoWindow> = NamedBreaker::try_new("binance/ETHUSDT", consecutive)?;
    /// assert!(size_of_val(&per_symbol) < size_of::<NamedBreaker>() / 3);
    ///
    /// let rate = BreakerConfig::builder().failure_rate(0.5).build()?;
    /// let err = NamedBreaker::<_, NoWindow>::try_new("binance/BTCUSDT", rate).unwrap_err();
    /// assert_eq!(err.field(), "failure_rate");
    /// # Ok::<(), tripwire::ConfigError>(())
    /// ```
    pub fn try_new(name: impl Into<String>, config: BreakerConfig) -> Result<Self, ConfigError> {
        Self::try_with_clock(name, config, MonotonicClock)
    }
}

impl<C: Clock, W: Windows> NamedBreaker<C, W> {
    /// A Closed breaker reading `clock`, if its storage `W` can run
    /// `config` (see [`Breaker::try_new`]).
    pub fn try_with_clock(
        name: impl Into<String>,
        config: BreakerConfig,
        clock: C,
    ) -> Result<Self, ConfigError> {
        Ok(Self::of(name.into(), Breaker::try_new(config)?, clock))
    }

    /// A Closed breaker for a config its storage `W` was checked to run
    /// (the template of a keyed map, checked when the map was built).
    #[cfg(feature = "keyed")]
    pub(crate) fn accepted(name: String, config: BreakerConfig, clock: C) -> Self {
        Self::of(name, Breaker::accepted(config), clock)
    }

    fn of(name: String, breaker: Breaker<W>, clock: C) -> Self {
        Self { breaker, name: name.into_boxed_str(), clock, listeners: Listeners::default() }
    }

    /// The name it was made with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The core breaker (transitions made on it directly reach no listener).
    pub fn breaker(&self) -> &Breaker<W> {
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
    #[inline(always)]
    pub fn try_acquire(&self) -> Result<Ticket, Rejected> {
        self.admit().map_err(Refused::expand)
    }

    /// [`try_acquire`](Self::try_acquire) with the refusal packed in a word.
    #[inline(always)]
    fn admit(&self) -> Result<Ticket, Refused> {
        let ticket = self.breaker.admit(&self.clock)?;
        if let Some(t) = ticket.transition() {
            self.fire_cold(t);
        }
        Ok(ticket)
    }

    /// The Open → Half-Open transition of a probe, out of line so that
    /// [`try_acquire`](Self::try_acquire) inlines as the core's does.
    #[cold]
    #[inline(never)]
    fn fire_cold(&self, t: Transition) {
        self.fire(t, None);
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
    pub fn permit(&self) -> Result<NamedPermit<'_, C, W>, Rejected> {
        Ok(NamedPermit { breaker: self, ticket: Some(self.try_acquire()?) })
    }

    /// A permit that owns a reference to the breaker, for futures that must
    /// be `'static`.
    #[inline(always)]
    pub fn permit_owned(self: &Arc<Self>) -> Result<OwnedNamedPermit<C, W>, Rejected> {
        self.permit_owned_packed().map_err(Refused::expand)
    }

    /// [`permit_owned`](Self::permit_owned) with the refusal packed in a
    /// word, for a future that holds it until it is polled.
    #[inline(always)]
    pub(crate) fn permit_owned_packed(self: &Arc<Self>) -> Result<OwnedNamedPermit<C, W>, Refused> {
        // Admitted first: a refusal takes no reference to the breaker.
        let ticket = self.admit()?;
        Ok(OwnedNamedPermit { breaker: self.clone(), ticket: Some(ticket) })
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

    fn manual(&self, set: fn(&Breaker<W>) -> Transition) -> Transition {
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
pub struct NamedPermit<'a, C: Clock = MonotonicClock, W: Windows = AnyWindow> {
    pub(crate) breaker: &'a NamedBreaker<C, W>,
    pub(crate) ticket: Option<Ticket>,
}

impl<C: Clock, W: Windows> NamedPermit<'_, C, W> {
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

impl<C: Clock, W: Windows> Drop for NamedPermit<'_, C, W> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.breaker.record(ticket, Outcome::Ignored);
        }
    }
}

/// A [`NamedPermit`] that owns an `Arc` of its breaker.
#[must_use = "dropping a permit at once records the call as ignored"]
#[derive(Debug)]
pub struct OwnedNamedPermit<C: Clock = MonotonicClock, W: Windows = AnyWindow> {
    pub(crate) breaker: Arc<NamedBreaker<C, W>>,
    pub(crate) ticket: Option<Ticket>,
}

impl<C: Clock, W: Windows> OwnedNamedPermit<C, W> {
    /// Records the outcome; returns the transition it caused, if any.
    pub fn record(mut self, outcome: Outcome) -> Option<Transition> {
        let ticket = self.ticket.take()?;
        self.breaker.record(ticket, outcome)
    }
}

impl<C: Clock, W: Windows> Drop for OwnedNamedPermit<C, W> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.breaker.record(ticket, Outcome::Ignored);
        }
    }
}
