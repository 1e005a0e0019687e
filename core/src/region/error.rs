//! The one error type of every kind of shared region.

use core::fmt;

use crate::breaker::config::ConfigError;
use crate::region::kind::RegionKind;

/// Why a shared region could not be initialised or attached to, whatever
/// its kind: the header protocol's errors name the [`RegionKind`] asked
/// for; the others belong to one kind's layout and say which by their name.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum RegionError {
    /// The pointer was null.
    Null {
        /// The kind of region asked for.
        kind: RegionKind,
    },
    /// The memory is not aligned as the kind's layout asks.
    Misaligned {
        /// The kind of region asked for.
        kind: RegionKind,
        /// The address given.
        addr: usize,
        /// The alignment needed.
        align: usize,
    },
    /// The memory is shorter than the region needs.
    TooSmall {
        /// The kind of region asked for.
        kind: RegionKind,
        /// The length given.
        len: usize,
        /// The length needed.
        needed: usize,
    },
    /// The region is all zeros at its start: nobody has initialised it yet.
    Uninitialised {
        /// The kind of region asked for.
        kind: RegionKind,
    },
    /// Another process has claimed the region and not yet published it (or
    /// died before it could).
    Initialising {
        /// The kind of region asked for.
        kind: RegionKind,
    },
    /// `init_in` found a region that is already initialised, as this kind.
    AlreadyInitialised {
        /// The kind of region asked for.
        kind: RegionKind,
    },
    /// `init_in` found a byte after the (zero) magic that is not zero: the
    /// memory is not fresh, and `init_in` leaves it as it found it.
    NotZeroFilled {
        /// The kind of region asked for.
        kind: RegionKind,
        /// Where the first such byte is, from the start of the region.
        offset: usize,
        /// Its value.
        byte: u8,
    },
    /// The magic number is no kind of region's: not a region, or garbage.
    NotARegion {
        /// The kind of region asked for.
        kind: RegionKind,
        /// The magic number found.
        magic: u64,
    },
    /// The magic number is another kind's (initialised or being
    /// initialised): the region holds, say, a breaker where a bulkhead was
    /// asked for.
    WrongKind {
        /// The kind of region asked for.
        kind: RegionKind,
        /// The kind the region's magic names.
        found: RegionKind,
    },
    /// The region was made by a build with another layout version of its kind.
    Version {
        /// The kind of region asked for.
        kind: RegionKind,
        /// The version found.
        found: u32,
    },
    /// A breaker region's header records a size or breaker offset other
    /// than this build's layout.
    BreakerLayout {
        /// The size recorded in the header.
        size: u64,
        /// The breaker offset recorded in the header.
        breaker_offset: u32,
        /// This build's size of a breaker region.
        expected_size: usize,
        /// This build's breaker offset.
        expected_offset: usize,
    },
    /// A breaker region's stored config does not validate, or its two
    /// copies disagree (`None`).
    BadConfig(Option<ConfigError>),
    /// A breaker region's state word does not decode.
    BadState,
    /// A breaker region's deadline slots were not stamped for the state
    /// word's generation.
    BadDeadlines,
    /// A breaker region's rolling window's words do not decode.
    BadWindow,
    /// A breaker region's hot line (see [`HotLine`](crate::breaker::HotLine)) has
    /// another stamp, or a copy of the flags that is not its config's.
    BadHotLine,
    /// `open_in` found a breaker made with another config.
    ConfigMismatch,
    /// A bulkhead `max` above [`SharedBulkheadRegion::MAX_SLOTS`](crate::shared::SharedBulkheadRegion::MAX_SLOTS)
    /// (asked for, or found in the header).
    MaxOutOfRange {
        /// The value.
        max: u64,
        /// The largest `max` allowed.
        limit: u32,
    },
    /// A bulkhead region's `size` is not the size of a region of its `max` slots.
    BulkheadSize {
        /// The size recorded.
        size: u64,
        /// The `max` recorded.
        max: u32,
        /// The size that `max` needs.
        needed: usize,
    },
    /// A bulkhead region's `reserved` field is not 0.
    Reserved {
        /// The value found.
        value: u32,
    },
    /// A bulkhead region's slot word is neither 0 nor a holder (its pid
    /// field is 0).
    BadSlot {
        /// Which slot.
        index: u32,
        /// The word found.
        word: u64,
    },
    /// `open_in` found a bulkhead made with another `max`.
    MaxMismatch {
        /// The region's `max`.
        found: u32,
        /// The `max` asked for.
        wanted: u32,
    },
    /// A rate limiter region holds another number of limits than asked
    /// for, or one out of range (asked for, or found in the header).
    LimitCount {
        /// The number found (or asked for, when out of range).
        found: u64,
        /// The number asked for.
        wanted: usize,
    },
    /// A rate limiter region's `size` is not that of its number of limits.
    LimiterSize {
        /// The size recorded.
        size: u64,
        /// The size its limits need.
        needed: usize,
    },
    /// A rate limiter region's `reserved` field is not 0.
    LimiterReserved {
        /// The value found.
        value: u64,
    },
    /// A rate limiter region's limit does not build.
    BadLimit {
        /// Which limit.
        index: usize,
        /// What its config says is wrong.
        error: ConfigError,
    },
    /// `open_in` found a rate limiter made with other limits.
    LimitMismatch {
        /// The first limit that differs.
        index: usize,
    },
}

impl fmt::Display for RegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use RegionError as E;
        match *self {
            E::Null { kind } => write!(f, "{} pointer is null", kind.region()),
            E::Misaligned { kind, addr, align } => {
                write!(f, "{} at {addr:#x} is not aligned to {align} bytes", kind.region())
            }
            E::TooSmall { kind, len, needed } => {
                let who = if kind == RegionKind::Breaker { "a breaker" } else { "it" };
                write!(f, "{} of {len} bytes is too small: {who} needs {needed}", kind.region())
            }
            E::Uninitialised { kind } => write!(
                f,
                "{} is not initialised (zero {q}magic{q}): initialise it first",
                kind.region(),
                q = kind.quote()
            ),
            E::Initialising { kind } => write!(
                f,
                "{} is being initialised by another process (or its creator died doing so)",
                kind.region()
            ),
            E::AlreadyInitialised { kind } => match kind {
                RegionKind::Breaker => f.write_str("shared region already holds a breaker: attach to it instead"),
                _ => write!(f, "{} is already initialised: attach to it instead", kind.region()),
            },
            E::NotZeroFilled { kind, offset, byte } => write!(
                f,
                "{} is not zero-filled (byte {offset} is {byte:#04x}): init_in takes fresh, zero-filled memory",
                kind.region()
            ),
            E::NotARegion { kind, magic } => {
                let what = if kind == RegionKind::Breaker { "tripwire shared region" } else { kind.region() };
                write!(
                    f,
                    "not a {what}: {q}magic{q} {magic:#018x}, expected {:#018x}",
                    kind.magic(),
                    q = kind.quote()
                )
            }
            E::WrongKind { kind, found } => {
                write!(f, "{} holds a {found}, not a {kind}: open it as a {found}", kind.region())
            }
            E::Version { kind, found } => write!(
                f,
                "{} has layout {q}version{q} {found}, this build reads version {}",
                kind.region(),
                kind.version(),
                q = kind.quote()
            ),
            E::BreakerLayout { size, breaker_offset, expected_size, expected_offset } => write!(
                f,
                "shared region header records {size} bytes with the breaker at {breaker_offset}; \
                 this build's layout is {expected_size} bytes with the breaker at {expected_offset}"
            ),
            E::BadConfig(Some(e)) => write!(f, "shared region holds a bad config: {e}"),
            E::BadConfig(None) => f.write_str("shared region holds two different copies of its config"),
            E::BadState => f.write_str("shared region holds a state word that does not decode"),
            E::BadDeadlines => {
                f.write_str("shared region holds deadline slots that do not belong to its state word")
            }
            E::BadWindow => f.write_str("shared region holds rolling-window words that do not decode"),
            E::BadHotLine => f.write_str(
                "shared region holds a breaker whose hot line (layout stamp, flags) does not match its config",
            ),
            E::ConfigMismatch => f.write_str("shared region holds a breaker made with a different config"),
            E::MaxOutOfRange { max, limit } => {
                write!(f, "shared bulkhead `max` = {max}, expected 0 to {limit}")
            }
            E::BulkheadSize { size, max, needed } => write!(
                f,
                "shared bulkhead region header records `size` = {size} for `max` = {max}; that `max` needs {needed}"
            ),
            E::Reserved { value } => write!(f, "shared bulkhead region `reserved` = {value}, expected 0"),
            E::BadSlot { index, word } => {
                write!(f, "shared bulkhead region `slot[{index}]` = {word:#018x} names no holder (pid 0)")
            }
            E::MaxMismatch { found, wanted } => {
                write!(f, "shared bulkhead region has `max` = {found}, not the {wanted} asked for")
            }
            E::LimitCount { found, wanted } if found == wanted as u64 => write!(
                f,
                "shared rate limiter region: {wanted} limits asked for, expected 1 to {}",
                crate::shared::SharedRateLimiterRegion::MAX_LIMITS
            ),
            E::LimitCount { found, wanted } => {
                write!(f, "shared rate limiter region holds `limits` = {found}, not the {wanted} asked for")
            }
            E::LimiterSize { size, needed } => write!(
                f,
                "shared rate limiter region header records `size` = {size}; its limits need {needed}"
            ),
            E::LimiterReserved { value } => {
                write!(f, "shared rate limiter region `reserved` = {value}, expected 0")
            }
            E::BadLimit { index, error } => write!(f, "shared rate limiter region `limit[{index}]`: {error}"),
            E::LimitMismatch { index } => write!(
                f,
                "shared rate limiter region holds other limits than asked for (`limit[{index}]` differs)"
            ),
        }
    }
}

impl core::error::Error for RegionError {}
