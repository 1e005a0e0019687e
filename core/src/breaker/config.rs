//! Breaker configuration: a plain `#[repr(C)]` value, validated once by
//! [`BreakerConfigBuilder::build`] so that the hot path never checks it.

use core::time::Duration;

use crate::breaker::rate::Rate;
use crate::clock::duration_ns;
pub use crate::config_error::ConfigError;
use crate::config_error::{Rule, Value};

/// The config a breaker's errors name.
const BREAKER: &str = "breaker";

/// The largest consecutive-failure threshold: the count has 16 bits in the
/// state word.
pub const MAX_FAILURE_THRESHOLD: u32 = 0xFFFF;
/// The largest number of probes in flight at once: a Half-Open generation
/// has 10 probe slots, one bit each in the state word.
pub const MAX_HALF_OPEN: u32 = crate::breaker::state::PROBE_SLOTS;
/// The shortest cool-down accepted.
pub const MIN_OPEN_TIMEOUT: Duration = Duration::from_micros(1);
/// The longest cool-down accepted.
pub const MAX_OPEN_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
/// The longest hold a server may ask for, unless the config says otherwise
/// ([`BreakerConfigBuilder::max_hold`]): one hour, the longest rate-limit
/// window common APIs use.
pub const DEFAULT_MAX_HOLD: Duration = Duration::from_secs(3600);
/// How long a Half-Open probe may run before it counts as lost and a new
/// probe may take its place, unless the config says otherwise
/// ([`BreakerConfigBuilder::probe_timeout`]): one minute, longer than a
/// call with a few attempts, their timeouts and backoff usually takes.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest cool-down growth factor.
pub const MAX_GROWTH: f64 = 1000.0;
/// The narrowest rolling-window bucket.
pub const MIN_BUCKET_WIDTH: Duration = Duration::from_millis(1);
/// The widest rolling-window bucket.
pub const MAX_BUCKET_WIDTH: Duration = Duration::from_secs(3600);
/// The largest `min_calls`.
pub const MAX_MIN_CALLS: u32 = 1_000_000;

// The window's shape limits live here, with the other limits the builder
// checks; the windows size their rings from them (`window` depends on the
// config, never the other way round).

/// The most buckets a time-based window may have.
#[cfg(not(loom))]
pub const MAX_BUCKETS: u32 = 32;
/// The most buckets a time-based window may have (2 under loom, to keep
/// models small: every clear of the ring is then 6 words).
#[cfg(loom)]
pub const MAX_BUCKETS: u32 = 2;
/// The largest count-based window, in calls.
#[cfg(not(loom))]
pub const MAX_COUNT_WINDOW: u32 = 1000;
/// The largest count-based window, in calls (fewer under loom, where a
/// window files chunks of 2 calls in a ring of 4).
#[cfg(loom)]
pub const MAX_COUNT_WINDOW: u32 = 6;

/// Flag: successes are counted in the snapshot.
pub(crate) const COUNT_SUCCESSES: u32 = 1;
/// Flag: calls are timed (slow-call measurement).
pub(crate) const TIMED: u32 = 2;
/// Flag: a rate condition keeps the rolling window.
pub(crate) const WINDOWED: u32 = 4;
/// Flag: the rolling window counts calls, not time (set with [`WINDOWED`]).
pub(crate) const COUNTED: u32 = 8;

/// How a breaker decides to trip and to recover.
///
/// Build one with [`BreakerConfig::builder`]; every field is validated there,
/// so a `BreakerConfig` in hand is always usable. It is plain data
/// (`#[repr(C)]`, no pointers) because it is stored inside breakers that live
/// in memory shared between processes.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::BreakerConfig;
///
/// let config = BreakerConfig::builder()
///     .failure_threshold(5)
///     .open_timeout(Duration::from_secs(10))
///     .open_timeout_max(Duration::from_secs(120))
///     .open_timeout_growth(2.0)
///     .build()?;
/// assert_eq!(config.open_timeout(), Duration::from_secs(10));
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerConfig {
    pub(crate) open_timeout_ns: u64,
    pub(crate) open_timeout_max_ns: u64,
    pub(crate) open_timeout_growth: f64,
    pub(crate) open_timeout_jitter: f64,
    pub(crate) jitter_seed: u64,
    pub(crate) max_hold_ns: u64,
    pub(crate) probe_timeout_ns: u64,
    pub(crate) window_bucket_ns: u64,
    /// ⌊2^64 / `window_bucket_ns`⌋: an epoch is a multiply, not a division
    /// (see [`epoch`](Self::epoch)). Derived, and checked by `validate`.
    pub(crate) window_recip: u64,
    pub(crate) slow_call_ns: u64,
    pub(crate) failure_rate: f64,
    pub(crate) slow_rate: f64,
    /// The rates as the exact fractions a window's counts are compared
    /// with (see `rate`). Derived, and checked by `validate`.
    pub(crate) failure_fraction: Rate,
    pub(crate) slow_fraction: Rate,
    pub(crate) window_buckets: u32,
    /// 0: the window is time-based; N: it holds the last N calls.
    pub(crate) window_calls: u32,
    pub(crate) min_calls: u32,
    pub(crate) failure_threshold: u32,
    pub(crate) half_open_max: u32,
    pub(crate) half_open_successes: u32,
    /// [`COUNT_SUCCESSES`], plus [`TIMED`], [`WINDOWED`] and [`COUNTED`],
    /// which are derived from the other fields so that the hot path tests
    /// one word.
    pub(crate) flags: u32,
}

impl Default for BreakerConfig {
    #[inline]
    /// 5 consecutive failures trip it; 30 s cool-down, no growth, no
    /// jitter; one probe, which closes it on success and counts as lost
    /// after [`DEFAULT_PROBE_TIMEOUT`]; holds capped at
    /// [`DEFAULT_MAX_HOLD`]. No rate conditions
    /// (their window, when turned on, defaults to 10 × 1 s buckets and 10
    /// calls at least); no slow-call measurement.
    fn default() -> Self {
        Self {
            open_timeout_ns: 30_000_000_000,
            open_timeout_max_ns: 30_000_000_000,
            open_timeout_growth: 1.0,
            open_timeout_jitter: 0.0,
            jitter_seed: 0,
            max_hold_ns: DEFAULT_MAX_HOLD.as_secs() * 1_000_000_000,
            probe_timeout_ns: DEFAULT_PROBE_TIMEOUT.as_secs() * 1_000_000_000,
            window_bucket_ns: 1_000_000_000,
            window_recip: reciprocal(1_000_000_000),
            slow_call_ns: 0,
            failure_rate: 0.0,
            slow_rate: 0.0,
            failure_fraction: Rate::OFF,
            slow_fraction: Rate::OFF,
            // 10, or fewer where the ring is smaller (loom models use 2 slots).
            window_buckets: if MAX_BUCKETS < 10 { MAX_BUCKETS } else { 10 },
            window_calls: 0,
            min_calls: 10,
            failure_threshold: 5,
            half_open_max: 1,
            half_open_successes: 1,
            flags: COUNT_SUCCESSES,
        }
    }
}

impl BreakerConfig {
    #[inline]
    /// A builder starting from [`BreakerConfig::default`].
    pub fn builder() -> BreakerConfigBuilder {
        BreakerConfigBuilder { config: Self::default(), max_set: false, count_window: None }
    }

    #[inline]
    /// Consecutive failures that trip a Closed breaker.
    pub fn failure_threshold(&self) -> u32 {
        self.failure_threshold
    }

    #[inline]
    /// The first cool-down after a trip.
    pub fn open_timeout(&self) -> Duration {
        Duration::from_nanos(self.open_timeout_ns)
    }

    #[inline]
    /// The cap on the cool-down as it grows on each re-open from Half-Open.
    pub fn open_timeout_max(&self) -> Duration {
        Duration::from_nanos(self.open_timeout_max_ns)
    }

    #[inline]
    /// The factor the cool-down grows by on each re-open from Half-Open.
    pub fn open_timeout_growth(&self) -> f64 {
        self.open_timeout_growth
    }

    #[inline]
    /// The fraction of the cool-down that jitter may take off.
    pub fn open_timeout_jitter(&self) -> f64 {
        self.open_timeout_jitter
    }

    #[inline]
    /// The longest hold honoured: a server asking for a longer one
    /// ([`Breaker::open_for`](crate::Breaker::open_for)) gets this, and the
    /// hold is counted in [`Snapshot::capped_holds`](crate::Snapshot::capped_holds).
    pub fn max_hold(&self) -> Duration {
        Duration::from_nanos(self.max_hold_ns)
    }

    #[inline]
    /// How long a Half-Open probe may run before it counts as lost, and a
    /// new probe may take over (see [`BreakerConfigBuilder::probe_timeout`]).
    pub fn probe_timeout(&self) -> Duration {
        Duration::from_nanos(self.probe_timeout_ns)
    }

    /// How far ahead a hold's end may lie before it counts as garbage (see
    /// `deadline`): twice the longest hold.
    #[inline]
    pub(crate) fn hold_limit_ns(&self) -> u64 {
        // At most 14 days: validated, so no overflow.
        2 * self.max_hold_ns
    }

    /// As [`hold_limit_ns`](Self::hold_limit_ns), for the end of a cool-down.
    #[inline]
    pub(crate) fn wait_limit_ns(&self) -> u64 {
        // At most 14 days: validated, so no overflow.
        2 * self.open_timeout_max_ns
    }

    /// As [`hold_limit_ns`](Self::hold_limit_ns), for the time after which
    /// a Half-Open generation's probes count as lost.
    #[inline]
    pub(crate) fn probe_limit_ns(&self) -> u64 {
        // At most 14 days: validated, so no overflow.
        2 * self.probe_timeout_ns
    }

    #[inline]
    /// Probes allowed in flight at once in Half-Open.
    pub fn half_open_max(&self) -> u32 {
        self.half_open_max
    }

    #[inline]
    /// Successful probes needed to close a Half-Open breaker.
    pub fn half_open_successes(&self) -> u32 {
        self.half_open_successes
    }

    #[inline]
    /// Whether successes are counted in [`Snapshot`](crate::Snapshot).
    pub fn count_successes(&self) -> bool {
        self.flags & COUNT_SUCCESSES != 0
    }

    #[inline]
    /// The time-based window's shape: bucket count and bucket width. Kept
    /// (and validated) when a count-based window is chosen instead; see
    /// [`rolling_window`](Self::rolling_window) for the mode in use.
    pub fn window(&self) -> (u32, Duration) {
        (self.window_buckets, Duration::from_nanos(self.window_bucket_ns))
    }

    #[inline]
    /// The rolling window the rate conditions are measured over.
    pub fn rolling_window(&self) -> RollingWindow {
        match self.window_calls {
            0 => RollingWindow::Time {
                buckets: self.window_buckets,
                width: Duration::from_nanos(self.window_bucket_ns),
            },
            calls => RollingWindow::Count { calls },
        }
    }

    #[inline]
    /// Calls the window must hold before a rate can trip the breaker.
    pub fn min_calls(&self) -> u32 {
        self.min_calls
    }

    #[inline]
    /// Failure rate over the window that trips the breaker (0: off).
    pub fn failure_rate(&self) -> f64 {
        self.failure_rate
    }

    #[inline]
    /// Calls at least this long count as slow (zero: not measured).
    pub fn slow_call(&self) -> Duration {
        Duration::from_nanos(self.slow_call_ns)
    }

    #[inline]
    /// Slow-call rate over the window that trips the breaker (0: off).
    pub fn slow_rate(&self) -> f64 {
        self.slow_rate
    }

    /// Whether a rate condition needs the rolling window.
    #[inline]
    pub(crate) fn windowed(&self) -> bool {
        self.flags & WINDOWED != 0
    }

    /// Whether the rolling window is count-based (and kept).
    #[inline]
    pub(crate) fn counted(&self) -> bool {
        self.flags & COUNTED != 0
    }

    /// Whether recording an outcome takes more than the state word.
    #[inline]
    pub(crate) fn measures(&self) -> bool {
        self.flags & (TIMED | WINDOWED) != 0
    }

    /// Whether recording an outcome needs the time: calls are timed, or the
    /// window is time-based.
    #[inline]
    pub(crate) fn needs_time(&self) -> bool {
        self.flags & TIMED != 0 || self.flags & (WINDOWED | COUNTED) == WINDOWED
    }

    /// The time-based window's epoch of `now`: ⌊now × `window_recip` / 2^64⌋,
    /// one multiply. It never decreases as `now` grows, and lies within one
    /// of `now / width` (the reciprocal is rounded down), so every epoch but
    /// the first lasts `width` or `width + 1` ns. It stays below 2^45 for
    /// every `now` (width ≥ 1 ms).
    #[inline]
    pub(crate) fn epoch(&self, now: u64) -> u64 {
        ((u128::from(now) * u128::from(self.window_recip)) >> 64) as u64
    }

    /// The flags the fields imply, besides [`COUNT_SUCCESSES`].
    fn derived_flags(&self) -> u32 {
        let timed = if self.slow_call_ns != 0 { TIMED } else { 0 };
        let windowed = if self.failure_rate > 0.0 || self.slow_rate > 0.0 { WINDOWED } else { 0 };
        let counted = if windowed != 0 && self.window_calls != 0 { COUNTED } else { 0 };
        timed | windowed | counted
    }

    #[inline]
    /// Checks every field and every relation between fields.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let c = self;
        check_rate("failure_rate", c.failure_rate)?;
        check_rate("slow_rate", c.slow_rate)?;
        // Only a config read from a corrupted shared region can fail these.
        for (field, rate, fraction) in [
            ("failure_fraction", c.failure_rate, c.failure_fraction),
            ("slow_fraction", c.slow_rate, c.slow_fraction),
        ] {
            if fraction != Rate::of(rate) {
                let want = Value::Int(Rate::of(rate).packed());
                return Err(ConfigError {
                    config: BREAKER,
                    field,
                    value: Value::Int(fraction.packed()),
                    rule: Rule::Range { min: want, max: want, max_inclusive: true },
                });
            }
        }
        // Zero turns the consecutive condition off, if another one trips.
        if c.failure_threshold != 0 || !c.windowed() {
            check_range_u64(
                "failure_threshold",
                c.failure_threshold.into(),
                1,
                MAX_FAILURE_THRESHOLD.into(),
            )?;
        }
        check_range_u64("window_buckets", c.window_buckets.into(), 1, MAX_BUCKETS.into())?;
        check_duration("window_bucket_width", c.window_bucket_ns, MIN_BUCKET_WIDTH, MAX_BUCKET_WIDTH)?;
        // Only a config read from a corrupted shared region can fail this.
        if c.window_recip != reciprocal(c.window_bucket_ns) {
            let want = Value::Int(reciprocal(c.window_bucket_ns));
            return Err(ConfigError {
                config: BREAKER,
                field: "window_recip",
                value: Value::Int(c.window_recip),
                rule: Rule::Range { min: want, max: want, max_inclusive: true },
            });
        }
        if c.window_calls != 0 {
            check_range_u64("count_window", c.window_calls.into(), 1, MAX_COUNT_WINDOW.into())?;
        }
        check_range_u64("min_calls", c.min_calls.into(), 1, MAX_MIN_CALLS.into())?;
        // A count-based window never holds more than its calls.
        if c.windowed() && c.window_calls != 0 && c.min_calls > c.window_calls {
            return Err(ConfigError {
                config: BREAKER,
                field: "min_calls",
                value: Value::Int(c.min_calls.into()),
                rule: Rule::AtMost { field: "count_window", value: Value::Int(c.window_calls.into()) },
            });
        }
        if c.slow_call_ns != 0 {
            check_duration("slow_call", c.slow_call_ns, MIN_OPEN_TIMEOUT, MAX_OPEN_TIMEOUT)?;
        } else if c.slow_rate > 0.0 {
            return Err(ConfigError {
                config: BREAKER,
                field: "slow_rate",
                value: Value::Float(c.slow_rate),
                rule: Rule::Needs("slow_call"),
            });
        }
        check_duration("open_timeout", c.open_timeout_ns, MIN_OPEN_TIMEOUT, MAX_OPEN_TIMEOUT)?;
        check_duration("open_timeout_max", c.open_timeout_max_ns, MIN_OPEN_TIMEOUT, MAX_OPEN_TIMEOUT)?;
        if c.open_timeout_max_ns < c.open_timeout_ns {
            return Err(ConfigError {
                config: BREAKER,
                field: "open_timeout_max",
                value: Value::Duration(c.open_timeout_max_ns),
                rule: Rule::AtLeast { field: "open_timeout", value: Value::Duration(c.open_timeout_ns) },
            });
        }
        check_duration("max_hold", c.max_hold_ns, MIN_OPEN_TIMEOUT, MAX_OPEN_TIMEOUT)?;
        check_duration("probe_timeout", c.probe_timeout_ns, MIN_OPEN_TIMEOUT, MAX_OPEN_TIMEOUT)?;
        check_range_f64("open_timeout_growth", c.open_timeout_growth, 1.0, MAX_GROWTH, true)?;
        check_range_f64("open_timeout_jitter", c.open_timeout_jitter, 0.0, 1.0, false)?;
        check_range_u64("half_open_max", c.half_open_max.into(), 1, MAX_HALF_OPEN.into())?;
        check_range_u64("half_open_successes", c.half_open_successes.into(), 1, MAX_HALF_OPEN.into())?;
        if c.half_open_successes > c.half_open_max {
            return Err(ConfigError {
                config: BREAKER,
                field: "half_open_successes",
                value: Value::Int(c.half_open_successes.into()),
                rule: Rule::AtMost { field: "half_open_max", value: Value::Int(c.half_open_max.into()) },
            });
        }
        // Only a config read from a corrupted shared region can fail this.
        let want = c.derived_flags() | (c.flags & COUNT_SUCCESSES);
        if c.flags != want {
            return Err(ConfigError {
                config: BREAKER,
                field: "flags",
                value: Value::Int(c.flags.into()),
                rule: Rule::Range {
                    min: Value::Int(want.into()),
                    max: Value::Int(want.into()),
                    max_inclusive: true,
                },
            });
        }
        Ok(())
    }
}

#[inline]
fn check_range_u64(field: &'static str, v: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if (min..=max).contains(&v) {
        return Ok(());
    }
    Err(ConfigError {
        config: BREAKER,
        field,
        value: Value::Int(v),
        rule: Rule::Range { min: Value::Int(min), max: Value::Int(max), max_inclusive: true },
    })
}

#[inline]
fn check_range_f64(
    field: &'static str,
    v: f64,
    min: f64,
    max: f64,
    max_inclusive: bool,
) -> Result<(), ConfigError> {
    let below_max = if max_inclusive { v <= max } else { v < max };
    // NaN fails both comparisons, so it is rejected here too.
    if v >= min && below_max {
        return Ok(());
    }
    Err(ConfigError {
        config: BREAKER,
        field,
        value: Value::Float(v),
        rule: Rule::Range { min: Value::Float(min), max: Value::Float(max), max_inclusive },
    })
}

#[inline]
fn check_rate(field: &'static str, v: f64) -> Result<(), ConfigError> {
    // NaN fails the comparison, so it is rejected here too.
    if (0.0..=1.0).contains(&v) {
        return Ok(());
    }
    Err(ConfigError { config: BREAKER, field, value: Value::Float(v), rule: Rule::Rate })
}

#[inline]
fn check_duration(field: &'static str, ns: u64, min: Duration, max: Duration) -> Result<(), ConfigError> {
    let (min, max) = (duration_ns(min), duration_ns(max));
    if (min..=max).contains(&ns) {
        return Ok(());
    }
    Err(ConfigError {
        config: BREAKER,
        field,
        value: Value::Duration(ns),
        rule: Rule::Range { min: Value::Duration(min), max: Value::Duration(max), max_inclusive: true },
    })
}

#[inline]
/// ⌊2^64 / `width_ns`⌋, saturating at `u64::MAX`; 0 for a zero width (which
/// `validate` rejects). Computed once, when a config is built.
pub(crate) const fn reciprocal(width_ns: u64) -> u64 {
    if width_ns == 0 {
        return 0;
    }
    let r = (1u128 << 64) / width_ns as u128;
    if r > u64::MAX as u128 { u64::MAX } else { r as u64 }
}

/// The rolling window the rate conditions (`failure_rate`, `slow_rate`,
/// `min_calls`) are measured over; see [`BreakerConfig::rolling_window`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollingWindow {
    /// The calls recorded in the last `buckets` bucket widths.
    Time {
        /// Buckets in the window.
        buckets: u32,
        /// The width of one bucket.
        width: Duration,
    },
    /// The last `calls` calls.
    Count {
        /// Calls in the window.
        calls: u32,
    },
}

/// Sets the fields of a [`BreakerConfig`]; [`build`](Self::build) validates.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct BreakerConfigBuilder {
    config: BreakerConfig,
    /// Whether `open_timeout_max` was set explicitly: only an unset one
    /// follows `open_timeout`, whatever the order of the calls.
    max_set: bool,
    /// As given to [`count_window`](Self::count_window): kept apart so that
    /// 0 is an error, not the time-based window it stands for in the config.
    count_window: Option<u32>,
}

impl BreakerConfigBuilder {
    #[inline]
    /// Consecutive failures that trip a Closed breaker (1 to 65535; default
    /// 5; 0 turns this condition off when a rate condition is set).
    pub fn failure_threshold(mut self, n: u32) -> Self {
        self.config.failure_threshold = n;
        self
    }

    #[inline]
    /// The cool-down after a trip (1 µs to 7 days; default 30 s). Unless
    /// `open_timeout_max` is set (before or after this call), the cap
    /// equals it, so that a cool-down without growth needs one call.
    pub fn open_timeout(mut self, d: Duration) -> Self {
        let ns = duration_ns(d);
        self.config.open_timeout_ns = ns;
        if !self.max_set {
            self.config.open_timeout_max_ns = ns;
        }
        self
    }

    #[inline]
    /// The cap on the growing cool-down (at least `open_timeout`, at most 7
    /// days; default: equal to `open_timeout`). Once set, it is never
    /// changed by `open_timeout`: a cap below the cool-down is an error at
    /// [`build`](Self::build).
    pub fn open_timeout_max(mut self, d: Duration) -> Self {
        self.config.open_timeout_max_ns = duration_ns(d);
        self.max_set = true;
        self
    }

    #[inline]
    /// Factor applied to the cool-down on each re-open from Half-Open (1.0
    /// to 1000.0; default 1.0, no growth), up to `open_timeout_max`, which
    /// a factor above 1 needs set ([`build`](Self::build) says so
    /// otherwise). The cool-down returns to `open_timeout` once the breaker
    /// closes.
    pub fn open_timeout_growth(mut self, factor: f64) -> Self {
        self.config.open_timeout_growth = factor;
        self
    }

    #[inline]
    /// Fraction of the cool-down that jitter may take off, so that many
    /// processes tripped by one outage do not probe in the same instant (0.0
    /// to below 1.0; default 0.0). The jitter is a hash of the breaker's
    /// generation, the time it opened and `jitter_seed`: every process that
    /// shares one breaker computes the same cool-down.
    pub fn open_timeout_jitter(mut self, fraction: f64) -> Self {
        self.config.open_timeout_jitter = fraction;
        self
    }

    #[inline]
    /// Seed mixed into the cool-down jitter (default 0). Give separate
    /// breakers different seeds (e.g. the process id) when they read a
    /// coarse clock, whose readings collide more often.
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.config.jitter_seed = seed;
        self
    }

    #[inline]
    /// The longest hold a server may impose (1 µs to 7 days; default
    /// [`DEFAULT_MAX_HOLD`], one hour): a `Retry-After` or rate-limit reset
    /// asking for longer holds the breaker open this long, and is counted
    /// in [`Snapshot::capped_holds`](crate::Snapshot::capped_holds).
    pub fn max_hold(mut self, d: Duration) -> Self {
        self.config.max_hold_ns = duration_ns(d);
        self
    }

    #[inline]
    /// How long a Half-Open probe may run before it counts as lost (1 µs
    /// to 7 days; default [`DEFAULT_PROBE_TIMEOUT`], one minute). A probe
    /// that is merely slow keeps its slot and its outcome counts; once
    /// this long has passed since the breaker went Half-Open with every
    /// probe slot still taken, the next call is let through as the probe of
    /// a new generation, and the old probes' outcomes are counted but
    /// change nothing. A dropped Rust permit gives its slot back at once:
    /// this bound is for probes nobody records (a crashed process sharing
    /// the breaker, a C caller that forgot).
    ///
    /// It is also the longest a probe may run: a request admitted as a
    /// probe through the [`Pipeline`](crate::Pipeline) or the reqwest
    /// middleware ends by it, whatever its timeout,
    /// attempts and backoff would allow (no attempt or pause begins past
    /// it, and an async call is cut there, a failure), so a probe is never
    /// taken over while it runs ([`Breaker::probe_left`](crate::Breaker::probe_left)
    /// says how long one has; a tower stack bounds its probes with a
    /// [`TimeoutLayer`](crate::tower::TimeoutLayer) inside the breaker). Set it above what a healthy probe takes:
    /// with the retries inside the breaker
    /// ([`Nesting::BreakerOutsideRetry`](crate::pipeline::Nesting)), every
    /// attempt's timeout plus the pauses between them. It is independent
    /// of the cool-down: a probe that outlives `open_timeout` is not taken
    /// over.
    pub fn probe_timeout(mut self, d: Duration) -> Self {
        self.config.probe_timeout_ns = duration_ns(d);
        self
    }

    #[inline]
    /// Probes allowed in flight at once in Half-Open (1 to 10; default 1).
    pub fn half_open_max(mut self, n: u32) -> Self {
        self.config.half_open_max = n;
        self
    }

    #[inline]
    /// Successful probes that close a Half-Open breaker (1 to
    /// `half_open_max`; default 1).
    pub fn half_open_successes(mut self, n: u32) -> Self {
        self.config.half_open_successes = n;
        self
    }

    #[inline]
    /// Whether successes are counted in the snapshot (default true). Off, a
    /// Closed breaker's success path is loads only: no write at all.
    pub fn count_successes(mut self, on: bool) -> Self {
        self.config.flags =
            if on { self.config.flags | COUNT_SUCCESSES } else { self.config.flags & !COUNT_SUCCESSES };
        self
    }

    #[inline]
    /// Trip when the failure rate over the rolling window reaches `rate`
    /// (above 0, at most 1; 0 turns it off), once the window holds at least
    /// `min_calls` calls. Any configured condition trips the breaker. Rates
    /// are checked when a failure or a slow call is recorded: a plain
    /// success never trips a breaker, and its path stays one atomic add.
    ///
    /// Compared in integers: a rate of k/n trips at exactly k failures of
    /// n calls. The rate becomes the simplest fraction within 2^-30 of it,
    /// which is exact for every k/n with n up to 23,170 (so for every rate
    /// with up to four decimals: 0.28 is 7/25 and trips at 7 of 25).
    pub fn failure_rate(mut self, rate: f64) -> Self {
        self.config.failure_rate = rate;
        self
    }

    #[inline]
    /// Calls at least `threshold` long count as slow (1 µs to 7 days; zero
    /// turns measuring off). Measuring reads the clock when a call is
    /// admitted and when it is recorded.
    pub fn slow_call(mut self, threshold: Duration) -> Self {
        self.config.slow_call_ns = duration_ns(threshold);
        self
    }

    #[inline]
    /// Trip when the rate of slow calls over the rolling window reaches
    /// `rate` (above 0, at most 1; 0 turns it off), with the same
    /// `min_calls` rule, compared in integers as
    /// [`failure_rate`](Self::failure_rate) is. Needs
    /// [`slow_call`](Self::slow_call).
    pub fn slow_rate(mut self, rate: f64) -> Self {
        self.config.slow_rate = rate;
        self
    }

    #[inline]
    /// A time-based rolling window (the default): `buckets` buckets (1 to
    /// 32) of `width` each (1 ms to 1 h); default 10 × 1 s. The rates are
    /// those of the calls recorded in the last `buckets` epochs, where the
    /// epoch of a time `now` (ns) is ⌊now × ⌊2^64 / width⌋ / 2^64⌋: one
    /// multiply, within one of `now / width`. Any clock value and any idle
    /// time count alike. Replaces a [`count_window`](Self::count_window)
    /// set before.
    pub fn window(mut self, buckets: u32, width: Duration) -> Self {
        self.config.window_buckets = buckets;
        self.config.window_bucket_ns = duration_ns(width);
        self.count_window = None;
        self
    }

    #[inline]
    /// A count-based rolling window: the rates are those of the last
    /// `calls` calls (1 to 1000), however long ago they were made, as
    /// resilience4j's `COUNT_BASED` window. Its success path reads no
    /// clock. `min_calls` must not exceed `calls`. Replaces a
    /// [`window`](Self::window) set before.
    pub fn count_window(mut self, calls: u32) -> Self {
        self.count_window = Some(calls);
        self
    }

    #[inline]
    /// Calls the window must hold before a rate can trip (1 to 1,000,000;
    /// default 10).
    pub fn min_calls(mut self, n: u32) -> Self {
        self.config.min_calls = n;
        self
    }

    #[inline]
    /// Validates and returns the config, or the first field that is wrong.
    pub fn build(mut self) -> Result<BreakerConfig, ConfigError> {
        if self.count_window == Some(0) {
            let max = Value::Int(MAX_COUNT_WINDOW.into());
            return Err(ConfigError {
                config: BREAKER,
                field: "count_window",
                value: Value::Int(0),
                rule: Rule::Range { min: Value::Int(1), max, max_inclusive: true },
            });
        }
        self.config.window_calls = self.count_window.unwrap_or(0);
        self.config.flags = (self.config.flags & COUNT_SUCCESSES) | self.config.derived_flags();
        self.config.window_recip = reciprocal(self.config.window_bucket_ns);
        self.config.failure_fraction = Rate::of(self.config.failure_rate);
        self.config.slow_fraction = Rate::of(self.config.slow_rate);
        self.config.validate()?;
        // Growth with the cap left at its default (the cool-down itself)
        // would grow nothing: say so rather than ignore the setting.
        if self.config.open_timeout_growth > 1.0 && !self.max_set {
            return Err(ConfigError {
                config: BREAKER,
                field: "open_timeout_growth",
                value: Value::Float(self.config.open_timeout_growth),
                rule: Rule::Needs("open_timeout_max"),
            });
        }
        Ok(self.config)
    }
}

impl BreakerConfig {
    /// The seed mixed into the cool-down jitter.
    pub fn jitter_seed(&self) -> u64 {
        self.jitter_seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{format, string::ToString};

    fn err(b: BreakerConfigBuilder) -> ConfigError {
        b.build().expect_err("config should be rejected")
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(BreakerConfig::builder().build(), Ok(BreakerConfig::default()));
    }

    #[test]
    fn every_bad_field_is_named_with_its_value_and_range() {
        let b = BreakerConfig::builder;
        let cases = [
            (err(b().failure_threshold(0)), "failure_threshold = 0, expected 1 to 65535"),
            (err(b().failure_threshold(70_000)), "failure_threshold = 70000, expected 1 to 65535"),
            (err(b().open_timeout(Duration::ZERO)), "open_timeout = 0ns, expected 1µs to 604800s"),
            (
                err(b().open_timeout(Duration::from_secs(8 * 24 * 3600))),
                "open_timeout = 691200s, expected 1µs to 604800s",
            ),
            (
                err(b().open_timeout(Duration::from_secs(10)).open_timeout_max(Duration::from_secs(5))),
                "open_timeout_max = 5s, expected at least open_timeout (10s)",
            ),
            (err(b().open_timeout_growth(f64::NAN)), "open_timeout_growth = NaN, expected 1 to 1000"),
            (err(b().open_timeout_growth(0.5)), "open_timeout_growth = 0.5, expected 1 to 1000"),
            (
                err(b().open_timeout(Duration::from_secs(5)).open_timeout_growth(2.0)),
                "open_timeout_growth = 2, expected open_timeout_max to be set as well",
            ),
            (
                err(b().open_timeout_jitter(-0.1)),
                "open_timeout_jitter = -0.1, expected at least 0 and below 1",
            ),
            (err(b().open_timeout_jitter(1.0)), "open_timeout_jitter = 1, expected at least 0 and below 1"),
            (err(b().half_open_max(0)), "half_open_max = 0, expected 1 to 10"),
            (err(b().half_open_max(11)), "half_open_max = 11, expected 1 to 10"),
            (err(b().half_open_successes(0)), "half_open_successes = 0, expected 1 to 10"),
            (err(b().max_hold(Duration::ZERO)), "max_hold = 0ns, expected 1µs to 604800s"),
            (
                err(b().half_open_max(2).half_open_successes(3)),
                "half_open_successes = 3, expected at most half_open_max (2)",
            ),
            (
                err(b().failure_rate(1.5)),
                "failure_rate = 1.5, expected a rate above 0 and at most 1 (0 turns it off)",
            ),
            (
                err(b().failure_rate(f64::NAN)),
                "failure_rate = NaN, expected a rate above 0 and at most 1 (0 turns it off)",
            ),
            (err(b().slow_rate(0.5)), "slow_rate = 0.5, expected slow_call to be set as well"),
            (
                err(b().failure_rate(0.5).window(0, Duration::from_secs(1))),
                "window_buckets = 0, expected 1 to 32",
            ),
            (
                err(b().failure_rate(0.5).window(33, Duration::from_secs(1))),
                "window_buckets = 33, expected 1 to 32",
            ),
            (
                err(b().failure_rate(0.5).window(10, Duration::from_micros(10))),
                "window_bucket_width = 10µs, expected 1ms to 3600s",
            ),
            (err(b().failure_rate(0.5).min_calls(0)), "min_calls = 0, expected 1 to 1000000"),
            (err(b().slow_call(Duration::from_nanos(10))), "slow_call = 10ns, expected 1µs to 604800s"),
            (err(b().count_window(0)), "count_window = 0, expected 1 to 1000"),
            (err(b().failure_rate(0.5).count_window(1001)), "count_window = 1001, expected 1 to 1000"),
            (
                err(b().failure_rate(0.5).count_window(50).min_calls(51)),
                "min_calls = 51, expected at most count_window (50)",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), format!("invalid breaker config: {want}"));
        }
    }

    #[test]
    fn the_config_says_which_window_it_keeps() {
        let time = BreakerConfig::builder().failure_rate(0.5).window(4, Duration::from_millis(250)).build();
        assert_eq!(
            time.unwrap().rolling_window(),
            RollingWindow::Time { buckets: 4, width: Duration::from_millis(250) }
        );
        let count = BreakerConfig::builder().failure_rate(0.5).count_window(100).build().unwrap();
        assert_eq!(count.rolling_window(), RollingWindow::Count { calls: 100 });
        assert!(count.counted() && !count.needs_time());
        // The last call wins; without a rate, min_calls above the window is fine.
        let back =
            BreakerConfig::builder().count_window(5).window(3, Duration::from_secs(2)).build().unwrap();
        assert_eq!(back.rolling_window(), RollingWindow::Time { buckets: 3, width: Duration::from_secs(2) });
        let unused = BreakerConfig::builder().count_window(5).build().unwrap();
        assert!(!unused.windowed() && !unused.counted());
    }

    #[test]
    fn epochs_are_a_multiply_within_one_of_a_division_over_the_whole_clock() {
        for width in [1_000_000u64, 1_000_003, 1_000_000_000, 3_600_000_000_000] {
            let c = BreakerConfig::builder().window(1, Duration::from_nanos(width)).build().unwrap();
            let mut previous = 0;
            for now in
                [0, 1, width - 1, width, width + 1, 1 << 40, (1 << 63) + 12_345, u64::MAX - width, u64::MAX]
            {
                let e = c.epoch(now);
                assert!(e <= now / width && now / width - e <= 1, "width {width}, now {now}: {e}");
                assert!(e >= previous && e < 1 << 45);
                previous = e;
            }
        }
        // A corrupted reciprocal is named.
        let mut c = BreakerConfig::default();
        c.window_recip += 1;
        assert_eq!(c.validate().unwrap_err().field(), "window_recip");
    }

    #[test]
    fn a_rate_condition_may_replace_the_consecutive_one() {
        assert!(BreakerConfig::builder().failure_threshold(0).failure_rate(0.5).build().is_ok());
        let c = BreakerConfig::builder()
            .failure_threshold(0)
            .slow_call(Duration::from_secs(1))
            .slow_rate(0.8)
            .build();
        assert!(c.is_ok());
    }

    #[test]
    fn an_explicit_open_timeout_max_survives_every_order_of_calls() {
        let (t, max) = (Duration::from_secs(5), Duration::from_secs(30));
        let orders: [fn(BreakerConfigBuilder, Duration, Duration) -> BreakerConfigBuilder; 2] = [
            |b, t, max| b.open_timeout(t).open_timeout_max(max),
            |b, t, max| b.open_timeout_max(max).open_timeout(t),
        ];
        for order in orders {
            let c = order(BreakerConfig::builder(), t, max).build().unwrap();
            assert_eq!((c.open_timeout(), c.open_timeout_max()), (t, max));
            // The maximum set equal to the default cool-down, then a shorter cool-down.
            let c = order(BreakerConfig::builder(), t, Duration::from_secs(30)).build().unwrap();
            assert_eq!(c.open_timeout_max(), Duration::from_secs(30));
            // Set twice: the last explicit value of each field wins.
            let c = order(order(BreakerConfig::builder(), max, max), t, t).build().unwrap();
            assert_eq!((c.open_timeout(), c.open_timeout_max()), (t, t));
        }
        // An explicit maximum below a later cool-down is an error, not silently raised.
        let e = err(BreakerConfig::builder().open_timeout_max(t).open_timeout(max));
        assert_eq!(e.field(), "open_timeout_max");
    }

    #[test]
    fn open_timeout_drags_an_unset_max_along() {
        let c = BreakerConfig::builder().open_timeout(Duration::from_secs(90)).build().unwrap();
        assert_eq!(c.open_timeout_max(), Duration::from_secs(90));
        let c = BreakerConfig::builder()
            .open_timeout_max(Duration::from_secs(600))
            .open_timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        assert_eq!(c.open_timeout_max(), Duration::from_secs(600));
    }
}
