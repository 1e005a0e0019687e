//! Rate limiters in memory shared by several processes: the region's
//! layout, its creation and the checks on attaching to it.

use core::mem::{align_of, size_of};
use core::time::Duration;

use crate::limiter::cell::LimitWords;
use crate::limiter::config::LimitConfig;
use crate::limiter::limiter::SharedRateLimiter;
use crate::region::header::{Memory, Region};
use crate::region::{RegionError, RegionKind};

/// The layout of a [`SharedRateLimiter`] in memory shared by several
/// processes: one budget for every process of a host (four workers behind
/// one IP see one request-weight limit).
///
/// Never built as a Rust value: reserve [`size_for`](Self::size_for)`(N)`
/// bytes aligned to [`ALIGN`](Self::ALIGN) in a `MAP_SHARED` mapping (a
/// file, `shm_open`, or an anonymous mapping made before `fork`), then
/// [`open_in`](Self::open_in) in every process (or
/// [`init_in`](Self::init_in) in one and [`attach`](Self::attach) in the
/// others).
///
/// # Layout (version 1)
///
/// | offset | field | meaning |
/// | ------ | ----- | ------- |
/// | 0  | `magic: u64` | [`MAGIC`](Self::MAGIC) once initialised; 0 before; [`INITIALISING`](Self::INITIALISING) while a process fills it |
/// | 8  | `version: u32` | [`VERSION`](Self::VERSION), bumped whenever this layout changes |
/// | 12 | `limits: u32` | the number of limits `N`, 1 to [`MAX_LIMITS`](Self::MAX_LIMITS) |
/// | 16 | `size: u64` | the region's size in bytes, `size_for(N)` = 32 + 32·`N` |
/// | 24 | `reserved: u64` | 0 |
/// | 32 + 16·i | `units: u32`, `burst: u32`, `period_ns: u64` | limit `i`'s config |
/// | 32 + 16·`N` + 16·i | `tat: u64`, `floor: u64` | limit `i`'s words ([`LimitWords`]) |
///
/// The first 24 bytes are the header every kind of region starts with,
/// made and checked by one protocol for all of them: memory holding a
/// breaker's or a bulkhead's region is refused with
/// [`RegionError::WrongKind`]. The layout is native (endianness): a region
/// is shared between processes of one host built from the same version of
/// this crate, and needs native 64-bit atomics.
///
/// # Validation
/// Attaching trusts none of the bytes it finds: alignment, length, magic,
/// version, the number of limits (this build's `N`), `size`, `reserved`
/// and every limit's config (built again through [`LimitConfig::builder`],
/// so a garbage config is its [`ConfigError`](crate::ConfigError)) are
/// checked, and any mismatch is a [`RegionError`], never undefined
/// behaviour or a panic. The words accept any value: a garbage one delays
/// the next calls by at most two periods and never lets one through early
/// (see [`limiter`](crate::limiter)'s module docs). A process killed in the
/// middle of a check leaves a word either as it was or moved by its
/// compare-and-swap: nothing is half written.
///
/// # Orderings
/// As for every region: the claim is a `Relaxed` CAS of the magic, the
/// header and configs are plain stores published by a `Release` store of
/// the magic, and `attach` loads it with `Acquire`. The words' own
/// (`Relaxed`) compare-and-swaps take over from there.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::ManualClock;
/// use tripwire::limiter::LimitConfig;
/// use tripwire::shared::SharedRateLimiterRegion;
///
/// let weight = LimitConfig::builder(1_200, Duration::from_secs(60)).build()?;
/// // A stand-in for a MAP_SHARED mapping: zeroed, suitably aligned memory.
/// let size = SharedRateLimiterRegion::size_for(1).unwrap();
/// let layout = std::alloc::Layout::from_size_align(size, SharedRateLimiterRegion::ALIGN).unwrap();
/// // SAFETY:
/// // - `layout` has a non-zero size.
/// let mem = unsafe { std::alloc::alloc_zeroed(layout) };
/// assert!(!mem.is_null());
/// // SAFETY:
/// // - `mem` is valid for reads and writes of `size` bytes, freed only
/// //   after the last use of the limiters below; nothing else writes to it.
/// let (first, second) = unsafe {
///     (SharedRateLimiterRegion::open_in(mem, size, [weight])?, SharedRateLimiterRegion::open_in(mem, size, [weight])?)
/// };
/// let clock = ManualClock::new(0);
/// assert!(first.try_acquire([40], &clock).is_ok());
/// assert_eq!(second.in_use(&clock), [40], "one budget");
/// // SAFETY:
/// // - `mem` came from `alloc_zeroed` with this layout; no limiter is used after.
/// unsafe { std::alloc::dealloc(mem, layout) };
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SharedRateLimiterRegion {
    _private: (),
}

/// Where the limits' configs start.
const CONFIGS: usize = 32;
/// One limit's config: `units`, `burst`, `period_ns`.
const CONFIG: usize = 16;

const _: () = assert!(size_of::<LimitWords>() == 16 && align_of::<LimitWords>() <= 8);

impl SharedRateLimiterRegion {
    /// The magic number of an initialised region: `"TWLIMITR"` in native
    /// byte order.
    pub const MAGIC: u64 = RegionKind::RateLimiter.magic();
    /// The magic number while one process fills the region in.
    pub const INITIALISING: u64 = RegionKind::RateLimiter.initialising();
    /// The layout version this build reads and writes.
    pub const VERSION: u32 = RegionKind::RateLimiter.version();
    /// The most limits a region holds.
    pub const MAX_LIMITS: usize = 16;
    /// The alignment a region needs (a page from `mmap` always has it).
    pub const ALIGN: usize = 64;

    /// The bytes a region of `limits` limits needs; `None` for 0 or more
    /// than [`MAX_LIMITS`](Self::MAX_LIMITS).
    pub const fn size_for(limits: usize) -> Option<usize> {
        if limits == 0 || limits > Self::MAX_LIMITS { None } else { Some(CONFIGS + 32 * limits) }
    }

    /// The size of a region of `N` limits, or the error for an `N` out of range.
    fn size<const N: usize>() -> Result<usize, RegionError> {
        Self::size_for(N).ok_or(RegionError::LimitCount { found: N as u64, wanted: N })
    }

    /// Sets up `configs` in zero-filled memory (no units in use) and
    /// returns the limiter. Exactly one of several processes racing to
    /// initialise the same region succeeds.
    ///
    /// # Errors
    /// `Null`, `Misaligned`, `TooSmall`, `LimitCount` (an `N` of 0 or above
    /// [`MAX_LIMITS`](Self::MAX_LIMITS)); `AlreadyInitialised` and
    /// `Initialising` when another process got there first; `WrongKind`,
    /// `NotARegion` and `NotZeroFilled` as for every region (see
    /// [`RegionError`]).
    ///
    /// # Safety
    /// - `mem` is either null or valid for reads and writes of `len` bytes
    ///   for `'a`, in every process that maps it.
    /// - During `'a`, the region's bytes are only accessed through this
    ///   type's functions and the limiters they return (in any process): no
    ///   other code writes to them, and the mapping is not unmapped or
    ///   truncated.
    pub unsafe fn init_in<'a, const N: usize>(
        mem: *mut u8,
        len: usize,
        configs: [LimitConfig; N],
    ) -> Result<SharedRateLimiter<'a, N>, RegionError> {
        let size = Self::size::<N>()?;
        // SAFETY: the caller's guarantees are those `Memory::new` needs.
        let mut claim =
            unsafe { Memory::new(RegionKind::RateLimiter, mem, len, Self::ALIGN, size) }?.claim(size)?;
        for (i, c) in configs.iter().enumerate() {
            let at = CONFIGS + CONFIG * i;
            claim.write::<u32>(at, c.units);
            claim.write::<u32>(at + 4, c.burst);
            claim.write::<u64>(at + 8, c.period_ns);
        }
        // `reserved` and the words start at 0: the claim found every byte zero.
        let region = claim.publish(N as u32);
        Ok(Self::view(region, configs))
    }

    /// Checks that `mem` (`len` bytes) holds a rate limiter of `N` limits
    /// initialised by [`init_in`](Self::init_in) (in this process or
    /// another), and returns it, with the configs it holds.
    ///
    /// # Errors
    /// Any [`RegionError`] but `AlreadyInitialised` and `LimitMismatch`:
    /// see the type's Validation.
    ///
    /// # Safety
    /// As for [`init_in`](Self::init_in).
    pub unsafe fn attach<'a, const N: usize>(
        mem: *mut u8,
        len: usize,
    ) -> Result<SharedRateLimiter<'a, N>, RegionError> {
        let needed = Self::size::<N>()?;
        // SAFETY: the caller's guarantees are those `Memory::new` needs.
        let region =
            unsafe { Memory::new(RegionKind::RateLimiter, mem, len, Self::ALIGN, CONFIGS) }?.open()?;
        // This build's number of limits, and its size?
        let found = region.word();
        if found as usize != N {
            return Err(RegionError::LimitCount { found: found.into(), wanted: N });
        }
        let size = region.size();
        if size != needed as u64 {
            return Err(RegionError::LimiterSize { size, needed });
        }
        if region.len() < needed {
            return Err(RegionError::TooSmall { kind: RegionKind::RateLimiter, len: region.len(), needed });
        }
        let reserved: u64 = region.read(24);
        if reserved != 0 {
            return Err(RegionError::LimiterReserved { value: reserved });
        }
        // Does every config build?
        let mut configs = [None; N];
        for (i, slot) in configs.iter_mut().enumerate() {
            let at = CONFIGS + CONFIG * i;
            let (units, burst, period) =
                (region.read::<u32>(at), region.read::<u32>(at + 4), region.read::<u64>(at + 8));
            let config = LimitConfig::builder(units, Duration::from_nanos(period)).burst(burst).build();
            *slot = Some(config.map_err(|error| RegionError::BadLimit { index: i, error })?);
        }
        Ok(Self::view(region, configs.map(|c| c.expect("every limit was read"))))
    }

    /// Initialises the region with `configs` if nobody has, otherwise
    /// attaches to it: what every process of a group calls at start-up.
    ///
    /// # Errors
    /// As for [`attach`](Self::attach), and `LimitMismatch` if the region
    /// holds other limits. `Initialising` means another process is between
    /// its claim and its publication: try again shortly.
    ///
    /// # Safety
    /// As for [`init_in`](Self::init_in).
    pub unsafe fn open_in<'a, const N: usize>(
        mem: *mut u8,
        len: usize,
        configs: [LimitConfig; N],
    ) -> Result<SharedRateLimiter<'a, N>, RegionError> {
        // SAFETY:
        // - The caller's guarantees are those `init_in` needs.
        match unsafe { Self::init_in(mem, len, configs) } {
            Err(RegionError::AlreadyInitialised { .. }) => {}
            // Too short for these limits: but if it holds another number of
            // them, that is what the caller needs to hear.
            Err(short @ RegionError::TooSmall { .. }) => {
                // SAFETY:
                // - The caller's guarantees are those `attach` needs.
                return match unsafe { Self::attach::<N>(mem, len) } {
                    Err(count @ RegionError::LimitCount { .. }) => Err(count),
                    _ => Err(short),
                };
            }
            done => return done,
        }
        // SAFETY:
        // - The caller's guarantees are those `attach` needs.
        let limiter = unsafe { Self::attach::<N>(mem, len) }?;
        // Were they made with the limits this caller asks for?
        if let Some(index) = (0..N).find(|&i| limiter.configs()[i] != configs[i]) {
            return Err(RegionError::LimitMismatch { index });
        }
        Ok(limiter)
    }

    /// The number of limits of a region that [`init_in`](Self::init_in),
    /// [`attach`](Self::attach) or [`open_in`](Self::open_in) has already
    /// accepted: the `N` to call [`attached`](Self::attached) with.
    ///
    /// # Safety
    /// - `mem` is the address one of them succeeded on (in this process),
    ///   with its provenance, and their guarantees still hold.
    pub unsafe fn limits_in(mem: *const u8) -> usize {
        // SAFETY: the caller's guarantees are those `Region::accepted` needs.
        unsafe { Region::accepted(mem) }.word() as usize
    }

    /// The limiter in a region already accepted, without its checks: for a
    /// binding that keeps only the region's address (a C handle). Its
    /// configs are read and built again (they were checked when it was
    /// accepted). `None` if the region holds another number of limits
    /// than `N`.
    ///
    /// # Safety
    /// As for [`limits_in`](Self::limits_in).
    pub unsafe fn attached<'a, const N: usize>(mem: *const u8) -> Option<SharedRateLimiter<'a, N>> {
        // SAFETY: the caller's guarantees are those `Region::accepted` needs.
        let region = unsafe { Region::accepted(mem) };
        if region.word() as usize != N {
            return None;
        }
        let mut configs = [None; N];
        for (i, slot) in configs.iter_mut().enumerate() {
            let at = CONFIGS + CONFIG * i;
            let (units, burst, period) =
                (region.read::<u32>(at), region.read::<u32>(at + 4), region.read::<u64>(at + 8));
            *slot = LimitConfig::builder(units, Duration::from_nanos(period)).burst(burst).build().ok();
        }
        let configs = configs.map(|c| c.ok_or(()));
        if configs.iter().any(Result::is_err) {
            return None;
        }
        Some(Self::view(region, configs.map(|c| c.expect("checked"))))
    }

    /// The limiter over a region's configs and words; the region is at
    /// least `size_for(N)` long.
    fn view<const N: usize>(region: Region<'_>, configs: [LimitConfig; N]) -> SharedRateLimiter<'_, N> {
        let words = region.slice::<LimitWords>(CONFIGS + CONFIG * N, N);
        let words: &[LimitWords; N] = words.try_into().expect("N words");
        SharedRateLimiter::over(configs, words)
    }
}
