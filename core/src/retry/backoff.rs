//! Exponential backoff with a cap and a choice of jitter, for one retry
//! loop at a time: a small `&mut self` value with its own random generator.
//!
//! Arithmetic is on `u64` nanoseconds; the growth factor is applied with a
//! plain `f64` multiplication (no `powi`, which would need libm on
//! `no_std`).

use core::time::Duration;

use crate::breaker::cooldown::splitmix64;
use crate::retry::backoff_config::{BackoffConfig, Jitter};
use crate::sync::{GlobalAtomicU64, Ordering};

/// Growth of the upper bound in [`Jitter::Decorrelated`]: `3 × previous`,
/// as in the AWS analysis.
const DECORRELATED_GROWTH: u64 = 3;

/// Gamma of the splitmix64 sequence (the golden ratio in 64 bits).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// Backoffs made so far in this process: every [`Backoff::new`] draws a
/// different number from it.
static INSTANCES: GlobalAtomicU64 = GlobalAtomicU64::new(0);

/// The delays between retries of one operation.
///
/// Each instance draws from its own splitmix64 generator. [`Backoff::new`]
/// seeds it from a process-wide counter (so two instances in one process
/// never start from the same state), the config's `seed`, the address of
/// that counter (which address-space randomisation varies between
/// processes) and, with `std`, the process id. Two different states give
/// sequences that could only meet after about 2^64 / (draws made) tries,
/// which is never in practice. [`Backoff::seeded`] takes the seed as given,
/// for tests and replays.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::{Backoff, BackoffConfig, Jitter};
///
/// let config = BackoffConfig::builder()
///     .base(Duration::from_millis(100))
///     .cap(Duration::from_secs(1))
///     .jitter(Jitter::None)
///     .build()?;
/// let mut backoff = Backoff::new(config);
/// let delays: Vec<_> = (0..5).map(|_| backoff.next_delay().as_millis()).collect();
/// assert_eq!(delays, [100, 200, 400, 800, 1000]);
///
/// // The server said when to come back (`Retry-After: 3`): that wins once.
/// backoff.override_next(Duration::from_secs(3));
/// assert_eq!(backoff.next_delay(), Duration::from_secs(3));
///
/// backoff.reset();
/// assert_eq!(backoff.next_delay(), Duration::from_millis(100));
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Backoff {
    config: BackoffConfig,
    rng: u64,
    /// Delays handed out since the last reset.
    attempt: u32,
    /// The un-jittered curve at this attempt: `min(cap, base × factor^attempt)`.
    curve_ns: u64,
    /// The previous delay, for [`Jitter::Decorrelated`].
    prev_ns: u64,
    /// A delay the caller set for the next draw.
    next_override: Option<Duration>,
}

impl Backoff {
    /// A backoff with a seed no other instance in this process shares (see
    /// the type's doc).
    pub fn new(config: BackoffConfig) -> Self {
        // Relaxed: a counter that hands out distinct numbers; orders nothing.
        let n = INSTANCES.fetch_add(1, Ordering::Relaxed);
        let place = core::ptr::addr_of!(INSTANCES).addr() as u64;
        #[cfg(feature = "std")]
        let place = place ^ (u64::from(std::process::id()) << 32);
        // splitmix64 is a bijection: distinct `n` give distinct seeds.
        Self::seeded(config, splitmix64(n) ^ splitmix64(place ^ config.seed))
    }

    /// A backoff whose random sequence is fixed by `seed` alone: two
    /// instances with one seed and one config give the same delays.
    pub fn seeded(config: BackoffConfig, seed: u64) -> Self {
        Self {
            config,
            rng: splitmix64(seed),
            attempt: 0,
            curve_ns: config.base_ns,
            prev_ns: config.base_ns,
            next_override: None,
        }
    }

    /// The config it was made with.
    pub fn config(&self) -> &BackoffConfig {
        &self.config
    }

    /// Delays handed out since it was made or last reset.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Makes the next [`next_delay`](Self::next_delay) return exactly `delay`
    /// (not capped, not jittered), e.g. from a `Retry-After` header or an
    /// exchange's rate-limit reset time. The curve still advances by one
    /// step, and a decorrelated backoff continues from `delay` (clamped to
    /// `[base, cap]`).
    pub fn override_next(&mut self, delay: Duration) {
        self.next_override = Some(delay);
    }

    /// The delay to wait before the next retry.
    pub fn next_delay(&mut self) -> Duration {
        let c = self.config;
        let delay = if let Some(d) = self.next_override.take() {
            self.prev_ns = crate::clock::duration_ns(d).clamp(c.base_ns, c.cap_ns);
            d
        } else {
            let curve = self.curve_ns;
            let ns = match c.jitter {
                Jitter::None => curve,
                Jitter::Full => self.uniform(0, curve),
                Jitter::Equal => curve / 2 + self.uniform(0, curve - curve / 2),
                Jitter::Decorrelated => {
                    let hi = self.prev_ns.saturating_mul(DECORRELATED_GROWTH);
                    let ns = self.uniform(c.base_ns, hi).min(c.cap_ns);
                    self.prev_ns = ns;
                    ns
                }
            };
            Duration::from_nanos(ns)
        };
        self.step();
        delay
    }

    /// Back to the first delay; the random sequence goes on (it is not
    /// replayed).
    pub fn reset(&mut self) {
        self.attempt = 0;
        self.curve_ns = self.config.base_ns;
        self.prev_ns = self.config.base_ns;
        self.next_override = None;
    }

    /// Advances the curve by one factor, up to the cap.
    fn step(&mut self) {
        self.attempt = self.attempt.saturating_add(1);
        let c = &self.config;
        // Capped already? Then it stays there.
        if self.curve_ns < c.cap_ns {
            // `as` saturates, and values up to 7 days (< 2^50 ns) are exact in f64.
            let next = (self.curve_ns as f64 * c.factor) as u64;
            self.curve_ns = next.clamp(self.curve_ns, c.cap_ns);
        }
    }

    /// A uniform draw in `[lo, hi]` (`lo` if `hi < lo`), by Lemire's
    /// multiply-shift; its bias is below `(hi - lo) / 2^64`.
    fn uniform(&mut self, lo: u64, hi: u64) -> u64 {
        let span = u128::from(hi.saturating_sub(lo)) + 1;
        self.rng = self.rng.wrapping_add(GAMMA);
        let r = splitmix64(self.rng);
        lo + ((u128::from(r) * span) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(jitter: Jitter) -> BackoffConfig {
        BackoffConfig::builder()
            .base(Duration::from_millis(10))
            .cap(Duration::from_millis(1000))
            .factor(3.0)
            .jitter(jitter)
            .build()
            .unwrap()
    }

    #[test]
    fn the_curve_grows_by_the_factor_up_to_the_cap() {
        let mut b = Backoff::seeded(config(Jitter::None), 1);
        let got: [u128; 7] = core::array::from_fn(|_| b.next_delay().as_millis());
        assert_eq!(got, [10, 30, 90, 270, 810, 1000, 1000]);
        assert_eq!(b.attempt(), 7);
    }

    #[test]
    fn a_factor_of_one_is_constant() {
        let c = BackoffConfig::builder().factor(1.0).jitter(Jitter::None).build().unwrap();
        let mut b = Backoff::seeded(c, 1);
        assert!((0..10).all(|_| b.next_delay() == Duration::from_millis(100)));
    }

    #[test]
    fn override_wins_once_and_the_curve_goes_on() {
        let mut b = Backoff::seeded(config(Jitter::None), 1);
        b.override_next(Duration::from_secs(60));
        assert_eq!(b.next_delay(), Duration::from_secs(60));
        assert_eq!(b.next_delay(), Duration::from_millis(30));
    }

    #[test]
    fn decorrelated_continues_from_an_override() {
        let mut b = Backoff::seeded(config(Jitter::Decorrelated), 7);
        b.override_next(Duration::from_secs(60));
        b.next_delay();
        // Clamped to the cap, so the next draw is in [base, cap].
        assert_eq!(b.prev_ns, 1_000_000_000);
        let d = b.next_delay();
        assert!((Duration::from_millis(10)..=Duration::from_millis(1000)).contains(&d), "{d:?}");
    }

    #[test]
    fn reset_restarts_the_curve_not_the_random_sequence() {
        let mut b = Backoff::seeded(config(Jitter::Full), 3);
        let first = b.next_delay();
        b.next_delay();
        b.override_next(Duration::from_secs(1));
        b.reset();
        assert_eq!(b.attempt(), 0);
        assert_eq!(b.curve_ns, 10_000_000);
        // Drawn again over [0, base], from further along the sequence.
        let again = b.next_delay();
        assert!(again <= Duration::from_millis(10));
        assert!(first <= Duration::from_millis(10));
    }

    #[test]
    fn same_seed_same_sequence_new_instances_differ() {
        let (mut a, mut b) =
            (Backoff::seeded(config(Jitter::Full), 9), Backoff::seeded(config(Jitter::Full), 9));
        assert!((0..20).all(|_| a.next_delay() == b.next_delay()));
        let (mut a, mut b) = (Backoff::new(config(Jitter::Full)), Backoff::new(config(Jitter::Full)));
        assert!((0..20).any(|_| a.next_delay() != b.next_delay()));
    }

    #[test]
    fn uniform_covers_the_whole_range_including_the_ends() {
        let mut b = Backoff::seeded(config(Jitter::Full), 5);
        let mut seen = [false; 4];
        for _ in 0..200 {
            seen[b.uniform(10, 13) as usize - 10] = true;
        }
        assert_eq!(seen, [true; 4]);
        assert_eq!(b.uniform(5, 5), 5);
        assert_eq!(b.uniform(9, 3), 9);
        // The widest span does not overflow.
        let _ = b.uniform(0, u64::MAX);
    }
}
