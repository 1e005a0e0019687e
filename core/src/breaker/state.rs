//! The breaker's state word and the pure functions that move it.
//!
//! Every transition of a breaker is one compare-and-swap of a [`Word`]; the
//! functions here compute the next word from the current one and know
//! nothing of atomics, so they are unit-tested without threads.
//!
//! # Bit layout
//!
//! | bits    | field        | in state        | meaning |
//! | ------- | ------------ | --------------- | ------- |
//! | 0..3    | `kind`       | all             | [`State`]: Closed 0, Open 1, Half-Open 2, Forced-Open 3, Disabled 4 |
//! | 3       | `held`       | Open            | the Open is a hold (a server's backpressure): its deadline slot holds the hold's end |
//! | 4..14   | `in_flight`  | Half-Open       | one bit per probe slot whose outcome is still awaited |
//! | 14..18  | `issued`     | Half-Open       | probe slots handed out in this generation (0 to 10); a slot is never handed out twice in one generation |
//! | 18..22  | `passed`     | Half-Open       | successful probes so far (0 to 9) |
//! | 22..32  | `reopens`    | Open, Half-Open | re-opens from Half-Open since the breaker last closed (grows the cool-down); saturates at 1023 |
//! | 16..32  | `failures`   | Closed          | consecutive failures; saturates at 65535 |
//! | 32..64  | `generation` | all             | incremented (wrapping) by every transition |
//!
//! Bits a state does not use are zero ([`Word::is_valid`] checks it).
//!
//! A word is only ever replaced by a CAS whose new value has a different
//! generation (a transition) or the same generation with different counts
//! (a failure counted, a probe slot taken or its outcome recorded), so a
//! ticket's generation tells whether the state it was issued in still
//! holds, and a probe ticket's slot tells whether its outcome is still
//! awaited: recording a probe twice, or a ticket that names no slot in
//! flight, changes nothing.
//!
//! # Bounds
//! - The generation is 32 bits and wraps: a ticket issued exactly 2^32
//!   transitions ago (or a multiple of it) reads as current. At one
//!   transition per microsecond that takes 71 minutes of uninterrupted
//!   flapping while the ticket's call is still in flight; in practice it is
//!   out of reach.
//! - A Half-Open generation hands out at most [`PROBE_SLOTS`] probe slots.
//!   Once they are all handed out and none is in flight (the probes were
//!   ignored, or lost and recorded late), the next call starts a new
//!   Half-Open generation that keeps the successes counted so far; while
//!   some are still in flight, calls wait for them or for the probe
//!   timeout after which lost probes are taken over.

/// The observable state of a breaker.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Calls pass; outcomes are counted.
    Closed = 0,
    /// Calls are rejected until the cool-down has passed.
    Open = 1,
    /// A bounded number of probe calls decide between Closed and Open.
    HalfOpen = 2,
    /// Rejects every call until [`reset`](crate::Breaker::reset): an
    /// operator's decision, never left on its own.
    ForcedOpen = 3,
    /// Permits every call and still counts outcomes, but never trips.
    Disabled = 4,
}

impl State {
    /// Every state, in the order of their discriminants: what an exporter
    /// lists when it writes one series per state.
    ///
    /// # Examples
    /// ```
    /// use tripwire::State;
    /// assert!(State::ALL.iter().enumerate().all(|(i, s)| State::from_u8(i as u8) == Some(*s)));
    /// assert_eq!(State::from_u8(State::ALL.len() as u8), None, "no state is left out");
    /// ```
    pub const ALL: [State; 5] =
        [State::Closed, State::Open, State::HalfOpen, State::ForcedOpen, State::Disabled];

    #[inline]
    /// The state's name in snake case, as exported in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
            State::ForcedOpen => "forced_open",
            State::Disabled => "disabled",
        }
    }

    #[inline]
    /// The state with this discriminant, if there is one.
    pub const fn from_u8(v: u8) -> Option<State> {
        Some(match v {
            0 => State::Closed,
            1 => State::Open,
            2 => State::HalfOpen,
            3 => State::ForcedOpen,
            4 => State::Disabled,
            _ => return None,
        })
    }
}

impl core::fmt::Display for State {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The probe slots of one Half-Open generation, hence the most probes a
/// config may allow in flight at once.
pub(crate) const PROBE_SLOTS: u32 = 10;

pub(crate) const KIND_MASK: u64 = 0b111;
const HELD: u64 = 1 << 3;
const IN_FLIGHT_SHIFT: u32 = 4;
const IN_FLIGHT_MASK: u64 = (1 << PROBE_SLOTS) - 1;
const ISSUED_SHIFT: u32 = 14;
const PASSED_SHIFT: u32 = 18;
const FOUR_BITS: u64 = 0xF;
const REOPENS_SHIFT: u32 = 22;
const REOPENS_MAX: u64 = 0x3FF;
const FAILURES_SHIFT: u32 = 16;
const FAILURES_MAX: u64 = 0xFFFF;
pub(crate) const GEN_SHIFT: u32 = 32;

/// One value of the state word. See the module docs for the layout.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word(pub(crate) u64);

impl core::fmt::Debug for Word {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Word")
            .field("state", &self.state())
            .field("generation", &self.generation())
            .field("held", &self.held())
            .field("failures", &self.failures())
            .field("reopens", &self.reopens())
            .field("in_flight", &format_args!("{:#012b}", self.in_flight()))
            .field("issued", &self.issued())
            .field("passed", &self.passed())
            .finish()
    }
}

impl Word {
    /// A Closed word with zero counts at generation 0.
    pub(crate) const CLOSED: Word = Word(0);

    /// A Closed word with zero counts at `generation`: the word of a healthy
    /// breaker, which a success leaves unchanged.
    #[inline]
    pub(crate) const fn closed_at(generation: u32) -> Word {
        Word((generation as u64) << GEN_SHIFT)
    }

    /// The raw state bits, for fast paths that compare them with one state.
    #[inline]
    pub(crate) fn state_bits(self) -> u64 {
        self.0 & KIND_MASK
    }

    #[inline]
    pub(crate) fn state(self) -> State {
        // An invalid kind can only come from a corrupted shared region,
        // which attaching rejects; treat it as Forced-Open, the safe side.
        State::from_u8((self.0 & KIND_MASK) as u8).unwrap_or(State::ForcedOpen)
    }

    #[inline]
    pub(crate) fn generation(self) -> u32 {
        (self.0 >> GEN_SHIFT) as u32
    }

    /// An Open word whose deadline is a hold's end. (Only Open words have
    /// the bit: this crate writes no other, and attaching rejects them.)
    #[inline]
    pub(crate) fn held(self) -> bool {
        self.0 & HELD != 0
    }

    /// Closed: consecutive failures.
    #[inline]
    pub(crate) fn failures(self) -> u32 {
        if self.state() != State::Closed {
            return 0;
        }
        self.failure_bits()
    }

    /// The failure count's bits, for code that already knows the word is Closed.
    #[inline]
    fn failure_bits(self) -> u32 {
        ((self.0 >> FAILURES_SHIFT) & FAILURES_MAX) as u32
    }

    /// Open and Half-Open: re-opens since the breaker last closed.
    #[inline]
    pub(crate) fn reopens(self) -> u32 {
        if !matches!(self.state(), State::Open | State::HalfOpen) {
            return 0;
        }
        ((self.0 >> REOPENS_SHIFT) & REOPENS_MAX) as u32
    }

    /// Half-Open: the probe slots in flight, one bit each.
    #[inline]
    pub(crate) fn in_flight(self) -> u32 {
        if self.state() != State::HalfOpen {
            return 0;
        }
        ((self.0 >> IN_FLIGHT_SHIFT) & IN_FLIGHT_MASK) as u32
    }

    /// Half-Open: the probe slots handed out in this generation.
    #[inline]
    pub(crate) fn issued(self) -> u32 {
        if self.state() != State::HalfOpen {
            return 0;
        }
        ((self.0 >> ISSUED_SHIFT) & FOUR_BITS) as u32
    }

    /// Half-Open: the successful probes so far.
    #[inline]
    pub(crate) fn passed(self) -> u32 {
        if self.state() != State::HalfOpen {
            return 0;
        }
        ((self.0 >> PASSED_SHIFT) & FOUR_BITS) as u32
    }

    #[inline]
    fn gen_bits(generation: u32) -> u64 {
        u64::from(generation) << GEN_SHIFT
    }

    #[inline]
    fn closed(generation: u32, failures: u32) -> Word {
        Word(Self::gen_bits(generation) | (u64::from(failures).min(FAILURES_MAX) << FAILURES_SHIFT))
    }

    #[inline]
    fn open(generation: u32, reopens: u32, held: bool) -> Word {
        let held = if held { HELD } else { 0 };
        Word(
            Self::gen_bits(generation)
                | (u64::from(reopens).min(REOPENS_MAX) << REOPENS_SHIFT)
                | held
                | State::Open as u64,
        )
    }

    #[inline]
    fn half_open(generation: u32, reopens: u32, in_flight: u32, issued: u32, passed: u32) -> Word {
        debug_assert!(
            u64::from(in_flight) <= IN_FLIGHT_MASK && issued <= PROBE_SLOTS && passed < PROBE_SLOTS
        );
        Word(
            Self::gen_bits(generation)
                | (u64::from(reopens).min(REOPENS_MAX) << REOPENS_SHIFT)
                | ((u64::from(passed) & FOUR_BITS) << PASSED_SHIFT)
                | ((u64::from(issued) & FOUR_BITS) << ISSUED_SHIFT)
                | ((u64::from(in_flight) & IN_FLIGHT_MASK) << IN_FLIGHT_SHIFT)
                | State::HalfOpen as u64,
        )
    }

    /// Forced-Open or Disabled (or Closed with no failures) at `generation`.
    #[inline]
    fn bare(state: State, generation: u32) -> Word {
        Word(Self::gen_bits(generation) | state as u64)
    }

    #[inline]
    fn next_generation(self) -> u32 {
        self.generation().wrapping_add(1)
    }

    /// A manual transition: the next generation in `state`, no counts.
    #[inline]
    pub(crate) fn enter_manual(self, state: State) -> Word {
        Word::bare(state, self.next_generation())
    }

    #[inline]
    /// Whether leaving this word for `next` is a transition (a new generation).
    pub(crate) fn is_transition_to(self, next: Word) -> bool {
        self.generation() != next.generation()
    }

    /// Whether `slot` names a probe slot of this Half-Open word that is in flight.
    #[inline]
    fn awaits(self, slot: Option<u32>) -> bool {
        matches!(slot, Some(s) if s < PROBE_SLOTS && self.in_flight() & (1 << s) != 0)
    }

    /// This Half-Open word with `slot` no longer in flight.
    #[inline]
    fn finished(self, slot: u32, passed: u32) -> Word {
        Word::half_open(
            self.generation(),
            self.reopens(),
            self.in_flight() & !(1 << slot),
            self.issued(),
            passed,
        )
    }
}

/// What the caller of `try_acquire` should be told, before any time is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Permitted with no change to the word (Closed, Disabled).
    Pass,
    /// Permitted as the probe of `slot` if the word can be moved to `next`.
    Probe { next: Word, slot: u32 },
    /// Rejected for good (Forced-Open).
    Refuse,
    /// Depends on the state's deadline: Open waiting for its cool-down or
    /// hold to end, or Half-Open with no probe slot free, waiting for its
    /// probes or for the probe timeout after which lost ones are taken over.
    Wait,
    /// Half-Open with every probe slot handed out and none in flight:
    /// permitted as the first probe of a new Half-Open generation, `next`,
    /// which needs a deadline stamped like any other.
    Renew(Word),
}

#[inline]
/// Admission decided from the word alone.
pub(crate) fn admit(w: Word, half_open_max: u32) -> Admission {
    match w.state() {
        State::Closed | State::Disabled => Admission::Pass,
        State::ForcedOpen => Admission::Refuse,
        State::Open => Admission::Wait,
        State::HalfOpen => {
            let (in_flight, issued) = (w.in_flight(), w.issued());
            // Is there a free probe slot, and one never handed out in this generation?
            if in_flight.count_ones() < half_open_max && issued < PROBE_SLOTS {
                let next = Word::half_open(
                    w.generation(),
                    w.reopens(),
                    in_flight | (1 << issued),
                    issued + 1,
                    w.passed(),
                );
                Admission::Probe { next, slot: issued }
            } else if in_flight == 0 {
                // Every slot handed out, none in flight: a fresh set of slots.
                let next = Word::half_open(w.next_generation(), w.reopens(), 1, 1, w.passed());
                Admission::Renew(next)
            } else {
                Admission::Wait
            }
        }
    }
}

#[inline]
/// Admission once the deadline of the current state has passed: Open
/// (after its cool-down or hold) becomes Half-Open with this caller as the
/// probe of slot 0; a Half-Open whose probes were lost (never recorded) is
/// taken over by a new generation, its successes forgotten. `None` for
/// states without a deadline.
pub(crate) fn after_deadline(w: Word) -> Option<Word> {
    match w.state() {
        State::Open | State::HalfOpen => Some(Word::half_open(w.next_generation(), w.reopens(), 1, 1, 0)),
        _ => None,
    }
}

#[inline]
/// A success recorded with a ticket of generation `ticket_gen`, for the
/// probe slot `slot` if it is a probe's.
pub(crate) fn on_success(
    w: Word,
    ticket_gen: u32,
    slot: Option<u32>,
    half_open_successes: u32,
) -> Option<Word> {
    // Was the ticket issued in the state that still holds?
    if w.generation() != ticket_gen {
        return None;
    }
    match w.state() {
        // Does the success end a run of failures? Nothing to write if not.
        State::Closed if w.failure_bits() > 0 => Some(Word::closed(w.generation(), 0)),
        // Is this probe's outcome still awaited?
        State::HalfOpen if w.awaits(slot) => {
            let passed = w.passed() + 1;
            // Enough successful probes to close?
            if passed >= half_open_successes {
                Some(Word::closed(w.next_generation(), 0))
            } else {
                Some(w.finished(slot?, passed))
            }
        }
        _ => None,
    }
}

#[inline]
/// A failure recorded with a ticket of generation `ticket_gen`. Checks the
/// consecutive threshold of a Closed breaker; window conditions are the
/// caller's.
pub(crate) fn on_failure(
    w: Word,
    ticket_gen: u32,
    slot: Option<u32>,
    failure_threshold: u32,
) -> Option<Word> {
    if w.generation() != ticket_gen {
        return None;
    }
    match w.state() {
        State::Closed => {
            let failures = w.failure_bits() + 1;
            // Is this the failure that reaches the threshold?
            if failure_threshold != 0 && failures >= failure_threshold {
                Some(Word::open(w.next_generation(), 0, false))
            } else {
                Some(Word::closed(w.generation(), failures))
            }
        }
        // A probe failure (one still awaited) re-opens, one step further up the cool-down.
        State::HalfOpen if w.awaits(slot) => {
            Some(Word::open(w.next_generation(), w.reopens().saturating_add(1), false))
        }
        _ => None,
    }
}

#[inline]
/// A Closed breaker tripped by a rate over the rolling window.
pub(crate) fn trip(w: Word, ticket_gen: u32) -> Option<Word> {
    (w.generation() == ticket_gen && w.state() == State::Closed)
        .then(|| Word::open(w.next_generation(), 0, false))
}

#[inline]
/// An ignored outcome: frees the slot of a probe still awaited, nothing else.
pub(crate) fn on_ignored(w: Word, ticket_gen: u32, slot: Option<u32>) -> Option<Word> {
    if w.generation() != ticket_gen || w.state() != State::HalfOpen || !w.awaits(slot) {
        return None;
    }
    Some(w.finished(slot?, w.passed()))
}

#[inline]
/// A hold: the next generation, Open with its deadline a hold's end. Keeps
/// the re-open count of an Open or Half-Open breaker, so that a probe
/// failing after the hold grows the cool-down as it would have; `None` for
/// the manual states, which a hold never overrides.
pub(crate) fn hold(w: Word) -> Option<Word> {
    match w.state() {
        State::Closed | State::Open | State::HalfOpen => {
            Some(Word::open(w.next_generation(), w.reopens(), true))
        }
        State::ForcedOpen | State::Disabled => None,
    }
}

impl Word {
    /// Whether the word decodes: a known kind, and zero in every bit its
    /// state does not use; a Half-Open word's slots in flight among those
    /// handed out. Every word this crate writes passes; a word read from a
    /// shared region written by someone else may not.
    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check words; loom builds have none"))]
    pub(crate) fn is_valid(self) -> bool {
        let low = self.0 & 0xFFFF_FFFF;
        match State::from_u8((self.0 & KIND_MASK) as u8) {
            Some(State::Closed) => low & !(FAILURES_MAX << FAILURES_SHIFT) == 0,
            Some(State::Open) => low & !(REOPENS_MAX << REOPENS_SHIFT | HELD | KIND_MASK) == 0,
            Some(State::HalfOpen) => {
                let issued = ((self.0 >> ISSUED_SHIFT) & FOUR_BITS) as u32;
                let passed = ((self.0 >> PASSED_SHIFT) & FOUR_BITS) as u32;
                let in_flight = (self.0 >> IN_FLIGHT_SHIFT) & IN_FLIGHT_MASK;
                self.0 & HELD == 0
                    && issued <= PROBE_SLOTS
                    && passed < PROBE_SLOTS
                    && in_flight >> issued == 0
            }
            Some(State::ForcedOpen | State::Disabled) => low & !KIND_MASK == 0,
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn half_open(generation: u32, in_flight: u32, issued: u32, passed: u32, reopens: u32) -> Word {
        Word::half_open(generation, reopens, in_flight, issued, passed)
    }

    /// Takes the next probe slot of `w`, or panics.
    fn take(w: Word, max: u32) -> (Word, u32) {
        match admit(w, max) {
            Admission::Probe { next, slot } => (next, slot),
            other => panic!("no probe slot in {w:?}: {other:?}"),
        }
    }

    #[test]
    fn fields_round_trip_through_the_layout() {
        let w = half_open(u32::MAX, 0b10_0000_0001, 10, 9, 1023);
        assert_eq!(
            (w.state(), w.generation(), w.reopens(), w.in_flight(), w.issued(), w.passed(), w.held()),
            (State::HalfOpen, u32::MAX, 1023, 0b10_0000_0001, 10, 9, false)
        );
        let w = Word::open(7, 1023, true);
        assert_eq!((w.state(), w.generation(), w.reopens(), w.held()), (State::Open, 7, 1023, true));
        assert_eq!(Word::open(7, 5000, false).reopens(), 1023, "re-opens saturate");
        let w = Word::closed(3, 65_535);
        assert_eq!((w.state(), w.generation(), w.failures()), (State::Closed, 3, 65_535));
        assert_eq!(Word::closed(0, 70_000).failures(), 65_535, "failures saturate");
        // Fields of other states read as zero.
        assert_eq!((w.reopens(), w.in_flight(), w.held()), (0, 0, false));
    }

    #[test]
    fn invalid_kinds_decode_as_forced_open() {
        assert_eq!(Word(7).state(), State::ForcedOpen);
    }

    #[test]
    fn generation_wraps_instead_of_overflowing() {
        let w = on_failure(Word::closed(u32::MAX, 0), u32::MAX, None, 1).unwrap();
        assert_eq!((w.state(), w.generation()), (State::Open, 0));
    }

    #[test]
    fn closed_counts_failures_then_trips_at_the_threshold() {
        let w = Word::CLOSED;
        let w1 = on_failure(w, 0, None, 3).unwrap();
        assert_eq!((w1.state(), w1.failures(), w1.generation()), (State::Closed, 1, 0));
        let w2 = on_failure(w1, 0, None, 3).unwrap();
        let w3 = on_failure(w2, 0, None, 3).unwrap();
        assert_eq!((w3.state(), w3.reopens(), w3.generation()), (State::Open, 0, 1));
    }

    #[test]
    fn closed_success_writes_only_to_end_a_failure_run() {
        assert_eq!(on_success(Word::CLOSED, 0, None, 1), None);
        let w = on_failure(Word::CLOSED, 0, None, 5).unwrap();
        assert_eq!(on_success(w, 0, None, 1), Some(Word::CLOSED));
    }

    #[test]
    fn outcomes_from_another_generation_change_nothing() {
        let open = Word::open(1, 0, false);
        let closed_again = Word::closed(3, 0);
        for w in [Word::CLOSED, open, half_open(2, 1, 1, 0, 0), closed_again] {
            let stale = w.generation().wrapping_sub(1);
            assert_eq!(on_failure(w, stale, Some(0), 1), None, "{w:?}");
            assert_eq!(on_success(w, stale, Some(0), 1), None, "{w:?}");
            assert_eq!(on_ignored(w, stale, Some(0)), None, "{w:?}");
            assert_eq!(trip(w, stale), None, "{w:?}");
        }
    }

    #[test]
    fn half_open_hands_out_each_slot_once_up_to_the_maximum() {
        let mut w = half_open(4, 0, 0, 0, 0);
        for n in 0..3 {
            let (next, slot) = take(w, 3);
            assert_eq!((slot, next.issued(), next.in_flight().count_ones()), (n, n + 1, n + 1));
            w = next;
        }
        assert_eq!(admit(w, 3), Admission::Wait);
        // A finished probe frees room, and the next probe gets a new slot.
        let w = on_ignored(w, 4, Some(1)).unwrap();
        let (w, slot) = take(w, 3);
        assert_eq!((slot, w.in_flight()), (3, 0b1101));
    }

    #[test]
    fn a_probe_is_recorded_once_whatever_the_caller_records() {
        let (w, p) = take(half_open(4, 0, 0, 0, 0), 1);
        let w = on_ignored(w, 4, Some(p)).unwrap();
        let (w, q) = take(w, 1);
        assert_ne!(p, q);
        // The first probe, recorded again with any outcome: its slot is not in flight.
        assert_eq!(on_ignored(w, 4, Some(p)), None);
        assert_eq!(on_success(w, 4, Some(p), 1), None);
        assert_eq!(on_failure(w, 4, Some(p), 1), None);
        // No slot at all, or one that was never handed out.
        for slot in [None, Some(9), Some(10), Some(u32::MAX)] {
            assert_eq!(on_success(w, 4, slot, 1), None, "{slot:?}");
            assert_eq!(on_failure(w, 4, slot, 1), None, "{slot:?}");
        }
        assert_eq!(admit(w, 1), Admission::Wait, "the second probe still holds the only slot");
    }

    #[test]
    fn a_duplicate_success_counts_once_toward_closing() {
        let (w, p) = take(half_open(4, 0, 0, 0, 0), 2);
        let (w, q) = take(w, 2);
        let w = on_success(w, 4, Some(p), 2).unwrap();
        assert_eq!((w.state(), w.passed()), (State::HalfOpen, 1));
        assert_eq!(on_success(w, 4, Some(p), 2), None);
        let w = on_success(w, 4, Some(q), 2).unwrap();
        assert_eq!((w.state(), w.generation()), (State::Closed, 5));
    }

    #[test]
    fn used_up_slots_renew_the_generation_keeping_the_successes() {
        let mut w = half_open(4, 0, 0, 0, 2);
        for _ in 0..PROBE_SLOTS - 1 {
            let (next, slot) = take(w, 2);
            w = on_ignored(next, 4, Some(slot)).unwrap();
        }
        let (next, slot) = take(w, 2);
        let w = on_success(next, 4, Some(slot), 2).unwrap();
        assert_eq!((w.issued(), w.in_flight(), w.passed()), (PROBE_SLOTS, 0, 1));
        let Admission::Renew(renewed) = admit(w, 2) else { panic!("{:?}", admit(w, 2)) };
        assert_eq!(
            (renewed.state(), renewed.generation(), renewed.in_flight(), renewed.issued()),
            (State::HalfOpen, 5, 1, 1)
        );
        assert_eq!((renewed.passed(), renewed.reopens()), (1, 2), "successes and re-opens carry over");
        // With a probe still in flight, calls wait instead.
        let (busy, _) = take(half_open(4, 0, PROBE_SLOTS - 1, 0, 0), 2);
        assert_eq!(admit(busy, 2), Admission::Wait);
    }

    #[test]
    fn probes_close_after_enough_successes_and_reset_the_cool_down() {
        let w = half_open(7, 0b11, 2, 0, 3);
        let w = on_success(w, 7, Some(0), 2).unwrap();
        assert_eq!((w.state(), w.in_flight(), w.passed()), (State::HalfOpen, 0b10, 1));
        let w = on_success(w, 7, Some(1), 2).unwrap();
        assert_eq!((w.state(), w.generation(), w.failures()), (State::Closed, 8, 0));
    }

    #[test]
    fn a_probe_failure_reopens_one_step_further() {
        let w = on_failure(half_open(7, 1, 1, 0, 3), 7, Some(0), 5).unwrap();
        assert_eq!((w.state(), w.generation(), w.reopens(), w.held()), (State::Open, 8, 4, false));
    }

    #[test]
    fn ignored_frees_a_probe_slot_and_nothing_else() {
        let w = on_ignored(half_open(7, 0b11, 2, 1, 0), 7, Some(1)).unwrap();
        assert_eq!((w.state(), w.generation(), w.in_flight(), w.passed()), (State::HalfOpen, 7, 0b01, 1));
        assert_eq!(on_ignored(Word::CLOSED, 0, None), None);
        assert_eq!(on_ignored(half_open(7, 0, 1, 0, 0), 7, Some(0)), None);
    }

    #[test]
    fn after_the_deadline_open_and_lost_probes_become_a_fresh_half_open() {
        for open in [Word::open(9, 2, false), Word::open(9, 2, true)] {
            let w = after_deadline(open).unwrap();
            assert_eq!(
                (w.state(), w.generation(), w.in_flight(), w.issued(), w.reopens()),
                (State::HalfOpen, 10, 1, 1, 2)
            );
        }
        let stuck = half_open(10, 1, 1, 0, 2);
        let w = after_deadline(stuck).unwrap();
        assert_eq!((w.state(), w.generation(), w.in_flight(), w.passed()), (State::HalfOpen, 11, 1, 0));
        assert_eq!(after_deadline(Word::CLOSED), None);
    }

    #[test]
    fn a_hold_is_an_open_of_the_next_generation_and_leaves_manual_states_alone() {
        let w = hold(Word::closed(3, 2)).unwrap();
        assert_eq!((w.state(), w.held(), w.generation(), w.reopens()), (State::Open, true, 4, 0));
        assert_eq!(hold(half_open(5, 1, 1, 0, 6)).unwrap().reopens(), 6);
        assert_eq!(hold(w).unwrap().generation(), 5, "a longer hold is a new generation");
        assert_eq!(hold(Word::CLOSED.enter_manual(State::ForcedOpen)), None);
        assert_eq!(hold(Word::CLOSED.enter_manual(State::Disabled)), None);
        // Outcomes never move a held Open.
        assert_eq!(on_failure(w, 4, None, 1), None);
        assert_eq!(on_success(w, 4, Some(0), 1), None);
    }

    #[test]
    fn manual_states_ignore_outcomes() {
        for s in [State::ForcedOpen, State::Disabled] {
            let w = Word::CLOSED.enter_manual(s);
            assert_eq!(on_failure(w, 1, None, 1), None);
            assert_eq!(on_success(w, 1, None, 1), None);
        }
        assert_eq!(admit(Word::CLOSED.enter_manual(State::ForcedOpen), 1), Admission::Refuse);
        assert_eq!(admit(Word::CLOSED.enter_manual(State::Disabled), 1), Admission::Pass);
    }
}

#[cfg(test)]
mod validity_tests {
    use super::*;

    #[test]
    fn written_words_are_valid_and_stray_bits_are_not() {
        let written = [
            Word::closed(u32::MAX, 65_535),
            Word::open(u32::MAX, 1023, true),
            Word::open(1, 0, false),
            Word::half_open(u32::MAX, 1023, 0b11_1111_1111, 10, 9),
            Word::half_open(2, 0, 0b101, 3, 1),
            Word::bare(State::ForcedOpen, 9),
            Word::bare(State::Disabled, 9),
        ];
        for w in written {
            assert!(w.is_valid(), "{w:?}");
        }
        let stray = [
            Word(5),
            Word(7),
            Word(0b1000),                                      // held on a Closed word
            Word(0b1010),                                      // held on a Half-Open word
            Word(1 << 4 | State::Open as u64),                 // probe bits on an Open word
            Word(1 << 4 | State::ForcedOpen as u64),           // counts on a manual state
            Word(1 << 4 | State::Closed as u64),               // below the failure count
            Word::half_open(2, 0, 0b100, 2, 0),                // a slot in flight that was never handed out
            Word(11 << ISSUED_SHIFT | State::HalfOpen as u64), // more slots handed out than exist
        ];
        for w in stray {
            assert!(!w.is_valid(), "{w:?}");
        }
    }
}
