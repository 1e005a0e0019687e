//! The breaker's hot line: the state word, and next to it, on the same
//! cache line, a layout stamp and a copy of the config's flags, in a layout
//! that a binding may read directly (the C header's inline fast path).
//!
//! The Rust fast paths (`Breaker::admit`, and
//! [`Breaker::record_healthy_success`](crate::Breaker::record_healthy_success),
//! which `record` starts with) decide on the word compares named in
//! [`HotLine`]; a binding that inlines them
//! reads the same word with the same ordering and applies the same
//! compares, and calls the library for everything else. It checks the
//! stamp first: a library with another hot-line layout stamps another
//! value, and the binding then takes the library's call every time.
//!
//! # Layout
//!
//! | offset | field | meaning |
//! | ------ | ----- | ------- |
//! | 0      | `word: u64` | the state word (atomic; see `state` for its bits) |
//! | 8      | `stamp: u32` | [`HotLine::STAMP`]; its offset and width never change |
//! | 12     | `flags: u32` | the config's flags, written once with the stamp |
//!
//! The line starts the breaker, so a pointer to a breaker is a pointer to
//! its hot line. Layouts before this one (shared-region version 2 and
//! older) left the bytes at offset 8 unspecified padding: a binding run
//! with such a library could in principle read a matching stamp by chance
//! (one 32-bit value in 2^32).
//!
//! # Orderings
//! The word's orderings are the breaker's (see `circuit`). The stamp and
//! the flags are written once, before the breaker is handed out (by value
//! from [`Breaker::new`](crate::Breaker::new), or published with the
//! shared region's `Release` store of its magic), and never again, so
//! readers need no ordering beyond the one that gave them the breaker.

use crate::breaker::config::{COUNT_SUCCESSES, TIMED, WINDOWED};
use crate::breaker::state::{GEN_SHIFT, KIND_MASK, State};
use crate::sync::AtomicU64;

/// The hot line's fields. See the module docs for the layout.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Hot {
    pub(crate) word: AtomicU64,
    stamp: u32,
    flags: u32,
}

impl Hot {
    #[inline]
    pub(crate) fn new(word: u64, flags: u32) -> Self {
        Self { word: AtomicU64::new(word), stamp: HotLine::STAMP, flags }
    }

    /// Whether the stamp is this layout's and the flags copy is `flags`:
    /// what attaching to a shared region checks.
    pub(crate) fn fits(&self, flags: u32) -> bool {
        self.stamp == HotLine::STAMP && self.flags == flags
    }
}

/// What the fast paths of a breaker decide on, and where it lies in the
/// breaker's hot line: for bindings that inline those paths (the C header
/// does). Every constant is the one the Rust fast paths use.
///
/// A binding reads the stamp at [`STAMP_OFFSET`](Self::STAMP_OFFSET) and,
/// if it is not [`STAMP`](Self::STAMP), calls the library. Otherwise:
/// - Admission: load the word with `Acquire`. If `word & ADMIT_MASK ==
///   ADMIT_VALUE` and `flags & ADMIT_FLAGS == 0`, the call is admitted
///   with a plain ticket: started at 0, generation `word >>
///   GENERATION_SHIFT`, flags 0.
/// - A success: if `flags & RECORD_FLAGS == 0`, load the word with
///   `Relaxed`; if it equals `generation << GENERATION_SHIFT |
///   ADMIT_VALUE` (Closed, no failure to forget, the ticket's generation),
///   there is nothing to do but count it when
///   [`COUNT_SUCCESSES`](Self::COUNT_SUCCESSES) is set, which a binding
///   leaves to [`Breaker::record_healthy_success`](crate::Breaker::record_healthy_success)
///   (the same test, then the count).
/// - Anything else: call the library.
#[derive(Debug)]
pub struct HotLine;

impl HotLine {
    /// The version of the hot-line layout and of the decisions below.
    pub const VERSION: u32 = 1;
    /// The stamp at [`STAMP_OFFSET`](Self::STAMP_OFFSET): `"tw"` in the
    /// high half (so that zeroed or stray padding does not pass for it),
    /// [`VERSION`](Self::VERSION) in the low half.
    pub const STAMP: u32 = 0x7477_0000 | Self::VERSION;
    /// Where the state word sits, in bytes from the breaker's start.
    pub const WORD_OFFSET: usize = core::mem::offset_of!(Hot, word);
    /// Where the stamp sits, in bytes from the breaker's start.
    pub const STAMP_OFFSET: usize = core::mem::offset_of!(Hot, stamp);
    /// Where the flags copy sits, in bytes from the breaker's start.
    pub const FLAGS_OFFSET: usize = core::mem::offset_of!(Hot, flags);
    /// The word's bits that admission looks at: the state.
    pub const ADMIT_MASK: u64 = KIND_MASK;
    /// Their value on the fast path: Closed.
    pub const ADMIT_VALUE: u64 = State::Closed as u64;
    /// Flags that send admission off the fast path: timed calls.
    pub const ADMIT_FLAGS: u32 = TIMED;
    /// Flags that send a success off the fast path: timed calls, a
    /// rolling window.
    pub const RECORD_FLAGS: u32 = TIMED | WINDOWED;
    /// The flag that makes the success path count.
    pub const COUNT_SUCCESSES: u32 = COUNT_SUCCESSES;
    /// Where the generation sits in the word.
    pub const GENERATION_SHIFT: u32 = GEN_SHIFT;
}

// The stamp's place is a promise to every binding ever built (loom's
// atomics are larger, and no binding reads a loom build).
#[cfg(not(loom))]
const _: () = assert!(HotLine::WORD_OFFSET == 0 && HotLine::STAMP_OFFSET == 8 && HotLine::FLAGS_OFFSET == 12);

// A healthy word, as the success path compares it, is the admission value
// at the ticket's generation.
const _: () = assert!(
    crate::breaker::state::Word::closed_at(0x8765_4321).0
        == (0x8765_4321u64 << HotLine::GENERATION_SHIFT) | HotLine::ADMIT_VALUE
);
