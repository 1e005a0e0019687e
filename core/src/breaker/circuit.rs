//! The circuit breaker: one packed state word, moved by compare-and-swap.
//!
//! # Orderings
//! - The state word is only ever changed by CAS. A CAS that makes a
//!   transition is `Release`: it publishes the deadline stamped just before
//!   it (see `deadline`). Loads of the word that go on to read a deadline
//!   are `Acquire` (in `try_acquire`, `open_for` and `hold_left`) and pair
//!   with that `Release`; since every later change of the word is a
//!   read-modify-write, they still pair with it when they read a later
//!   value (the release sequence).
//! - A deadline is stamped with a time read *before* the word that
//!   justified the transition was loaded, and only while the word is still
//!   at the generation the transition starts from, so neither a racing nor
//!   a delayed thread can move it past a full wait after the moment the
//!   winning CAS happened, nor shorten it (the rules are `deadline`'s).
//! - Updates that change counts but not the generation (a failure counted, a
//!   probe slot taken or freed) carry no other data and are `Relaxed`.

use crossbeam_utils::CachePadded;

use core::time::Duration;

use crate::breaker::config::{BreakerConfig, COUNT_SUCCESSES, COUNTED, TIMED, WINDOWED};
use crate::breaker::cooldown::cooldown_ns;
use crate::breaker::counters::{Event, Snapshot};
use crate::breaker::deadline::Deadlines;
use crate::breaker::hot::{Hot, HotLine};
use crate::breaker::state::{self, Admission, State, Word};
use crate::breaker::storage::{AnyWindow, Windows};
use crate::breaker::ticket::{Kind, Outcome, Refused, Rejected, Ticket, Transition};
use crate::breaker::window;
use crate::clock::Clock;
use crate::clock::duration_ns;
use crate::config_error::ConfigError;
use crate::sync::Ordering;

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
/// # Storage
/// `W` is where the counters and the rolling window live ([`Windows`]):
/// by default [`AnyWindow`], which holds both kinds of window whatever the
/// config names. A breaker that needs no window, or one kind only, takes
/// less memory on [`NoWindow`](crate::breaker::NoWindow),
/// [`TimeOnly`](crate::breaker::TimeOnly) or
/// [`CountOnly`](crate::breaker::CountOnly), made with
/// [`try_new`](Self::try_new), which refuses a config the storage cannot
/// run. Every storage behaves the same for the configs it accepts.
///
/// # Size and alignment
/// Aligned to a cache-line pair (128 bytes on x86-64) so that the state
/// word and each counter stripe have lines of their own. Its size depends
/// on the storage: 4,992 bytes on x86-64 for the default, 896 without a
/// window (see [`Windows`]). `cargo run -p tripwire-breaker --example
/// sizes` prints every one, with the config's and the ticket's.
#[repr(C)]
#[derive(Debug)]
pub struct Breaker<W: Windows = AnyWindow> {
    /// The state word, with what bindings' inline fast paths read next to
    /// it (see `hot`): first, so that a breaker's address is its word's.
    hot: CachePadded<Hot>,
    /// When the wait of an Open or Half-Open generation ends. Read-mostly,
    /// next to the config, off the word's line.
    deadlines: Deadlines,
    config: BreakerConfig,
    /// The counters and the rolling window.
    store: W,
}

impl Breaker {
    /// Where the deadline slots sit in a breaker, for tests that damage them.
    #[cfg(all(test, not(loom)))]
    pub(crate) const DEADLINES_OFFSET: usize = core::mem::offset_of!(Breaker, deadlines);

    /// A Closed breaker at generation 0, on the default storage, which
    /// runs every config.
    pub fn new(config: BreakerConfig) -> Self {
        Self::make(config)
    }
}

impl<W: Windows> Breaker<W> {
    /// A Closed breaker at generation 0, if its storage `W` can run
    /// `config`: [`NoWindow`](crate::breaker::NoWindow) refuses a config
    /// with a rate condition (`failure_rate` or `slow_rate`),
    /// [`TimeOnly`](crate::breaker::TimeOnly) a count window,
    /// [`CountOnly`](crate::breaker::CountOnly) a time window;
    /// [`AnyWindow`] refuses nothing.
    ///
    /// # Examples
    /// ```
    /// use tripwire::breaker::TimeOnly;
    /// use tripwire::{Breaker, BreakerConfig};
    ///
    /// let rate = BreakerConfig::builder().failure_rate(0.5).build()?;
    /// let breaker: Breaker<TimeOnly> = Breaker::try_new(rate)?;
    /// assert_eq!(breaker.config().failure_rate(), 0.5);
    ///
    /// let counted = BreakerConfig::builder().failure_rate(0.5).count_window(50).build()?;
    /// let err = Breaker::<TimeOnly>::try_new(counted).unwrap_err();
    /// assert_eq!(err.field(), "count_window");
    /// # Ok::<(), tripwire::ConfigError>(())
    /// ```
    pub fn try_new(config: BreakerConfig) -> Result<Self, ConfigError> {
        W::accepts(&config)?;
        Ok(Self::make(config))
    }

    /// A breaker for `config`, which `W` was checked to accept (a keyed
    /// map's template, checked once when the map was built).
    #[cfg(feature = "keyed")]
    pub(crate) fn accepted(config: BreakerConfig) -> Self {
        debug_assert!(W::accepts(&config).is_ok(), "a config the storage refuses");
        Self::make(config)
    }

    /// A breaker for `config`, which `W` accepts.
    #[inline]
    fn make(config: BreakerConfig) -> Self {
        Self {
            hot: CachePadded::new(Hot::new(Word::CLOSED.0, config.flags)),
            deadlines: Deadlines::new(),
            config,
            store: W::new(),
        }
    }

    /// Counts one `event`.
    #[inline(always)]
    fn count(&self, event: Event) {
        self.store.count(event);
    }

    /// loom models only: the time window's inline success path yields
    /// between its two loads of the window's control word, so that a model
    /// explores another thread moving the window on in between.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn loom_yield_in_window_fast_path(&self) {
        self.store.yield_in_window_fast_path();
    }

    /// The config the breaker was made with.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// The current state. An Open breaker whose cool-down has passed still
    /// reads Open until a call arrives and becomes its probe. A held breaker
    /// ([`open_for`](Self::open_for)) reads Open; [`hold_left`](Self::hold_left)
    /// tells the hold apart.
    pub fn state(&self) -> State {
        // Relaxed: a report, ordering nothing else.
        Word(self.hot.word.load(Ordering::Relaxed)).state()
    }

    /// The current generation: incremented by every transition.
    pub fn generation(&self) -> u32 {
        // Relaxed: a report, ordering nothing else.
        Word(self.hot.word.load(Ordering::Relaxed)).generation()
    }

    /// The counters at this moment.
    pub fn snapshot(&self) -> Snapshot {
        self.store.snapshot(&self.config)
    }

    /// Asks to make a call. Reads `clock` only when the breaker is Open (or
    /// Half-Open with every probe slot taken).
    ///
    /// On success the caller must make the call and hand the ticket back to
    /// [`record`](Self::record) (a probe whose outcome is never recorded is
    /// taken over by a new generation after the config's
    /// [`probe_timeout`](BreakerConfig::probe_timeout)). If admitting the
    /// call moved the breaker to Half-Open, [`Ticket::transition`] says so.
    #[inline(always)]
    pub fn try_acquire(&self, clock: &impl Clock) -> Result<Ticket, Rejected> {
        self.admit(clock).map_err(Refused::expand)
    }

    /// [`try_acquire`](Self::try_acquire) with the refusal packed in a word
    /// (for a future that keeps it until polled: one aligned word to move).
    #[inline(always)]
    pub(crate) fn admit(&self, clock: &impl Clock) -> Result<Ticket, Refused> {
        // Acquire pairs with the Release CAS that entered Open or Half-Open,
        // so the deadline read in the slow path is at least the one it published.
        let w = Word(self.hot.word.load(Ordering::Acquire));
        // Closed and untimed, the common case: admitted without a write.
        // Bindings inline this very test (see `HotLine`).
        if w.0 & HotLine::ADMIT_MASK == HotLine::ADMIT_VALUE && self.config.flags & HotLine::ADMIT_FLAGS == 0
        {
            return Ok(Ticket::new(0, w.generation(), Kind::Plain, 0));
        }
        // Open and waiting, the common refusal during an outage: inline too.
        if w.state_bits() == State::Open as u64
            && let Some(refused) = self.refuse_while_open(w, clock)
        {
            return Err(refused);
        }
        Admitted::unpack(self.admit_slow(w, clock))
    }

    /// The refusal of a call while `w`, an Open word, waits out its
    /// cool-down or hold: a clock read, the word again, its deadline and a
    /// count. `None` when the word moved on or the wait is over, for the
    /// full path to decide (it reads the clock again: the rare case).
    #[inline(always)]
    fn refuse_while_open(&self, w: Word, clock: &impl Clock) -> Option<Refused> {
        // Read the time first, then the word the decision rests on (see the
        // module's Orderings), as `admit_from` does.
        let now = clock.now();
        // Acquire: as for the first load.
        if self.hot.word.load(Ordering::Acquire) != w.0 {
            return None;
        }
        let left = self.deadlines.open_left(w, now, &self.config)?;
        self.count(Event::Rejected);
        Some(Refused::new(State::Open, Some(left)))
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
            let (next, slot) = match state::admit(w, self.config.half_open_max) {
                Admission::Pass => return Ok(self.ticket(w, Kind::Plain, 0, now, clock)),
                Admission::Refuse => return Err(self.reject(w, None)),
                Admission::Probe { next, slot } => (next, slot),
                admission @ (Admission::Wait | Admission::Renew(_)) => {
                    let Some(now) = now else {
                        // Read the time first, then the word the decision
                        // rests on (see the module's Orderings).
                        now = Some(clock.now());
                        // Acquire: as for the first load.
                        w = Word(self.hot.word.load(Ordering::Acquire));
                        continue;
                    };
                    let next = match admission {
                        Admission::Renew(next) => next,
                        _ => {
                            // Has the wait ended?
                            if let Some(left) = self.deadlines.left(w, now, &self.config) {
                                return Err(self.reject(w, Some(left)));
                            }
                            let Some(next) = state::after_deadline(w) else { unreachable!() };
                            next
                        }
                    };
                    let wait = self.wait_ns(next, now);
                    self.deadlines.stamp(&self.hot.word, w, next, Some(now.wrapping_add(wait)));
                    (next, 0)
                }
            };
            // Release publishes the deadline when this enters a new
            // generation; Acquire on failure for the retry, as for the first load.
            match self.hot.word.compare_exchange_weak(w.0, next.0, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    let kind = if !w.is_transition_to(next) {
                        Kind::Probe
                    } else if w.state() == State::Open {
                        Kind::ProbeFromOpen
                    } else {
                        Kind::ProbeTookOver
                    };
                    if kind != Kind::Probe {
                        self.count(Event::Transition);
                    }
                    return Ok(self.ticket(next, kind, slot, now, clock));
                }
                Err(actual) => w = Word(actual),
            }
        }
    }

    /// How long the state `next` enters at `now` waits: an Open one for its
    /// cool-down, a Half-Open one for its probes, until they count as lost.
    #[inline]
    fn wait_ns(&self, next: Word, now: u64) -> u64 {
        if next.state() == State::HalfOpen {
            self.config.probe_timeout_ns
        } else {
            cooldown_ns(&self.config, next.reopens(), next.generation(), now)
        }
    }

    /// A ticket for `w`, stamped with its start time if calls are timed.
    #[inline]
    fn ticket(&self, w: Word, kind: Kind, slot: u32, now: Option<u64>, clock: &impl Clock) -> Ticket {
        let started_at = if self.config.flags & TIMED == 0 { 0 } else { now.unwrap_or_else(|| clock.now()) };
        // A slot is below PROBE_SLOTS (10), so it fits a byte.
        Ticket::new(started_at, w.generation(), kind, slot as u8)
    }

    #[cold]
    fn reject(&self, w: Word, retry_after_ns: Option<u64>) -> Refused {
        self.count(Event::Rejected);
        Refused::new(w.state(), retry_after_ns)
    }

    /// Reports how an admitted call ended. Returns the transition this
    /// outcome caused, if any: exactly one caller learns of each transition.
    ///
    /// An outcome whose ticket comes from an older generation is counted but
    /// never changes the state, nor enters the rolling window; a probe
    /// ticket recorded a second time changes nothing but the counters (see
    /// [`Ticket`] for exactly what any ticket can do). Reads `clock` at most
    /// once: only if the outcome trips the breaker, or when a time-based
    /// rolling window or slow-call measurement is configured.
    #[inline(always)]
    pub fn record(&self, ticket: Ticket, outcome: Outcome, clock: &impl Clock) -> Option<Transition> {
        let flags = self.config.flags;
        if outcome == Outcome::Success {
            // A success on a healthy, untimed breaker without a window: the
            // common case.
            if self.record_healthy_success(ticket.generation) {
                return None;
            }
            // Untimed and without a window, but with a failure to forget,
            // or in another generation.
            if flags & HotLine::RECORD_FLAGS == 0 {
                if flags & COUNT_SUCCESSES != 0 {
                    self.count(Event::Success);
                }
                return self.record_success_slow(ticket, clock);
            }
            // A success on a healthy breaker with a rolling window and no
            // slow-call measurement: one CAS into the window, which also
            // counts it for the snapshot.
            if flags & (TIMED | WINDOWED) == WINDOWED {
                // Relaxed: as above; the window checks the generation itself.
                let w = self.hot.word.load(Ordering::Relaxed);
                // Closed with no failure to forget, in the ticket's
                // generation (so the ticket is not a probe's)?
                if w == Word::closed_at(ticket.generation).0 {
                    let epoch = if flags & COUNTED == 0 { self.config.epoch(clock.now()) } else { 0 };
                    if self.store.try_add_success(&self.config, ticket.generation, epoch) {
                        return None;
                    }
                    return self.record_windowed_success(ticket, epoch, clock);
                }
            }
        }
        self.record_slow(ticket, outcome, clock)
    }

    /// The fast path of recording a success, on its own for bindings that
    /// have no [`Ticket`] at hand (the C ABI): records a success of a call
    /// admitted in `generation` and returns true if the breaker neither
    /// times calls nor keeps a rolling window and is Closed in `generation`
    /// with no failure to forget, so that there is nothing to do but count
    /// it; returns false, having done nothing, otherwise (then
    /// [`record`](Self::record) it). [`record`](Self::record) begins with
    /// this very test, and the C header's inline fast path makes it too
    /// (see [`HotLine`]).
    ///
    /// # Examples
    /// ```
    /// use tripwire::clock::FixedClock;
    /// use tripwire::{Breaker, BreakerConfig, Outcome};
    ///
    /// let breaker = Breaker::new(BreakerConfig::default());
    /// let ticket = breaker.try_acquire(&FixedClock(0)).unwrap();
    /// assert!(breaker.record_healthy_success(ticket.generation()));
    /// assert_eq!(breaker.snapshot().successes, 1);
    /// breaker.record(ticket, Outcome::Failure, &FixedClock(0));
    /// assert!(!breaker.record_healthy_success(ticket.generation()), "a failure to forget");
    /// assert_eq!(breaker.snapshot().successes, 1, "nothing done");
    /// ```
    #[inline(always)]
    pub fn record_healthy_success(&self, generation: u32) -> bool {
        let flags = self.config.flags;
        if flags & HotLine::RECORD_FLAGS != 0 {
            return false;
        }
        // Relaxed: deciding that there is nothing to write orders nothing.
        let w = self.hot.word.load(Ordering::Relaxed);
        // Closed with no failure to forget, in the ticket's generation?
        if w != Word::closed_at(generation).0 {
            return false;
        }
        if flags & COUNT_SUCCESSES != 0 {
            self.count(Event::Success);
        }
        true
    }

    /// A success for the window that its fast attempt did not count: the
    /// window has to move on first, or the success stays out of it.
    #[inline(never)]
    fn record_windowed_success(&self, ticket: Ticket, epoch: u64, clock: &impl Clock) -> Option<Transition> {
        let generation = ticket.generation;
        if self.store.add(&self.config, generation, epoch, false, false, || self.closed_in(generation)) {
            return None;
        }
        // Its epoch has left the window, or its generation is over.
        if self.config.flags & COUNT_SUCCESSES != 0 {
            self.count(Event::Success);
        }
        // A success never leaves Closed, so `clock` is not read again.
        self.record_success_slow(ticket, clock)
    }

    /// Whether the breaker is Closed in `generation`: the rolling window
    /// asks before it starts counting a new generation.
    #[inline]
    fn closed_in(&self, generation: u32) -> bool {
        // Relaxed: the window needs only a value the word has had (see `window`).
        let w = Word(self.hot.word.load(Ordering::Relaxed));
        w.generation() == generation && w.state() == State::Closed
    }

    #[inline(never)]
    fn record_success_slow(&self, ticket: Ticket, clock: &impl Clock) -> Option<Transition> {
        let (generation, slot, needed) =
            (ticket.generation, ticket.probe_slot(), self.config.half_open_successes);
        self.apply(clock, |w| state::on_success(w, generation, slot, needed))
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
        let (generation, slot) = (ticket.generation, ticket.probe_slot());
        match outcome {
            Outcome::Success => {
                if self.config.flags & COUNT_SUCCESSES != 0 && !counted {
                    self.count(Event::Success);
                }
                let needed = self.config.half_open_successes;
                self.apply(clock, |w| state::on_success(w, generation, slot, needed))
            }
            Outcome::Failure => {
                self.count(Event::Failure);
                let threshold = self.config.failure_threshold;
                self.apply(clock, |w| state::on_failure(w, generation, slot, threshold))
            }
            Outcome::Ignored => {
                self.count(Event::Ignored);
                self.apply(clock, |w| state::on_ignored(w, generation, slot))
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
            self.count(Event::Slow);
        }
        let (generation, failed) = (ticket.generation, outcome == Outcome::Failure);
        // Does this outcome belong in the window?
        let counted = outcome != Outcome::Ignored && cfg.windowed() && !ticket.is_probe() && {
            let epoch = clock.now.map_or(0, |now| cfg.epoch(now));
            self.store.add(cfg, generation, epoch, failed, slow, || self.closed_in(generation))
        };
        if let Some(t) = self.record_word(ticket, outcome, &clock, counted) {
            return Some(t);
        }
        // Can this outcome have raised a rate? Successes that were not slow cannot.
        if !counted || (!failed && !slow) {
            return None;
        }
        let t = self.store.totals(cfg, generation, || self.closed_in(generation))?;
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
        let mut w = Word(self.hot.word.load(Ordering::Relaxed));
        let mut now: Option<u64> = None;
        loop {
            // Does this outcome change the word at all?
            let next = step(w)?;
            let transition = w.is_transition_to(next);
            if transition {
                // Does the state entered wait for a deadline?
                let deadline = if matches!(next.state(), State::Open | State::HalfOpen) {
                    let Some(now) = now else {
                        // Time first, then the word (see the module's Orderings).
                        now = Some(clock.now());
                        // Relaxed: as for the first load.
                        w = Word(self.hot.word.load(Ordering::Relaxed));
                        continue;
                    };
                    Some(now.wrapping_add(self.wait_ns(next, now)))
                } else {
                    None
                };
                self.deadlines.stamp(&self.hot.word, w, next, deadline);
            }
            // Release publishes the deadline; count-only updates need no
            // more, but one ordering for both keeps the loop simple and costs
            // nothing on x86.
            match self.hot.word.compare_exchange_weak(w.0, next.0, Ordering::Release, Ordering::Relaxed) {
                Ok(_) if transition => return Some(self.transitioned(w, next)),
                Ok(_) => return None,
                Err(actual) => w = Word(actual),
            }
        }
    }

    #[cold]
    fn transitioned(&self, from: Word, to: Word) -> Transition {
        self.count(Event::Transition);
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
        // Relaxed: manual states read no deadline; the stamp below keeps
        // the slots' tags current.
        let mut w = Word(self.hot.word.load(Ordering::Relaxed));
        loop {
            let next = w.enter_manual(to);
            self.deadlines.stamp(&self.hot.word, w, next, None);
            // Release publishes the stamp to whoever reads next; the rolling
            // window needs none (it starts each Closed generation itself, see
            // `window`).
            match self.hot.word.compare_exchange_weak(w.0, next.0, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return self.transitioned(w, next),
                Err(actual) => w = Word(actual),
            }
        }
    }

    /// Holds the breaker open for `d` from now, whatever its config says:
    /// what a server's backpressure asks for (a 429 or 418 with
    /// `Retry-After`, or a rate-limit reset). Returns the transition it
    /// caused, if any.
    ///
    /// - `d` is capped at the config's [`max_hold`](BreakerConfig::max_hold);
    ///   a longer request is counted in [`Snapshot::capped_holds`].
    /// - While held, the breaker reads [`State::Open`] and refuses every call
    ///   with `retry_after` the time left on the hold; when the hold ends,
    ///   the breaker goes on as after a cool-down: the next call is a
    ///   Half-Open probe, whose success closes it and whose failure re-opens
    ///   it (the re-open count, which grows the cool-down, is kept).
    /// - A hold never shortens a wait: an Open breaker whose cool-down or
    ///   hold ends at least as late is left alone (`None`). A longer one
    ///   starts a new generation (Open → Open).
    /// - A Half-Open breaker is held too: its probes in flight become
    ///   outcomes of an older generation, which change nothing.
    /// - A forced-open or disabled breaker is an operator's decision: a
    ///   hold never changes it (`None`), and a later `force_open`, `disable`
    ///   or `reset` ends a hold.
    /// - A hold of zero changes nothing.
    ///
    /// # Examples
    /// ```
    /// use core::time::Duration;
    /// use tripwire::{Breaker, BreakerConfig, ManualClock, State};
    ///
    /// let clock = ManualClock::new(0);
    /// let breaker = Breaker::new(BreakerConfig::default());
    /// let held = breaker.open_for(Duration::from_secs(2), &clock).expect("a transition");
    /// assert_eq!((held.from, held.to), (State::Closed, State::Open));
    /// assert_eq!(breaker.try_acquire(&clock).unwrap_err().retry_after, Some(Duration::from_secs(2)));
    /// assert_eq!(breaker.hold_left(&clock), Some(Duration::from_secs(2)));
    /// clock.advance(Duration::from_secs(2));
    /// assert!(breaker.try_acquire(&clock).unwrap().is_probe());
    /// ```
    pub fn open_for(&self, d: Duration, clock: &impl Clock) -> Option<Transition> {
        let asked = duration_ns(d);
        if asked == 0 {
            return None;
        }
        let len = asked.min(self.config.max_hold_ns);
        if len < asked {
            self.count(Event::HoldCapped);
        }
        // Time first, then the word (see the module's Orderings).
        let now = clock.now();
        // Acquire: as in `try_acquire`, for the deadline read below.
        let mut w = Word(self.hot.word.load(Ordering::Acquire));
        loop {
            // Does a wait at least as long hold already?
            if w.state() == State::Open && self.deadlines.left(w, now, &self.config).is_some_and(|l| l >= len)
            {
                return None;
            }
            // An operator's manual state?
            let next = state::hold(w)?;
            self.deadlines.stamp(&self.hot.word, w, next, Some(now.wrapping_add(len)));
            // Release publishes the deadline; Acquire on failure, as for the first load.
            match self.hot.word.compare_exchange_weak(w.0, next.0, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(self.transitioned(w, next)),
                Err(actual) => w = Word(actual),
            }
        }
    }

    /// The time left on the hold in place ([`open_for`](Self::open_for)),
    /// if there is one; `None` when the breaker is not held, or the hold has
    /// ended and the next call will be a probe.
    pub fn hold_left(&self, clock: &impl Clock) -> Option<Duration> {
        let now = clock.now();
        // Acquire: as in `try_acquire`, for the deadline read below.
        let w = Word(self.hot.word.load(Ordering::Acquire));
        if !w.held() {
            return None;
        }
        self.deadlines.left(w, now, &self.config).map(Duration::from_nanos)
    }

    /// The time left before the probe `ticket` counts as lost and a new
    /// probe may take its slot ([`probe_timeout`](BreakerConfig::probe_timeout),
    /// from the moment the breaker went Half-Open); `None` for a ticket that
    /// is no probe, once its generation has been left (its outcome changes
    /// nothing now), or when no deadline can be read.
    ///
    /// A caller that runs a probe for a while (retries inside it) stops by
    /// then, so that its probe is never taken over while it runs; the
    /// pipeline and the reqwest middleware do.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use tripwire::{Breaker, BreakerConfig, ManualClock, Outcome};
    ///
    /// let config = BreakerConfig::builder()
    ///     .failure_threshold(1)
    ///     .open_timeout(Duration::from_secs(1))
    ///     .probe_timeout(Duration::from_secs(20))
    ///     .build()?;
    /// let breaker = Breaker::new(config);
    /// let clock = ManualClock::new(0);
    /// let plain = breaker.try_acquire(&clock).expect("closed");
    /// assert_eq!(breaker.probe_left(&plain, &clock), None, "not a probe");
    /// breaker.record(plain, Outcome::Failure, &clock);
    /// clock.advance(Duration::from_secs(1));
    /// let probe = breaker.try_acquire(&clock).expect("the cool-down has passed");
    /// clock.advance(Duration::from_secs(5));
    /// assert_eq!(breaker.probe_left(&probe, &clock), Some(Duration::from_secs(15)));
    /// # Ok::<(), tripwire::ConfigError>(())
    /// ```
    pub fn probe_left(&self, ticket: &Ticket, clock: &impl Clock) -> Option<Duration> {
        if !ticket.is_probe() {
            return None;
        }
        let now = clock.now();
        // Acquire: as in `try_acquire`, for the deadline read below.
        let w = Word(self.hot.word.load(Ordering::Acquire));
        if w.state() != State::HalfOpen || w.generation() != ticket.generation() {
            return None;
        }
        self.deadlines.left(w, now, &self.config).map(Duration::from_nanos)
    }

    /// The time left until an Open breaker lets its next call through as a
    /// probe (the end of its cool-down or of its hold), and whether a hold
    /// sets it (`true`) or a cool-down (`false`); `None` when the breaker is
    /// not Open, or its wait has ended.
    ///
    /// It reads what a refusal's `retry_after` would say, without counting
    /// a refusal and without moving the breaker: for code that tells others
    /// about the breaker (the `tripwire-fleet` crate publishes a trip's wait
    /// with it, and asks for a probe lease before it ends). Unlike
    /// [`hold_left`](Self::hold_left), it sees a cool-down too.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use tripwire::{Breaker, BreakerConfig, ManualClock, Outcome};
    ///
    /// let config = BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_secs(5)).build()?;
    /// let breaker = Breaker::new(config);
    /// let clock = ManualClock::new(0);
    /// assert_eq!(breaker.open_left(&clock), None, "closed");
    /// let ticket = breaker.try_acquire(&clock).expect("closed");
    /// breaker.record(ticket, Outcome::Failure, &clock);
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(breaker.open_left(&clock), Some((Duration::from_secs(4), false)), "a cool-down");
    /// breaker.open_for(Duration::from_secs(30), &clock);
    /// assert_eq!(breaker.open_left(&clock), Some((Duration::from_secs(30), true)), "a hold");
    /// assert_eq!(breaker.snapshot().rejected, 0, "no refusal counted");
    /// # Ok::<(), tripwire::ConfigError>(())
    /// ```
    pub fn open_left(&self, clock: &impl Clock) -> Option<(Duration, bool)> {
        let now = clock.now();
        // Acquire: as in `try_acquire`, for the deadline read below.
        let w = Word(self.hot.word.load(Ordering::Acquire));
        if w.state() != State::Open {
            return None;
        }
        self.deadlines.left(w, now, &self.config).map(|left| (Duration::from_nanos(left), w.held()))
    }
}

/// What attaching to a breaker in memory someone else wrote found wrong.
#[cfg_attr(loom, allow(dead_code, reason = "only shared regions check breakers; loom builds have none"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inconsistent {
    /// The state word does not decode (see `Word::is_valid`).
    Word,
    /// The deadline slots do not fit the state word (see `Deadlines::fit`).
    Deadlines,
}

impl<W: Windows> Breaker<W> {
    /// Checks the state word and the deadline slots of a breaker in memory
    /// someone else wrote, which may be in use meanwhile: the slots are
    /// checked against a word read before and after them, so that a
    /// transition racing the check is never taken for damage.
    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check breakers; loom builds have none"))]
    pub(crate) fn check_consistent(&self) -> Result<(), Inconsistent> {
        // Tries: a region that keeps changing under the check is in use,
        // and its stamps come from this crate's own code.
        for _ in 0..64 {
            // Acquire pairs with the Release CAS of the last transition, so
            // the slots read below are at least as new as its stamps.
            let before = Word(self.hot.word.load(Ordering::Acquire));
            if !before.is_valid() {
                return Err(Inconsistent::Word);
            }
            let fits = self.deadlines.fit(before);
            // Relaxed: only compared with `before`.
            let after = Word(self.hot.word.load(Ordering::Relaxed));
            if before.generation() == after.generation() {
                return if fits { Ok(()) } else { Err(Inconsistent::Deadlines) };
            }
        }
        Ok(())
    }

    /// Whether the hot line carries this layout's stamp and the config's
    /// flags (see `hot`).
    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check breakers; loom builds have none"))]
    pub(crate) fn has_valid_hot_line(&self) -> bool {
        self.hot.fits(self.config.flags)
    }

    /// Whether the rolling window's words decode (see `Window::is_valid`).
    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check windows; loom builds have none"))]
    pub(crate) fn has_valid_window(&self) -> bool {
        self.store.window_is_valid()
    }
}

impl Breaker {
    /// Where the rolling window starts in a breaker (its generation word
    /// first): for tests that corrupt a shared region.
    #[cfg(all(test, not(loom)))]
    pub(crate) const WINDOW_OFFSET: usize = core::mem::offset_of!(Breaker, store) + AnyWindow::WINDOW_OFFSET;
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

#[cfg(test)]
mod tests {
    use core::time::Duration;

    use crate::{Breaker, BreakerConfig, ManualClock, Outcome};

    #[test]
    fn open_left_sees_cool_downs_and_holds_without_counting_a_refusal() {
        let clock = ManualClock::new(0);
        let config = BreakerConfig::builder()
            .failure_threshold(1)
            .open_timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let breaker = Breaker::new(config);
        assert_eq!(breaker.open_left(&clock), None);
        let ticket = breaker.try_acquire(&clock).expect("closed");
        breaker.record(ticket, Outcome::Failure, &clock);
        clock.advance(Duration::from_secs(1));
        assert_eq!(breaker.open_left(&clock), Some((Duration::from_secs(4), false)));
        assert_eq!(breaker.hold_left(&clock), None, "a cool-down is no hold");
        breaker.open_for(Duration::from_secs(9), &clock);
        assert_eq!(breaker.open_left(&clock), Some((Duration::from_secs(9), true)));
        clock.advance(Duration::from_secs(9));
        assert_eq!(breaker.open_left(&clock), None);
        assert_eq!(breaker.snapshot().rejected, 0);
    }
}
