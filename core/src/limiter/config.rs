//! One limit's settings: units per period, the burst, and the constants of
//! its cell rate derived from them once, when the config is built.

use core::time::Duration;

use crate::clock::duration_ns;
use crate::config_error::{ConfigError, Value, check_range};

const LIMIT: &str = "rate limit";

/// The most units a limit may allow per period.
pub const MAX_UNITS: u32 = 1_000_000_000;
/// The shortest period accepted.
pub const MIN_PERIOD: Duration = Duration::from_millis(1);
/// The longest period accepted.
pub const MAX_PERIOD: Duration = Duration::from_secs(7 * 24 * 3600);

/// One limit: at most `units` in any stretch of time `period` long
/// (a sliding window, so every fixed window an exchange counts in holds
/// at most `units` too), of which up to `burst` may go at once.
///
/// Built by [`LimitConfig::builder`]; see the [module docs](super) for
/// what the burst costs.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::limiter::LimitConfig;
///
/// // Binance's request weight: 6,000 per minute.
/// let weight = LimitConfig::builder(6_000, Duration::from_secs(60)).build()?;
/// assert_eq!(weight.burst(), 300, "a twentieth by default");
/// // Of the 6,000, 5,700 a minute are paced, 300 may go at once.
/// assert_eq!(weight.emission_interval(), Duration::from_nanos(10_526_316));
///
/// let err = LimitConfig::builder(50, Duration::from_secs(10)).burst(26).build().unwrap_err();
/// assert_eq!(err.to_string(), "invalid rate limit config: burst = 26, expected 1 to 25");
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitConfig {
    pub(crate) units: u32,
    pub(crate) period_ns: u64,
    pub(crate) burst: u32,
    /// The time one unit stays counted: ⌈period / (units − burst)⌉.
    pub(crate) emission_ns: u64,
    /// How far ahead of now the counted units may reach for a cost to go
    /// at once: `burst` units' time.
    pub(crate) tolerance_ns: u64,
    /// The longest a caller may be told to wait or reserve ahead: one
    /// period's units, `units` × the emission interval.
    pub(crate) max_wait_ns: u64,
    /// How far ahead the counted units may legitimately reach: anything
    /// further was written by a clock that has since gone back, or is
    /// garbage, and is read as this far.
    pub(crate) horizon_ns: u64,
}

impl LimitConfig {
    /// A limit of `units` per `period`; [`build`](LimitConfigBuilder::build)
    /// checks both.
    pub fn builder(units: u32, period: Duration) -> LimitConfigBuilder {
        LimitConfigBuilder { units, period_ns: duration_ns(period), burst: None }
    }

    /// Units allowed in any stretch of one period.
    pub fn units(&self) -> u32 {
        self.units
    }

    /// The period.
    pub fn period(&self) -> Duration {
        Duration::from_nanos(self.period_ns)
    }

    /// Units that may go at once, after a quiet period.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// How long one unit stays counted: the period over the paced units
    /// (`units − burst`), rounded up, so that the limit is never exceeded.
    pub fn emission_interval(&self) -> Duration {
        Duration::from_nanos(self.emission_ns)
    }

    /// The longest wait [`RateLimiter::acquire`](super::RateLimiter::acquire)
    /// reserves ahead: one period's worth of units.
    pub fn max_wait(&self) -> Duration {
        Duration::from_nanos(self.max_wait_ns)
    }
}

/// Builds a [`LimitConfig`].
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct LimitConfigBuilder {
    units: u32,
    period_ns: u64,
    burst: Option<u32>,
}

impl LimitConfigBuilder {
    /// Units that may go at once after a quiet period (1 to half the
    /// units; default a twentieth of them, at least 1). A cost above it is
    /// never admitted. Every unit of burst is a unit less of paced
    /// throughput: the limit sustains `units − burst` per period.
    pub fn burst(mut self, burst: u32) -> Self {
        self.burst = Some(burst);
        self
    }

    /// The config, or the first setting out of range: `units` (2 to
    /// [`MAX_UNITS`]), `period` ([`MIN_PERIOD`] to [`MAX_PERIOD`]), `burst`.
    pub fn build(self) -> Result<LimitConfig, ConfigError> {
        let Self { units, period_ns, burst } = self;
        check_range(LIMIT, "units", Value::Int(units.into()), Value::Int(2), Value::Int(MAX_UNITS.into()))?;
        let (min, max) = (duration_ns(MIN_PERIOD), duration_ns(MAX_PERIOD));
        check_range(LIMIT, "period", Value::Duration(period_ns), Value::Duration(min), Value::Duration(max))?;
        let burst = burst.unwrap_or((units / 20).max(1));
        check_range(LIMIT, "burst", Value::Int(burst.into()), Value::Int(1), Value::Int((units / 2).into()))?;
        // units − burst ≥ units / 2 ≥ 1; each product below stays under
        // 2^64: emission ≤ 2 × period / units + 1, so units × emission is
        // at most 2 × 7 days + 10^9 ns.
        let emission_ns = period_ns.div_ceil(u64::from(units - burst));
        let max_wait_ns = u64::from(units) * emission_ns;
        Ok(LimitConfig {
            units,
            period_ns,
            burst,
            emission_ns,
            tolerance_ns: u64::from(burst) * emission_ns,
            max_wait_ns,
            horizon_ns: 2 * max_wait_ns,
        })
    }
}
