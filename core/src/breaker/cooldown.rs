//! How long an Open breaker waits before it lets a probe through.
//!
//! The cool-down is `open_timeout × growth^reopens`, capped at
//! `open_timeout_max`, minus a jitter of up to `jitter × cool-down`. The
//! thread whose transition enters Open or Half-Open computes it once and
//! stamps the deadline it gives (see `deadline`), so every thread and
//! process sharing a breaker waits for the same moment; the jitter is a
//! hash of the config's seed, the generation and that thread's clock
//! reading, so breakers tripped by one outage spread their probes.

use crate::breaker::config::BreakerConfig;

#[inline]
/// The cool-down in nanoseconds for a state entered at `entered_at` in
/// generation `generation` after `reopens` re-opens from Half-Open.
/// Reopens saturate at 1023 in the state word: with a growth factor so
/// small that the cap is not reached by then, the cool-down stops growing there.
pub(crate) fn cooldown_ns(cfg: &BreakerConfig, reopens: u32, generation: u32, entered_at: u64) -> u64 {
    let base = grown(cfg, reopens);
    if cfg.open_timeout_jitter <= 0.0 {
        return base;
    }
    let seed = cfg.jitter_seed ^ entered_at ^ (u64::from(generation) << 32);
    // The top 53 bits as a uniform fraction in [0, 1).
    let unit = (splitmix64(seed) >> 11) as f64 / (1u64 << 53) as f64;
    let cut = base as f64 * cfg.open_timeout_jitter * unit;
    base - (cut as u64).min(base - 1)
}

#[inline]
/// `open_timeout × growth^reopens`, capped, without `powi` (which needs libm).
fn grown(cfg: &BreakerConfig, reopens: u32) -> u64 {
    let (base, max) = (cfg.open_timeout_ns, cfg.open_timeout_max_ns);
    if reopens == 0 || cfg.open_timeout_growth <= 1.0 {
        return base;
    }
    let mut t = base as f64;
    for _ in 0..reopens {
        t *= cfg.open_timeout_growth;
        // Capped already? Then more re-opens change nothing.
        if t >= max as f64 {
            return max;
        }
    }
    t as u64
}

#[inline]
/// Sebastiano Vigna's splitmix64 finaliser: a cheap, well-mixed hash.
pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn cfg(growth: f64, jitter: f64) -> BreakerConfig {
        BreakerConfig::builder()
            .open_timeout(Duration::from_secs(1))
            .open_timeout_max(Duration::from_secs(10))
            .open_timeout_growth(growth)
            .open_timeout_jitter(jitter)
            .build()
            .unwrap()
    }

    #[test]
    fn grows_by_the_factor_up_to_the_cap() {
        let c = cfg(2.0, 0.0);
        let got: [u64; 6] = core::array::from_fn(|k| cooldown_ns(&c, k as u32, 0, 0) / 1_000_000_000);
        assert_eq!(got, [1, 2, 4, 8, 10, 10]);
        assert_eq!(cooldown_ns(&c, u32::MAX, 0, 0), 10_000_000_000);
    }

    #[test]
    fn jitter_only_shortens_and_spreads() {
        let c = cfg(1.0, 0.5);
        let mut seen = [0u32; 5];
        for generation in 0..1000 {
            let t = cooldown_ns(&c, 0, generation, 12_345);
            assert!((500_000_000..=1_000_000_000).contains(&t), "{t}");
            seen[((t - 500_000_000) / 100_000_001) as usize] += 1;
        }
        // 1000 draws over five equal bins: each holds a fair share.
        assert!(seen.iter().all(|&n| (120..=280).contains(&n)), "{seen:?}");
    }

    #[test]
    fn jitter_is_the_same_for_everyone_reading_the_same_state() {
        let c = cfg(1.0, 0.3);
        assert_eq!(cooldown_ns(&c, 1, 7, 99), cooldown_ns(&c, 1, 7, 99));
        assert_ne!(cooldown_ns(&c, 1, 7, 99), cooldown_ns(&c, 1, 8, 99));
    }
}
