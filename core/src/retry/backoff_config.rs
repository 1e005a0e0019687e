//! Backoff configuration: plain `#[repr(C)]` data, validated once by
//! [`BackoffConfigBuilder::build`].

use core::fmt;
use core::str::FromStr;
use core::time::Duration;

use crate::clock::duration_ns;
use crate::config_error::ConfigError;
use crate::retry::config::{MAX_NS, Value, check_at_least, check_range};

/// The largest growth factor between two delays.
pub const MAX_BACKOFF_FACTOR: f64 = 100.0;

/// How a delay is spread around the exponential curve, as compared in the
/// AWS Architecture Blog's "Exponential Backoff And Jitter".
///
/// With `exp = min(cap, base × factor^attempt)`:
///
/// | jitter | delay | floor |
/// | --- | --- | --- |
/// | [`None`](Self::None) | `exp` | `exp` |
/// | [`Full`](Self::Full) | uniform in `[0, exp]` | 0 |
/// | [`Equal`](Self::Equal) | `exp/2` + uniform in `[0, exp/2]` | `exp/2` |
/// | [`Decorrelated`](Self::Decorrelated) | `min(cap, uniform in [base, 3 × previous])` | `base` |
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::{Backoff, BackoffConfig, Jitter};
///
/// let second = Duration::from_secs(1);
/// let config = BackoffConfig::builder().base(second).factor(1.0).jitter(Jitter::Equal).build()?;
/// let delay = Backoff::new(config).next_delay();
/// assert!(second / 2 <= delay && delay <= second);
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Jitter {
    /// The exponential curve itself: every client retries in step.
    None = 0,
    /// Anywhere between zero and the curve: the least total work.
    #[default]
    Full = 1,
    /// At least half the curve: never retries almost at once.
    Equal = 2,
    /// Grows from the previous delay rather than the attempt count
    /// (`factor` is not used).
    Decorrelated = 3,
}

impl Jitter {
    /// Every mode, in the order of their discriminants.
    pub const ALL: [Jitter; 4] = [Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Decorrelated];

    /// The mode's name in lower case: what [`FromStr`](core::str::FromStr)
    /// parses and a binding shows.
    ///
    /// # Examples
    /// ```
    /// use tripwire::retry::Jitter;
    /// assert_eq!(Jitter::Decorrelated.as_str(), "decorrelated");
    /// assert_eq!("equal".parse(), Ok(Jitter::Equal));
    /// let err = "wild".parse::<Jitter>().unwrap_err();
    /// assert_eq!(err.to_string(), r#"expected "none", "full", "equal" or "decorrelated""#);
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
        }
    }
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Jitter {
    type Err = ParseJitterError;

    /// The mode named `s` exactly as [`Jitter::as_str`] names it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Jitter::ALL.into_iter().find(|j| j.as_str() == s).ok_or(ParseJitterError)
    }
}

/// A name that is none of [`Jitter::ALL`]'s; its message lists the names
/// accepted (the caller adds the name it was given, which this error does
/// not keep, so that it needs no allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseJitterError;

impl fmt::Display for ParseJitterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("expected ")?;
        let last = Jitter::ALL.len() - 1;
        for (i, j) in Jitter::ALL.iter().enumerate() {
            let sep = match i {
                0 => "",
                _ if i == last => " or ",
                _ => ", ",
            };
            write!(f, "{sep}\"{j}\"")?;
        }
        Ok(())
    }
}

impl core::error::Error for ParseJitterError {}

/// How a [`Backoff`](crate::retry::Backoff) spaces retries.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::{BackoffConfig, Jitter};
///
/// let config = BackoffConfig::builder()
///     .base(Duration::from_millis(50))
///     .cap(Duration::from_secs(5))
///     .jitter(Jitter::Decorrelated)
///     .build()?;
/// assert_eq!(config.cap(), Duration::from_secs(5));
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffConfig {
    pub(crate) base_ns: u64,
    pub(crate) cap_ns: u64,
    pub(crate) factor: f64,
    pub(crate) seed: u64,
    pub(crate) jitter: Jitter,
}

impl Default for BackoffConfig {
    /// 100 ms doubling up to 30 s, full jitter, seed 0.
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl BackoffConfig {
    /// [`BackoffConfig::default`], in a constant.
    pub(crate) const DEFAULT: Self =
        Self { base_ns: 100_000_000, cap_ns: 30_000_000_000, factor: 2.0, seed: 0, jitter: Jitter::Full };
}

impl BackoffConfig {
    /// A builder starting from [`BackoffConfig::default`].
    pub fn builder() -> BackoffConfigBuilder {
        BackoffConfigBuilder { config: Self::default(), cap_set: false }
    }

    /// The first delay of the exponential curve.
    pub fn base(&self) -> Duration {
        Duration::from_nanos(self.base_ns)
    }

    /// The longest computed delay.
    pub fn cap(&self) -> Duration {
        Duration::from_nanos(self.cap_ns)
    }

    /// The growth factor between two points of the curve.
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// The jitter mode.
    pub fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// The seed mixed into each instance's random generator.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Checks every field and every relation between fields.
    pub fn validate(&self) -> Result<(), ConfigError> {
        const C: &str = "backoff";
        let (dur, max) = (Value::Duration, Value::Duration(MAX_NS));
        check_range(C, "base", dur(self.base_ns), dur(1), max)?;
        check_range(C, "cap", dur(self.cap_ns), dur(1), max)?;
        check_at_least(C, ("cap", self.cap_ns), ("base", self.base_ns))?;
        let factor = Value::Float(self.factor);
        check_range(C, "factor", factor, Value::Float(1.0), Value::Float(MAX_BACKOFF_FACTOR))
    }
}

/// Sets the fields of a [`BackoffConfig`]; [`build`](Self::build) validates.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::BackoffConfig;
/// let err = BackoffConfig::builder().cap(Duration::ZERO).build().unwrap_err();
/// assert_eq!(err.field(), "cap");
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct BackoffConfigBuilder {
    config: BackoffConfig,
    /// Whether `cap` was set explicitly: only an unset one is raised to
    /// `base`, whatever the order of the calls.
    cap_set: bool,
}

impl BackoffConfigBuilder {
    /// The first delay (1 ns to 7 days; default 100 ms). Also raises `cap`
    /// to it if `cap` is below and was never set (before or after this
    /// call); an explicit `cap` below `base` is an error at
    /// [`build`](Self::build).
    pub fn base(mut self, d: Duration) -> Self {
        self.config.base_ns = duration_ns(d);
        if !self.cap_set {
            self.config.cap_ns = BackoffConfig::default().cap_ns.max(self.config.base_ns);
        }
        self
    }

    /// The longest computed delay (at least `base`, at most 7 days; default
    /// 30 s). A delay set with [`Backoff::override_next`](crate::retry::Backoff::override_next)
    /// is not capped.
    pub fn cap(mut self, d: Duration) -> Self {
        self.config.cap_ns = duration_ns(d);
        self.cap_set = true;
        self
    }

    /// Growth between two points of the curve (1.0 to 100.0; default 2.0).
    pub fn factor(mut self, factor: f64) -> Self {
        self.config.factor = factor;
        self
    }

    /// The jitter mode (default [`Jitter::Full`]).
    pub fn jitter(mut self, jitter: Jitter) -> Self {
        self.config.jitter = jitter;
        self
    }

    /// Mixed into every instance's random seed (default 0). Processes that
    /// start many backoffs at the same moment can pass something of their
    /// own (a host or worker id) on top of what
    /// [`Backoff::new`](crate::retry::Backoff::new) already mixes in.
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = seed;
        self
    }

    /// Validates and returns the config, or the first field that is wrong.
    pub fn build(self) -> Result<BackoffConfig, ConfigError> {
        self.config.validate()?;
        Ok(self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(BackoffConfig::builder().build(), Ok(BackoffConfig::default()));
    }

    #[test]
    fn every_bad_field_is_named_with_its_value_and_range() {
        let b = BackoffConfig::builder;
        let cases = [
            (b().base(Duration::ZERO), "base = 0ns, expected 1ns to 604800s"),
            (b().cap(Duration::from_secs(8 * 24 * 3600)), "cap = 691200s, expected 1ns to 604800s"),
            (
                b().base(Duration::from_secs(2)).cap(Duration::from_secs(1)),
                "cap = 1s, expected at least base (2s)",
            ),
            (b().factor(f64::NAN), "factor = NaN, expected 1 to 100"),
            (b().factor(101.0), "factor = 101, expected 1 to 100"),
        ];
        for (builder, want) in cases {
            let err = builder.build().unwrap_err();
            assert_eq!(err.config(), "backoff");
            assert_eq!(err.to_string(), std::format!("invalid backoff config: {want}"));
        }
    }

    #[test]
    fn every_jitter_name_parses_back_and_no_other_does() {
        for j in Jitter::ALL {
            assert_eq!(j.as_str().parse(), Ok(j));
            assert_eq!(Jitter::ALL[j as usize], j, "ALL is in discriminant order");
        }
        for bad in ["", "Full", "full ", "random"] {
            assert_eq!(bad.parse::<Jitter>(), Err(ParseJitterError), "{bad:?}");
        }
    }

    #[test]
    fn an_explicit_cap_survives_every_order_of_calls() {
        let (base, cap) = (Duration::from_secs(5), Duration::from_secs(1));
        for b in [BackoffConfig::builder().base(base).cap(cap), BackoffConfig::builder().cap(cap).base(base)]
        {
            assert_eq!(
                b.build().unwrap_err().to_string(),
                "invalid backoff config: cap = 1s, expected at least base (5s)"
            );
        }
        let c = BackoffConfig::builder()
            .cap(Duration::from_secs(60))
            .base(Duration::from_secs(1))
            .build()
            .unwrap();
        assert_eq!(c.cap(), Duration::from_secs(60));
        // An unset cap follows the last base, never an earlier one.
        let c = BackoffConfig::builder()
            .base(Duration::from_secs(90))
            .base(Duration::from_secs(1))
            .build()
            .unwrap();
        assert_eq!(c.cap(), BackoffConfig::default().cap());
    }

    #[test]
    fn base_drags_a_lower_cap_along() {
        let c = BackoffConfig::builder().base(Duration::from_secs(60)).build().unwrap();
        assert_eq!(c.cap(), Duration::from_secs(60));
    }
}
