//! The kinds of shared region, and what tells them apart in memory.

use core::fmt;

/// What a shared region holds. Each kind has its own magic number and
/// layout version; the header protocol (see [`SharedRegion`](crate::shared::SharedRegion)'s
/// and [`SharedBulkheadRegion`](crate::shared::SharedBulkheadRegion)'s docs) is
/// the same for all of them, so a region of one kind is never taken for
/// another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RegionKind {
    /// A [`Breaker`](crate::Breaker), laid out by [`SharedRegion`](crate::shared::SharedRegion).
    Breaker,
    /// A [`SharedBulkhead`](crate::shared::SharedBulkhead), laid out by
    /// [`SharedBulkheadRegion`](crate::shared::SharedBulkheadRegion).
    Bulkhead,
    /// A [`SharedRateLimiter`](crate::limiter::SharedRateLimiter), laid out by
    /// [`SharedRateLimiterRegion`](crate::shared::SharedRateLimiterRegion).
    RateLimiter,
}

impl RegionKind {
    /// Every kind, for telling one kind's magic from another's.
    pub(crate) const ALL: [RegionKind; 3] =
        [RegionKind::Breaker, RegionKind::Bulkhead, RegionKind::RateLimiter];

    /// The magic number of an initialised region of this kind: eight
    /// ASCII bytes in native byte order (`"TRIPWIRE"`, `"TWBULKHD"`,
    /// `"TWLIMITR"`).
    pub const fn magic(self) -> u64 {
        match self {
            RegionKind::Breaker => u64::from_ne_bytes(*b"TRIPWIRE"),
            RegionKind::Bulkhead => u64::from_ne_bytes(*b"TWBULKHD"),
            RegionKind::RateLimiter => u64::from_ne_bytes(*b"TWLIMITR"),
        }
    }

    /// The magic number while one process fills a region of this kind in:
    /// the magic with its last byte `~`.
    pub const fn initialising(self) -> u64 {
        match self {
            RegionKind::Breaker => u64::from_ne_bytes(*b"TRIPWIR~"),
            RegionKind::Bulkhead => u64::from_ne_bytes(*b"TWBULKH~"),
            RegionKind::RateLimiter => u64::from_ne_bytes(*b"TWLIMIT~"),
        }
    }

    /// The layout version of this kind that this build reads and writes,
    /// bumped whenever its layout changes.
    pub const fn version(self) -> u32 {
        match self {
            RegionKind::Breaker => 6,
            RegionKind::Bulkhead => 2,
            RegionKind::RateLimiter => 1,
        }
    }

    /// The kind whose magic (initialised or initialising) `magic` is.
    pub(crate) fn of_magic(magic: u64) -> Option<RegionKind> {
        RegionKind::ALL.into_iter().find(|k| magic == k.magic() || magic == k.initialising())
    }

    /// What its messages call a region of this kind.
    pub(crate) const fn region(self) -> &'static str {
        match self {
            RegionKind::Breaker => "shared region",
            RegionKind::Bulkhead => "shared bulkhead region",
            RegionKind::RateLimiter => "shared rate limiter region",
        }
    }

    /// How its messages quote a header field: the bulkhead's name the C
    /// fields in backticks, the breaker's (older) in plain words.
    pub(crate) const fn quote(self) -> &'static str {
        match self {
            RegionKind::Breaker => "",
            RegionKind::Bulkhead | RegionKind::RateLimiter => "`",
        }
    }
}

impl fmt::Display for RegionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RegionKind::Breaker => "breaker",
            RegionKind::Bulkhead => "bulkhead",
            RegionKind::RateLimiter => "rate limiter",
        })
    }
}
