//! Properties of the backoff: bounds of every jitter mode, a spread that is
//! really random, and instances that never share a sequence.
// Single-threaded properties of safe code: miri, which runs the tests that
// reach `unsafe` code or race threads, has nothing to find here that the
// native run does not.
#![cfg(not(miri))]

use core::time::Duration;

use proptest::prelude::*;
use tripwire::retry::{Backoff, BackoffConfig, Jitter};

const MODES: [Jitter; 4] = [Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Decorrelated];

fn config(base_ns: u64, cap_ns: u64, factor: f64, jitter: Jitter) -> BackoffConfig {
    BackoffConfig::builder()
        .base(Duration::from_nanos(base_ns))
        .cap(Duration::from_nanos(cap_ns))
        .factor(factor)
        .jitter(jitter)
        .build()
        .unwrap()
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap()
}

fn cases() -> ProptestConfig {
    ProptestConfig::with_cases(256)
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn every_mode_stays_within_its_range(
        base in 1u64..1_000_000_000,
        cap_times in 1u64..1000,
        factor in 1.0f64..10.0,
        mode in 0usize..4,
        seed: u64,
        draws in 1usize..60,
    ) {
        let cap = base * cap_times;
        let jitter = MODES[mode];
        let mut backoff = Backoff::seeded(config(base, cap, factor, jitter), seed);
        // The un-jittered curve, computed independently.
        let (mut curve, mut prev) = (base, base);
        for _ in 0..draws {
            let d = ns(backoff.next_delay());
            prop_assert!(d <= cap, "{d} above the cap {cap}");
            match jitter {
                Jitter::None => prop_assert_eq!(d, curve),
                Jitter::Full => prop_assert!(d <= curve),
                Jitter::Equal => prop_assert!(curve / 2 <= d && d <= curve, "{d} outside [{}, {curve}]", curve / 2),
                Jitter::Decorrelated => {
                    prop_assert!(base <= d, "{d} below the base {base}");
                    prop_assert!(d <= prev.saturating_mul(3), "{d} above 3 × {prev}");
                    prev = d;
                }
            }
            curve = ((curve as f64 * factor) as u64).clamp(curve, cap);
        }
    }

    #[test]
    fn an_override_is_returned_exactly_once(seed: u64, mode in 0usize..4, over in 0u64..u64::MAX / 2) {
        let mut backoff = Backoff::seeded(config(1_000, 1_000_000, 2.0, MODES[mode]), seed);
        backoff.next_delay();
        backoff.override_next(Duration::from_nanos(over));
        prop_assert_eq!(ns(backoff.next_delay()), over);
        prop_assert!(ns(backoff.next_delay()) <= 1_000_000);
    }

    #[test]
    fn seeds_fix_the_sequence_and_different_seeds_differ(a: u64, b: u64, mode in 1usize..4) {
        let c = config(1_000_000, 1_000_000_000, 2.0, MODES[mode]);
        let draw = |seed| { let mut x = Backoff::seeded(c, seed); (0..8).map(|_| x.next_delay()).collect::<Vec<_>>() };
        prop_assert_eq!(draw(a), draw(a));
        if a != b {
            prop_assert_ne!(draw(a), draw(b));
        }
    }
}

/// Counts `n` draws of a constant range over four equal bins.
fn quartiles(mut draw: impl FnMut() -> u64, lo: u64, hi: u64, n: usize) -> ([usize; 4], usize) {
    let mut bins = [0usize; 4];
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..n {
        let d = draw();
        assert!((lo..=hi).contains(&d), "{d} outside [{lo}, {hi}]");
        bins[(((d - lo) as u128 * 4) / (u128::from(hi - lo) + 1)) as usize] += 1;
        seen.insert(d);
    }
    (bins, seen.len())
}

#[test]
fn full_and_equal_jitter_spread_evenly_over_their_range() {
    // factor 1: the curve stays at the base, so every draw has one range.
    let second = 1_000_000_000;
    for (jitter, lo) in [(Jitter::Full, 0), (Jitter::Equal, second / 2)] {
        let mut backoff = Backoff::new(config(second, second, 1.0, jitter));
        let (bins, distinct) = quartiles(|| ns(backoff.next_delay()), lo, second, 800);
        // 200 expected per bin (σ ≈ 12): a constant, a clumped or a
        // half-range generator fails this.
        assert!(bins.iter().all(|&n| (140..=260).contains(&n)), "{jitter:?}: {bins:?}");
        assert!(distinct >= 795, "{jitter:?}: only {distinct} distinct delays of 800");
    }
}

#[test]
fn decorrelated_jitter_wanders_over_base_to_cap() {
    let (base, cap) = (1_000_000, 64_000_000);
    let mut backoff = Backoff::new(config(base, cap, 2.0, Jitter::Decorrelated));
    let mut at_cap = 0;
    let (bins, distinct) = quartiles(
        || {
            let d = ns(backoff.next_delay());
            at_cap += usize::from(d == cap);
            d
        },
        base,
        cap,
        800,
    );
    // Drawn from [base, 3 × previous] and cut at the cap, about 30% of the
    // draws land on the cap itself (two thirds of those after a capped
    // one); the others are continuous and all distinct.
    assert!((120..=420).contains(&at_cap), "{at_cap} of 800 at the cap");
    assert!(distinct + at_cap >= 795, "only {distinct} distinct delays");
    // It reaches every quarter of [base, cap].
    assert!(bins.iter().all(|&n| n >= 30), "{bins:?}");
}

#[test]
fn instances_made_with_new_never_share_a_sequence() {
    let c = config(1_000_000, 1_000_000_000, 2.0, Jitter::Full);
    let sequences: Vec<Vec<Duration>> = (0..200)
        .map(|_| {
            let mut b = Backoff::new(c);
            (0..6).map(|_| b.next_delay()).collect()
        })
        .collect();
    let distinct: std::collections::BTreeSet<_> = sequences.iter().collect();
    assert_eq!(distinct.len(), sequences.len());
}
