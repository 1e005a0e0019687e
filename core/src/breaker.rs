//! The circuit breaker: one packed state word, moved by compare-and-swap.
//!
//! # Orderings
//! - The state word is only ever changed by CAS. A CAS that enters Open or
//!   Half-Open is `Release`: it publishes the `entered_at` written just
//!   before it. Loads of the word that go on to read `entered_at` are
//!   `Acquire` (in `try_acquire`) and pair with that `Release`; since every
//!   later change of the word is a read-modify-write, they still pair with it
//!   when they read a later value (the release sequence).
//! - The time a state was entered lives in one of two slots, chosen by the
//!   parity of the state's generation: a thread moving the breaker to the
//!   next generation writes the *other* slot, so readers of the current
//!   state never see a time meant for the next one, even while that
//!   transition is half done. A slot only grows (`fetch_max`) and is only
//!   written with a time read *before* the word that justified the
//!   transition was loaded, so a racing or delayed thread cannot move it past
//!   the moment the winning CAS happened. Slot accesses are `Relaxed`: their
//!   ordering comes from the word.
//! - Updates that change counts but not the generation (a failure counted, a
//!   probe slot taken or freed) carry no other data and are `Relaxed`.

use crossbeam_utils::CachePadded;

use crate::clock::Clock;
use crate::config::{BreakerConfig, COUNT_SUCCESSES, COUNTED, TIMED, WINDOWED};
use crate::cooldown::cooldown_ns;
use crate::counters::{Counters, Event, Snapshot};
use crate::state::{self, Admission, State, Word};
use crate::sync::{AtomicU64, Ordering};
use crate::ticket::{Kind, Outcome, Refused, Rejected, Ticket, Transition};
use crate::window::{self, Window};

/// `Result<Ticket, Refused>` as two integers: a ticket is (start time,
/// generation << 32 | flags); a refusal is (its packed word, `u64::MAX`),
/// a second word no ticket has.
struct Admitted;

impl Admitted {
    #[inline]
    fn pack(r: Result<Ticket, Refused>) -> (u64, u64) {
        match r {
            Ok(t) => (t.started_at, (u64::from(t.generation) << 32) | u64::from(t.flags())),
            Err(refused) => (refused.raw(), u64::MAX),
        }
    }

    #[inline]
    fn unpack((first, second): (u64, u64)) -> Result<Ticket, Refused> {
        if second == u64::MAX {
            Err(Refused::from_raw(first))
        } else {
            Ok(Ticket::from_raw(first, (second >> 32) as u32, second as u32))
        }
    }
}

/// A lock-free circuit breaker.
///
/// Every operation is a few atomic loads and at most a handful of CAS
/// attempts; nothing locks, allocates, spawns or sleeps. A breaker is plain
/// data (`#[repr(C)]`, no pointers), so it can live in memory shared by
/// several processes.
///
/// The low-level protocol is [`try_acquire`](Self::try_acquire), then
/// [`record`](Self::record) with the returned [`Ticket`]; Rust callers
/// usually prefer [`permit`](Self::permit) (RAII) or [`call`](Self::call).
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::{Breaker, BreakerConfig, ManualClock, Outcome, State};
///
/// let clock = ManualClock::new(0);
/// let breaker = Breaker::new(
///     BreakerConfig::builder().failure_threshold(2).open_timeout(Duration::from_secs(5)).build()?,
/// );
/// for _ in 0..2 {
///     let ticket = breaker.try_acquire(&clock).expect("closed");
///     breaker.record(ticket, Outcome::Failure, &clock);
/// }
/// let rejected = breaker.try_acquire(&clock).unwrap_err();
/// assert_eq!(rejected.retry_after, Some(Duration::from_secs(5)));
///
/// clock.advance(Duration::from_secs(5));
/// let probe = breaker.try_acquire(&clock).expect("half-open probe");
/// assert_eq!(breaker.state(), State::HalfOpen);
/// let closed = breaker.record(probe, Outcome::Success, &clock).expect("a transition");
/// assert_eq!((closed.from, closed.to), (State::HalfOpen, State::Closed));
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
///
/// # Size and alignment
/// Aligned to a cache-line pair (128 bytes on x86-64) so that the state
/// word and each counter stripe have lines of their own; see the crate's
/// README for the measured size.
#[repr(C)]
#[derive(Debug)]
pub struct Breaker {
    word: CachePadded<AtomicU64>,
    /// When the Open or Half-Open state of generation `g` was entered (ns),
    /// in slot `g & 1`. Read-mostly, next to the config, off the word's line.
    entered_at: [AtomicU64; 2],
    config: BreakerConfig,
    counters: Counters,
    window: Window,
}

impl Breaker {
    /// A Closed breaker at generation 0.
    pub fn new(config: BreakerConfig) -> Self {
        Self {
            word: CachePadded::new(AtomicU64::new(Word::CLOSED.0)),
            entered_at: [AtomicU64::new(0), AtomicU64::new(0)],
            config,
            counters: Counters::new(),
            window: Window::new(),
        }
    }

    /// The config the breaker was made with.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// The current state. An Open breaker whose cool-down has passed still
    /// reads Open until a call arrives and becomes its probe.
    pub fn state(&self) -> State {
        // Relaxed: a report, ordering nothing else.
        Word(self.word.load(Ordering::Relaxed)).state()
    }

    /// The current generation: incremented by every transition.
    pub fn generation(&self) -> u32 {
        // Relaxed: a report, ordering nothing else.
        Word(self.word.load(Ordering::Relaxed)).generation()
    }

    /// The counters at this moment.
    pub fn snapshot(&self) -> Snapshot {
        let mut s = Snapshot::of(&self.counters);
        // Successes counted in a rolling window are kept there (see `window`).
        if self.config.windowed() && self.config.count_successes() {
            s.successes = s.successes.wrapping_add(self.window.successes());
        }
        s
    }

    /// Asks to make a call. Reads `clock` only when the breaker is Open (or
    /// Half-Open with every probe slot taken).
    ///
    /// On success the caller must make the call and hand the ticket back to
    /// [`record`](Self::record) (a probe whose outcome is never recorded is
    /// taken over by a new generation after the cool-down). If admitting the
    /// call moved the breaker to Half-Open, [`Ticket::transition`] says so.
    #[inline]
    pub fn try_acquire(&self, clock: &impl Clock) -> Result<Ticket, Rejected> {
        self.admit(clock).map_err(Refused::expand)
    }

    /// [`try_acquire`](Self::try_acquire) with the refusal packed in a word.
    #[inline]
    fn admit(&self, clock: &impl Clock) -> Result<Ticket, Refused> {
        // Acquire pairs with the Release CAS that entered Open or Half-Open,
        // so `entered_at` read in the slow path is at least the one it published.
        let w = Word(self.word.load(Ordering::Acquire));
        // Closed and untimed, the common case: admitted without a write.
        if w.state_bits() == State::Closed as u64 && self.config.flags & TIMED == 0 {
            return Ok(Ticket::new(0, w.generation(), Kind::Plain));
        }
        Admitted::unpack(self.admit_slow(w, clock))
    }

    /// Every other admission, kept out of line so that the fast path above
    /// stays a load and a compare. Returns an [`Admitted`] pair: two
    /// integers come back in registers, where a `Result` would come back
    /// through memory and stall the caller's loads on the fast path.
    #[inline(never)]
    fn admit_slow(&self, w: Word, clock: &impl Clock) -> (u64, u64) {
        Admitted::pack(self.admit_from(w, clock))
    }

    fn admit_from(&self, mut w: Word, clock: &impl Clock) -> Result<Ticket, Refused> {
        let mut now: Option<u64> = None;
        loop {
            // Can the word alone decide?
            let next = match state::admit(w, self.config.half_open_max) {
                Admission::Pass => return Ok(self.ticket(w, Kind::Plain, now, clock)),
                Admission::Refuse => return Err(self.reject(w, None)),
                Admission::Probe(next) => next,
                Admission::NeedsTime => {
                    let Some(now) = now else {
                        // Read the time first, then the word the decision
                        // rests on (see the module's Orderings).
                        now = Some(clock.now());
                        // Acquire: as for the first load.
                        w = Word(self.word.load(Ordering::Acquire));
                        continue;
                    };
                    // Relaxed: the Acquire load of `w` ordered it.
                    let entered = self.entered_at(w).load(Ordering::Relaxed);
                    let cooldown = cooldown_ns(&self.config, w.count(), w.generation(), entered);
                    let elapsed = now.saturating_sub(entered);
                    // Has the cool-down passed?
                    if elapsed < cooldown {
                        return Err(self.reject(w, Some(cooldown - elapsed)));
                    }
                    let Some(next) = state::admit_after_cooldown(w) else { unreachable!() };
                    // Relaxed: published by the Release CAS below.
                    self.entered_at(next).fetch_max(now, Ordering::Relaxed);
                    next
                }
            };
            // Release publishes `entered_at` when this enters Half-Open;
            // Acquire on failure for the retry, as for the first load.
            match self.word.compare_exchange_weak(w.0, next.0, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    let kind = if !w.is_transition_to(next) {
                        Kind::Probe
                    } else if w.state() == State::Open {
                        Kind::ProbeFromOpen
                    } else {
                        Kind::ProbeTookOver
                    };
                    if kind != Kind::Probe {
                        self.counters.add(Event::Transition);
                    }
                    return Ok(self.ticket(next, kind, now, clock));
                }
                Err(actual) => w = Word(actual),
            }
        }
    }

    /// The slot holding the time `w`'s state was entered.
    #[inline]
    fn entered_at(&self, w: Word) -> &AtomicU64 {
        &self.entered_at[(w.generation() & 1) as usize]
    }

    /// A ticket for `w`, stamped with its start time if calls are timed.
    #[inline]
    fn ticket(&self, w: Word, kind: Kind, now: Option<u64>, clock: &impl Clock) -> Ticket {
        let started_at = if self.config.flags & TIMED == 0 { 0 } else { now.unwrap_or_else(|| clock.now()) };
        Ticket::new(started_at, w.generation(), kind)
    }

    #[cold]
    fn reject(&self, w: Word, retry_after_ns: Option<u64>) -> Refused {
        self.counters.add(Event::Rejected);
        Refused::new(w.state(), retry_after_ns)
    }

    /// Reports how an admitted call ended. Returns the transition this
    /// outcome caused, if any: exactly one caller learns of each transition.
    ///
    /// An outcome whose ticket comes from an older generation is counted but
    /// never changes the state, nor enters the rolling window. Reads `clock`
    /// at most once: only if the outcome trips the breaker, or when a
    /// time-based rolling window or slow-call measurement is configured.
    #[inline(always)]
    pub fn record(&self, ticket: Ticket, outcome: Outcome, clock: &impl Clock) -> Option<Transition> {
        let flags = self.config.flags;
        if outcome == Outcome::Success {
            // A success on a healthy, untimed breaker without a window: the common case.
            if flags & (TIMED | WINDOWED) == 0 {
                if flags & COUNT_SUCCESSES != 0 {
                    self.counters.add(Event::Success);
                }
                // Relaxed: deciding that there is nothing to write orders nothing.
                let w = self.word.load(Ordering::Relaxed);
                // Closed with no failure to forget, in the ticket's generation?
                if w == Word::closed_at(ticket.generation).0 {
                    return None;
                }
                return self.record_success_slow(ticket, clock);
            }
            // A success on a healthy breaker with a rolling window and no
            // slow-call measurement: one CAS into the window, which also
            // counts it for the snapshot.
            if flags & (TIMED | WINDOWED) == WINDOWED {
                // Relaxed: as above; the window checks the generation itself.
                let w = self.word.load(Ordering::Relaxed);
                // Closed with no failure to forget, in the ticket's
                // generation (so the ticket is not a probe's)?
                if w == Word::closed_at(ticket.generation).0 {
                    let epoch = if flags & COUNTED == 0 { self.config.epoch(clock.now()) } else { 0 };
                    if self.window.try_add_success(&self.config, ticket.generation, epoch) {
                        return None;
                    }
                    return self.record_windowed_success(ticket, epoch, clock);
                }
            }
        }
        self.record_slow(ticket, outcome, clock)
    }

    /// A success for the window that its fast attempt did not count: the
    /// window has to move on first, or the success stays out of it.
    #[inline(never)]
    fn record_windowed_success(&self, ticket: Ticket, epoch: u64, clock: &impl Clock) -> Option<Transition> {
        let generation = ticket.generation;
        if self.window.add(&self.config, generation, epoch, false, false, || self.closed_in(generation)) {
            return None;
        }
        // Its epoch has left the window, or its generation is over.
        if self.config.flags & COUNT_SUCCESSES != 0 {
            self.counters.add(Event::Success);
        }
        // A success never leaves Closed, so `clock` is not read again.
        self.record_success_slow(ticket, clock)
    }

    /// Whether the breaker is Closed in `generation`: the rolling window
    /// asks before it starts counting a new generation.
    #[inline]
    fn closed_in(&self, generation: u32) -> bool {
        // Relaxed: the window needs only a value the word has had (see `window`).
        let w = Word(self.word.load(Ordering::Relaxed));
        w.generation() == generation && w.state() == State::Closed
    }

    #[inline(never)]
    fn record_success_slow(&self, ticket: Ticket, clock: &impl Clock) -> Option<Transition> {
        let (generation, needed) = (ticket.generation, self.config.half_open_successes);
        self.apply(clock, |w| state::on_success(w, generation, needed))
    }

    /// Every outcome but a plain success, kept out of line.
    #[inline(never)]
    fn record_slow(&self, ticket: Ticket, outcome: Outcome, clock: &impl Clock) -> Option<Transition> {
        if self.config.measures() {
            return self.record_measured(ticket, outcome, clock);
        }
        self.record_word(ticket, outcome, clock, false)
    }

    /// The state word's part of recording: counters, consecutive failures,
    /// probes. `counted` says the rolling window counted this success.
    fn record_word(
        &self,
        ticket: Ticket,
        outcome: Outcome,
        clock: &impl Clock,
        counted: bool,
    ) -> Option<Transition> {
        let generation = ticket.generation;
        match outcome {
            Outcome::Success => {
                if self.config.flags & COUNT_SUCCESSES != 0 && !counted {
                    self.counters.add(Event::Success);
                }
                let needed = self.config.half_open_successes;
                self.apply(clock, |w| state::on_success(w, generation, needed))
            }
            Outcome::Failure => {
                self.counters.add(Event::Failure);
                let threshold = self.config.failure_threshold;
                self.apply(clock, |w| state::on_failure(w, generation, threshold))
            }
            Outcome::Ignored => {
                self.counters.add(Event::Ignored);
                self.apply(clock, |w| state::on_ignored(w, generation))
            }
        }
    }

    /// Recording when calls are timed or a window is kept: for a plain
    /// ticket, the window first (it keeps out what is not of its Closed
    /// generation), then the word, then the window's rate conditions.
    fn record_measured(&self, ticket: Ticket, outcome: Outcome, clock: &impl Clock) -> Option<Transition> {
        let cfg = &self.config;
        let clock = KnownTime::read(clock, cfg.needs_time());
        // Every ticket of a timed breaker carries its start time (0 is a
        // time like any other, e.g. on a manual clock).
        let slow = outcome != Outcome::Ignored
            && cfg.slow_call_ns != 0
            && clock.now.unwrap_or(0).saturating_sub(ticket.started_at) >= cfg.slow_call_ns;
        if slow {
            self.counters.add(Event::Slow);
        }
        let (generation, failed) = (ticket.generation, outcome == Outcome::Failure);
        // Does this outcome belong in the window?
        let counted = outcome != Outcome::Ignored && cfg.windowed() && !ticket.is_probe() && {
            let epoch = clock.now.map_or(0, |now| cfg.epoch(now));
            self.window.add(cfg, generation, epoch, failed, slow, || self.closed_in(generation))
        };
        if let Some(t) = self.record_word(ticket, outcome, &clock, counted) {
            return Some(t);
        }
        // Can this outcome have raised a rate? Successes that were not slow cannot.
        if !counted || (!failed && !slow) {
            return None;
        }
        let t = self.window.totals(cfg, generation, || self.closed_in(generation))?;
        if !window::trips(cfg, t) {
            return None;
        }
        self.apply(&clock, |w| state::trip(w, generation))
    }

    /// Applies `step` to the word until a CAS succeeds or `step` declines.
    #[inline]
    fn apply(&self, clock: &impl Clock, step: impl Fn(Word) -> Option<Word>) -> Option<Transition> {
        // Relaxed: deciding from the word reads no other data; a CAS that
        // publishes is Release below.
        let mut w = Word(self.word.load(Ordering::Relaxed));
        let mut now: Option<u64> = None;
        loop {
            // Does this outcome change the word at all?
            let next = step(w)?;
            let transition = w.is_transition_to(next);
            if transition && matches!(next.state(), State::Open | State::HalfOpen) {
                let Some(now) = now else {
                    // Time first, then the word (see the module's Orderings).
                    now = Some(clock.now());
                    // Relaxed: as for the first load.
                    w = Word(self.word.load(Ordering::Relaxed));
                    continue;
                };
                // Relaxed: published by the Release CAS below.
                self.entered_at(next).fetch_max(now, Ordering::Relaxed);
            }
            // Release publishes `entered_at`; count-only updates need no
            // more, but one ordering for both keeps the loop simple and costs
            // nothing on x86.
            match self.word.compare_exchange_weak(w.0, next.0, Ordering::Release, Ordering::Relaxed) {
                Ok(_) if transition => return Some(self.transitioned(w, next)),
                Ok(_) => return None,
                Err(actual) => w = Word(actual),
            }
        }
    }

    #[cold]
    fn transitioned(&self, from: Word, to: Word) -> Transition {
        self.counters.add(Event::Transition);
        Transition { from: from.state(), to: to.state(), generation: to.generation() }
    }

    /// Rejects every call until [`reset`](Self::reset).
    pub fn force_open(&self) -> Transition {
        self.set(State::ForcedOpen)
    }

    /// Permits every call and never trips, still counting outcomes, until
    /// [`reset`](Self::reset).
    pub fn disable(&self) -> Transition {
        self.set(State::Disabled)
    }

    /// Closes the breaker with fresh counts and cool-down; outcomes of calls
    /// admitted before the reset no longer affect it.
    pub fn reset(&self) -> Transition {
        self.set(State::Closed)
    }

    fn set(&self, to: State) -> Transition {
        // Relaxed: manual states need no `entered_at`.
        let mut w = Word(self.word.load(Ordering::Relaxed));
        loop {
            let next = w.enter(to, 0);
            // Release: one ordering for every CAS of the word (see `apply`);
            // the rolling window needs none (it starts each Closed
            // generation itself, see `window`).
            match self.word.compare_exchange_weak(w.0, next.0, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return self.transitioned(w, next),
                Err(actual) => w = Word(actual),
            }
        }
    }
}

impl Breaker {
    /// Whether the state word decodes (see `Word::is_valid`): checked when
    /// attaching to a breaker in memory someone else wrote.
    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check words; loom builds have none"))]
    pub(crate) fn has_valid_word(&self) -> bool {
        // Relaxed: a check of one value; the caller's Acquire on the region's
        // magic ordered the initialisation before it.
        Word(self.word.load(Ordering::Relaxed)).is_valid()
    }

    /// Where the rolling window starts in a breaker (its generation word
    /// first): for tests that corrupt a shared region.
    #[cfg(test)]
    pub(crate) const WINDOW_OFFSET: usize = core::mem::offset_of!(Breaker, window);

    /// Whether the rolling window's words decode (see `Window::is_valid`).
    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check windows; loom builds have none"))]
    pub(crate) fn has_valid_window(&self) -> bool {
        self.window.is_valid()
    }
}

/// A clock whose reading, if the caller already made it, is reused: one
/// call reads the time at most once.
struct KnownTime<'a, C> {
    clock: &'a C,
    now: Option<u64>,
}

impl<'a, C: Clock> KnownTime<'a, C> {
    /// Reads `clock` now if `needed`, else leaves it for later.
    #[inline]
    fn read(clock: &'a C, needed: bool) -> Self {
        Self { clock, now: needed.then(|| clock.now()) }
    }
}

impl<C: Clock> Clock for KnownTime<'_, C> {
    #[inline]
    fn now(&self) -> u64 {
        self.now.unwrap_or_else(|| self.clock.now())
    }
}
