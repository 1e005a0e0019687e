//! What a [`Window`](super::Window) keeps besides its generation word and
//! folded successes: a time window, a count window, or both ([`Both`], the
//! default storage's, where the config picks one). Each kind's own
//! protocol is in its file; this one only forwards to it.

use super::count::{self, CountWindow};
use super::time::TimeWindow;
use super::{Gen, Successes, Totals};
use crate::breaker::config::BreakerConfig;
use crate::sync::AtomicU64;

/// The words of one or both kinds of window. The config a breaker is made
/// with names a kind the storage holds (see `storage`), so a single kind
/// never looks at which kind the config names.
pub(crate) trait Kind {
    fn new() -> Self;

    /// Counts an outcome (see [`Window::add`](super::Window::add)).
    fn add(
        &self,
        cfg: &BreakerConfig,
        epoch: u64,
        failed: bool,
        slow: bool,
        check: &impl Fn() -> Gen,
        folds: &Successes,
    ) -> bool;

    /// The inline attempt at a success (see each kind's).
    fn try_add_success(
        &self,
        cfg: &BreakerConfig,
        epoch: u64,
        generation: &AtomicU64,
        counting: u64,
        folds: &Successes,
    ) -> bool;

    fn totals(&self, cfg: &BreakerConfig, check: &impl Fn() -> Gen, folds: &Successes) -> Option<Totals>;

    /// Empties the window for a new Closed generation.
    fn restart(&self, cfg: &BreakerConfig, still: &impl Fn() -> bool, folds: &Successes);

    /// Successes counted in live words, not yet folded.
    fn unfolded(&self) -> u64;

    fn is_valid(&self) -> bool;

    /// loom models only: see [`TimeWindow::yield_in_fast_path`].
    #[cfg(loom)]
    fn yield_in_fast_path(&self);
}

impl Kind for TimeWindow {
    #[inline]
    fn new() -> Self {
        TimeWindow::new()
    }

    #[inline]
    fn add(
        &self,
        cfg: &BreakerConfig,
        epoch: u64,
        failed: bool,
        slow: bool,
        check: &impl Fn() -> Gen,
        folds: &Successes,
    ) -> bool {
        TimeWindow::add(self, epoch, cfg.window_buckets, failed, slow, check, folds)
    }

    #[inline(always)]
    fn try_add_success(
        &self,
        _: &BreakerConfig,
        epoch: u64,
        generation: &AtomicU64,
        counting: u64,
        _: &Successes,
    ) -> bool {
        TimeWindow::try_add_success(self, epoch, generation, counting)
    }

    #[inline]
    fn totals(&self, cfg: &BreakerConfig, check: &impl Fn() -> Gen, folds: &Successes) -> Option<Totals> {
        TimeWindow::totals(self, cfg.window_buckets, check, folds)
    }

    #[inline]
    fn restart(&self, _: &BreakerConfig, still: &impl Fn() -> bool, _: &Successes) {
        TimeWindow::restart(self, still);
    }

    #[inline]
    fn unfolded(&self) -> u64 {
        TimeWindow::unfolded(self)
    }

    fn is_valid(&self) -> bool {
        TimeWindow::is_valid(self)
    }

    #[cfg(loom)]
    fn yield_in_fast_path(&self) {
        TimeWindow::yield_in_fast_path(self);
    }
}

impl Kind for CountWindow {
    #[inline]
    fn new() -> Self {
        CountWindow::new()
    }

    #[inline]
    fn add(
        &self,
        _: &BreakerConfig,
        _: u64,
        failed: bool,
        slow: bool,
        check: &impl Fn() -> Gen,
        folds: &Successes,
    ) -> bool {
        CountWindow::add(self, count::mark(failed, slow), check, folds)
    }

    #[inline(always)]
    fn try_add_success(
        &self,
        _: &BreakerConfig,
        _: u64,
        generation: &AtomicU64,
        counting: u64,
        folds: &Successes,
    ) -> bool {
        CountWindow::try_add_success(self, generation, counting, folds)
    }

    #[inline]
    fn totals(&self, cfg: &BreakerConfig, check: &impl Fn() -> Gen, _: &Successes) -> Option<Totals> {
        CountWindow::totals(self, cfg.window_calls, check)
    }

    #[inline]
    fn restart(&self, _: &BreakerConfig, still: &impl Fn() -> bool, folds: &Successes) {
        CountWindow::restart(self, still, folds);
    }

    #[inline]
    fn unfolded(&self) -> u64 {
        CountWindow::unfolded(self)
    }

    fn is_valid(&self) -> bool {
        CountWindow::is_valid(self)
    }

    /// A count window's fast path has no second load to yield between.
    #[cfg(loom)]
    fn yield_in_fast_path(&self) {}
}

/// Both kinds, side by side; the config's kind is the one used.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Both {
    time: TimeWindow,
    count: CountWindow,
}

impl Kind for Both {
    #[inline]
    fn new() -> Self {
        Self { time: TimeWindow::new(), count: CountWindow::new() }
    }

    #[inline]
    fn add(
        &self,
        cfg: &BreakerConfig,
        epoch: u64,
        failed: bool,
        slow: bool,
        check: &impl Fn() -> Gen,
        folds: &Successes,
    ) -> bool {
        if cfg.counted() {
            self.count.add(count::mark(failed, slow), check, folds)
        } else {
            self.time.add(epoch, cfg.window_buckets, failed, slow, check, folds)
        }
    }

    #[inline(always)]
    fn try_add_success(
        &self,
        cfg: &BreakerConfig,
        epoch: u64,
        generation: &AtomicU64,
        counting: u64,
        folds: &Successes,
    ) -> bool {
        if cfg.counted() {
            self.count.try_add_success(generation, counting, folds)
        } else {
            self.time.try_add_success(epoch, generation, counting)
        }
    }

    #[inline]
    fn totals(&self, cfg: &BreakerConfig, check: &impl Fn() -> Gen, folds: &Successes) -> Option<Totals> {
        if cfg.counted() {
            self.count.totals(cfg.window_calls, check)
        } else {
            self.time.totals(cfg.window_buckets, check, folds)
        }
    }

    #[inline]
    fn restart(&self, cfg: &BreakerConfig, still: &impl Fn() -> bool, folds: &Successes) {
        if cfg.counted() {
            self.count.restart(still, folds);
        } else {
            self.time.restart(still);
        }
    }

    #[inline]
    fn unfolded(&self) -> u64 {
        self.time.unfolded().wrapping_add(self.count.unfolded())
    }

    fn is_valid(&self) -> bool {
        self.time.is_valid() && self.count.is_valid()
    }

    #[cfg(loom)]
    fn yield_in_fast_path(&self) {
        self.time.yield_in_fast_path();
    }
}
