//! One limit's word: the time its counted units reach to, moved by
//! compare-and-swap (the generic cell rate algorithm, weighted).
//!
//! The word holds `tat`, the *theoretical arrival time*: a reading of the
//! limiter's clock up to which the units taken so far stay counted, each
//! for one emission interval. At `now` the units still counted reach
//! `tat − now` ahead (none once `tat` has passed). A cost `c` may go at
//! once if they would then reach no further than the tolerance (`burst`
//! units' time): `max(tat, now) + c × emission − now ≤ tolerance`; taking
//! it moves `tat` there. Nothing else is stored and nothing decays on a
//! timer: the passing of time is the refill.
//!
//! # Any clock value works
//! The word's top bit says it was written; the other 63 hold `tat` modulo
//! 2^63, compared with `now` by their wrapping difference, so `u64::MAX`
//! and a clock that wraps are fine, and a word never written counts
//! nothing at any clock reading. A `tat` further ahead than the horizon (two
//! periods' worth of units; nothing writes one further) was written by a
//! clock that has since gone back, or is garbage (a shared region): it is
//! read as the horizon, so it delays the next call by at most that much and
//! never lets one through early. A clock that goes back less than that
//! adds its lag to the waits: a limiter only ever errs on the side of
//! sending less.
//!
//! # Orderings
//! `Relaxed` throughout: the word publishes no other data, and each change
//! is a compare-and-swap from the value its decision was made on, so the
//! word's modification order counts every unit once.

use crate::limiter::config::LimitConfig;
use crate::sync::{AtomicU64, Ordering};

/// The word's top bit: set by every write, so that a word never written
/// (zero, as a new limiter or a new shared region has it) counts nothing,
/// whatever the clock reads.
const SET: u64 = 1 << 63;
/// The time, modulo 2^63, in the other bits.
const TIME: u64 = SET - 1;
/// Half the time range: a `tat` this far ahead or further is behind.
const HALF: u64 = 1 << 62;

/// The word that counts units up to `now + ahead`.
#[inline(always)]
fn word(now: u64, ahead: u64) -> u64 {
    SET | (now.wrapping_add(ahead) & TIME)
}

/// How far ahead of `now` the units counted in the word `tat` reach: 0
/// once it has passed (or it was never written), at most the horizon.
#[inline(always)]
pub(crate) fn counted(tat: u64, now: u64, cfg: &LimitConfig) -> u64 {
    let ahead = tat.wrapping_sub(now) & TIME;
    // Never written, or behind `now` (or at it) by the wrapping difference: passed.
    if tat & SET == 0 || ahead == 0 || ahead >= HALF { 0 } else { ahead.min(cfg.horizon_ns) }
}

/// What taking `cost` for a request sent `send_in` after `now` comes to,
/// with units counted `counted` ahead: the word to write and how long the caller waits before
/// sending (0: at once), or, if that wait is above `max_wait_ns`, the wait
/// before the cost would go at once.
///
/// The cost is counted from the send: units that run out before it are
/// no credit for it (several limits send a request when the slowest lets
/// it; see `RateLimiter::acquire`).
#[inline(always)]
pub(crate) fn plan(
    counted: u64,
    now: u64,
    cfg: &LimitConfig,
    cost: u32,
    send_in: u64,
    max_wait_ns: u64,
) -> Result<(u64, u64), u64> {
    // At most the horizon plus burst × emission: no overflow (see `LimitConfig`).
    let after = counted.max(send_in) + u64::from(cost) * cfg.emission_ns;
    let ready_in = after.saturating_sub(cfg.tolerance_ns);
    if ready_in > max_wait_ns {
        return Err(ready_in);
    }
    // `max_wait_ns` and `send_in` are at most one period's units: `after`
    // stays within the horizon.
    Ok((word(now, after), ready_in))
}

/// One limit's two words, in a [`RateLimiter`](super::RateLimiter) or in a
/// shared region: the time its requests' units reach to, and the count a
/// server reported, kept apart so that no refund can take it back. Any
/// value of either is valid (see the [module docs](super)).
#[repr(C)]
#[derive(Debug, Default)]
pub struct LimitWords {
    tat: AtomicU64,
    /// `tat` as [`Cell::raise`] left it: units a server has seen.
    floor: AtomicU64,
}

/// One limit: its config, and its words.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cell<'a> {
    pub(crate) config: &'a LimitConfig,
    words: &'a LimitWords,
}

impl<'a> Cell<'a> {
    pub(crate) fn new(config: &'a LimitConfig, words: &'a LimitWords) -> Self {
        Cell { config, words }
    }

    /// How far ahead of `now` the units counted reach: the requests' own,
    /// or the server's count where that reaches further.
    #[inline(always)]
    pub(crate) fn counted(&self, tat: u64, now: u64) -> u64 {
        // Relaxed: see the module's Orderings.
        let floor = self.words.floor.load(Ordering::Relaxed);
        counted(tat, now, self.config).max(counted(floor, now, self.config))
    }

    /// The requests' word, for a decision that writes nothing.
    #[inline(always)]
    pub(crate) fn load(&self) -> u64 {
        self.words.tat.load(Ordering::Relaxed)
    }

    /// Takes `cost` for a request sent `send_in` after `now` if it can go
    /// within `max_wait_ns`: the wait before sending, or the refusal's
    /// wait (nothing taken).
    #[inline(always)]
    pub(crate) fn take(&self, cost: u32, now: u64, send_in: u64, max_wait_ns: u64) -> Result<u64, u64> {
        let mut tat = self.load();
        loop {
            let (next, ready_in) =
                plan(self.counted(tat, now), now, self.config, cost, send_in, max_wait_ns)?;
            // Relaxed: see the module's Orderings.
            match self.words.tat.compare_exchange_weak(tat, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Ok(ready_in),
                Err(actual) => tat = actual,
            }
        }
    }

    /// Gives back `cost` for a request that was never sent, if every
    /// request counted has been sent (the units counted reach no further
    /// than the burst): what of `cost` is still counted. Whether anything
    /// was given back. While a request waits for its send time, its place
    /// in the count rests on the units before it: they stay, and run out
    /// on their own.
    pub(crate) fn refund(&self, cost: u32, now: u64) -> bool {
        let back = u64::from(cost) * self.config.emission_ns;
        let mut tat = self.load();
        loop {
            let own = counted(tat, now, self.config);
            if own == 0 || self.counted(tat, now) > self.config.tolerance_ns {
                return false;
            }
            let next = word(now, own.saturating_sub(back));
            // Relaxed: see the module's Orderings.
            match self.words.tat.compare_exchange_weak(tat, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(actual) => tat = actual,
            }
        }
    }

    /// Counts at least `used` units at `now` (capped at the limit's units),
    /// less what the pace lets through in the part of the server's window
    /// that has passed (its window ends `window_left_ns` from now): what a
    /// server reports having seen, when that is more than this limiter
    /// counts. Whether it was more.
    pub(crate) fn raise(&self, used: u64, window_left_ns: u64, now: u64) -> bool {
        let cfg = self.config;
        let passed = cfg.period_ns - window_left_ns.min(cfg.period_ns);
        // A unit stays counted at least period / (units − burst): the pace
        // lets at most `passed` ns of units through in `passed`.
        let floor = (used.min(u64::from(cfg.units)) * cfg.emission_ns).saturating_sub(passed);
        let mut old = self.words.floor.load(Ordering::Relaxed);
        loop {
            if self.counted(self.load(), now) >= floor {
                return false;
            }
            // Relaxed: see the module's Orderings.
            match self.words.floor.compare_exchange_weak(
                old,
                word(now, floor),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => old = actual,
            }
        }
    }

    /// The units counted at `now`, rounded up.
    pub(crate) fn in_use(&self, now: u64) -> u64 {
        self.counted(self.load(), now).div_ceil(self.config.emission_ns)
    }
}
