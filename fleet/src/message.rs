//! The one thing the fleet adds to Redis: the format of its messages.
//!
//! A message says what one host's breaker did, and is signed (see `sign`).
//! It travels as a pub/sub payload and is kept as the value of the
//! breaker's state key; the value of a probe lease is one too. Binary, big-endian, every field fixed but the name:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 2 | magic `tw` |
//! | 2 | 1 | format version, 1 |
//! | 3 | 1 | kind: 1 opened, 2 held, 3 closed, 4 lease |
//! | 4 | 8 | sender: a random id per [`Fleet`](crate::Fleet) |
//! | 12 | 8 | sequence number, from 1, per sender |
//! | 20 | 8 | sent at: milliseconds since the Unix epoch on Redis's clock, as the sender reads it (rounded up, see `clock`) |
//! | 28 | 8 | wait: microseconds from sending until a probe may go (a lease: until it ends); 0 when closed |
//! | 36 | 1 | name length `n`, 1 to 255 |
//! | 37 | `n` | the breaker's name, UTF-8 |
//! | 37 + `n` | 32 | HMAC-SHA256 tag over the namespace and bytes `0..37 + n` |
//!
//! The wait is a duration, never a clock reading: a receiver holds its
//! breaker for that long from when the message arrives, so hosts' clocks
//! need not agree for it. The send time, on Redis's clock, serves only to
//! refuse stale and replayed messages (see `replay`).
//!
//! [`decode`] takes any bytes and returns the message or why it is
//! malformed; it never panics and never reads past the slice.

use core::time::Duration;
use std::vec::Vec;

/// The first two bytes of every message.
pub(crate) const MAGIC: [u8; 2] = *b"tw";
/// The format version this code writes and reads.
pub(crate) const VERSION: u8 = 1;
/// Bytes before the name.
const HEAD: usize = 37;
/// Bytes of the tag.
pub(crate) const TAG: usize = 32;
/// The longest name a message carries.
pub(crate) const MAX_NAME: usize = 255;

/// What a breaker did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Tripped: refuses calls until its cool-down ends.
    Opened = 1,
    /// Held open for a server's backpressure (`Retry-After`).
    Held = 2,
    /// Closed after a probe succeeded, or reset.
    Closed = 3,
    /// The value of a probe lease: who holds it and for how long. Kept in
    /// the lease key, never published.
    Lease = 4,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(Self::Opened),
            2 => Some(Self::Held),
            3 => Some(Self::Closed),
            4 => Some(Self::Lease),
            _ => None,
        }
    }
}

/// One decoded message, the tag not yet checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Message<'a> {
    pub(crate) kind: Kind,
    pub(crate) sender: u64,
    pub(crate) seq: u64,
    /// Milliseconds since the Unix epoch, on the sender's clock.
    pub(crate) sent_at_ms: u64,
    /// Microseconds from sending until a probe may go.
    pub(crate) wait_us: u64,
    pub(crate) name: &'a str,
    /// The bytes the tag covers (all but the tag).
    pub(crate) signed: &'a [u8],
    pub(crate) tag: &'a [u8; TAG],
}

impl Message<'_> {
    /// The wait as a `Duration`.
    pub(crate) fn wait(&self) -> Duration {
        Duration::from_micros(self.wait_us)
    }
}

/// Why bytes are not a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Malformed {
    /// Shorter than the smallest message, or not as long as its name says.
    Length,
    /// Not `tw`.
    Magic,
    /// A format version this code does not read.
    Version,
    /// No such kind.
    Kind,
    /// A name that is not UTF-8.
    Name,
    /// A closed breaker has no wait.
    Wait,
}

/// The bytes of a message, up to and without its tag.
pub(crate) fn encode_unsigned(
    kind: Kind,
    sender: u64,
    seq: u64,
    sent_at_ms: u64,
    wait: Duration,
    name: &str,
) -> Vec<u8> {
    debug_assert!(!name.is_empty() && name.len() <= MAX_NAME, "checked when the breaker joined");
    let wait_us = if kind == Kind::Closed { 0 } else { u64::try_from(wait.as_micros()).unwrap_or(u64::MAX) };
    let mut out = Vec::with_capacity(HEAD + name.len() + TAG);
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(kind as u8);
    for field in [sender, seq, sent_at_ms, wait_us] {
        out.extend_from_slice(&field.to_be_bytes());
    }
    // At most 255, checked when the breaker joined.
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
    out
}

/// Reads a message out of `bytes`, checking its shape but not its tag.
pub(crate) fn decode(bytes: &[u8]) -> Result<Message<'_>, Malformed> {
    // Is there a head, a name and a tag, and nothing more?
    if bytes.len() < HEAD + 1 + TAG {
        return Err(Malformed::Length);
    }
    let n = usize::from(bytes[HEAD - 1]);
    if bytes.len() != HEAD + n + TAG {
        return Err(Malformed::Length);
    }
    if bytes[0..2] != MAGIC {
        return Err(Malformed::Magic);
    }
    if bytes[2] != VERSION {
        return Err(Malformed::Version);
    }
    let kind = Kind::from_byte(bytes[3]).ok_or(Malformed::Kind)?;
    let field = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[at..at + 8]);
        u64::from_be_bytes(b)
    };
    let (sender, seq, sent_at_ms, wait_us) = (field(4), field(12), field(20), field(28));
    if kind == Kind::Closed && wait_us != 0 {
        return Err(Malformed::Wait);
    }
    // Not empty: the length check above leaves at least one byte.
    let name = core::str::from_utf8(&bytes[HEAD..HEAD + n]).map_err(|_| Malformed::Name)?;
    let (signed, tag) = bytes.split_at(HEAD + n);
    let tag = <&[u8; TAG]>::try_from(tag).map_err(|_| Malformed::Length)?;
    Ok(Message { kind, sender, seq, sent_at_ms, wait_us, name, signed, tag })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(kind: Kind, wait: Duration, name: &str) -> Vec<u8> {
        let mut b = encode_unsigned(kind, 7, 9, 1_700_000_000_000, wait, name);
        b.extend_from_slice(&[0xAB; TAG]);
        b
    }

    #[test]
    fn round_trip() {
        let b = sample(Kind::Held, Duration::from_millis(1500), "binance/orderbook");
        assert_eq!(b.len(), HEAD + 17 + TAG);
        let m = decode(&b).unwrap();
        assert_eq!((m.kind, m.sender, m.seq, m.sent_at_ms), (Kind::Held, 7, 9, 1_700_000_000_000));
        assert_eq!(m.wait(), Duration::from_millis(1500));
        assert_eq!(m.name, "binance/orderbook");
        assert_eq!(m.signed, &b[..b.len() - TAG]);
        assert_eq!(m.tag, &[0xAB; TAG]);
    }

    #[test]
    fn a_closed_message_waits_for_nothing() {
        let b = sample(Kind::Closed, Duration::from_secs(3), "x");
        assert_eq!(decode(&b).unwrap().wait_us, 0);
        let mut bad = b.clone();
        bad[35] = 1;
        assert_eq!(decode(&bad), Err(Malformed::Wait));
    }

    #[test]
    fn an_endless_wait_saturates() {
        let b = sample(Kind::Opened, Duration::MAX, "x");
        assert_eq!(decode(&b).unwrap().wait_us, u64::MAX);
    }

    #[test]
    fn each_defect_is_named() {
        let good = sample(Kind::Opened, Duration::from_secs(1), "ab");
        assert!(decode(&good).is_ok());
        let with = |i: usize, v: u8| {
            let mut b = good.clone();
            b[i] = v;
            b
        };
        assert_eq!(decode(&good[..good.len() - 1]), Err(Malformed::Length));
        assert_eq!(decode(&[good.as_slice(), &[0]].concat()), Err(Malformed::Length));
        assert_eq!(decode(&[]), Err(Malformed::Length));
        assert_eq!(decode(&with(0, b'T')), Err(Malformed::Magic));
        assert_eq!(decode(&with(2, 2)), Err(Malformed::Version));
        assert_eq!(decode(&with(3, 0)), Err(Malformed::Kind));
        assert_eq!(decode(&with(3, 5)), Err(Malformed::Kind));
        assert_eq!(decode(&with(HEAD, 0xFF)), Err(Malformed::Name));
        // A name length that disagrees with the size.
        assert_eq!(decode(&with(HEAD - 1, 3)), Err(Malformed::Length));
        assert_eq!(decode(&with(HEAD - 1, 255)), Err(Malformed::Length));
        // An empty name: the shortest size holds a name of one byte, so a
        // length of 0 never matches it.
        let mut empty = encode_unsigned(Kind::Opened, 1, 1, 1, Duration::ZERO, "a");
        empty[HEAD - 1] = 0;
        empty.truncate(HEAD);
        empty.extend_from_slice(&[0; TAG + 1]);
        assert!(decode(&empty).is_err());
    }

    /// Garbage of every size, and good messages cut, grown and flipped:
    /// the decoder returns, never panics.
    #[test]
    fn garbage_never_panics() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let good = sample(Kind::Opened, Duration::from_secs(1), "binance/orderbook");
        let mut decoded = 0;
        for round in 0..20_000 {
            let bytes: Vec<u8> = match round % 3 {
                0 => (0..next() % 400).map(|_| next() as u8).collect(),
                1 => {
                    let mut b = good.clone();
                    for _ in 0..1 + next() % 4 {
                        let i = (next() as usize) % b.len();
                        b[i] ^= 1 << (next() % 8);
                    }
                    b
                }
                _ => {
                    let cut = (next() as usize) % (good.len() + 40);
                    let mut b = good[..cut.min(good.len())].to_vec();
                    b.extend((good.len()..cut).map(|_| next() as u8));
                    b
                }
            };
            if let Ok(m) = decode(&bytes) {
                decoded += 1;
                assert_eq!(m.signed.len() + TAG, bytes.len());
                assert!(!m.name.is_empty());
            }
        }
        // Some flips land in fields any value of which is well-formed (the
        // tag, the sequence): the signature, not the shape, refuses those.
        assert!(decoded > 0);
    }
}
