//! When an Open or Half-Open generation's wait ends: deadline slots beside
//! the state word, each stamped with the generation it belongs to.
//!
//! An Open generation waits for its cool-down or its hold to end, then lets
//! a probe through; a Half-Open one waits for its probes, and after the
//! probe timeout lets lost ones be taken over. The deadline of generation `g`
//! lives in slot `g & 1` of the array for its state (`open` or
//! `half_open`): a thread moving the breaker to the next generation writes
//! the *other* slot, before the compare-and-swap that publishes the new
//! word, so readers of the current generation never see a deadline meant
//! for the next one, even while that transition is half done.
//!
//! # Slot layout
//!
//! | bits   | field   | meaning |
//! | ------ | ------- | ------- |
//! | 0..55  | `time`  | the deadline in nanoseconds on the breaker's clock, modulo 2^55 |
//! | 55     | `hold`  | 1 if a hold (`open_for`) stamped this deadline, or merged into it |
//! | 56     | `set`   | 1 if a deadline was stamped; 0 for a generation of a state without one |
//! | 57..64 | `tag`   | bits 1..8 of the generation it was stamped for (bit 0 chose the slot) |
//!
//! A transition into Open or Half-Open stamps its generation and deadline
//! into the slot its state reads: a stamp replaces a value of an older
//! generation outright, whatever its time, and one of its own generation
//! too, unless that one is a hold's with a later deadline, which stands
//! (see the races below). A slot no state
//! of the transition reads is stamped without a deadline only once its tag
//! has fallen 32 generations (of its parity) behind, so that no tag is ever
//! old enough to pass for a later generation's. A deadline thus only ever
//! serves the generation it was stamped for: `reset` and every transition
//! into Closed leave the slots harmless, whatever times they hold.
//!
//! # Reading a deadline
//! A reader at `now` takes the time left as `(time − now) mod 2^55`. A
//! deadline counts only if it is set, tagged with the reader's generation,
//! and lies within `(now, now + limit]`, where `limit` is twice the longest
//! wait of that kind the config allows: twice `max_hold` for a held
//! breaker, twice `open_timeout_max` for a cool-down, twice
//! `probe_timeout` for the probes of a Half-Open generation. Anything else has
//! passed: a deadline stamped from a clock that ran ahead of the reader's
//! by more than a wait (an opening time beyond now plus the cool-down),
//! or found in a garbage shared region, never holds the breaker shut, and
//! the next transition replaces it. A clock behind the stamper's by less
//! than a wait adds its lag to the wait.
//!
//! Two transitions racing into one generation stamp one slot, before
//! either knows whose CAS will win: a trip (or a probe's failure) and a
//! hold both stamp the Open slot, two trips too, or two callers admitting
//! the first probe the Half-Open slot. A hold's deadline must survive the
//! others' stamps, since its CAS may win: a later hold stamp stands, and
//! a stamp merged into it keeps the `hold` bit, so a third racer cannot
//! shorten it either. Every other stamp of the generation is replaced by
//! the next: of two racing trips, the cool-down of the last to stamp
//! stands, and a loser retries from the word the winner published (a
//! hold then holds again if the wait it finds is shorter than its own).
//! A stamp for a generation not yet entered that no racer wrote (found in
//! a garbage shared region, say, where `attach` cannot tell it from a
//! racer's) is thus replaced by the transition into that generation
//! unless its `hold` bit is set, whatever its time: it neither skips the
//! cool-down (a time beyond any wait) nor stretches it (one within). A
//! garbage one with the `hold` bit set is taken for a racing hold: it
//! stands when later, bounded by the `limit` as every time is. Two
//! exceptions, both in races: a hold longer than twice `open_timeout_max`
//! merged into a trip's cool-down reads as garbage, so one probe may be
//! let through early, before the hold, retrying, holds the breaker again;
//! and a hold that stamps over a racing trip's later cool-down replaces
//! it, so if the trip's CAS wins, its cool-down is the hold's shorter one.
//!
//! Times are kept modulo 2^55 (1.14 years), so any clock value works,
//! `u64::MAX` and a clock that wraps included. The price: a breaker left
//! untouched for a multiple of 1.14 years, give or take a `limit`, may
//! wait up to one `limit` more before its next probe.
//!
//! # Orderings
//! - A stamp is written before the state word's `Release` CAS that enters
//!   its generation; a reader's `Acquire` load of the word pairs with it
//!   (or with any later change of the word: every change is a
//!   read-modify-write, so the release sequence carries it), and its
//!   `Relaxed` load of the slot then sees that stamp or a later one.
//! - A stamp is written only while the state word is still at the
//!   generation the transition starts from: a thread that loaded the word,
//!   was delayed, and finds the breaker moved on, writes nothing, so a late
//!   thread can neither shorten a wait nor lengthen one with a stale time.
//!   The check loads the word after an `Acquire` load of the slot, and
//!   stamps are `Release`: a thread that sees a later generation's stamp in
//!   the slot also sees the word of that generation (or a later one), so it
//!   knows it is late. Between the check and the CAS on the slot, any other
//!   stamp makes that CAS fail and the check run again.
//! - A stamp's time was read *before* the word the transition rests on was
//!   loaded, so a deadline is never later than a full wait after the
//!   moment its transition happened.

use crate::breaker::config::BreakerConfig;
use crate::breaker::state::{State, Word};
use crate::sync::{AtomicU64, Ordering};

const TIME_BITS: u32 = 55;
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;
/// Differences below this are "later"; above, "earlier" (modulo 2^55).
const HALF_RANGE: u64 = 1 << (TIME_BITS - 1);
const HOLD: u64 = 1 << TIME_BITS;
const SET_SHIFT: u32 = TIME_BITS + 1;
const SET: u64 = 1 << SET_SHIFT;
const TAG_SHIFT: u32 = SET_SHIFT + 1;
const TAG_MASK: u64 = 0x7F;
/// How far behind (in generations of its parity) a slot's tag may fall
/// before a transition refreshes it: well short of the 2^7 that would
/// make it ambiguous.
const REFRESH_STEPS: u64 = 32;

/// One value of a deadline slot. See the module docs for the layout.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp(u64);

impl core::fmt::Debug for Stamp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Stamp")
            .field("tag", &self.tag())
            .field("time", &self.time())
            .field("hold", &self.is_hold())
            .finish()
    }
}

#[inline]
fn tag_of(generation: u32) -> u64 {
    u64::from(generation >> 1) & TAG_MASK
}

impl Stamp {
    /// A stamp for `generation`, with a deadline or without, not a hold's.
    #[inline]
    pub(crate) fn new(generation: u32, deadline: Option<u64>) -> Stamp {
        Stamp::of(generation, deadline, false)
    }

    /// A stamp for `generation`, with a deadline or without, and whether
    /// a hold set it (ignored without a deadline).
    #[inline]
    pub(crate) fn of(generation: u32, deadline: Option<u64>, hold: bool) -> Stamp {
        let time = deadline.map_or(0, |t| SET | if hold { HOLD } else { 0 } | (t & TIME_MASK));
        Stamp((tag_of(generation) << TAG_SHIFT) | time)
    }

    /// The slot's bits, for tests that write them into a shared region.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn raw(self) -> u64 {
        self.0
    }

    #[inline]
    fn tag(self) -> u64 {
        self.0 >> TAG_SHIFT
    }

    #[inline]
    fn time(self) -> Option<u64> {
        (self.0 & SET != 0).then_some(self.0 & TIME_MASK)
    }

    /// Whether a hold stamped this deadline (or was merged into it).
    #[inline]
    fn is_hold(self) -> bool {
        self.0 & (SET | HOLD) == SET | HOLD
    }

    /// How many generations of the slot's parity this stamp's is behind
    /// `generation` (modulo 2^7; a later generation's reads as far behind).
    #[inline]
    fn steps_behind(self, generation: u32) -> u64 {
        tag_of(generation).wrapping_sub(self.tag()) & TAG_MASK
    }

    /// Whether this stamp was made for `generation`.
    #[inline]
    pub(crate) fn is_for(self, generation: u32) -> bool {
        self.tag() == tag_of(generation)
    }

    /// The stamp to write when `generation` is stamped with `deadline`
    /// (by a hold or not) over this one; `None` if this one already says
    /// as much.
    #[inline]
    fn merged(self, generation: u32, deadline: Option<u64>, hold: bool) -> Option<Stamp> {
        let new = Stamp::of(generation, deadline, hold);
        // An older generation's stamp is replaced, whatever its time.
        if !self.is_for(generation) {
            return Some(new);
        }
        let next = match (self.time(), new.time()) {
            (_, None) => return None,
            // A racing hold's stamp: the later deadline stands, still a hold's.
            (Some(old), Some(t)) if self.is_hold() => {
                Stamp::of(generation, Some(if is_later(t, old) { t } else { old }), true)
            }
            // Any other stamp of this generation (a racer's that is no
            // hold, or garbage) is replaced.
            (_, Some(_)) => new,
        };
        (next != self).then_some(next)
    }

    /// The time left until the deadline of `generation`, read at `now`, if
    /// it lies within `(now, now + limit]`; `None` if it has passed, or if
    /// this slot holds no deadline of that generation.
    #[inline]
    pub(crate) fn left(self, generation: u32, now: u64, limit: u64) -> Option<u64> {
        // Set, and stamped for this generation? (One compare of the top byte.)
        if self.0 >> SET_SHIFT != (tag_of(generation) << 1) | 1 {
            return None;
        }
        let left = self.0.wrapping_sub(now) & TIME_MASK;
        // Within (0, limit]? (`left - 1` wraps for 0.)
        (left.wrapping_sub(1) < limit).then_some(left)
    }
}

/// Whether deadline `a` is later than `b`, modulo 2^55.
#[inline]
fn is_later(a: u64, b: u64) -> bool {
    let d = a.wrapping_sub(b) & TIME_MASK;
    d != 0 && d < HALF_RANGE
}

/// The deadline slots of one breaker.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Deadlines {
    /// Open generations: when a probe may go (the cool-down's or the hold's end).
    open: [AtomicU64; 2],
    /// Half-Open generations: when probes still in flight count as lost.
    half_open: [AtomicU64; 2],
}

impl Deadlines {
    /// Slots for a breaker at generation 0 (none stamped, tags fresh).
    pub(crate) fn new() -> Self {
        let fresh = || [AtomicU64::new(Stamp::new(0, None).0), AtomicU64::new(Stamp::new(u32::MAX, None).0)];
        Self { open: fresh(), half_open: fresh() }
    }

    #[inline]
    fn slot(array: &[AtomicU64; 2], generation: u32) -> &AtomicU64 {
        &array[(generation & 1) as usize]
    }

    /// The slot `w`'s deadline lives in, if its state has one.
    #[inline]
    fn of(&self, w: Word) -> Option<&AtomicU64> {
        match w.state() {
            State::Open => Some(Self::slot(&self.open, w.generation())),
            State::HalfOpen => Some(Self::slot(&self.half_open, w.generation())),
            _ => None,
        }
    }

    /// The time left until `w`'s deadline at `now` (see the module docs for
    /// what counts); `None` once it has passed.
    #[inline]
    pub(crate) fn left(&self, w: Word, now: u64, cfg: &BreakerConfig) -> Option<u64> {
        let limit = if w.held() {
            cfg.hold_limit_ns()
        } else if w.state() == State::HalfOpen {
            cfg.probe_limit_ns()
        } else {
            cfg.wait_limit_ns()
        };
        // (A hold's end or a cool-down's; see the module docs.)
        // Relaxed: the caller's Acquire load of the word ordered it (see the module's Orderings).
        let stamp = Stamp(self.of(w)?.load(Ordering::Relaxed));
        stamp.left(w.generation(), now, limit)
    }

    /// [`left`](Self::left) for a word known to be Open.
    #[inline(always)]
    pub(crate) fn open_left(&self, w: Word, now: u64, cfg: &BreakerConfig) -> Option<u64> {
        debug_assert_eq!(w.state(), State::Open);
        let limit = if w.held() { cfg.hold_limit_ns() } else { cfg.wait_limit_ns() };
        // Relaxed: as in `left`.
        let stamp = Stamp(Self::slot(&self.open, w.generation()).load(Ordering::Relaxed));
        stamp.left(w.generation(), now, limit)
    }

    /// Stamps `to`'s generation, with `deadline` in the slot its state
    /// reads, before the CAS from `from` to `to`. Writes nothing once the
    /// word has left `from`'s generation.
    #[inline]
    pub(crate) fn stamp(&self, word: &AtomicU64, from: Word, to: Word, deadline: Option<u64>) {
        let generation = to.generation();
        for (array, state) in [(&self.open, State::Open), (&self.half_open, State::HalfOpen)] {
            let slot = Self::slot(array, generation);
            if to.state() == state {
                Self::stamp_one(slot, word, from, generation, deadline, to.held());
            } else {
                Self::refresh(slot, word, from, generation);
            }
        }
    }

    /// Keeps the tag of a slot the state entered does not read within
    /// [`REFRESH_STEPS`] of the generation, stamping it without a deadline
    /// only when it has fallen that far behind: a slot's tag is then never
    /// so old that it could pass for a later generation's.
    #[inline]
    fn refresh(slot: &AtomicU64, word: &AtomicU64, from: Word, generation: u32) {
        // Relaxed: a hint; whatever it reads, `stamp_one` decides anew.
        let stamp = Stamp(slot.load(Ordering::Relaxed));
        if stamp.steps_behind(generation) < REFRESH_STEPS {
            return;
        }
        Self::stamp_one(slot, word, from, generation, None, false);
    }

    fn stamp_one(
        slot: &AtomicU64,
        word: &AtomicU64,
        from: Word,
        generation: u32,
        deadline: Option<u64>,
        hold: bool,
    ) {
        // Acquire pairs with the Release stamp of a later generation, so
        // the word load below sees that generation too (see the module's
        // Orderings).
        let mut current = slot.load(Ordering::Acquire);
        loop {
            // Has the breaker left the generation this transition starts from?
            // Relaxed: ordered after the Acquire load of the slot above.
            if Word(word.load(Ordering::Relaxed)).generation() != from.generation() {
                return;
            }
            // Does the slot already say as much?
            let Some(next) = Stamp(current).merged(generation, deadline, hold) else { return };
            // Release pairs with the Acquire loads of later stampers;
            // Acquire on failure, as for the first load.
            match slot.compare_exchange_weak(current, next.0, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }

    /// Whether the slots are stamped as a breaker at `w` can have left
    /// them: the slot `w`'s state reads tagged with its generation and
    /// holding a deadline, every other slot tagged within
    /// [`REFRESH_STEPS`] of the latest generation that may have stamped it
    /// (`w`'s own, or the next one for a racer that lost its CAS). Checked
    /// when attaching to a breaker in memory someone else wrote.
    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check slots; loom builds have none"))]
    pub(crate) fn fit(&self, w: Word) -> bool {
        let g = w.generation();
        [(&self.open, State::Open), (&self.half_open, State::HalfOpen)].into_iter().all(|(array, state)| {
            [g, g.wrapping_add(1)].into_iter().all(|latest| {
                // Acquire pairs with the Release stamps: a stamp of a later
                // generation seen here means the caller's second load of the
                // word sees that generation too, and the check is retried.
                let stamp = Stamp(Self::slot(array, latest).load(Ordering::Acquire));
                if latest == g && w.state() == state {
                    stamp.is_for(g) && stamp.time().is_some()
                } else {
                    stamp.steps_behind(latest) <= REFRESH_STEPS
                }
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_generations_stamp_is_replaced_whatever_its_time() {
        let old = Stamp::new(3, Some(u64::MAX));
        assert_eq!(old.merged(5, Some(10), false), Some(Stamp::new(5, Some(10))));
        assert_eq!(old.merged(5, None, false), Some(Stamp::new(5, None)));
        let old_hold = Stamp::of(3, Some(u64::MAX), true);
        assert_eq!(old_hold.merged(5, Some(10), false), Some(Stamp::new(5, Some(10))));
    }

    #[test]
    fn racers_into_one_generation_keep_a_holds_later_deadline() {
        let h = Stamp::of(5, Some(1_000), true);
        assert_eq!(h.merged(5, Some(900), false), None);
        assert_eq!(h.merged(5, Some(900), true), None);
        assert_eq!(h.merged(5, Some(1_100), false), Some(Stamp::of(5, Some(1_100), true)), "still a hold's");
        assert_eq!(h.merged(5, Some(1_100), true), Some(Stamp::of(5, Some(1_100), true)));
        assert_eq!(h.merged(5, None, false), None, "a stamp without deadline never clears one");
        assert_eq!(Stamp::new(5, None).merged(5, Some(7), false), Some(Stamp::new(5, Some(7))));
        // Later modulo 2^55: a deadline just past the wrap is later than one just before it.
        assert_eq!(
            Stamp::of(5, Some(TIME_MASK), true).merged(5, Some(3), false),
            Some(Stamp::of(5, Some(3), true))
        );
    }

    #[test]
    fn any_other_stamp_of_the_generation_is_replaced_whatever_its_time() {
        let s = Stamp::new(5, Some(1_000));
        assert_eq!(s.merged(5, Some(900), false), Some(Stamp::new(5, Some(900))));
        assert_eq!(s.merged(5, Some(900), true), Some(Stamp::of(5, Some(900), true)));
        assert_eq!(s.merged(5, Some(1_100), false), Some(Stamp::new(5, Some(1_100))));
        assert_eq!(s.merged(5, Some(1_000), false), None, "the same stamp");
        assert_eq!(s.merged(5, None, false), None, "a stamp without deadline never clears one");
        // The bits of a garbage region: set, tag 0 (generations 0 and 1), 30 ms ahead.
        let garbage = Stamp((1 << 56) | 1_030_000_000);
        assert!(garbage.is_for(1) && !garbage.is_hold());
        assert_eq!(garbage.merged(1, Some(1_010_000_000), false), Some(Stamp::new(1, Some(1_010_000_000))));
    }

    #[test]
    fn time_left_counts_only_within_the_limit_and_for_its_generation() {
        let s = Stamp::new(6, Some(1_000));
        assert_eq!(s.left(6, 400, 10_000), Some(600));
        assert_eq!(s.left(6, 1_000, 10_000), None, "due");
        assert_eq!(s.left(6, 1_001, 10_000), None, "passed");
        assert_eq!(s.left(6, 400, 599), None, "further away than any wait: garbage, passed");
        assert_eq!(s.left(6, 400, 600), Some(600));
        assert_eq!(s.left(8, 400, 10_000), None, "another generation's");
        assert_eq!(
            s.left(7, 400, 10_000),
            Some(600),
            "7 shares the tag of 6: the slot index tells them apart"
        );
        assert_eq!(Stamp::new(6, None).left(6, 0, u64::MAX), None);
    }

    #[test]
    fn any_clock_value_works_modulo_2_55() {
        for now in [0, 1, u64::MAX - 5, u64::MAX, 1 << 56, (1 << 56) - 1, 1 << 55, (1 << 55) - 1] {
            let s = Stamp::new(0, Some(now.wrapping_add(500)));
            assert_eq!(s.left(0, now, 1_000), Some(500), "at {now}");
            assert_eq!(s.left(0, now.wrapping_add(499), 1_000), Some(1), "at {now}");
            assert_eq!(s.left(0, now.wrapping_add(500), 1_000), None, "at {now}");
            assert_eq!(s.left(0, now.wrapping_add(1 << 40), 1_000), None, "long after, at {now}");
            let h = Stamp::of(0, Some(now.wrapping_add(500)), true);
            assert_eq!(h.left(0, now, 1_000), Some(500), "a hold's, at {now}");
        }
    }
}
