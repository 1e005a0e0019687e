//! The rolling window: the calls recorded while the breaker is Closed, over
//! which the failure-rate and slow-rate conditions are measured.
//!
//! Two kinds, chosen by the config (a breaker's storage holds one of them,
//! or both: see `kind`):
//! - [`time`]: the calls of the last `buckets` epochs of one bucket width
//!   each;
//! - [`count`]: the last N calls, however long ago they were made.
//!
//! Both count only the outcomes of plain tickets (not probes, not ignored)
//! of the generation the breaker is Closed in, and share the parts here:
//! the generation word that gives every Closed generation an empty window
//! of its own, the successes folded out of the window for the snapshot,
//! and the trip rule.
//!
//! # The generation word
//!
//! | bits    | field        | meaning |
//! | ------- | ------------ | ------- |
//! | 0..32   | `generation` | the Closed generation whose calls the window holds |
//! | 32      | `starting`   | 1 while the window is being emptied for that generation |
//! | 33..64  | —            | reserved, 0 |
//!
//! An outcome enters the window only through a CAS made after a load of
//! this word found it at the outcome's generation with `starting` clear;
//! that load comes after the load of the word the CAS changes. The first
//! outcome of a new Closed generation (checked against the breaker's state
//! word) moves this word to its generation with `starting` set; while it is
//! set, every caller helps empty the window (each kind's `restart`, which
//! may run any number of times), then clears it. Transitions never touch
//! the window: no clear races with recording.
//!
//! Why no outcome of an older generation can enter a newer window:
//! - An outcome that loads this word after the new generation began sees
//!   another generation and stays out.
//! - One that loaded it before made its CAS against a word it had loaded
//!   even earlier. Emptying changes every word such a CAS could target (a
//!   time window's clear bumps each bucket word's version; a count window's
//!   restart moves its cursor to a chunk number never used before), and no
//!   outcome of the new generation is added until emptying is done; so the
//!   CAS either lands before emptying, in counts that emptying then drops,
//!   or fails and the retry sees the new generation.
//!
//! One exception, bounded: a count window's success is a `fetch_add` made
//! *after* its load of this word (see [`count`]'s "A success racing a new
//! generation"), so a success whose thread stalls between the two across
//! the start of the next Closed generation counts in that window: at most
//! one per recording thread, and a success, so it can delay a trip by one
//! call and never cause one. Failures and slow calls have no exception.
//!
//! The generation is compared in full (32 bits): however many transitions
//! pass without an outcome (a long outage, a thousand resets), an old
//! window never looks current, short of the 2^32 wrap that the state word
//! documents.
//!
//! # Successes in the snapshot
//! A success counted in the window is not also added to the breaker's
//! counters: its success path is then one CAS, not two. Each kind *folds*
//! the successes of a word it drops (a cleared bucket, a filed chunk) into
//! `folded` with the CAS that drops them, so that
//! `folded + successes still in the window` is the number counted. A
//! snapshot reads `folded` first, then the live words: a success moving
//! from a word to `folded` in between is missed, never counted twice; and
//! `seen` keeps snapshots from ever going down.
//!
//! # Orderings
//! Every access to a window word is `SeqCst`: the bucket, cursor and ring
//! words, the generation word and the time window's control word fall into
//! one total order, which is what the arguments in this module and its two
//! children reason about (a load made after another sees at least what the
//! other saw), and the outcome that brings a rate to its threshold sees
//! every count before it. On x86 this costs nothing over `Relaxed`: a
//! locked RMW and a plain load either way. `folded` is the exception: its
//! `Release` add pairs with the `Acquire` load in `successes`, so a
//! snapshot that sees a fold also sees the word it was folded from emptied.
//! The window orders no other data: a trip is published by the state
//! word's CAS.

pub(crate) mod count;
pub(crate) mod kind;
pub(crate) mod time;

use crossbeam_utils::CachePadded;

use self::kind::Kind;

use crate::breaker::config::BreakerConfig;
use crate::sync::{AtomicU64, Ordering};

const STARTING: u64 = 1 << 32;

/// The generation word for `generation`, starting or not.
#[inline]
const fn gen_word(generation: u32, starting: bool) -> u64 {
    generation as u64 | if starting { STARTING } else { 0 }
}

/// What the generation word says about an outcome of one generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gen {
    /// The window counts this generation: go ahead.
    Counting,
    /// The window was moved on (started or emptied): load again.
    Retry,
    /// The outcome's generation is over: it stays out.
    Stale,
}

/// Totals over the calls inside the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) calls: u64,
    pub(crate) failures: u64,
    pub(crate) slow: u64,
}

/// Whether `t` trips a breaker configured by `cfg`: at least `min_calls`
/// calls, and a configured rate reached (in integers: see `rate`).
#[inline]
pub(crate) fn trips(cfg: &BreakerConfig, t: Totals) -> bool {
    t.calls >= u64::from(cfg.min_calls)
        && (cfg.failure_fraction.reached(t.failures, t.calls) || cfg.slow_fraction.reached(t.slow, t.calls))
}

/// The successes dropped from the window so far, for the snapshot.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Successes {
    folded: AtomicU64,
    /// The largest total a snapshot has reported.
    seen: AtomicU64,
}

impl Successes {
    /// Adds `n` successes just dropped from a window word by a CAS.
    #[inline]
    pub(crate) fn fold(&self, n: u64) {
        if n != 0 {
            // Release pairs with the Acquire load in `Window::successes`.
            self.folded.fetch_add(n, Ordering::Release);
        }
    }
}

/// A rolling window of one or both kinds (`K`: see `kind`), with the
/// parts they share.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Window<K> {
    /// The generation word (see the module docs); read by every outcome,
    /// written once per Closed generation.
    generation: CachePadded<AtomicU64>,
    successes: Successes,
    kinds: K,
}

impl<K: Kind> Window<K> {
    #[inline]
    pub(crate) fn new() -> Self {
        Self {
            generation: CachePadded::new(AtomicU64::new(gen_word(0, false))),
            successes: Successes { folded: AtomicU64::new(0), seen: AtomicU64::new(0) },
            kinds: K::new(),
        }
    }

    /// Counts an outcome of a plain ticket of `generation`: a failure or a
    /// success, slow or not, at time-window epoch `epoch` (unused by a
    /// count-based window). `current` says whether `generation` is the one
    /// the breaker is Closed in, read from its state word. Returns whether
    /// the outcome entered the window; a success that did not must be
    /// counted elsewhere.
    #[inline]
    pub(crate) fn add(
        &self,
        cfg: &BreakerConfig,
        generation: u32,
        epoch: u64,
        failed: bool,
        slow: bool,
        current: impl Fn() -> bool,
    ) -> bool {
        let check = || self.check(cfg, generation, &current);
        self.kinds.add(cfg, epoch, failed, slow, &check, &self.successes)
    }

    /// [`add`](Self::add) for a success that is not slow, in its common
    /// case only (see each kind's fast attempt): `false` means call `add`.
    #[inline(always)]
    pub(crate) fn try_add_success(&self, cfg: &BreakerConfig, generation: u32, epoch: u64) -> bool {
        self.kinds.try_add_success(cfg, epoch, &self.generation, gen_word(generation, false), &self.successes)
    }

    /// The totals over the window of `generation`, or `None` if that
    /// generation is no longer the one it counts.
    pub(crate) fn totals(
        &self,
        cfg: &BreakerConfig,
        generation: u32,
        current: impl Fn() -> bool,
    ) -> Option<Totals> {
        let check = || self.check(cfg, generation, &current);
        self.kinds.totals(cfg, &check, &self.successes)
    }

    /// Loads the generation word for an outcome of `generation`, after the
    /// load of whatever word the caller is about to change; starts the
    /// window for `generation` if it is the current one, and helps empty it.
    #[inline]
    fn check(&self, cfg: &BreakerConfig, generation: u32, current: &impl Fn() -> bool) -> Gen {
        // SeqCst: see the module's Orderings.
        let gw = self.generation.load(Ordering::SeqCst);
        // Counting this generation, and done starting it?
        if gw == gen_word(generation, false) {
            return Gen::Counting;
        }
        self.check_slow(cfg, generation, gw, current)
    }

    #[cold]
    #[inline(never)]
    fn check_slow(&self, cfg: &BreakerConfig, generation: u32, gw: u64, current: &impl Fn() -> bool) -> Gen {
        let starting = gen_word(generation, true);
        if gw != starting {
            // Another generation's window: is ours over, or not started yet?
            if !current() {
                return Gen::Stale;
            }
            // SeqCst: see the module's Orderings. A failed CAS means someone
            // else moved the word; the caller loads it again.
            let _ = self.generation.compare_exchange(gw, starting, Ordering::SeqCst, Ordering::SeqCst);
            return Gen::Retry;
        }
        // Starting: empty the window while the word still says so, then say it is done.
        let still = || self.generation.load(Ordering::SeqCst) == starting;
        self.kinds.restart(cfg, &still, &self.successes);
        // SeqCst: see the module's Orderings; failing means another helper finished.
        let _ = self.generation.compare_exchange(
            starting,
            gen_word(generation, false),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        Gen::Retry
    }

    /// loom models only: see [`time::TimeWindow::yield_in_fast_path`].
    #[cfg(loom)]
    pub(crate) fn yield_in_fast_path(&self) {
        self.kinds.yield_in_fast_path();
    }

    /// Successes counted in the window, dropped or not, when successes are
    /// counted at all: never less than a total returned before.
    pub(crate) fn successes(&self) -> u64 {
        // Acquire pairs with the Release in `Successes::fold`: read before
        // the live words, so that a success is never counted twice.
        let folded = self.successes.folded.load(Ordering::Acquire);
        let live = self.kinds.unfolded();
        let total = folded.wrapping_add(live);
        // Relaxed: one word, read and raised on its own.
        let before = self.successes.seen.fetch_max(total, Ordering::Relaxed);
        before.max(total)
    }

    /// Whether the window's words decode: checked when attaching to a
    /// breaker in memory someone else wrote. Garbage never causes a panic
    /// (every field is clamped where it is used); this names it instead.
    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check windows; loom builds have none"))]
    pub(crate) fn is_valid(&self) -> bool {
        // Relaxed: a check of values; the caller's Acquire on the region's
        // magic ordered their initialisation before it.
        self.generation.load(Ordering::Relaxed) & !(STARTING | u64::from(u32::MAX)) == 0
            && self.kinds.is_valid()
    }
}
