//! Breaker configuration: a plain `#[repr(C)]` value, validated once by
//! [`BreakerConfigBuilder::build`] so that the hot path never checks it.

use core::fmt;
use core::time::Duration;

/// The largest consecutive-failure threshold: the count has 16 bits in the
/// state word.
pub const MAX_FAILURE_THRESHOLD: u32 = 0xFFFF;
/// The largest number of probes in flight at once (6 bits in the state word).
pub const MAX_HALF_OPEN: u32 = 63;
/// The shortest cool-down accepted.
pub const MIN_OPEN_TIMEOUT: Duration = Duration::from_micros(1);
/// The longest cool-down accepted.
pub const MAX_OPEN_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
/// The largest cool-down growth factor.
pub const MAX_GROWTH: f64 = 1000.0;

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
    pub(crate) failure_threshold: u32,
    pub(crate) half_open_max: u32,
    pub(crate) half_open_successes: u32,
    /// 1 when successes are counted in the snapshot, 0 when not.
    pub(crate) count_successes: u32,
}

impl Default for BreakerConfig {
    /// 5 consecutive failures trip it; 30 s cool-down, no growth, no
    /// jitter; one probe, which closes it on success.
    fn default() -> Self {
        Self {
            open_timeout_ns: 30_000_000_000,
            open_timeout_max_ns: 30_000_000_000,
            open_timeout_growth: 1.0,
            open_timeout_jitter: 0.0,
            jitter_seed: 0,
            failure_threshold: 5,
            half_open_max: 1,
            half_open_successes: 1,
            count_successes: 1,
        }
    }
}

impl BreakerConfig {
    /// A builder starting from [`BreakerConfig::default`].
    pub fn builder() -> BreakerConfigBuilder {
        BreakerConfigBuilder { config: Self::default() }
    }

    /// Consecutive failures that trip a Closed breaker.
    pub fn failure_threshold(&self) -> u32 {
        self.failure_threshold
    }

    /// The first cool-down after a trip.
    pub fn open_timeout(&self) -> Duration {
        Duration::from_nanos(self.open_timeout_ns)
    }

    /// The cap on the cool-down as it grows on each re-open from Half-Open.
    pub fn open_timeout_max(&self) -> Duration {
        Duration::from_nanos(self.open_timeout_max_ns)
    }

    /// The factor the cool-down grows by on each re-open from Half-Open.
    pub fn open_timeout_growth(&self) -> f64 {
        self.open_timeout_growth
    }

    /// The fraction of the cool-down that jitter may take off.
    pub fn open_timeout_jitter(&self) -> f64 {
        self.open_timeout_jitter
    }

    /// Probes allowed in flight at once in Half-Open.
    pub fn half_open_max(&self) -> u32 {
        self.half_open_max
    }

    /// Successful probes needed to close a Half-Open breaker.
    pub fn half_open_successes(&self) -> u32 {
        self.half_open_successes
    }

    /// Whether successes are counted in [`Snapshot`](crate::Snapshot).
    pub fn count_successes(&self) -> bool {
        self.count_successes != 0
    }

    /// Checks every field and every relation between fields.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let c = self;
        check_range_u64("failure_threshold", c.failure_threshold.into(), 1, MAX_FAILURE_THRESHOLD.into())?;
        check_duration("open_timeout", c.open_timeout_ns)?;
        check_duration("open_timeout_max", c.open_timeout_max_ns)?;
        if c.open_timeout_max_ns < c.open_timeout_ns {
            return Err(ConfigError {
                field: "open_timeout_max",
                value: Value::Duration(c.open_timeout_max_ns),
                rule: Rule::AtLeast { field: "open_timeout", value: Value::Duration(c.open_timeout_ns) },
            });
        }
        check_range_f64("open_timeout_growth", c.open_timeout_growth, 1.0, MAX_GROWTH, true)?;
        check_range_f64("open_timeout_jitter", c.open_timeout_jitter, 0.0, 1.0, false)?;
        check_range_u64("half_open_max", c.half_open_max.into(), 1, MAX_HALF_OPEN.into())?;
        check_range_u64("half_open_successes", c.half_open_successes.into(), 1, MAX_HALF_OPEN.into())?;
        if c.half_open_successes > c.half_open_max {
            return Err(ConfigError {
                field: "half_open_successes",
                value: Value::Int(c.half_open_successes.into()),
                rule: Rule::AtMost { field: "half_open_max", value: Value::Int(c.half_open_max.into()) },
            });
        }
        check_range_u64("count_successes", c.count_successes.into(), 0, 1)?;
        Ok(())
    }
}

fn check_range_u64(field: &'static str, v: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if (min..=max).contains(&v) {
        return Ok(());
    }
    Err(ConfigError {
        field,
        value: Value::Int(v),
        rule: Rule::Range { min: Value::Int(min), max: Value::Int(max), max_inclusive: true },
    })
}

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
        field,
        value: Value::Float(v),
        rule: Rule::Range { min: Value::Float(min), max: Value::Float(max), max_inclusive },
    })
}

fn check_duration(field: &'static str, ns: u64) -> Result<(), ConfigError> {
    let (min, max) = (duration_ns(MIN_OPEN_TIMEOUT), duration_ns(MAX_OPEN_TIMEOUT));
    if (min..=max).contains(&ns) {
        return Ok(());
    }
    Err(ConfigError {
        field,
        value: Value::Duration(ns),
        rule: Rule::Range { min: Value::Duration(min), max: Value::Duration(max), max_inclusive: true },
    })
}

/// A duration in nanoseconds, saturating at `u64::MAX` (584 years).
pub(crate) fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Sets the fields of a [`BreakerConfig`]; [`build`](Self::build) validates.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct BreakerConfigBuilder {
    config: BreakerConfig,
}

impl BreakerConfigBuilder {
    /// Consecutive failures that trip a Closed breaker (1 to 65535; default 5).
    pub fn failure_threshold(mut self, n: u32) -> Self {
        self.config.failure_threshold = n;
        self
    }

    /// The cool-down after a trip (1 µs to 7 days; default 30 s). Also sets
    /// `open_timeout_max` if that was below it, so that a cool-down without
    /// growth needs one call.
    pub fn open_timeout(mut self, d: Duration) -> Self {
        let ns = duration_ns(d);
        if self.config.open_timeout_max_ns < ns
            || self.config.open_timeout_max_ns == self.config.open_timeout_ns
        {
            self.config.open_timeout_max_ns = ns;
        }
        self.config.open_timeout_ns = ns;
        self
    }

    /// The cap on the growing cool-down (at least `open_timeout`, at most 7
    /// days; default: equal to `open_timeout`).
    pub fn open_timeout_max(mut self, d: Duration) -> Self {
        self.config.open_timeout_max_ns = duration_ns(d);
        self
    }

    /// Factor applied to the cool-down on each re-open from Half-Open (1.0
    /// to 1000.0; default 1.0, no growth). The cool-down returns to
    /// `open_timeout` once the breaker closes.
    pub fn open_timeout_growth(mut self, factor: f64) -> Self {
        self.config.open_timeout_growth = factor;
        self
    }

    /// Fraction of the cool-down that jitter may take off, so that many
    /// processes tripped by one outage do not probe in the same instant (0.0
    /// to below 1.0; default 0.0). The jitter is a hash of the breaker's
    /// generation, the time it opened and `jitter_seed`: every process that
    /// shares one breaker computes the same cool-down.
    pub fn open_timeout_jitter(mut self, fraction: f64) -> Self {
        self.config.open_timeout_jitter = fraction;
        self
    }

    /// Seed mixed into the cool-down jitter (default 0). Give separate
    /// breakers different seeds (e.g. the process id) when they read a
    /// coarse clock, whose readings collide more often.
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.config.jitter_seed = seed;
        self
    }

    /// Probes allowed in flight at once in Half-Open (1 to 63; default 1).
    pub fn half_open_max(mut self, n: u32) -> Self {
        self.config.half_open_max = n;
        self
    }

    /// Successful probes that close a Half-Open breaker (1 to
    /// `half_open_max`; default 1).
    pub fn half_open_successes(mut self, n: u32) -> Self {
        self.config.half_open_successes = n;
        self
    }

    /// Whether successes are counted in the snapshot (default true). Off, a
    /// Closed breaker's success path is loads only: no write at all.
    pub fn count_successes(mut self, on: bool) -> Self {
        self.config.count_successes = on.into();
        self
    }

    /// Validates and returns the config, or the first field that is wrong.
    pub fn build(self) -> Result<BreakerConfig, ConfigError> {
        self.config.validate()?;
        Ok(self.config)
    }
}

/// A config field that was out of range, with its value and what is accepted.
///
/// # Examples
/// ```
/// use tripwire::BreakerConfig;
/// let err = BreakerConfig::builder().failure_threshold(0).build().unwrap_err();
/// assert_eq!(err.field(), "failure_threshold");
/// assert_eq!(err.to_string(), "invalid breaker config: failure_threshold = 0, expected 1 to 65535");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConfigError {
    field: &'static str,
    value: Value,
    rule: Rule,
}

impl ConfigError {
    /// The name of the offending field, as the builder method is named.
    pub fn field(&self) -> &'static str {
        self.field
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Int(u64),
    Float(f64),
    /// Nanoseconds.
    Duration(u64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Rule {
    Range { min: Value, max: Value, max_inclusive: bool },
    AtMost { field: &'static str, value: Value },
    AtLeast { field: &'static str, value: Value },
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Duration(ns) => write!(f, "{:?}", Duration::from_nanos(ns)),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid breaker config: {} = {}, expected ", self.field, self.value)?;
        match self.rule {
            Rule::Range { min, max, max_inclusive: true } => write!(f, "{min} to {max}"),
            Rule::Range { min, max, max_inclusive: false } => write!(f, "at least {min} and below {max}"),
            Rule::AtMost { field, value } => write!(f, "at most {field} ({value})"),
            Rule::AtLeast { field, value } => write!(f, "at least {field} ({value})"),
        }
    }
}

impl core::error::Error for ConfigError {}

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
                err(b().open_timeout_jitter(-0.1)),
                "open_timeout_jitter = -0.1, expected at least 0 and below 1",
            ),
            (err(b().open_timeout_jitter(1.0)), "open_timeout_jitter = 1, expected at least 0 and below 1"),
            (err(b().half_open_max(0)), "half_open_max = 0, expected 1 to 63"),
            (err(b().half_open_max(64)), "half_open_max = 64, expected 1 to 63"),
            (err(b().half_open_successes(0)), "half_open_successes = 0, expected 1 to 63"),
            (
                err(b().half_open_max(2).half_open_successes(3)),
                "half_open_successes = 3, expected at most half_open_max (2)",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), format!("invalid breaker config: {want}"));
        }
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
