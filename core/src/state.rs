//! The breaker's state word and the pure functions that move it.
//!
//! Every transition of a breaker is one compare-and-swap of a [`Word`]; the
//! functions here compute the next word from the current one and know
//! nothing of atomics, so they are unit-tested without threads.
//!
//! # Bit layout
//!
//! | bits    | field      | meaning |
//! | ------- | ---------- | ------- |
//! | 0..3    | `kind`     | [`State`]: Closed 0, Open 1, Half-Open 2, Forced-Open 3, Disabled 4 |
//! | 3       | —          | reserved, always 0 |
//! | 4..10   | `probes`   | Half-Open: probes in flight (≤ 63) |
//! | 10..16  | `passed`   | Half-Open: successful probes so far (≤ 63) |
//! | 16..32  | `count`    | Closed: consecutive failures; Open and Half-Open: re-opens since the breaker last closed (grows the cool-down); saturates at 65535 |
//! | 32..64  | `generation` | incremented (wrapping) by every transition |
//!
//! A word is only ever replaced by a CAS whose new value has a different
//! generation (a transition) or the same generation with different counts
//! (a failure counted, a probe admitted or finished), so a ticket's
//! generation tells exactly whether the state it was issued in still holds.

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

const KIND_MASK: u64 = 0b111;
const PROBES_SHIFT: u32 = 4;
const PASSED_SHIFT: u32 = 10;
const SIX_BITS: u64 = 0x3F;
const COUNT_SHIFT: u32 = 16;
const COUNT_MAX: u64 = 0xFFFF;
const GEN_SHIFT: u32 = 32;

/// One value of the state word. See the module docs for the layout.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word(pub(crate) u64);

impl core::fmt::Debug for Word {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Word")
            .field("state", &self.state())
            .field("generation", &self.generation())
            .field("count", &self.count())
            .field("probes", &self.probes())
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

    #[inline]
    pub(crate) fn count(self) -> u32 {
        ((self.0 >> COUNT_SHIFT) & COUNT_MAX) as u32
    }

    #[inline]
    pub(crate) fn probes(self) -> u32 {
        ((self.0 >> PROBES_SHIFT) & SIX_BITS) as u32
    }

    #[inline]
    pub(crate) fn passed(self) -> u32 {
        ((self.0 >> PASSED_SHIFT) & SIX_BITS) as u32
    }

    #[inline]
    fn pack(state: State, generation: u32, count: u32, probes: u32, passed: u32) -> Word {
        debug_assert!(u64::from(probes) <= SIX_BITS && u64::from(passed) <= SIX_BITS);
        Word(
            (u64::from(generation) << GEN_SHIFT)
                | (u64::from(count).min(COUNT_MAX) << COUNT_SHIFT)
                | (u64::from(passed) << PASSED_SHIFT)
                | (u64::from(probes) << PROBES_SHIFT)
                | state as u64,
        )
    }

    #[inline]
    /// The same generation with the counts replaced.
    fn with_counts(self, count: u32, probes: u32, passed: u32) -> Word {
        Word::pack(self.state(), self.generation(), count, probes, passed)
    }

    #[inline]
    /// A transition: the next generation, in `state`, with the given re-open
    /// count and no probes.
    pub(crate) fn enter(self, state: State, count: u32) -> Word {
        Word::pack(state, self.generation().wrapping_add(1), count, 0, 0)
    }

    #[inline]
    /// Whether leaving this word for `next` is a transition (a new generation).
    pub(crate) fn is_transition_to(self, next: Word) -> bool {
        self.generation() != next.generation()
    }
}

/// What the caller of `try_acquire` should be told, before any time is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Permitted with no change to the word (Closed, Disabled).
    Pass,
    /// Permitted as a probe if the word can be moved to this one.
    Probe(Word),
    /// Rejected for good (Forced-Open).
    Refuse,
    /// Depends on how long the current state has lasted: Open waiting for
    /// its cool-down, or Half-Open with every probe slot taken.
    NeedsTime,
}

#[inline]
/// Admission decided from the word alone.
pub(crate) fn admit(w: Word, half_open_max: u32) -> Admission {
    match w.state() {
        State::Closed | State::Disabled => Admission::Pass,
        State::ForcedOpen => Admission::Refuse,
        State::Open => Admission::NeedsTime,
        // Is there a free probe slot?
        State::HalfOpen if w.probes() < half_open_max => {
            Admission::Probe(w.with_counts(w.count(), w.probes() + 1, w.passed()))
        }
        State::HalfOpen => Admission::NeedsTime,
    }
}

#[inline]
/// Admission once the cool-down of the current state has passed: Open
/// becomes Half-Open with this caller as its first probe; a Half-Open whose
/// probes were all lost (never recorded) is taken over by a new generation.
/// `None` for states that need no time.
pub(crate) fn admit_after_cooldown(w: Word) -> Option<Word> {
    match w.state() {
        State::Open | State::HalfOpen => {
            let next = w.enter(State::HalfOpen, w.count());
            Some(next.with_counts(next.count(), 1, 0))
        }
        _ => None,
    }
}

#[inline]
/// A success recorded with a ticket of generation `ticket_gen`.
pub(crate) fn on_success(w: Word, ticket_gen: u32, half_open_successes: u32) -> Option<Word> {
    // Was the ticket issued in the state that still holds?
    if w.generation() != ticket_gen {
        return None;
    }
    match w.state() {
        // Does the success end a run of failures? Nothing to write if not.
        State::Closed if w.count() > 0 => Some(w.with_counts(0, 0, 0)),
        State::HalfOpen => {
            let passed = w.passed() + 1;
            // Enough successful probes to close?
            if passed >= half_open_successes {
                Some(w.enter(State::Closed, 0))
            } else {
                Some(w.with_counts(w.count(), w.probes().saturating_sub(1), passed))
            }
        }
        _ => None,
    }
}

#[inline]
/// A failure recorded with a ticket of generation `ticket_gen`.
/// `trips_closed` says whether a Closed breaker should trip on it (the
/// consecutive threshold is checked here; window conditions are the caller's).
pub(crate) fn on_failure(w: Word, ticket_gen: u32, failure_threshold: u32) -> Option<Word> {
    if w.generation() != ticket_gen {
        return None;
    }
    match w.state() {
        State::Closed => {
            let failures = w.count() + 1;
            // Is this the failure that reaches the threshold?
            if failure_threshold != 0 && failures >= failure_threshold {
                Some(w.enter(State::Open, 0))
            } else {
                Some(w.with_counts(failures, 0, 0))
            }
        }
        // Any probe failure re-opens, one step further up the cool-down.
        State::HalfOpen => Some(w.enter(State::Open, w.count().saturating_add(1))),
        _ => None,
    }
}

#[inline]
/// A Closed breaker tripped by a rate over the rolling window.
pub(crate) fn trip(w: Word, ticket_gen: u32) -> Option<Word> {
    (w.generation() == ticket_gen && w.state() == State::Closed).then(|| w.enter(State::Open, 0))
}

#[inline]
/// An ignored outcome: frees the probe slot of a Half-Open ticket, nothing else.
pub(crate) fn on_ignored(w: Word, ticket_gen: u32) -> Option<Word> {
    if w.generation() != ticket_gen || w.state() != State::HalfOpen || w.probes() == 0 {
        return None;
    }
    Some(w.with_counts(w.count(), w.probes() - 1, w.passed()))
}

impl Word {
    /// Whether the word decodes: a known kind and the reserved bit clear.
    /// Every word this crate writes passes; a word read from a shared
    /// region written by someone else may not.
    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check words; loom builds have none"))]
    pub(crate) fn is_valid(self) -> bool {
        const RESERVED_BIT: u64 = 1 << 3;
        State::from_u8((self.0 & KIND_MASK) as u8).is_some() && self.0 & RESERVED_BIT == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn half_open(generation: u32, probes: u32, passed: u32, reopens: u32) -> Word {
        Word::pack(State::HalfOpen, generation, reopens, probes, passed)
    }

    #[test]
    fn fields_round_trip_through_the_layout() {
        let w = Word::pack(State::HalfOpen, u32::MAX, 0xFFFF, 63, 62);
        assert_eq!(
            (w.state(), w.generation(), w.count(), w.probes(), w.passed()),
            (State::HalfOpen, u32::MAX, 0xFFFF, 63, 62)
        );
        assert_eq!(Word::pack(State::Closed, 0, 70_000, 0, 0).count(), 0xFFFF, "count saturates");
    }

    #[test]
    fn invalid_kinds_decode_as_forced_open() {
        assert_eq!(Word(7).state(), State::ForcedOpen);
    }

    #[test]
    fn generation_wraps_instead_of_overflowing() {
        let w = Word::pack(State::Closed, u32::MAX, 0, 0, 0).enter(State::Open, 0);
        assert_eq!(w.generation(), 0);
    }

    #[test]
    fn closed_counts_failures_then_trips_at_the_threshold() {
        let w = Word::CLOSED;
        let w1 = on_failure(w, 0, 3).unwrap();
        assert_eq!((w1.state(), w1.count(), w1.generation()), (State::Closed, 1, 0));
        let w2 = on_failure(w1, 0, 3).unwrap();
        let w3 = on_failure(w2, 0, 3).unwrap();
        assert_eq!((w3.state(), w3.count(), w3.generation()), (State::Open, 0, 1));
    }

    #[test]
    fn closed_success_writes_only_to_end_a_failure_run() {
        assert_eq!(on_success(Word::CLOSED, 0, 1), None);
        let w = on_failure(Word::CLOSED, 0, 5).unwrap();
        assert_eq!(on_success(w, 0, 1), Some(Word::CLOSED));
    }

    #[test]
    fn outcomes_from_another_generation_change_nothing() {
        let open = Word::CLOSED.enter(State::Open, 0);
        let closed_again = half_open(2, 1, 0, 0).enter(State::Closed, 0);
        for w in [Word::CLOSED, open, half_open(2, 1, 0, 0), closed_again] {
            let stale = w.generation().wrapping_sub(1);
            assert_eq!(on_failure(w, stale, 1), None, "{w:?}");
            assert_eq!(on_success(w, stale, 1), None, "{w:?}");
            assert_eq!(on_ignored(w, stale), None, "{w:?}");
            assert_eq!(trip(w, stale), None, "{w:?}");
        }
    }

    #[test]
    fn half_open_admits_up_to_the_maximum_then_needs_time() {
        let mut w = half_open(4, 0, 0, 0);
        for n in 1..=3 {
            match admit(w, 3) {
                Admission::Probe(next) => w = next,
                other => panic!("probe {n} refused: {other:?}"),
            }
            assert_eq!(w.probes(), n);
        }
        assert_eq!(admit(w, 3), Admission::NeedsTime);
    }

    #[test]
    fn probes_close_after_enough_successes_and_reset_the_cool_down() {
        let w = half_open(7, 2, 0, 3);
        let w = on_success(w, 7, 2).unwrap();
        assert_eq!((w.state(), w.probes(), w.passed()), (State::HalfOpen, 1, 1));
        let w = on_success(w, 7, 2).unwrap();
        assert_eq!((w.state(), w.generation(), w.count()), (State::Closed, 8, 0));
    }

    #[test]
    fn a_probe_failure_reopens_one_step_further() {
        let w = on_failure(half_open(7, 1, 0, 3), 7, 5).unwrap();
        assert_eq!((w.state(), w.generation(), w.count()), (State::Open, 8, 4));
    }

    #[test]
    fn ignored_frees_a_probe_slot_and_nothing_else() {
        let w = on_ignored(half_open(7, 2, 1, 0), 7).unwrap();
        assert_eq!((w.state(), w.generation(), w.probes(), w.passed()), (State::HalfOpen, 7, 1, 1));
        assert_eq!(on_ignored(Word::CLOSED, 0), None);
        assert_eq!(on_ignored(half_open(7, 0, 0, 0), 7), None);
    }

    #[test]
    fn after_the_cool_down_open_and_lost_probes_become_a_fresh_half_open() {
        let open = Word::pack(State::Open, 9, 2, 0, 0);
        let w = admit_after_cooldown(open).unwrap();
        assert_eq!((w.state(), w.generation(), w.probes(), w.count()), (State::HalfOpen, 10, 1, 2));
        let stuck = half_open(10, 1, 0, 2);
        let w = admit_after_cooldown(stuck).unwrap();
        assert_eq!((w.state(), w.generation(), w.probes(), w.passed()), (State::HalfOpen, 11, 1, 0));
        assert_eq!(admit_after_cooldown(Word::CLOSED), None);
    }

    #[test]
    fn manual_states_ignore_outcomes() {
        for s in [State::ForcedOpen, State::Disabled] {
            let w = Word::CLOSED.enter(s, 0);
            assert_eq!(on_failure(w, 1, 1), None);
            assert_eq!(on_success(w, 1, 1), None);
        }
        assert_eq!(admit(Word::CLOSED.enter(State::ForcedOpen, 0), 1), Admission::Refuse);
        assert_eq!(admit(Word::CLOSED.enter(State::Disabled, 0), 1), Admission::Pass);
    }
}

#[cfg(test)]
mod validity_tests {
    use super::*;

    #[test]
    fn written_words_are_valid_and_bad_kinds_or_the_reserved_bit_are_not() {
        for s in [State::Closed, State::Open, State::HalfOpen, State::ForcedOpen, State::Disabled] {
            assert!(Word::pack(s, u32::MAX, 0xFFFF, 63, 63).is_valid(), "{s:?}");
        }
        assert!(!Word(5).is_valid());
        assert!(!Word(7).is_valid());
        assert!(!Word(0b1000).is_valid());
    }
}
