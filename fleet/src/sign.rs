//! Signing: HMAC-SHA256 over the fleet's namespace and a message, with a
//! key every host of the fleet shares.
//!
//! A process that can publish on the channel (or write the keys) but lacks
//! the key cannot make a message any host accepts. The namespace is part of
//! what is signed, though not sent, so that a message of one fleet is no
//! message of another that happens to share the key.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::vec::Vec;

use crate::message::TAG;

type HmacSha256 = Hmac<Sha256>;

/// The shortest key accepted, in bytes.
pub const MIN_KEY_LEN: usize = 16;

/// Signs and checks messages of one namespace with one key.
#[derive(Clone)]
pub(crate) struct Signer {
    /// The MAC keyed and fed the namespace, cloned per message.
    base: HmacSha256,
}

impl core::fmt::Debug for Signer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Signer(<key redacted>)")
    }
}

impl Signer {
    /// A signer for `namespace` with `key` (at least [`MIN_KEY_LEN`] bytes,
    /// checked by the caller).
    pub(crate) fn new(key: &[u8], namespace: &str) -> Self {
        // HMAC takes a key of any length.
        let mut base = HmacSha256::new_from_slice(key).expect("HMAC accepts every key length");
        base.update(b"tripwire fleet v1\0");
        base.update(namespace.as_bytes());
        base.update(b"\0");
        Self { base }
    }

    /// `unsigned` with its tag appended.
    pub(crate) fn sign(&self, mut unsigned: Vec<u8>) -> Vec<u8> {
        let mut mac = self.base.clone();
        mac.update(&unsigned);
        unsigned.extend_from_slice(&mac.finalize().into_bytes());
        unsigned
    }

    /// Whether `tag` signs `signed`, compared in constant time.
    pub(crate) fn verify(&self, signed: &[u8], tag: &[u8; TAG]) -> bool {
        let mut mac = self.base.clone();
        mac.update(signed);
        mac.verify_slice(tag).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_checks_only_with_its_key_namespace_and_bytes() {
        let s = Signer::new(b"0123456789abcdef", "prod");
        let signed = s.sign(b"hello".to_vec());
        assert_eq!(signed.len(), 5 + TAG);
        let (body, tag) = signed.split_at(5);
        let tag: &[u8; TAG] = tag.try_into().unwrap();
        assert!(s.verify(body, tag));
        assert!(!s.verify(b"hellp", tag));
        assert!(!Signer::new(b"0123456789abcdeF", "prod").verify(body, tag));
        assert!(!Signer::new(b"0123456789abcdef", "test").verify(body, tag));
        let mut flipped = *tag;
        flipped[31] ^= 1;
        assert!(!s.verify(body, &flipped));
        assert!(!s.verify(body, &[0; TAG]));
    }
}
