//! Where a breaker keeps its counts: the storages a
//! [`Breaker`](crate::Breaker) is generic over, so that its memory follows
//! its config. The public face is [`Windows`]; what a breaker asks of a
//! storage is the sealed trait below.

use crate::breaker::config::{BreakerConfig, RollingWindow};
use crate::breaker::counters::{Counters, Event, Line, Padded, Snapshot};
use crate::breaker::window::count::CountWindow;
use crate::breaker::window::kind::Both;
use crate::breaker::window::time::TimeWindow;
use crate::breaker::window::{Totals, Window};
use crate::config_error::{ConfigError, Rule, Value};

/// What a [`Breaker`](crate::Breaker) keeps for its counts: its counters
/// and the rolling window its config may ask for. Sealed; the storages are:
///
/// | storage | holds | `size_of::<Breaker<_>>()` on x86-64 |
/// | --- | --- | --- |
/// | [`NoWindow`] | counters only | 896 |
/// | [`CountOnly`] | counters, a count window | 2,816 |
/// | [`TimeOnly`] | counters, a time window | 2,816 |
/// | [`AnyWindow`] (default) | counters, both windows | 4,992 |
///
/// (`cargo run -p tripwire-breaker --example sizes` prints them on any
/// target.) A breaker per endpoint, host or symbol that trips on
/// consecutive failures alone needs no window: 10,000 `Breaker<NoWindow>`
/// take 8.5 MiB, where the default takes 37.8 (a keyed map, feature
/// `keyed`, makes its breakers so with `storage::<NoWindow>()`).
///
/// The default keeps the layout shared regions were versioned with:
/// 128-byte counter stripes, and both windows, so that a config of either
/// kind fits any region. The others take 64-byte counter stripes: one
/// cache line each on x86-64, where the default's 128 also keep the
/// adjacent-line prefetcher off a neighbour's stripe; on aarch64 parts
/// with 128-byte lines, two stripes share a line. A config a storage does
/// not keep a window for is refused by
/// [`Breaker::try_new`](crate::Breaker::try_new) with a [`ConfigError`],
/// never ignored; on the configs it accepts, every storage behaves as the
/// default does.
///
/// # Examples
/// ```
/// use tripwire::breaker::{CountOnly, NoWindow};
/// use tripwire::{Breaker, BreakerConfig};
///
/// let consecutive = BreakerConfig::builder().failure_threshold(3).build()?;
/// let per_symbol: Breaker<NoWindow> = Breaker::try_new(consecutive)?;
/// assert!(size_of_val(&per_symbol) <= 1024);
///
/// let rate = BreakerConfig::builder().failure_threshold(0).failure_rate(0.5).count_window(20).build()?;
/// let err = Breaker::<NoWindow>::try_new(rate).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid breaker config: failure_rate = 0.5, expected 0 (off), as a Breaker<NoWindow> keeps no rolling window"
/// );
/// let windowed: Breaker<CountOnly> = Breaker::try_new(rate)?;
/// assert!(size_of_val(&windowed) < size_of::<Breaker>());
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
pub trait Windows: sealed::Sealed + core::fmt::Debug + Send + Sync {}

/// A breaker's counters, without a rolling window: for configs that trip
/// on consecutive failures only (no `failure_rate`, no `slow_rate`).
#[repr(C)]
#[derive(Debug)]
pub struct NoWindow {
    counters: Counters<Line>,
}

/// A breaker's counters and a time-based rolling window
/// ([`window`](crate::BreakerConfigBuilder::window)); configs without a
/// window run on it too.
#[repr(C)]
#[derive(Debug)]
pub struct TimeOnly {
    counters: Counters<Line>,
    window: Window<TimeWindow>,
}

/// A breaker's counters and a count-based rolling window
/// ([`count_window`](crate::BreakerConfigBuilder::count_window)); configs
/// without a window run on it too.
#[repr(C)]
#[derive(Debug)]
pub struct CountOnly {
    counters: Counters<Line>,
    window: Window<CountWindow>,
}

/// A breaker's counters and both kinds of rolling window, whichever its
/// config names: what [`Breaker::new`](crate::Breaker::new) and
/// [`NamedBreaker::new`](crate::NamedBreaker::new) make, shared regions
/// hold, and keyed maps, the C ABI and the Python binding use unless told
/// otherwise.
#[repr(C)]
#[derive(Debug)]
pub struct AnyWindow {
    counters: Counters<Padded>,
    window: Window<Both>,
}

impl Windows for NoWindow {}
impl Windows for TimeOnly {}
impl Windows for CountOnly {}
impl Windows for AnyWindow {}

impl AnyWindow {
    /// Where the rolling window starts in the storage.
    #[cfg(all(test, not(loom)))]
    pub(crate) const WINDOW_OFFSET: usize = core::mem::offset_of!(AnyWindow, window);
}

/// A refusal of a config by `storage`, which keeps `keeps`: `field` is
/// `value`, and `expected` is what the storage could run.
fn refused(
    field: &'static str,
    value: Value,
    expected: &'static str,
    storage: &'static str,
    keeps: &'static str,
) -> ConfigError {
    ConfigError { config: "breaker", field, value, rule: Rule::Kept { expected, storage, keeps } }
}

/// The rate that asks `config` for a window (the failure rate if both do).
fn rate(config: &BreakerConfig) -> (&'static str, Value) {
    if config.failure_rate() > 0.0 {
        ("failure_rate", Value::Float(config.failure_rate()))
    } else {
        ("slow_rate", Value::Float(config.slow_rate()))
    }
}

/// What a breaker asks of its storage. The lint allowances: the trait is
/// sealed, so only this crate names, implements or calls it, and the
/// crate's own types in its signatures never reach a user.
pub(crate) mod sealed {
    use super::*;

    #[allow(private_interfaces, reason = "sealed: only this crate implements or calls it")]
    pub trait Sealed: Sized {
        fn new() -> Self;

        /// Whether a breaker on this storage can run `config`.
        fn accepts(config: &BreakerConfig) -> Result<(), ConfigError>;

        /// Counts one `event`.
        fn count(&self, event: Event);

        /// The counters, and the successes a window counted.
        fn snapshot(&self, config: &BreakerConfig) -> Snapshot;

        /// See `Window::add`; `false` without a window.
        fn add(
            &self,
            cfg: &BreakerConfig,
            generation: u32,
            epoch: u64,
            failed: bool,
            slow: bool,
            current: impl Fn() -> bool,
        ) -> bool;

        /// See `Window::try_add_success`; `false` without a window.
        fn try_add_success(&self, cfg: &BreakerConfig, generation: u32, epoch: u64) -> bool;

        /// See `Window::totals`; `None` without a window.
        fn totals(&self, cfg: &BreakerConfig, generation: u32, current: impl Fn() -> bool) -> Option<Totals>;

        /// See `Window::is_valid`.
        fn window_is_valid(&self) -> bool;

        /// loom models only: see `Window::yield_in_fast_path`.
        #[cfg(loom)]
        fn yield_in_window_fast_path(&self);
    }

    #[allow(private_interfaces, reason = "sealed: only this crate implements or calls it")]
    impl Sealed for NoWindow {
        #[inline]
        fn new() -> Self {
            Self { counters: Counters::new() }
        }

        fn accepts(config: &BreakerConfig) -> Result<(), ConfigError> {
            if !config.windowed() {
                return Ok(());
            }
            let (field, value) = rate(config);
            Err(refused(field, value, "0 (off)", "NoWindow", "no rolling window"))
        }

        #[inline(always)]
        fn count(&self, event: Event) {
            self.counters.add(event);
        }

        fn snapshot(&self, _: &BreakerConfig) -> Snapshot {
            Snapshot::of(&self.counters)
        }

        #[inline(always)]
        fn add(&self, _: &BreakerConfig, _: u32, _: u64, _: bool, _: bool, _: impl Fn() -> bool) -> bool {
            false
        }

        #[inline(always)]
        fn try_add_success(&self, _: &BreakerConfig, _: u32, _: u64) -> bool {
            false
        }

        #[inline(always)]
        fn totals(&self, _: &BreakerConfig, _: u32, _: impl Fn() -> bool) -> Option<Totals> {
            None
        }

        fn window_is_valid(&self) -> bool {
            true
        }

        #[cfg(loom)]
        fn yield_in_window_fast_path(&self) {}
    }

    /// The storages with a window: the same forwarding, and a rule on the
    /// config's window kind.
    macro_rules! windowed {
        ($storage:ident, $stripe:ty, $kind:ty, |$config:ident| $refuse:expr) => {
            #[allow(private_interfaces, reason = "sealed: only this crate implements or calls it")]
            impl Sealed for $storage {
                #[inline]
                fn new() -> Self {
                    Self { counters: Counters::<$stripe>::new(), window: Window::<$kind>::new() }
                }

                fn accepts($config: &BreakerConfig) -> Result<(), ConfigError> {
                    match $refuse {
                        Some(err) => Err(err),
                        None => Ok(()),
                    }
                }

                #[inline(always)]
                fn count(&self, event: Event) {
                    self.counters.add(event);
                }

                fn snapshot(&self, config: &BreakerConfig) -> Snapshot {
                    let mut s = Snapshot::of(&self.counters);
                    // Successes counted in a rolling window are kept there (see `window`).
                    if config.windowed() && config.count_successes() {
                        s.successes = s.successes.wrapping_add(self.window.successes());
                    }
                    s
                }

                #[inline]
                fn add(
                    &self,
                    cfg: &BreakerConfig,
                    generation: u32,
                    epoch: u64,
                    failed: bool,
                    slow: bool,
                    current: impl Fn() -> bool,
                ) -> bool {
                    self.window.add(cfg, generation, epoch, failed, slow, current)
                }

                #[inline(always)]
                fn try_add_success(&self, cfg: &BreakerConfig, generation: u32, epoch: u64) -> bool {
                    self.window.try_add_success(cfg, generation, epoch)
                }

                #[inline]
                fn totals(
                    &self,
                    cfg: &BreakerConfig,
                    generation: u32,
                    current: impl Fn() -> bool,
                ) -> Option<Totals> {
                    self.window.totals(cfg, generation, current)
                }

                fn window_is_valid(&self) -> bool {
                    self.window.is_valid()
                }

                #[cfg(loom)]
                fn yield_in_window_fast_path(&self) {
                    self.window.yield_in_fast_path();
                }
            }
        };
    }

    windowed!(TimeOnly, Line, TimeWindow, |config| match config.rolling_window() {
        RollingWindow::Count { calls } if config.windowed() => Some(refused(
            "count_window",
            Value::Int(calls.into()),
            "a time window (count_window unset)",
            "TimeOnly",
            "no count window",
        )),
        _ => None,
    });
    windowed!(CountOnly, Line, CountWindow, |config| match config.rolling_window() {
        RollingWindow::Time { .. } if config.windowed() => Some(refused(
            "count_window",
            Value::Int(0),
            "a count window (count_window set)",
            "CountOnly",
            "no time window",
        )),
        _ => None,
    });
    windowed!(AnyWindow, Padded, Both, |_config| None);
}

// A windowless breaker is at most 1 KiB: 10,000 of them (a breaker per
// endpoint, host or symbol) in under 10 MiB. Loom's atomics are larger.
#[cfg(not(loom))]
const _: () = assert!(size_of::<crate::Breaker<NoWindow>>() <= 1024);
