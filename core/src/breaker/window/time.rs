//! The time-based window: the calls of the last `buckets` epochs.
//!
//! Time is cut into epochs of one bucket width (see
//! [`BreakerConfig::epoch`](crate::BreakerConfig): a multiply, no
//! division); epoch `e` counts in slot `e % SLOTS` of a ring of [`SLOTS`]
//! (32) slots, whatever the number of buckets. A slot holds three words:
//! successes (one per stripe, so that threads recording at once write
//! different cache lines), failures and slow calls. Successes and failures
//! are counted apart, so a success is one CAS on its stripe's word; the
//! calls of an epoch are its successes plus its failures.
//!
//! # Which epoch a slot holds
//! Bucket words carry no epoch tag. The control word holds the latest
//! epoch `E` in full, and the window keeps this invariant: *whenever the
//! control word shows no clear pending, each slot holds the counts of the
//! one epoch of `(E − SLOTS, E]` that falls in it, or nothing.* So a slot's
//! epoch follows from `E` and its index, and no clock value or idle time
//! can make an old count look current: there is no tag to alias.
//!
//! The invariant is kept by moving `E` forward in one CAS that also records
//! how many slots it passed over (`pending`); the slots of the epochs
//! `(E_old, E_new]` then held epochs that have left the window (at least
//! `SLOTS` back), and are cleared before anything else happens: while
//! `pending` is set, every caller helps clear them, then one CAS marks the
//! control word clean. Nobody adds to a bucket while a clear is pending. A
//! jump of `SLOTS` epochs or more (an idle hour, a day, 2^k epochs for any
//! k) clears every slot.
//!
//! # Bit layouts
//!
//! Control word:
//!
//! | bits    | field     | meaning |
//! | ------- | --------- | ------- |
//! | 0..45   | `epoch`   | `E`, the latest epoch counted since the window started (epochs of a `u64` clock stay below 2^45) |
//! | 45..51  | `pending` | slots still to clear back from `E`: 0 (clean) to `SLOTS` (all); 63 with `E` = 0: nothing counted yet (a new breaker) |
//! | 51..64  | —         | reserved, 0 |
//!
//! Bucket word (successes, failures or slow calls):
//!
//! | bits    | field     | meaning |
//! | ------- | --------- | ------- |
//! | 0..51   | `count`   | outcomes in the slot's epoch, saturating at 2^51 − 1 |
//! | 51..64  | `version` | incremented (wrapping) by every clear of the word |
//!
//! A new breaker's window has counted nothing and every word is zero: its
//! first epoch is set without a clear.
//!
//! # Late outcomes
//! A thread may read its clock, then record after others have moved `E`
//! on. It loads its bucket word, then the control word, and adds with a CAS
//! against the bucket word it loaded:
//! - If its epoch has left the window (`E − epoch ≥ buckets`), it stays
//!   out.
//! - Otherwise the slot is still its epoch's (the invariant: an epoch in
//!   the window lies in `(E − SLOTS, E]`), and the CAS adds to it, or fails
//!   because a clear emptied the word after it was loaded (a clear always
//!   changes the word: it bumps the version), and the retry sees the new
//!   `E`. If the bucket word it loaded was already emptied by a clear, the
//!   control word loaded after it shows that clear's `E`.
//!
//! The inline success path takes its slot from a first load of the control
//! word instead of from its epoch, and counts only if the control word
//! loaded after the bucket word is that same value, clean, at its epoch:
//! the same two loads in the same order, so the same argument.
//!
//! So a late outcome never lands in a newer epoch's counts, never brings an
//! old count back, and never wipes a newer one. The version is 13 bits: the
//! CAS of a thread that stalls between its loads and its CAS could only
//! succeed wrongly if that very word were cleared a multiple of 8192 times
//! during the stall and came back to the same count.
//!
//! # A new generation
//! [`restart`](TimeWindow::restart) sets `E` to 0 with every slot pending:
//! the first outcome of the generation then clears the ring (and, while
//! every slot is pending, may move `E` to its own epoch first, so the ring
//! is cleared once). A timestamp from the future thus moves the window on
//! only until the breaker next closes.
//!
//! # Saturation
//! A count saturates at 2^51 − 1 per epoch and stripe: 26 days of one
//! outcome per nanosecond into one bucket (possible only on a clock that
//! stands still). Below that no count is dropped, so rates are exact.
//!
//! # Orderings
//! See [the window's](super); every access here is `SeqCst`.

use crossbeam_utils::CachePadded;

use super::{Gen, Successes, Totals};
use crate::breaker::config::MAX_BUCKETS;
use crate::breaker::counters::stripe;
use crate::sync::{AtomicU64, Ordering};

/// Ring positions: a power of two, at least [`MAX_BUCKETS`].
const SLOTS: usize = MAX_BUCKETS as usize;
const _: () = assert!(SLOTS.is_power_of_two());

#[cfg(not(loom))]
const STRIPES: usize = 4;
#[cfg(loom)]
const STRIPES: usize = 1;

const EPOCH_BITS: u32 = 45;
const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;
const PENDING_SHIFT: u32 = 45;
const PENDING_MASK: u64 = 0x3F;
const _: () = assert!(SLOTS as u64 <= PENDING_MASK);

/// The control word of a window that has counted nothing yet.
const UNSTARTED: u64 = PENDING_MASK << PENDING_SHIFT;

const COUNT_BITS: u32 = 51;
const COUNT_MAX: u64 = (1 << COUNT_BITS) - 1;
const VERSION_ONE: u64 = 1 << COUNT_BITS;

/// One value of the control word. See the module docs for the layout.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Ctl(u64);

impl Ctl {
    #[inline]
    fn new(epoch: u64, pending: u64) -> Ctl {
        Ctl((epoch & EPOCH_MASK) | (pending.min(SLOTS as u64) << PENDING_SHIFT))
    }

    #[inline]
    fn epoch(self) -> u64 {
        self.0 & EPOCH_MASK
    }

    /// Slots still to clear, clamped (a garbage value clears them all).
    #[inline]
    fn pending(self) -> u64 {
        ((self.0 >> PENDING_SHIFT) & PENDING_MASK).min(SLOTS as u64)
    }
}

#[inline]
fn count(w: u64) -> u64 {
    w & COUNT_MAX
}

/// `w` with one more outcome, unless it is full.
#[inline]
fn plus_one(w: u64) -> u64 {
    if count(w) == COUNT_MAX { w } else { w + 1 }
}

/// An empty word, of the next version.
#[inline]
fn emptied(w: u64) -> u64 {
    (w & !COUNT_MAX).wrapping_add(VERSION_ONE)
}

#[inline]
fn slot_of(epoch: u64) -> usize {
    (epoch as usize) & (SLOTS - 1)
}

/// A word per slot.
fn ring() -> [AtomicU64; SLOTS] {
    core::array::from_fn(|_| AtomicU64::new(0))
}

#[repr(C)]
#[derive(Debug)]
pub(crate) struct TimeWindow {
    /// Read by every outcome, written once per epoch.
    ctl: CachePadded<AtomicU64>,
    successes: [CachePadded<[AtomicU64; SLOTS]>; STRIPES],
    failures: CachePadded<[AtomicU64; SLOTS]>,
    slow: [AtomicU64; SLOTS],
    /// loom models only: whether the inline success path yields between
    /// its two loads of the control word (see `try_add_success`). A core
    /// atomic, outside the model: it is set before the threads start.
    #[cfg(loom)]
    yields: core::sync::atomic::AtomicBool,
}

impl TimeWindow {
    #[inline]
    pub(crate) fn new() -> Self {
        Self {
            ctl: CachePadded::new(AtomicU64::new(UNSTARTED)),
            successes: core::array::from_fn(|_| CachePadded::new(ring())),
            failures: CachePadded::new(ring()),
            slow: ring(),
            #[cfg(loom)]
            yields: core::sync::atomic::AtomicBool::new(false),
        }
    }

    /// loom models only: makes the inline success path yield between
    /// picking its slot and loading its bucket word. loom reorders another
    /// thread's CAS against only the latest access a thread made to an
    /// atomic, never against a plain load before it, so without the yield
    /// no model sees the window move on between the two loads.
    #[cfg(loom)]
    pub(crate) fn yield_in_fast_path(&self) {
        // Relaxed: set before the model's threads start.
        self.yields.store(true, core::sync::atomic::Ordering::Relaxed);
    }

    /// The common case of [`add`](Self::add), inline: a success in the
    /// window's latest epoch, with nothing to clear or start, and a CAS that
    /// succeeds at once. `counting` is the generation word's value for the
    /// outcome's generation. `false`: try `add` (a late outcome, a new
    /// epoch, a race).
    ///
    /// The slot is taken from the control word, not from `epoch`, so that
    /// loading the bucket word waits for no clock read: the caller reads
    /// the clock just before, and its loads run alongside it. A second load
    /// of the control word, after the bucket word's, must show the same
    /// value with `E` equal to `epoch`; the bucket word was then loaded
    /// before a control word that shows its epoch inside the window, which
    /// is all that `bump`'s argument asks (see the module's Late outcomes).
    #[inline(always)]
    pub(crate) fn try_add_success(&self, epoch: u64, generation: &AtomicU64, counting: u64) -> bool {
        // SeqCst, as every access here (see the window's Orderings). This
        // first load only picks the slot of the latest epoch.
        let latest = self.ctl.load(Ordering::SeqCst);
        let word = &self.successes[stripe(STRIPES)][slot_of(latest)];
        #[cfg(loom)]
        if self.yields.load(core::sync::atomic::Ordering::Relaxed) {
            loom::thread::yield_now();
        }
        let w = word.load(Ordering::SeqCst);
        // Loaded after `w`: as in `bump`.
        let c = self.ctl.load(Ordering::SeqCst);
        // Counting this generation; the control word unchanged since the
        // slot was picked, clean (nothing pending, reserved bits clear) and
        // at the outcome's epoch; and room in the word?
        generation.load(Ordering::SeqCst) == counting
            && c == latest
            && c == epoch
            && count(w) != COUNT_MAX
            && word.compare_exchange(w, w + 1, Ordering::SeqCst, Ordering::Relaxed).is_ok()
    }

    /// Counts an outcome at `epoch` in a window of `buckets` epochs; `check`
    /// loads the generation word (see [the window](super)). Returns
    /// whether the outcome (its success or failure) was counted.
    #[inline]
    pub(crate) fn add(
        &self,
        epoch: u64,
        buckets: u32,
        failed: bool,
        slow: bool,
        check: &impl Fn() -> Gen,
        folds: &Successes,
    ) -> bool {
        // Every epoch of a u64 clock fits; clamp rather than trust it.
        let epoch = epoch.min(EPOCH_MASK);
        let slot = slot_of(epoch);
        let word = if failed { &self.failures[slot] } else { &self.successes[stripe(STRIPES)][slot] };
        if !self.bump(word, epoch, buckets, check, folds) {
            return false;
        }
        if slow {
            self.bump(&self.slow[slot], epoch, buckets, check, folds);
        }
        true
    }

    /// Adds one to `word`, the bucket word of `epoch`'s slot, if that epoch
    /// is inside the window. See the module's Late outcomes.
    #[inline]
    fn bump(
        &self,
        word: &AtomicU64,
        epoch: u64,
        buckets: u32,
        check: &impl Fn() -> Gen,
        folds: &Successes,
    ) -> bool {
        // SeqCst: see the window's Orderings (as for every access below).
        let mut w = word.load(Ordering::SeqCst);
        loop {
            // Loaded after `w`: if a clear emptied `w`, this shows its `E`.
            let c = Ctl(self.ctl.load(Ordering::SeqCst));
            // Does the window count this generation?
            match check() {
                Gen::Counting => {}
                Gen::Retry => {
                    w = word.load(Ordering::SeqCst);
                    continue;
                }
                Gen::Stale => return false,
            }
            // A clear pending, or a new epoch: move the window on first.
            if c.pending() != 0 || epoch > c.epoch() {
                self.step(c, epoch, folds);
                w = word.load(Ordering::SeqCst);
                continue;
            }
            // Has the outcome's epoch already left the window?
            if c.epoch() - epoch >= u64::from(buckets) {
                return false;
            }
            match word.compare_exchange_weak(w, plus_one(w), Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return true,
                Err(actual) => w = actual,
            }
        }
    }

    /// Helps the control word `c` on: moves `E` to `epoch` if that is later
    /// and no clear is pending (or every slot is), and clears what is pending.
    #[cold]
    #[inline(never)]
    fn step(&self, c: Ctl, epoch: u64, folds: &Successes) {
        // Nothing counted yet: every word is zero, nothing to clear.
        if c.0 == UNSTARTED {
            let _ = self.ctl.compare_exchange(c.0, Ctl::new(epoch, 0).0, Ordering::SeqCst, Ordering::SeqCst);
            return;
        }
        let pending = c.pending();
        // Clean, or clearing every slot: the window may move to `epoch` now.
        let target = if epoch > c.epoch() && (pending == 0 || pending == SLOTS as u64) {
            let passed = if pending == 0 { (epoch - c.epoch()).min(SLOTS as u64) } else { SLOTS as u64 };
            let next = Ctl::new(epoch, passed);
            if self.ctl.compare_exchange(c.0, next.0, Ordering::SeqCst, Ordering::SeqCst).is_err() {
                return;
            }
            next
        } else {
            c
        };
        self.clear(target, folds);
    }

    /// Clears the slots `c` has pending, then marks it clean. Gives up as
    /// soon as the control word is no longer `c`: someone finished first
    /// (or the window restarted), and fresh counts may have arrived since.
    fn clear(&self, c: Ctl, folds: &Successes) {
        let pending = c.pending();
        for back in 0..pending {
            // Done by another helper already? (Only saves work.)
            if self.ctl.load(Ordering::SeqCst) != c.0 {
                return;
            }
            let slot = slot_of(c.epoch().wrapping_sub(back));
            for stripe in &self.successes {
                if !self.clear_word(&stripe[slot], c, Some(folds)) {
                    return;
                }
            }
            if !self.clear_word(&self.failures[slot], c, None) || !self.clear_word(&self.slow[slot], c, None)
            {
                return;
            }
        }
        if pending != 0 {
            // Failing means another helper finished, or the window moved on.
            let _ =
                self.ctl.compare_exchange(c.0, Ctl::new(c.epoch(), 0).0, Ordering::SeqCst, Ordering::SeqCst);
        }
    }

    /// Empties `word` for the clear `c`, folding its successes if it counts
    /// them; `false` if `c` is no longer pending.
    fn clear_word(&self, word: &AtomicU64, c: Ctl, folds: Option<&Successes>) -> bool {
        let mut w = word.load(Ordering::SeqCst);
        loop {
            // Counts in it, and the clear no longer pending? Then they are
            // fresh: leave them. (Loaded after `w`, so a word emptied and
            // counted into again is never seen with `c` pending.) An empty
            // word is bumped whatever the control word says: that loses no
            // count, and only makes a CAS against the older version fail.
            if count(w) != 0 && self.ctl.load(Ordering::SeqCst) != c.0 {
                return false;
            }
            match word.compare_exchange_weak(w, emptied(w), Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => {
                    if let Some(folds) = folds {
                        folds.fold(count(w));
                    }
                    return true;
                }
                Err(actual) => w = actual,
            }
        }
    }

    /// Starts the window again for a new generation, while `still` (the
    /// generation word is still starting that generation): `E` back to 0,
    /// every slot pending. May run any number of times for one start.
    #[cold]
    pub(crate) fn restart(&self, still: &impl Fn() -> bool) {
        let fresh = Ctl::new(0, SLOTS as u64);
        let mut c = self.ctl.load(Ordering::SeqCst);
        // Still starting (loaded after `c`), and not restarted yet?
        while still() && c != fresh.0 {
            match self.ctl.compare_exchange_weak(c, fresh.0, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return,
                Err(actual) => c = actual,
            }
        }
    }

    /// Sums the window of `buckets` epochs ending at `E`.
    pub(crate) fn totals(&self, buckets: u32, check: &impl Fn() -> Gen, folds: &Successes) -> Option<Totals> {
        loop {
            let c = Ctl(self.ctl.load(Ordering::SeqCst));
            match check() {
                Gen::Counting => {}
                Gen::Retry => continue,
                Gen::Stale => return None,
            }
            if c.0 == UNSTARTED {
                return Some(Totals::default());
            }
            if c.pending() != 0 {
                self.clear(c, folds);
                continue;
            }
            let mut t = Totals::default();
            let back = u64::from(buckets).min(c.epoch() + 1);
            for b in 0..back {
                let slot = slot_of(c.epoch() - b);
                for stripe in &self.successes {
                    t.calls += count(stripe[slot].load(Ordering::SeqCst));
                }
                let failures = count(self.failures[slot].load(Ordering::SeqCst));
                t.calls += failures;
                t.failures += failures;
                t.slow += count(self.slow[slot].load(Ordering::SeqCst));
            }
            // No clear began while the slots were read?
            if self.ctl.load(Ordering::SeqCst) == c.0 {
                return Some(t);
            }
        }
    }

    /// The successes still in the words, whatever their epoch.
    pub(crate) fn unfolded(&self) -> u64 {
        let mut n = 0u64;
        for stripe in &self.successes {
            for w in stripe.iter() {
                n = n.wrapping_add(count(w.load(Ordering::SeqCst)));
            }
        }
        n
    }

    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check windows; loom builds have none"))]
    pub(crate) fn is_valid(&self) -> bool {
        // Relaxed: see `Window::is_valid`.
        let c = self.ctl.load(Ordering::Relaxed);
        let words = || {
            let stripes = self.successes.iter().flat_map(|s| s.iter());
            stripes.chain(self.failures.iter()).chain(self.slow.iter())
        };
        // Relaxed: as above. Nothing counted yet means every word is zero.
        (c == UNSTARTED && words().all(|w| w.load(Ordering::Relaxed) == 0))
            || c >> PENDING_SHIFT <= SLOTS as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counting() -> Gen {
        Gen::Counting
    }

    fn folds() -> Successes {
        Successes { folded: AtomicU64::new(0), seen: AtomicU64::new(0) }
    }

    fn totals(w: &TimeWindow, buckets: u32) -> Totals {
        w.totals(buckets, &counting, &folds()).unwrap()
    }

    fn t(calls: u64, failures: u64, slow: u64) -> Totals {
        Totals { calls, failures, slow }
    }

    #[test]
    fn counts_within_the_window_and_forgets_older_epochs() {
        let (w, f) = (TimeWindow::new(), folds());
        assert!(w.add(100, 4, false, false, &counting, &f));
        assert!(w.add(100, 4, true, true, &counting, &f));
        assert!(w.add(101, 4, true, false, &counting, &f));
        assert_eq!(totals(&w, 4), t(3, 2, 1));
        assert!(w.add(103, 4, false, false, &counting, &f));
        assert_eq!(totals(&w, 4), t(4, 2, 1));
        assert!(w.add(104, 4, false, false, &counting, &f), "epoch 100 leaves the window");
        assert_eq!(totals(&w, 4), t(3, 1, 0));
    }

    #[test]
    fn an_outcome_whose_epoch_left_the_window_stays_out() {
        let (w, f) = (TimeWindow::new(), folds());
        assert!(w.add(50, 3, true, false, &counting, &f));
        assert!(!w.add(47, 3, true, false, &counting, &f));
        assert!(w.add(48, 3, true, false, &counting, &f), "still inside: 50 − 48 < 3");
        assert_eq!(totals(&w, 3), t(2, 2, 0));
    }

    #[test]
    fn slots_passed_over_are_cleared_and_folded() {
        let (w, f) = (TimeWindow::new(), folds());
        for e in 0..SLOTS as u64 {
            assert!(w.add(e, 32, false, false, &counting, &f));
        }
        assert_eq!(w.unfolded(), SLOTS as u64);
        // Two epochs on: slots 0 and 1 held epochs that are now 32 and 31 back.
        assert!(w.add(SLOTS as u64 + 1, 32, true, false, &counting, &f));
        assert_eq!(totals(&w, 32).calls, SLOTS as u64 - 1);
        assert_eq!(f.folded.load(Ordering::Relaxed), 2);
        assert_eq!(w.unfolded(), SLOTS as u64 - 2);
    }

    #[test]
    fn an_idle_gap_of_any_length_starts_from_an_empty_window() {
        for gap in [SLOTS as u64, 1 << 13, 1 << 24, 1 << 32, (1 << 45) - 200] {
            let (w, f) = (TimeWindow::new(), folds());
            for e in 100..110 {
                w.add(e, 10, true, true, &counting, &f);
            }
            assert_eq!(totals(&w, 10).calls, 10);
            let later = 109 + gap;
            assert!(w.add(later, 10, false, false, &counting, &f), "gap {gap}");
            assert_eq!(totals(&w, 10), t(1, 0, 0), "gap {gap}");
        }
    }

    #[test]
    fn the_last_epoch_of_a_u64_clock_counts_like_any_other() {
        let (w, f) = (TimeWindow::new(), folds());
        let last = EPOCH_MASK;
        assert!(w.add(last - 1, 2, true, false, &counting, &f));
        assert!(w.add(last, 2, true, false, &counting, &f));
        assert_eq!(totals(&w, 2), t(2, 2, 0));
    }

    #[test]
    fn a_clear_changes_every_word_it_passes_even_an_empty_one() {
        let (w, f) = (TimeWindow::new(), folds());
        w.add(0, 4, false, false, &counting, &f);
        let before = w.failures[3].load(Ordering::Relaxed);
        w.add(3 + SLOTS as u64, 4, false, false, &counting, &f);
        assert_ne!(w.failures[3].load(Ordering::Relaxed), before);
        assert_eq!(count(w.failures[3].load(Ordering::Relaxed)), 0);
    }

    #[test]
    fn counts_saturate_instead_of_wrapping() {
        let (w, f) = (TimeWindow::new(), folds());
        w.add(7, 1, true, false, &counting, &f);
        w.failures[slot_of(7)].store(COUNT_MAX, Ordering::Relaxed);
        w.add(7, 1, true, false, &counting, &f);
        assert_eq!(totals(&w, 1).failures, COUNT_MAX);
    }

    #[test]
    fn a_restart_empties_the_window_once_the_next_outcome_arrives() {
        let (w, f) = (TimeWindow::new(), folds());
        w.add(1_000, 4, false, true, &counting, &f);
        w.add(1_000, 4, true, false, &counting, &f);
        w.restart(&|| true);
        assert!(w.add(5, 4, true, false, &counting, &f), "the epoch moved back to 0 first");
        assert_eq!(totals(&w, 4), t(1, 1, 0));
        assert_eq!(f.folded.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn stale_or_restarting_generations_are_respected() {
        let (w, f) = (TimeWindow::new(), folds());
        assert!(!w.add(1, 4, true, false, &|| Gen::Stale, &f));
        assert_eq!(w.totals(4, &|| Gen::Stale, &f), None);
        let retried = core::cell::Cell::new(false);
        let once = || if retried.replace(true) { Gen::Counting } else { Gen::Retry };
        assert!(w.add(1, 4, true, false, &once, &f));
        assert_eq!(totals(&w, 4).failures, 1);
    }

    #[test]
    fn a_new_window_takes_its_first_epoch_without_a_clear() {
        let (w, f) = (TimeWindow::new(), folds());
        assert_eq!(w.totals(4, &counting, &f), Some(Totals::default()));
        assert!(w.add(1 << 40, 4, true, false, &counting, &f));
        assert_eq!(w.failures[slot_of(1 << 40)].load(Ordering::Relaxed), 1, "version 0: no clear ran");
        assert_eq!(totals(&w, 4), t(1, 1, 0));
        // A garbage count behind a fresh control word is named.
        let g = TimeWindow::new();
        g.slow[SLOTS - 1].store(5, Ordering::Relaxed);
        assert!(!g.is_valid());
    }

    #[test]
    fn garbage_control_words_are_clamped_and_named() {
        let (w, f) = (TimeWindow::new(), folds());
        w.ctl.store(u64::MAX, Ordering::Relaxed);
        assert!(!w.is_valid());
        // A garbage epoch from the far future: clears everything, counts
        // nothing older, never panics; the next generation starts afresh.
        assert!(!w.add(3, 4, true, false, &counting, &f));
        assert!(w.is_valid());
        w.restart(&|| true);
        assert!(w.add(3, 4, true, false, &counting, &f));
        assert_eq!(totals(&w, 4).failures, 1);
    }
}
