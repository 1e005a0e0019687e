//! Shared bulkheads in raw memory: the region's layout, its creation and
//! the checks on attaching to it.

use core::mem::{align_of, offset_of, size_of};

use crate::region::header::{self, Memory, Region};
use crate::region::{RegionError, RegionKind};
use crate::shared_bulkhead::holder::Holder;
use crate::shared_bulkhead::slots::{Header, SharedBulkhead};
use crate::sync::{AtomicU32, AtomicU64};

/// The layout of a [`SharedBulkhead`] in memory shared by several
/// processes: a 64-byte header, then one 8-byte word per slot, then one
/// 8-byte release count per slot.
///
/// Never built as a Rust value: reserve [`size_for`](Self::size_for)`(max)`
/// bytes aligned to [`ALIGN`](Self::ALIGN) in a `MAP_SHARED` mapping (a
/// file, `shm_open`, or an anonymous mapping made before `fork`), then
/// [`init_in`](Self::init_in), [`attach`](Self::attach) or
/// [`open_in`](Self::open_in). Every process that maps it shares one cap.
///
/// # Layout (version 2)
///
/// | offset | field | meaning |
/// | ------ | ----- | ------- |
/// | 0  | `magic: u64` | [`MAGIC`](Self::MAGIC) once initialised; 0 before; [`INITIALISING`](Self::INITIALISING) while a process fills it |
/// | 8  | `version: u32` | [`VERSION`](Self::VERSION), bumped whenever this layout changes |
/// | 12 | `max: u32` | the cap, 0 to [`MAX_SLOTS`](Self::MAX_SLOTS): the number of slot words |
/// | 16 | `size: u64` | the region's size in bytes, `size_for(max)` = 64 + 16·`max` |
/// | 24 | `acquired: u64` | slots handed out, by every process (statistics) |
/// | 32 | `rejected: u64` | acquires refused (statistics) |
/// | 40 | `reclaimed: u64` | slots of dead processes freed (statistics) |
/// | 48 | `gate: u64` | the time before which no gated reclaim pass starts (ns) |
/// | 56 | `hint: u32` | where the next acquire starts looking (any value is safe) |
/// | 60 | `reserved: u32` | 0 |
/// | 64 + 8·i | `slot[i]: u64` | 0 when free, else the [`Holder`] word of its holder |
/// | 64 + 8·`max` + 8·i | `releases[i]: u64` | how many releases have freed `slot[i]`, wrapping (any value is valid) |
///
/// The first 24 bytes (magic, version, `max`, size) are the header every
/// kind of region starts with, made and checked by one protocol for all of
/// them: memory holding a breaker's region ([`SharedRegion`](crate::shared::SharedRegion))
/// is refused with [`RegionError::WrongKind`].
///
/// The layout is native (endianness): a region is shared between processes
/// of one host built from the same version of this crate. Sharing it
/// between processes needs native 64-bit atomics: where portable-atomic
/// emulates them with a lock, the lock is per process. How slots are
/// taken, freed and reclaimed is in [`SharedBulkhead`]'s module docs.
///
/// # Who initialises
/// As for breakers ([`SharedRegion`](crate::shared::SharedRegion)): `init_in`
/// claims the region with a compare-and-swap of the magic from 0 to
/// `INITIALISING`, so exactly one of several racing processes writes it;
/// the others get [`AlreadyInitialised`](RegionError::AlreadyInitialised)
/// or [`Initialising`](RegionError::Initialising). A creator that
/// dies between its claim and its publication leaves the region
/// `INITIALISING` for good: remove the file and start again.
///
/// # Validation
/// Attaching trusts none of the bytes it finds: alignment, length, magic,
/// version, `max` (in range), `size` (that of `max`; the memory at least
/// that long), `reserved` (0) and every slot word (0, or a holder word with
/// a non-zero pid) are checked, and any mismatch is a
/// [`RegionError`] naming the field, never undefined behaviour or a
/// panic: every bit pattern is a valid value of each field. The held count
/// is the number of non-zero slot words, of which there are `max`: it
/// cannot exceed the cap whatever the bytes are. The statistics, the hint,
/// the gate and the release counts accept any value.
///
/// # Orderings
/// - `init_in` claims the region with a `Relaxed` CAS of the magic (the
///   claimant is the only writer until it publishes), writes the header and
///   the slots with plain stores, then publishes them with a `Release`
///   store of `MAGIC`.
/// - `attach` loads the magic with `Acquire`, which pairs with that
///   `Release` store: a process that sees the magic sees the header and the
///   slots it covers. The slots' own orderings take over from there.
///
/// # Examples
/// ```
/// use tripwire::shared::{Holder, SharedBulkheadRegion};
///
/// // A stand-in for a MAP_SHARED mapping: zeroed, suitably aligned memory.
/// let size = SharedBulkheadRegion::size_for(2).unwrap();
/// let layout = std::alloc::Layout::from_size_align(size, SharedBulkheadRegion::ALIGN).unwrap();
/// // SAFETY:
/// // - `layout` has a non-zero size.
/// let mem = unsafe { std::alloc::alloc_zeroed(layout) };
/// assert!(!mem.is_null());
/// // SAFETY:
/// // - `mem` is valid for reads and writes of `size` bytes, freed only
/// //   after the last use of the views below; nothing else writes to it.
/// let (ours, theirs) = unsafe {
///     (SharedBulkheadRegion::init_in(mem, size, 2)?, SharedBulkheadRegion::attach(mem, size)?)
/// };
/// let a = ours.try_acquire(Holder::new(100, 1, 0).unwrap()).unwrap();
/// let _b = theirs.try_acquire(Holder::new(200, 1, 0).unwrap()).unwrap();
/// assert!(theirs.try_acquire(Holder::new(200, 1, 1).unwrap()).is_err());
/// // Process 100 dies holding its slot: a reclaim pass frees it.
/// assert_eq!(theirs.reclaim(|h| h.pid() == 100), 1);
/// assert!(!ours.release(a), "reclaimed already");
/// // SAFETY:
/// // - `mem` came from `alloc_zeroed` with this layout; no view is used after.
/// unsafe { std::alloc::dealloc(mem, layout) };
/// # Ok::<(), tripwire::shared::RegionError>(())
/// ```
#[derive(Debug)]
pub struct SharedBulkheadRegion {
    _private: (),
}

const _: () = assert!(size_of::<Header>() == SharedBulkheadRegion::HEADER);
const _: () = assert!(align_of::<Header>() == SharedBulkheadRegion::ALIGN);
const _: () = assert!(size_of::<AtomicU64>() == 8 && align_of::<AtomicU64>() <= 8);
const _: () = assert!(size_of::<AtomicU32>() == 4);
// The first 24 bytes are the header every kind of region starts with.
const _: () = assert!(offset_of!(Header, magic) == offset_of!(header::Header, magic));
const _: () = assert!(offset_of!(Header, version) == offset_of!(header::Header, version));
const _: () = assert!(offset_of!(Header, max) == offset_of!(header::Header, word));
const _: () = assert!(offset_of!(Header, size) == offset_of!(header::Header, size));

impl SharedBulkheadRegion {
    /// The magic number of an initialised region: `"TWBULKHD"` in native
    /// byte order.
    pub const MAGIC: u64 = RegionKind::Bulkhead.magic();
    /// The magic number while one process fills the region in.
    pub const INITIALISING: u64 = RegionKind::Bulkhead.initialising();
    /// The layout version this build reads and writes.
    pub const VERSION: u32 = RegionKind::Bulkhead.version();
    /// The largest cap a region may have.
    pub const MAX_SLOTS: u32 = 1 << 16;
    /// The alignment a region needs (a page from `mmap` always has it).
    pub const ALIGN: usize = 64;
    /// The header's size: where the slot words start.
    pub const HEADER: usize = 64;

    /// The bytes a region of `max` slots needs; `None` if `max` is above
    /// [`MAX_SLOTS`](Self::MAX_SLOTS).
    pub const fn size_for(max: u32) -> Option<usize> {
        if max > Self::MAX_SLOTS { None } else { Some(Self::HEADER + 16 * max as usize) }
    }

    /// Checks the memory's address and that it holds at least `needed` bytes.
    ///
    /// # Safety
    /// As for [`init_in`](Self::init_in).
    unsafe fn memory<'a>(mem: *mut u8, len: usize, needed: usize) -> Result<Memory<'a>, RegionError> {
        // SAFETY: the caller's guarantees are those `Memory::new` needs.
        unsafe { Memory::new(RegionKind::Bulkhead, mem, len, Self::ALIGN, needed) }
    }

    /// The error for a `max` above [`MAX_SLOTS`](Self::MAX_SLOTS).
    fn out_of_range(max: u32) -> RegionError {
        RegionError::MaxOutOfRange { max: max.into(), limit: Self::MAX_SLOTS }
    }

    /// Sets up an empty bulkhead of `max` slots in zero-filled memory and
    /// returns it. Exactly one of several processes racing to initialise the
    /// same region succeeds.
    ///
    /// # Errors
    /// [`Null`](RegionError::Null), [`Misaligned`](RegionError::Misaligned),
    /// [`MaxOutOfRange`](RegionError::MaxOutOfRange),
    /// [`TooSmall`](RegionError::TooSmall) (shorter than
    /// `size_for(max)`); [`AlreadyInitialised`](RegionError::AlreadyInitialised)
    /// and [`Initialising`](RegionError::Initialising) when another
    /// process got there first; [`WrongKind`](RegionError::WrongKind) if
    /// the magic is another kind of region's (a breaker's),
    /// [`NotARegion`](RegionError::NotARegion) if it is no kind's and not 0,
    /// [`NotZeroFilled`](RegionError::NotZeroFilled) if it is 0 but
    /// a later byte of the first `size_for(max)` is not (the memory is left
    /// as it was).
    ///
    /// # Safety
    /// - `mem` is either null or valid for reads and writes of `len` bytes
    ///   for `'a`, in every process that maps it.
    /// - During `'a`, the region's bytes are only accessed through this
    ///   module's functions and the bulkheads they return (in any process):
    ///   no other code writes to them, and the mapping is not unmapped or
    ///   truncated.
    pub unsafe fn init_in<'a>(mem: *mut u8, len: usize, max: u32) -> Result<SharedBulkhead<'a>, RegionError> {
        let size = Self::size_for(max).ok_or(Self::out_of_range(max))?;
        // SAFETY: the caller's guarantees are those `memory` needs.
        let claim = unsafe { Self::memory(mem, len, size) }?.claim(size)?;
        // The counters, the hint, `reserved`, the slot words and their
        // release counts start at 0: the claim found every byte zero.
        Ok(Self::view(claim.publish(max), max))
    }

    /// Checks that `mem` (`len` bytes) holds a shared bulkhead initialised
    /// by [`init_in`](Self::init_in) (in this process or another), and
    /// returns it.
    ///
    /// # Errors
    /// Any [`RegionError`] but `AlreadyInitialised` and
    /// `MaxMismatch`: see the type's Validation.
    ///
    /// # Safety
    /// As for [`init_in`](Self::init_in).
    pub unsafe fn attach<'a>(mem: *mut u8, len: usize) -> Result<SharedBulkhead<'a>, RegionError> {
        // SAFETY: the caller's guarantees are those `memory` needs.
        let region = unsafe { Self::memory(mem, len, Self::HEADER) }?.open()?;
        let (max, size) = (region.word(), region.size());
        // Is the cap in range, and the size that of the cap?
        let Some(needed) = Self::size_for(max) else {
            return Err(Self::out_of_range(max));
        };
        if size != needed as u64 {
            return Err(RegionError::BulkheadSize { size, max, needed });
        }
        // Does the memory hold every slot?
        if region.len() < needed {
            return Err(RegionError::TooSmall { kind: RegionKind::Bulkhead, len: region.len(), needed });
        }
        let reserved: u32 = region.read(offset_of!(Header, reserved));
        if reserved != 0 {
            return Err(RegionError::Reserved { value: reserved });
        }
        let bulkhead = Self::view(region, max);
        // Does every slot word decode? (Relaxed: a check of the name only.)
        for index in 0..max {
            let word = bulkhead.raw_slot(index);
            if word != 0 && Holder::from_raw(word).is_none() {
                return Err(RegionError::BadSlot { index, word });
            }
        }
        Ok(bulkhead)
    }

    /// Initialises the region with `max` slots if nobody has, otherwise
    /// attaches to it: what every process of a group can call at start-up.
    ///
    /// # Errors
    /// As for [`attach`](Self::attach), and
    /// [`MaxMismatch`](RegionError::MaxMismatch) if the region
    /// holds a bulkhead with another `max`.
    /// [`Initialising`](RegionError::Initialising) means another
    /// process is between its claim and its publication: try again shortly.
    ///
    /// # Safety
    /// As for [`init_in`](Self::init_in).
    pub unsafe fn open_in<'a>(mem: *mut u8, len: usize, max: u32) -> Result<SharedBulkhead<'a>, RegionError> {
        // SAFETY:
        // - The caller's guarantees are those `init_in` needs.
        match unsafe { Self::init_in(mem, len, max) } {
            Err(RegionError::AlreadyInitialised { .. }) => {}
            // Too short for this `max`: but if it holds a bulkhead of
            // another `max`, that is what the caller needs to hear.
            Err(short @ RegionError::TooSmall { .. }) => {
                // SAFETY:
                // - The caller's guarantees are those `attach` needs.
                return match unsafe { Self::attach(mem, len) } {
                    Ok(b) => Err(RegionError::MaxMismatch { found: b.max(), wanted: max }),
                    Err(_) => Err(short),
                };
            }
            done => return done,
        }
        // SAFETY:
        // - The caller's guarantees are those `attach` needs.
        let bulkhead = unsafe { Self::attach(mem, len) }?;
        // Was it made with the cap this caller asks for?
        if bulkhead.max() != max {
            return Err(RegionError::MaxMismatch { found: bulkhead.max(), wanted: max });
        }
        Ok(bulkhead)
    }

    /// The bulkhead in a region that [`init_in`](Self::init_in) or
    /// [`attach`](Self::attach) has already accepted, without checking it
    /// again: for a binding that keeps only the region's address (a C
    /// handle).
    ///
    /// # Safety
    /// - `mem` is the address `init_in` or `attach` succeeded on (in this
    ///   process), with its provenance, and their guarantees still hold for `'a`.
    pub unsafe fn attached<'a>(mem: *const u8) -> SharedBulkhead<'a> {
        // SAFETY: the caller's guarantees are those `Region::accepted` needs.
        let region = unsafe { Region::accepted(mem) };
        Self::view(region, region.word())
    }

    /// The bulkhead over a region's header, its `max` slot words and their
    /// release counts; the region is at least `size_for(max)` long.
    fn view(region: Region<'_>, max: u32) -> SharedBulkhead<'_> {
        let slots = Self::HEADER;
        let releases = slots + 8 * max as usize;
        SharedBulkhead::new(
            region.get(0),
            region.slice(slots, max as usize),
            region.slice(releases, max as usize),
        )
    }
}
