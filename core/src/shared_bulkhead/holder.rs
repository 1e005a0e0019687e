//! Who holds a slot of a shared bulkhead: one packed word per slot.

use core::fmt;

/// The word a held slot stores: which process holds it, and which of that
/// process's acquires took it. Never zero (zero is a free slot).
///
/// # Layout
/// | bits | field | meaning |
/// | ---- | ----- | ------- |
/// | 63–40 | `pid` | the holder's process id, 1 to [`Holder::MAX_PID`] |
/// | 39–16 | `start` | a tag of the process's start time (1 to 2²⁴ − 1), or 0 if unknown |
/// | 15–0 | `nonce` | which of the process's acquires this is, wrapping |
///
/// `pid` and `start` together name one process for as long as it lives,
/// even after its pid is reused by another one: the start tag differs
/// (see the `std` layer's liveness check). The nonce tells two acquires of
/// the same slot by one process apart, so that releasing an old
/// [`SharedSlot`](super::SharedSlot) once the slot has been taken again
/// (by this process or any other) is refused. It wraps after 65 536
/// acquires of one process, after which a slot can hold the word of an
/// old receipt again: the slot's release count, which the receipt also
/// carries (see [`SharedSlot::releases`](super::SharedSlot::releases)),
/// still tells the two apart.
///
/// Linux pids are at most 2²² (`PID_MAX_LIMIT`); the other Unixes stay
/// below 100 000: 24 bits hold every pid they hand out.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Holder(u64);

const PID_SHIFT: u32 = 40;
const START_SHIFT: u32 = 16;
const FIELD_24: u64 = (1 << 24) - 1;

impl Holder {
    /// The largest pid a holder word can carry.
    pub const MAX_PID: u32 = (1 << 24) - 1;
    /// The largest start tag.
    pub const MAX_START: u32 = (1 << 24) - 1;

    /// The word for acquire `nonce` of the process `pid` started at `start`
    /// (0: unknown); `None` if `pid` is 0 or above [`MAX_PID`](Self::MAX_PID),
    /// or `start` above [`MAX_START`](Self::MAX_START).
    pub const fn new(pid: u32, start: u32, nonce: u16) -> Option<Holder> {
        if pid == 0 || pid > Self::MAX_PID || start > Self::MAX_START {
            return None;
        }
        Some(Holder(((pid as u64) << PID_SHIFT) | ((start as u64) << START_SHIFT) | nonce as u64))
    }

    /// Decodes a slot's word: `None` for 0 (a free slot) and for a word
    /// whose `pid` is 0, which no holder writes.
    pub const fn from_raw(word: u64) -> Option<Holder> {
        if word >> PID_SHIFT == 0 { None } else { Some(Holder(word)) }
    }

    /// The word stored in the slot.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// The holder's process id.
    pub const fn pid(self) -> u32 {
        (self.0 >> PID_SHIFT) as u32
    }

    /// The tag of the holder's start time; 0 if it was not known.
    pub const fn start(self) -> u32 {
        ((self.0 >> START_SHIFT) & FIELD_24) as u32
    }

    /// Which of the process's acquires this is.
    pub const fn nonce(self) -> u16 {
        self.0 as u16
    }

    /// Whether both words name the same process (pid and start tag).
    pub const fn same_process(self, other: Holder) -> bool {
        self.0 >> START_SHIFT == other.0 >> START_SHIFT
    }
}

impl fmt::Debug for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Holder")
            .field("pid", &self.pid())
            .field("start", &self.start())
            .field("nonce", &self.nonce())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_and_out_of_range_ones_are_refused() {
        let h = Holder::new(Holder::MAX_PID, Holder::MAX_START, u16::MAX).unwrap();
        assert_eq!((h.pid(), h.start(), h.nonce()), (Holder::MAX_PID, Holder::MAX_START, u16::MAX));
        assert_eq!(Holder::from_raw(h.raw()), Some(h));
        let low = Holder::new(1, 0, 0).unwrap();
        assert_eq!((low.pid(), low.start(), low.nonce()), (1, 0, 0));
        assert_ne!(low.raw(), 0);
        assert_eq!(Holder::new(0, 1, 1), None);
        assert_eq!(Holder::new(Holder::MAX_PID + 1, 1, 1), None);
        assert_eq!(Holder::new(1, Holder::MAX_START + 1, 1), None);
        assert_eq!(Holder::from_raw(0), None);
        assert_eq!(Holder::from_raw((1 << 40) - 1), None, "pid 0 is no holder");
    }

    #[test]
    fn the_nonce_does_not_change_the_process() {
        let a = Holder::new(7, 9, 1).unwrap();
        assert!(a.same_process(Holder::new(7, 9, 2).unwrap()));
        assert!(!a.same_process(Holder::new(7, 10, 1).unwrap()), "a reused pid");
        assert!(!a.same_process(Holder::new(8, 9, 1).unwrap()));
    }
}
