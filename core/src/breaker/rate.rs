//! Rates as exact fractions, so that a rate of k/n trips at exactly k of
//! n calls: the comparison is `count × den ≥ num × calls`, in integers.
//!
//! A rate is configured as an `f64` (the builder, the C ABI and Python all
//! take one) and turned into the simplest fraction within 2^-30 (about
//! 10^-9) of it, once, when the config is built. That fraction is k/n
//! itself for every rate k/n with n up to 23,170: the nearest `f64` to
//! k/n lies within 2^-53 of it, and every other fraction with a
//! denominator that small lies further than 2^-30 away. So every rate
//! with up to four decimals (0.28 is 7/25, 0.0001 is 1/10,000) and every
//! fraction of a window of up to 23,170 calls is exact. Any other rate is
//! read as that simplest fraction, within 2^-30 of what was given: off by
//! at most one call only in windows of tens of thousands of calls.

/// A rate as `num / den`, with `num ≤ den`; `num` 0 is "off".
///
/// # Size and alignment
/// 8 bytes, 4-aligned, `#[repr(C)]` (it lives in configs in shared memory).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rate {
    num: u32,
    den: u32,
}

/// How close the fraction must come to the rate given: within 2^-TOLERANCE_BITS.
const TOLERANCE_BITS: u32 = 30;

impl Rate {
    /// No rate condition.
    pub(crate) const OFF: Rate = Rate { num: 0, den: 1 };

    /// The fraction for `rate`: [`OFF`](Self::OFF) for 0 (and for what
    /// validation refuses: NaN, negatives), 1/1 from 1 up; a positive rate
    /// never becomes 0 (below 2^-32 it is 1/(2^32 − 1): any failure).
    pub(crate) fn of(rate: f64) -> Rate {
        // Off, or not a rate at all?
        if rate.is_nan() || rate <= 0.0 {
            return Rate::OFF;
        }
        if rate >= 1.0 {
            return Rate { num: 1, den: 1 };
        }
        // Closer to 0 than the smallest fraction there is?
        if rate < 1.0 / f64::from(u32::MAX) {
            return Rate { num: 1, den: u32::MAX };
        }
        // rate = m / 2^k exactly: a normal f64 in [2^-32, 1), so 53 ≤ k ≤ 85.
        let bits = rate.to_bits();
        let m = u128::from((bits & ((1 << 52) - 1)) | (1 << 52));
        let k = 1075 - ((bits >> 52) & 0x7ff) as u32;
        let two_k = 1u128 << k;
        let slack = two_k >> TOLERANCE_BITS;
        // The continued fraction of m / 2^k, convergent by convergent: the
        // first one within the tolerance is the simplest fraction there.
        let (mut a, mut b) = (m, two_k);
        let (mut p0, mut q0, mut p1, mut q1) = (0u128, 1u128, 1u128, 0u128);
        loop {
            let t = a / b;
            let (p, q) = (t * p1 + p0, t * q1 + q0);
            // Past what a u32 holds? The last convergent is as close as it gets.
            if q > u128::from(u32::MAX) {
                return Rate { num: p1.max(1) as u32, den: q1 as u32 };
            }
            // Close enough (and not 0)? |p/q − m/2^k| ≤ 2^-30, times q·2^k.
            let off = (p * two_k).abs_diff(m * q);
            if (p != 0 && off <= q * slack) || a % b == 0 {
                return Rate { num: p.max(1) as u32, den: q as u32 };
            }
            (a, b) = (b, a % b);
            (p0, q0, p1, q1) = (p1, q1, p, q);
        }
    }

    /// Whether `count` of `calls` reaches the rate; never when it is off.
    #[inline]
    pub(crate) fn reached(self, count: u64, calls: u64) -> bool {
        self.num != 0 && u128::from(count) * u128::from(self.den) >= u128::from(self.num) * u128::from(calls)
    }

    /// The fraction packed in one integer (numerator high), for messages
    /// about a corrupted config.
    pub(crate) fn packed(self) -> u64 {
        u64::from(self.num) << 32 | u64::from(self.den)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(r: Rate) -> (u32, u32) {
        (r.num, r.den)
    }

    #[test]
    fn decimals_and_small_fractions_are_exact() {
        assert_eq!(parts(Rate::of(0.28)), (7, 25));
        assert_eq!(parts(Rate::of(0.14)), (7, 50));
        assert_eq!(parts(Rate::of(0.55)), (11, 20));
        assert_eq!(parts(Rate::of(0.5)), (1, 2));
        assert_eq!(parts(Rate::of(0.0001)), (1, 10_000));
        assert_eq!(parts(Rate::of(0.9999)), (9_999, 10_000));
        assert_eq!(parts(Rate::of(1.0 / 3.0)), (1, 3));
        assert_eq!(parts(Rate::of(2.0 / 3.0)), (2, 3));
        for n in (1..=23_170u32).step_by(if cfg!(miri) { 4_001 } else { 1 }) {
            for k in [1, n / 3, n / 2, n - 1, n].into_iter().filter(|&k| k >= 1) {
                let g = gcd(k, n);
                assert_eq!(parts(Rate::of(f64::from(k) / f64::from(n))), (k / g, n / g), "{k}/{n}");
            }
        }
    }

    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 { a } else { gcd(b, a % b) }
    }

    #[test]
    fn other_rates_come_within_the_tolerance_and_never_round_to_off() {
        for rate in [0.123_456_789, 0.314_159_265_358_979, 1e-9, 3e-10, 0.999_999_999_9, f64::EPSILON] {
            let r = Rate::of(rate);
            assert!(r.num >= 1 && r.num <= r.den, "{rate}: {r:?}");
            let off = (f64::from(r.num) / f64::from(r.den) - rate).abs();
            assert!(
                off <= 1.0 / f64::from(1u32 << TOLERANCE_BITS) || rate < 1e-9,
                "{rate}: {r:?} off by {off}"
            );
        }
        assert_eq!(Rate::of(1e-300), Rate { num: 1, den: u32::MAX });
        assert_eq!(Rate::of(0.0), Rate::OFF);
        assert_eq!(Rate::of(f64::NAN), Rate::OFF);
        assert_eq!(Rate::of(1.0), Rate { num: 1, den: 1 });
    }

    #[test]
    fn reaching_is_an_integer_comparison() {
        let r = Rate::of(0.28);
        assert!(r.reached(7, 25) && !r.reached(6, 25) && r.reached(14, 50) && !r.reached(13, 50));
        assert!(!Rate::OFF.reached(u64::MAX, 1));
        assert!(Rate::of(1.0).reached(u64::MAX, u64::MAX) && !Rate::of(1.0).reached(u64::MAX - 1, u64::MAX));
    }
}
