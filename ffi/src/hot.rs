//! The breaker's hot line as C sees it: the struct and the constants that
//! the header's inline fast path (`tw_breaker_try_acquire_fast` and the
//! others, in `ffi/cbindgen.toml`'s trailer) decides on.
//!
//! Nothing here decides anything: every constant is the core's
//! [`HotLine`], copied as a literal because cbindgen copies literals into
//! the header and cannot evaluate another crate's constants; the
//! assertions below fail the build when a copy drifts, and `.ci/run`
//! fails when the header drifts from the copies.

use core::mem::{offset_of, size_of};

use tripwire::{Breaker, breaker::HotLine};

use crate::values::tw_ticket;

/// The first 16 bytes of every breaker, heap or shared: its state word, a
/// layout stamp and a copy of its config's flags. Read only by the
/// header's inline fast path, which loads `word` atomically and checks
/// `stamp` against `TW_HOT_STAMP` before it trusts anything else here (a
/// library with another layout stamps another value, and the inline path
/// then calls the library). Never write to it.
#[repr(C)]
pub struct tw_breaker_hot {
    /// The state word (accessed atomically).
    pub word: u64,
    /// `TW_HOT_STAMP` when this layout is the library's.
    pub stamp: u32,
    /// The config's flags (`TW_HOT_ADMIT_FLAGS` and the others test them).
    pub flags: u32,
}

const _: () = {
    assert!(offset_of!(tw_breaker_hot, word) == HotLine::WORD_OFFSET);
    assert!(offset_of!(tw_breaker_hot, stamp) == HotLine::STAMP_OFFSET);
    assert!(offset_of!(tw_breaker_hot, flags) == HotLine::FLAGS_OFFSET);
    assert!(size_of::<tw_breaker_hot>() <= size_of::<Breaker>());
    assert!(align_of::<tw_breaker_hot>() <= align_of::<Breaker>());
    // The inline path writes a ticket as two native 8-byte words: the start
    // time, then the generation and the flags.
    assert!(size_of::<tw_ticket>() == 16 && align_of::<tw_ticket>() == 8);
    assert!(offset_of!(tw_ticket, generation) == 8 && offset_of!(tw_ticket, flags) == 12);
};

/// The stamp of the hot-line layout this header reads (`tw_breaker_hot`).
pub const TW_HOT_STAMP: u32 = 0x7477_0001;
/// The state word's bits that admission looks at.
pub const TW_HOT_ADMIT_MASK: u64 = 0x7;
/// Their value when a call is admitted on the fast path (Closed).
pub const TW_HOT_ADMIT_VALUE: u64 = 0;
/// Flags that send admission to the library.
pub const TW_HOT_ADMIT_FLAGS: u32 = 0x2;
/// Flags that send a success to the library.
pub const TW_HOT_RECORD_FLAGS: u32 = 0x6;
/// The flag that makes the library count a success (the inline path then
/// calls it).
pub const TW_HOT_COUNT_SUCCESSES: u32 = 0x1;
/// Where the generation sits in the state word.
pub const TW_HOT_GENERATION_SHIFT: u32 = 32;

const _: () = {
    assert!(TW_HOT_STAMP == HotLine::STAMP, "TW_HOT_STAMP differs from HotLine::STAMP");
    assert!(TW_HOT_ADMIT_MASK == HotLine::ADMIT_MASK, "TW_HOT_ADMIT_MASK differs from HotLine");
    assert!(TW_HOT_ADMIT_VALUE == HotLine::ADMIT_VALUE, "TW_HOT_ADMIT_VALUE differs from HotLine");
    assert!(TW_HOT_ADMIT_FLAGS == HotLine::ADMIT_FLAGS, "TW_HOT_ADMIT_FLAGS differs from HotLine");
    assert!(TW_HOT_RECORD_FLAGS == HotLine::RECORD_FLAGS, "TW_HOT_RECORD_FLAGS differs from HotLine");
    assert!(
        TW_HOT_COUNT_SUCCESSES == HotLine::COUNT_SUCCESSES,
        "TW_HOT_COUNT_SUCCESSES differs from HotLine"
    );
    assert!(
        TW_HOT_GENERATION_SHIFT == HotLine::GENERATION_SHIFT,
        "TW_HOT_GENERATION_SHIFT differs from HotLine"
    );
};
