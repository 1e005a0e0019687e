//! A looked-up key as the map compares it with the keys it holds.
//!
//! A lookup that finds its key compares the two keys' bytes once. For a
//! `str` key (a host, an endpoint, a symbol: the common case) `==` calls
//! libc's `memcmp` through the dynamic linker, whose general code for any
//! length costs more than the rest of the probe. [`Probe`] compares the
//! short keys a map holds (up to 16 bytes) in two word loads instead, and
//! any other key with its own `==`: the answer is the same either way.

use core::any::TypeId;
use core::borrow::Borrow;
use core::hash::{Hash, Hasher};
use std::string::String;

/// `key`, hashed as itself and compared with [`Probe::equals`].
pub(super) struct Probe<'a, Q: ?Sized>(pub(super) &'a Q);

impl<Q: Hash + ?Sized> Hash for Probe<'_, Q> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl<K, Q> papaya::Equivalent<K> for Probe<'_, Q>
where
    K: Borrow<Q>,
    Q: Eq + ?Sized + 'static,
{
    #[inline]
    fn equivalent(&self, key: &K) -> bool {
        let held = key.borrow();
        match (text(self.0), text(held)) {
            (Some(a), Some(b)) => bytes_equal(a.as_bytes(), b.as_bytes()),
            _ => self.0 == held,
        }
    }
}

/// `q` as a `str`, when `Q` is `str` or `String`; the test is on types,
/// so it is decided where the map is compiled, not per call.
#[inline(always)]
fn text<Q: ?Sized + 'static>(q: &Q) -> Option<&str> {
    if TypeId::of::<Q>() == TypeId::of::<str>() {
        // SAFETY: `Q` is `str`, so `&Q` is `&str`: the same type, copied.
        Some(unsafe { core::mem::transmute_copy::<&Q, &str>(&q) })
    } else if TypeId::of::<Q>() == TypeId::of::<String>() {
        // SAFETY: `Q` is `String`, so `&Q` is `&String`: as above.
        Some(unsafe { core::mem::transmute_copy::<&Q, &String>(&q) }.as_str())
    } else {
        None
    }
}

/// `a == b`, inline for lengths up to 16.
#[inline(always)]
fn bytes_equal(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        // Two loads from each end, overlapping when `n < 16`.
        8..=16 => word::<8>(a, 0) == word::<8>(b, 0) && word::<8>(a, n - 8) == word::<8>(b, n - 8),
        4..=7 => word::<4>(a, 0) == word::<4>(b, 0) && word::<4>(a, n - 4) == word::<4>(b, n - 4),
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        _ => a == b,
    }
}

/// The `N` bytes of `s` from `at`, as one number to compare.
#[inline(always)]
fn word<const N: usize>(s: &[u8], at: usize) -> [u8; N] {
    let mut w = [0; N];
    w.copy_from_slice(&s[at..at + N]);
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use papaya::Equivalent;
    use std::borrow::ToOwned;
    use std::vec::Vec;

    #[test]
    fn short_and_long_text_keys_compare_as_eq_does() {
        let texts: Vec<String> = (0..40)
            .map(|n| "SYM0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"[..n].to_owned())
            .chain(
                ["a", "b", "ab", "ba", "SYM0000USDT", "SYM0001USDT", "SYM0000USDU", "TYM0000USDT"]
                    .map(String::from),
            )
            .collect();
        for a in &texts {
            for b in &texts {
                assert_eq!(Probe(a.as_str()).equivalent(b), a == b, "{a:?} against {b:?}");
                assert_eq!(Probe(a).equivalent(b), a == b, "{a:?} against {b:?}, as Strings");
            }
        }
    }

    #[test]
    fn a_byte_differing_anywhere_makes_text_keys_unequal() {
        for n in 1..=24 {
            let base: String = (0..n).map(|i| char::from(b'a' + i as u8)).collect();
            for at in 0..n {
                let mut other = base.clone().into_bytes();
                other[at] ^= 1;
                let other = String::from_utf8(other).unwrap();
                assert!(!Probe(base.as_str()).equivalent(&other), "{base:?} against {other:?}");
            }
        }
    }

    #[test]
    fn other_keys_compare_with_their_own_eq() {
        assert!(Probe(&7u64).equivalent(&7u64));
        assert!(!Probe(&7u64).equivalent(&8u64));
        let v = [1u8, 2, 3];
        assert!(Probe(&v[..]).equivalent(&v.to_vec()));
    }
}
