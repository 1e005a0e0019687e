//! The retry budget: a lock-free token bucket that keeps retries to a
//! fraction of recent calls, as gRPC's retry throttling and Finagle's
//! `RetryBudget` do, so that retries cannot multiply the load on a
//! dependency that is already failing.
//!
//! Every call deposits `ratio` of a token; every retry withdraws a whole
//! one, and is refused when less than one is left. Tokens do not pile up:
//! every `ttl / 8` the balance moves 1/8 of the way back to the reserve
//! (`min_retries_per_sec × ttl`), so a deposit's weight falls to about a
//! third after one `ttl` and below 1% after four, and its expected lifetime
//! is one `ttl`. At a steady call rate the balance is `ratio × calls in the
//! last ttl`, as in Finagle; a quiet hour banks nothing beyond the reserve,
//! and the reserve lets a client that has just started retry at all. A
//! drained reserve refills at `min_retries_per_sec` at first (1/8 of it per
//! `ttl / 8`), more slowly as it fills.
//!
//! # Representation
//! One `AtomicU64` holds both halves of the state, so every deposit and
//! every withdrawal is one compare-and-swap that sees and moves both:
//!
//! | bits | field |
//! | --- | --- |
//! | 63–32 | the tick (`now / (ttl / 8)`, wrapping) the balance was last decayed to |
//! | 31 | set once the tick has been stamped (a new budget has none yet) |
//! | 30–0 | the balance in milli-tokens (at most 2^31 − 1: 2.1 million tokens) |
//!
//! The tick wraps after 2^32 ticks; a gap is read as a signed 32-bit
//! difference, so one longer than 2^31 ticks (310 days at the shortest
//! `ttl`) may be misread. A time older than the stamp (another thread read
//! the clock earlier and got here later) decays nothing.
//!
//! # Orderings
//! Every access is `Relaxed`: the word carries no data but itself, and every
//! change is a read-modify-write of the whole word, so no deposit is lost
//! and no token is spent twice whatever the interleaving.

use core::time::Duration;

use crossbeam_utils::CachePadded;

use crate::clock::Clock;
use crate::clock::duration_ns;
use crate::config_error::ConfigError;
use crate::retry::config::{MAX_NS, Value, check_range};
use crate::sync::{AtomicU64, Ordering};

/// Bit 31: the tick is stamped.
const STAMPED: u32 = 1 << 31;
/// The largest balance, in milli-tokens.
const MAX_BALANCE: u32 = STAMPED - 1;
/// Milli-tokens in one token: the cost of one retry.
const TOKEN: u32 = 1000;
/// The decay happens in this many steps per `ttl`.
const TICKS_PER_TTL: u64 = 8;
/// `7/8` in 32-bit fixed point: the share of the distance to the reserve
/// that survives one tick.
const KEEP_Q32: u64 = 7 << 29;
/// After this many ticks the distance to the reserve is below one
/// milli-token for any 32-bit balance ((7/8)^256 < 2^-49).
const FORGET_TICKS: u32 = 256;
/// The largest reserve, in tokens.
pub const MAX_RESERVE_TOKENS: f64 = 1_000_000.0;
/// The largest deposit per call, in tokens.
pub const MAX_RATIO: f64 = 100.0;
/// The shortest `ttl`.
pub const MIN_BUDGET_TTL: Duration = Duration::from_millis(100);

/// How a [`RetryBudget`] earns and forgets tokens.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::RetryBudgetConfig;
///
/// let config = RetryBudgetConfig::builder()
///     .ratio(0.1)
///     .ttl(Duration::from_secs(10))
///     .min_retries_per_sec(1.0)
///     .build()?;
/// assert_eq!(config.reserve_tokens(), 10.0);
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryBudgetConfig {
    ratio: f64,
    min_retries_per_sec: f64,
    ttl_ns: u64,
    /// `ttl / 8`, at least 1.
    tick_ns: u64,
    deposit_milli: u32,
    reserve_milli: u32,
}

impl Default for RetryBudgetConfig {
    /// Finagle's defaults: retries up to 20% of calls over 10 s, and at
    /// least 10 per second.
    fn default() -> Self {
        Self::derive(0.2, 10.0, 10_000_000_000)
    }
}

impl RetryBudgetConfig {
    /// A builder starting from [`RetryBudgetConfig::default`].
    pub fn builder() -> RetryBudgetConfigBuilder {
        RetryBudgetConfigBuilder { config: Self::default() }
    }

    fn derive(ratio: f64, min_retries_per_sec: f64, ttl_ns: u64) -> Self {
        let ttl_s = ttl_ns as f64 / 1e9;
        // `as` saturates (and maps NaN to 0); `validate` rejects such values.
        Self {
            ratio,
            min_retries_per_sec,
            ttl_ns,
            tick_ns: (ttl_ns / TICKS_PER_TTL).max(1),
            deposit_milli: (ratio * f64::from(TOKEN) + 0.5) as u32,
            reserve_milli: (min_retries_per_sec * ttl_s * f64::from(TOKEN) + 0.5) as u32,
        }
    }

    /// The share of a token each call deposits.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// How long a deposit counts, on average.
    pub fn ttl(&self) -> Duration {
        Duration::from_nanos(self.ttl_ns)
    }

    /// The retry rate allowed however few calls there are.
    pub fn min_retries_per_sec(&self) -> f64 {
        self.min_retries_per_sec
    }

    /// The balance the budget starts at and returns to when idle:
    /// `min_retries_per_sec × ttl` tokens.
    pub fn reserve_tokens(&self) -> f64 {
        f64::from(self.reserve_milli) / f64::from(TOKEN)
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        const C: &str = "retry budget";
        let f = Value::Float;
        check_range(C, "ratio", f(self.ratio), f(0.0), f(MAX_RATIO))?;
        let min_ttl = Value::Duration(duration_ns(MIN_BUDGET_TTL));
        check_range(C, "ttl", Value::Duration(self.ttl_ns), min_ttl, Value::Duration(MAX_NS))?;
        let max_rate = MAX_RESERVE_TOKENS / (self.ttl_ns as f64 / 1e9);
        check_range(C, "min_retries_per_sec", f(self.min_retries_per_sec), f(0.0), f(max_rate))
    }
}

/// Sets the fields of a [`RetryBudgetConfig`]; [`build`](Self::build)
/// validates.
///
/// # Examples
/// ```
/// use tripwire::retry::RetryBudgetConfig;
/// let err = RetryBudgetConfig::builder().ratio(-1.0).build().unwrap_err();
/// assert_eq!(err.to_string(), "invalid retry budget config: ratio = -1, expected 0 to 100");
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct RetryBudgetConfigBuilder {
    config: RetryBudgetConfig,
}

impl RetryBudgetConfigBuilder {
    /// The share of a token each call deposits: 0.2 lets retries add 20% to
    /// the load (0.0 to 100.0, kept to a thousandth; default 0.2).
    pub fn ratio(mut self, ratio: f64) -> Self {
        let c = self.config;
        self.config = RetryBudgetConfig::derive(ratio, c.min_retries_per_sec, c.ttl_ns);
        self
    }

    /// How long a deposit counts, on average (100 ms to 7 days; default 10 s).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        let c = self.config;
        self.config = RetryBudgetConfig::derive(c.ratio, c.min_retries_per_sec, duration_ns(ttl));
        self
    }

    /// Retries per second allowed however few calls there are (0.0 up to a
    /// reserve of a million tokens; default 10.0).
    pub fn min_retries_per_sec(mut self, rate: f64) -> Self {
        let c = self.config;
        self.config = RetryBudgetConfig::derive(c.ratio, rate, c.ttl_ns);
        self
    }

    /// Validates and returns the config, or the first field that is wrong.
    pub fn build(self) -> Result<RetryBudgetConfig, ConfigError> {
        self.config.validate()?;
        Ok(self.config)
    }
}

/// Retries allowed as a fraction of recent calls; shared by every caller
/// of one dependency, lock-free.
///
/// Call [`deposit`](Self::deposit) once per call (not per retry) and
/// [`try_withdraw`](Self::try_withdraw) before each retry; a `false` means
/// the retry must not be made. The time comes from a [`Clock`], as for the
/// breaker.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::{RetryBudget, RetryBudgetConfig};
/// use tripwire::ManualClock;
///
/// let clock = ManualClock::new(0);
/// let config = RetryBudgetConfig::builder().ratio(0.5).min_retries_per_sec(0.0).build()?;
/// let budget = RetryBudget::new(config);
/// assert!(!budget.try_withdraw(&clock)); // nothing earned yet
/// budget.deposit(&clock);
/// budget.deposit(&clock);
/// assert!(budget.try_withdraw(&clock)); // two calls earned one retry
/// assert!(!budget.try_withdraw(&clock));
///
/// for _ in 0..100 {
///     budget.deposit(&clock);
/// }
/// clock.advance(Duration::from_secs(3600)); // a quiet hour
/// assert_eq!(budget.available_milli(&clock), 0);
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
///
/// # Size and alignment
/// `#[repr(C)]`, plain data with no pointer; the word has a cache line of
/// its own.
#[repr(C)]
#[derive(Debug)]
pub struct RetryBudget {
    word: CachePadded<AtomicU64>,
    config: RetryBudgetConfig,
}

/// The state word: tick and balance (see the module's Representation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Word(u64);

impl Word {
    /// A stamped word.
    fn new(tick: u32, balance: u32) -> Self {
        Self(u64::from(tick) << 32 | u64::from(STAMPED | balance))
    }

    /// A new budget's word: the balance, no stamp yet.
    fn unstamped(balance: u32) -> Self {
        Self(u64::from(balance))
    }

    fn is_stamped(self) -> bool {
        self.0 as u32 & STAMPED != 0
    }

    fn tick(self) -> u32 {
        (self.0 >> 32) as u32
    }

    fn balance(self) -> u32 {
        self.0 as u32 & MAX_BALANCE
    }

    /// The word decayed to `now_tick`.
    fn at(self, now_tick: u32, reserve: u32) -> Word {
        // Never stamped? Then the balance is the reserve, which decay does
        // not move: stamp it.
        if !self.is_stamped() {
            return Word::new(now_tick, self.balance());
        }
        let elapsed = now_tick.wrapping_sub(self.tick()) as i32;
        // Has a tick passed since the stamp? (Never move the stamp back.)
        if elapsed <= 0 {
            return self;
        }
        Word::new(now_tick, decay(self.balance(), reserve, elapsed as u32))
    }
}

/// `balance` moved towards `reserve` for `ticks` ticks: the distance is
/// multiplied by (7/8)^ticks (in 32-bit fixed point, rounded down).
pub(crate) fn decay(balance: u32, reserve: u32, ticks: u32) -> u32 {
    if ticks >= FORGET_TICKS {
        return reserve;
    }
    let keep = pow_q32(KEEP_Q32, ticks);
    let shrink = |d: u32| ((u128::from(d) * u128::from(keep)) >> 32) as u32;
    if balance >= reserve { reserve + shrink(balance - reserve) } else { reserve - shrink(reserve - balance) }
}

/// `x^n` for `x` in 32-bit fixed point (≤ 1.0), by squaring.
fn pow_q32(mut x: u64, mut n: u32) -> u64 {
    let mut acc: u64 = 1 << 32;
    while n > 0 {
        if n & 1 == 1 {
            acc = ((u128::from(acc) * u128::from(x)) >> 32) as u64;
        }
        x = ((u128::from(x) * u128::from(x)) >> 32) as u64;
        n >>= 1;
    }
    acc
}

impl RetryBudget {
    /// A budget holding its reserve.
    pub fn new(config: RetryBudgetConfig) -> Self {
        Self { word: CachePadded::new(AtomicU64::new(Word::unstamped(config.reserve_milli).0)), config }
    }

    /// The config it was made with.
    pub fn config(&self) -> &RetryBudgetConfig {
        &self.config
    }

    /// Counts one call: adds `ratio` of a token (saturating at 2^31 − 1
    /// milli-tokens).
    #[inline]
    pub fn deposit(&self, clock: &impl Clock) {
        let add = self.config.deposit_milli;
        self.update(clock.now(), |b| Some(b.saturating_add(add).min(MAX_BALANCE)));
    }

    /// Takes one token for a retry; `false` (taking nothing) when less than
    /// a whole token is left.
    #[inline]
    pub fn try_withdraw(&self, clock: &impl Clock) -> bool {
        // Is a whole token left?
        self.update(clock.now(), |b| b.checked_sub(TOKEN))
    }

    /// Milli-tokens available now (a report: another thread may change it
    /// at once).
    pub fn available_milli(&self, clock: &impl Clock) -> u32 {
        // Relaxed: see the module's Orderings.
        Word(self.word.load(Ordering::Relaxed))
            .at(self.tick(clock.now()), self.config.reserve_milli)
            .balance()
    }

    fn tick(&self, now: u64) -> u32 {
        // Wrapping by design (see the module's Representation).
        (now / self.config.tick_ns) as u32
    }

    /// Decays the word to `now`, then applies `op` to the balance in one
    /// CAS; `false` if `op` declines (nothing is written then).
    #[inline]
    fn update(&self, now: u64, op: impl Fn(u32) -> Option<u32>) -> bool {
        let (tick, reserve) = (self.tick(now), self.config.reserve_milli);
        // Relaxed: see the module's Orderings.
        let mut w = Word(self.word.load(Ordering::Relaxed));
        loop {
            let decayed = w.at(tick, reserve);
            // Does the operation go ahead on this balance?
            let Some(balance) = op(decayed.balance()) else { return false };
            let next = Word::new(decayed.tick(), balance);
            // Would the CAS change nothing?
            if next == w {
                return true;
            }
            // Relaxed: see the module's Orderings.
            match self.word.compare_exchange_weak(w.0, next.0, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(actual) => w = Word(actual),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FixedClock;
    use std::string::ToString;

    #[test]
    fn decay_moves_a_share_of_the_distance_per_tick() {
        assert_eq!(decay(1000, 0, 0), 1000);
        assert_eq!(decay(1000, 0, 1), 875);
        assert_eq!(decay(1000, 0, 2), 765);
        assert_eq!(decay(0, 1000, 1), 125);
        assert_eq!(decay(5000, 1000, 1), 4500);
        assert_eq!(decay(MAX_BALANCE, 0, 255), 0);
        assert_eq!(decay(MAX_BALANCE, 7, 300), 7);
        assert_eq!(pow_q32(KEEP_Q32, 0), 1 << 32);
    }

    #[test]
    fn the_stamp_never_goes_back_and_starts_unset() {
        let w = Word::unstamped(500).at(0, 500);
        assert_eq!(w, Word::new(0, 500));
        let w = Word::unstamped(500).at(u32::MAX, 500);
        assert_eq!(w, Word::new(u32::MAX, 500));
        let w = Word::new(10, 8000).at(9, 0);
        assert_eq!(w, Word::new(10, 8000));
        let w = Word::new(u32::MAX, 8000).at(3, 0);
        assert_eq!(w.tick(), 3);
        assert_eq!(w.balance(), decay(8000, 0, 4));
    }

    #[test]
    fn the_reserve_is_there_from_the_start_and_refills() {
        let c = RetryBudgetConfig::builder().ratio(0.0).min_retries_per_sec(0.2).build().unwrap();
        let b = RetryBudget::new(c);
        let t = FixedClock(5_000_000_000);
        assert!(b.try_withdraw(&t) && b.try_withdraw(&t));
        assert!(!b.try_withdraw(&t));
        assert!(b.try_withdraw(&FixedClock(5_000_000_000 + 60_000_000_000)));
    }

    #[test]
    fn config_errors_name_the_field() {
        let b = RetryBudgetConfig::builder;
        let cases = [
            (b().ratio(-0.1), "ratio = -0.1, expected 0 to 100"),
            (b().ratio(f64::NAN), "ratio = NaN, expected 0 to 100"),
            (b().ttl(Duration::from_millis(10)), "ttl = 10ms, expected 100ms to 604800s"),
            (b().min_retries_per_sec(200_000.0), "min_retries_per_sec = 200000, expected 0 to 100000"),
        ];
        for (builder, want) in cases {
            let err = builder.build().unwrap_err();
            assert_eq!(err.to_string(), std::format!("invalid retry budget config: {want}"));
        }
        assert_eq!(RetryBudgetConfig::default().reserve_tokens(), 100.0);
    }
}
