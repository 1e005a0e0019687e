//! Shared bulkheads in raw memory: the region's layout, its creation and
//! the checks on attaching to it.

use core::fmt;
use core::mem::{align_of, size_of};
use core::ptr::{addr_of, addr_of_mut};

use crate::breaker::shared::first_set_byte;
use crate::shared_bulkhead::holder::Holder;
use crate::shared_bulkhead::slots::{Header, SharedBulkhead};
use crate::sync::{AtomicU32, AtomicU64, Ordering};

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
/// The layout is native (endianness): a region is shared between processes
/// of one host built from the same version of this crate. Sharing it
/// between processes needs native 64-bit atomics: where portable-atomic
/// emulates them with a lock, the lock is per process. How slots are
/// taken, freed and reclaimed is in [`SharedBulkhead`]'s module docs.
///
/// # Who initialises
/// As for breakers ([`SharedRegion`](crate::SharedRegion)): `init_in`
/// claims the region with a compare-and-swap of the magic from 0 to
/// `INITIALISING`, so exactly one of several racing processes writes it;
/// the others get [`AlreadyInitialised`](SharedBulkheadError::AlreadyInitialised)
/// or [`Initialising`](SharedBulkheadError::Initialising). A creator that
/// dies between its claim and its publication leaves the region
/// `INITIALISING` for good: remove the file and start again.
///
/// # Validation
/// Attaching trusts none of the bytes it finds: alignment, length, magic,
/// version, `max` (in range), `size` (that of `max`; the memory at least
/// that long), `reserved` (0) and every slot word (0, or a holder word with
/// a non-zero pid) are checked, and any mismatch is a
/// [`SharedBulkheadError`] naming the field, never undefined behaviour or a
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
/// use tripwire::{Holder, SharedBulkheadRegion};
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
/// # Ok::<(), tripwire::SharedBulkheadError>(())
/// ```
#[derive(Debug)]
pub struct SharedBulkheadRegion {
    _private: (),
}

/// Why a shared bulkhead region could not be initialised or attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SharedBulkheadError {
    /// The pointer was null.
    Null,
    /// The memory is not aligned to [`SharedBulkheadRegion::ALIGN`].
    Misaligned {
        /// The address given.
        addr: usize,
    },
    /// The memory is shorter than the region needs.
    TooSmall {
        /// The length given.
        len: usize,
        /// The length needed.
        needed: usize,
    },
    /// A `max` above [`SharedBulkheadRegion::MAX_SLOTS`] (asked for, or
    /// found in the header).
    MaxOutOfRange {
        /// The value.
        max: u64,
    },
    /// The region is all zeros at its start: nobody has initialised it yet.
    Uninitialised,
    /// Another process has claimed the region and not yet published it (or
    /// died before it could).
    Initialising,
    /// `init_in` found a byte after the (zero) magic that is not zero: the
    /// memory is not fresh, and `init_in` leaves it as it found it.
    NotZeroFilled {
        /// Where the first such byte is, from the start of the region.
        offset: usize,
        /// Its value.
        byte: u8,
    },
    /// `init_in` found a region that already holds a bulkhead.
    AlreadyInitialised,
    /// The magic number is not a shared bulkhead's: not a region, or garbage.
    NotARegion {
        /// The magic number found.
        magic: u64,
    },
    /// The region was made by a build with another layout version.
    Version {
        /// The version found.
        found: u32,
    },
    /// The header's `size` is not the size of a region of its `max` slots.
    SizeMismatch {
        /// The size recorded.
        size: u64,
        /// The `max` recorded.
        max: u32,
    },
    /// The header's `reserved` field is not 0.
    Reserved {
        /// The value found.
        value: u32,
    },
    /// A slot word is neither 0 nor a holder (its pid field is 0).
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
}

impl fmt::Display for SharedBulkheadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SharedBulkheadError as E;
        match *self {
            E::Null => f.write_str("shared bulkhead region pointer is null"),
            E::Misaligned { addr } => write!(
                f,
                "shared bulkhead region at {addr:#x} is not aligned to {} bytes",
                SharedBulkheadRegion::ALIGN
            ),
            E::TooSmall { len, needed } => {
                write!(f, "shared bulkhead region of {len} bytes is too small: it needs {needed}")
            }
            E::MaxOutOfRange { max } => write!(
                f,
                "shared bulkhead `max` = {max}, expected 0 to {}",
                SharedBulkheadRegion::MAX_SLOTS
            ),
            E::Uninitialised => {
                f.write_str("shared bulkhead region is not initialised (zero `magic`): initialise it first")
            }
            E::Initialising => f.write_str(
                "shared bulkhead region is being initialised by another process (or its creator died doing so)",
            ),
            E::AlreadyInitialised => {
                f.write_str("shared bulkhead region is already initialised: attach to it instead")
            }
            E::NotZeroFilled { offset, byte } => write!(
                f,
                "shared bulkhead region is not zero-filled (byte {offset} is {byte:#04x}): \
                 init_in takes fresh, zero-filled memory"
            ),
            E::NotARegion { magic } => write!(
                f,
                "not a shared bulkhead region: `magic` {magic:#018x}, expected {:#018x}",
                SharedBulkheadRegion::MAGIC
            ),
            E::Version { found } => write!(
                f,
                "shared bulkhead region has layout `version` {found}, this build reads version {}",
                SharedBulkheadRegion::VERSION
            ),
            E::SizeMismatch { size, max } => write!(
                f,
                "shared bulkhead region header records `size` = {size} for `max` = {max}; that `max` needs {}",
                SharedBulkheadRegion::HEADER + 16 * max as usize
            ),
            E::Reserved { value } => write!(f, "shared bulkhead region `reserved` = {value}, expected 0"),
            E::BadSlot { index, word } => {
                write!(f, "shared bulkhead region `slot[{index}]` = {word:#018x} names no holder (pid 0)")
            }
            E::MaxMismatch { found, wanted } => {
                write!(f, "shared bulkhead region has `max` = {found}, not the {wanted} asked for")
            }
        }
    }
}

impl core::error::Error for SharedBulkheadError {}

const _: () = assert!(size_of::<Header>() == SharedBulkheadRegion::HEADER);
const _: () = assert!(align_of::<Header>() == SharedBulkheadRegion::ALIGN);
const _: () = assert!(size_of::<AtomicU64>() == 8 && align_of::<AtomicU64>() <= 8);
const _: () = assert!(size_of::<AtomicU32>() == 4);

impl SharedBulkheadRegion {
    /// The magic number of an initialised region: `"TWBULKHD"` in native
    /// byte order.
    pub const MAGIC: u64 = u64::from_ne_bytes(*b"TWBULKHD");
    /// The magic number while one process fills the region in.
    pub const INITIALISING: u64 = u64::from_ne_bytes(*b"TWBULKH~");
    /// The layout version this build reads and writes.
    pub const VERSION: u32 = 2;
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
    fn check(mem: *mut u8, len: usize, needed: usize) -> Result<*mut Header, SharedBulkheadError> {
        if mem.is_null() {
            return Err(SharedBulkheadError::Null);
        }
        if mem.addr() % Self::ALIGN != 0 {
            return Err(SharedBulkheadError::Misaligned { addr: mem.addr() });
        }
        if len < needed {
            return Err(SharedBulkheadError::TooSmall { len, needed });
        }
        Ok(mem.cast())
    }

    /// Sets up an empty bulkhead of `max` slots in zero-filled memory and
    /// returns it. Exactly one of several processes racing to initialise the
    /// same region succeeds.
    ///
    /// # Errors
    /// [`Null`](SharedBulkheadError::Null), [`Misaligned`](SharedBulkheadError::Misaligned),
    /// [`MaxOutOfRange`](SharedBulkheadError::MaxOutOfRange),
    /// [`TooSmall`](SharedBulkheadError::TooSmall) (shorter than
    /// `size_for(max)`); [`AlreadyInitialised`](SharedBulkheadError::AlreadyInitialised)
    /// and [`Initialising`](SharedBulkheadError::Initialising) when another
    /// process got there first; [`NotARegion`](SharedBulkheadError::NotARegion)
    /// if the magic is neither 0 nor a shared bulkhead's,
    /// [`NotZeroFilled`](SharedBulkheadError::NotZeroFilled) if it is 0 but
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
    pub unsafe fn init_in<'a>(
        mem: *mut u8,
        len: usize,
        max: u32,
    ) -> Result<SharedBulkhead<'a>, SharedBulkheadError> {
        let size = Self::size_for(max).ok_or(SharedBulkheadError::MaxOutOfRange { max: max.into() })?;
        let header = Self::check(mem, len, size)?;
        // SAFETY:
        // - `header` is non-null and aligned (checked), and the caller
        //   guarantees `len >= size` valid bytes for `'a`.
        // - Any bit pattern is a valid `AtomicU64`; other processes access
        //   the magic only atomically (caller's guarantee).
        let magic = unsafe { &*addr_of!((*header).magic) };
        // Relaxed: see the Orderings; the claimant is the only writer.
        if let Err(found) =
            magic.compare_exchange(0, Self::INITIALISING, Ordering::Relaxed, Ordering::Relaxed)
        {
            return Err(match found {
                Self::MAGIC => SharedBulkheadError::AlreadyInitialised,
                Self::INITIALISING => SharedBulkheadError::Initialising,
                magic => SharedBulkheadError::NotARegion { magic },
            });
        }
        // Is the rest of the region zero, as fresh memory is?
        // SAFETY:
        // - `size <= len` valid bytes (checked); the claim makes this
        //   process the only writer (as below).
        if let Some((offset, byte)) = unsafe { first_set_byte(mem, size_of::<u64>(), size) } {
            // Relaxed: the claim is given up unused; nothing was written.
            magic.store(0, Ordering::Relaxed);
            return Err(SharedBulkheadError::NotZeroFilled { offset, byte });
        }
        let slots = mem.wrapping_add(Self::HEADER).cast::<AtomicU64>();
        // SAFETY:
        // - Every place written lies inside the first `size <= len` bytes
        //   (checked), is aligned (the region is, and the slots start at 64),
        //   and is valid for writes (caller).
        // - The successful claim makes this process the only one touching
        //   these bytes until the Release store below publishes them: others
        //   read them only after seeing `MAGIC` (all access goes through this
        //   module: the caller's guarantee). The magic itself is not written
        //   here.
        // - The old bytes need no drop: atomics and integers.
        unsafe {
            addr_of_mut!((*header).version).write(Self::VERSION);
            addr_of_mut!((*header).max).write(max);
            addr_of_mut!((*header).size).write(size as u64);
            addr_of_mut!((*header).acquired).write(AtomicU64::new(0));
            addr_of_mut!((*header).rejected).write(AtomicU64::new(0));
            addr_of_mut!((*header).reclaimed).write(AtomicU64::new(0));
            addr_of_mut!((*header).gate).write(AtomicU64::new(0));
            addr_of_mut!((*header).hint).write(AtomicU32::new(0));
            addr_of_mut!((*header).reserved).write(0);
            // The slot words, then their release counts.
            for i in 0..2 * max as usize {
                slots.add(i).write(AtomicU64::new(0));
            }
        }
        // Release: publishes the writes above; pairs with `attach`'s Acquire load.
        magic.store(Self::MAGIC, Ordering::Release);
        // SAFETY:
        // - Initialised just above, with `max` slots; the caller guarantees
        //   the memory for `'a`.
        Ok(unsafe { Self::view(header, max) })
    }

    /// Checks that `mem` (`len` bytes) holds a shared bulkhead initialised
    /// by [`init_in`](Self::init_in) (in this process or another), and
    /// returns it.
    ///
    /// # Errors
    /// Any [`SharedBulkheadError`] but `AlreadyInitialised` and
    /// `MaxMismatch`: see the type's Validation.
    ///
    /// # Safety
    /// As for [`init_in`](Self::init_in).
    pub unsafe fn attach<'a>(mem: *mut u8, len: usize) -> Result<SharedBulkhead<'a>, SharedBulkheadError> {
        let header = Self::check(mem, len, Self::HEADER)?;
        // SAFETY:
        // - Non-null, aligned, and at least `HEADER` valid bytes (checked,
        //   and the caller's guarantee).
        // - Any bit pattern is a valid `AtomicU64`.
        let magic = unsafe { &*addr_of!((*header).magic) };
        // Acquire: pairs with `init_in`'s Release store of the magic.
        match magic.load(Ordering::Acquire) {
            Self::MAGIC => {}
            0 => return Err(SharedBulkheadError::Uninitialised),
            Self::INITIALISING => return Err(SharedBulkheadError::Initialising),
            magic => return Err(SharedBulkheadError::NotARegion { magic }),
        }
        // SAFETY:
        // - In bounds (the header fits in `len`), aligned, valid for reads.
        // - These fields are written only before the magic is published
        //   (seen above, with Acquire), so these plain reads race with
        //   nothing; any bit pattern is a valid integer, so garbage is no
        //   undefined behaviour: the checks below are about meaning.
        let (version, max, size, reserved) = unsafe {
            (
                addr_of!((*header).version).read(),
                addr_of!((*header).max).read(),
                addr_of!((*header).size).read(),
                addr_of!((*header).reserved).read(),
            )
        };
        // Made by a build with this layout?
        if version != Self::VERSION {
            return Err(SharedBulkheadError::Version { found: version });
        }
        // Is the cap in range, and the size that of the cap?
        let Some(needed) = Self::size_for(max) else {
            return Err(SharedBulkheadError::MaxOutOfRange { max: max.into() });
        };
        if size != needed as u64 {
            return Err(SharedBulkheadError::SizeMismatch { size, max });
        }
        // Does the memory hold every slot?
        if len < needed {
            return Err(SharedBulkheadError::TooSmall { len, needed });
        }
        if reserved != 0 {
            return Err(SharedBulkheadError::Reserved { value: reserved });
        }
        // SAFETY:
        // - `max` slots fit in `len` (checked); the caller guarantees the
        //   memory for `'a`.
        let bulkhead = unsafe { Self::view(header, max) };
        // Does every slot word decode? (Relaxed: a check of the name only.)
        for index in 0..max {
            let word = bulkhead.raw_slot(index);
            if word != 0 && Holder::from_raw(word).is_none() {
                return Err(SharedBulkheadError::BadSlot { index, word });
            }
        }
        Ok(bulkhead)
    }

    /// Initialises the region with `max` slots if nobody has, otherwise
    /// attaches to it: what every process of a group can call at start-up.
    ///
    /// # Errors
    /// As for [`attach`](Self::attach), and
    /// [`MaxMismatch`](SharedBulkheadError::MaxMismatch) if the region
    /// holds a bulkhead with another `max`.
    /// [`Initialising`](SharedBulkheadError::Initialising) means another
    /// process is between its claim and its publication: try again shortly.
    ///
    /// # Safety
    /// As for [`init_in`](Self::init_in).
    pub unsafe fn open_in<'a>(
        mem: *mut u8,
        len: usize,
        max: u32,
    ) -> Result<SharedBulkhead<'a>, SharedBulkheadError> {
        // SAFETY:
        // - The caller's guarantees are those `init_in` needs.
        match unsafe { Self::init_in(mem, len, max) } {
            Err(SharedBulkheadError::AlreadyInitialised) => {}
            // Too short for this `max`: but if it holds a bulkhead of
            // another `max`, that is what the caller needs to hear.
            Err(short @ SharedBulkheadError::TooSmall { .. }) => {
                // SAFETY:
                // - The caller's guarantees are those `attach` needs.
                return match unsafe { Self::attach(mem, len) } {
                    Ok(b) => Err(SharedBulkheadError::MaxMismatch { found: b.max(), wanted: max }),
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
            return Err(SharedBulkheadError::MaxMismatch { found: bulkhead.max(), wanted: max });
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
        let header = mem.cast::<Header>().cast_mut();
        // SAFETY:
        // - `max` was validated when the region was accepted and is written
        //   only before publication: a plain read races with nothing.
        let max = unsafe { addr_of!((*header).max).read() };
        // SAFETY:
        // - The region was accepted with these `max` slots (caller).
        unsafe { Self::view(header, max) }
    }

    /// The bulkhead over a header and the `max` slot words after it.
    ///
    /// # Safety
    /// `header` is aligned and valid for reads and writes of
    /// `size_for(max)` bytes for `'a`, accessed only through this module.
    unsafe fn view<'a>(header: *mut Header, max: u32) -> SharedBulkhead<'a> {
        let slots = header.cast::<u8>().wrapping_add(Self::HEADER).cast::<AtomicU64>();
        let releases = slots.wrapping_add(max as usize);
        // SAFETY:
        // - All three lie inside the `size_for(max)` valid, aligned bytes
        //   (caller); atomics and integers accept any bit pattern, and every
        //   process writes the mutable ones only atomically.
        unsafe {
            SharedBulkhead::new(
                &*header,
                core::slice::from_raw_parts(slots, max as usize),
                core::slice::from_raw_parts(releases, max as usize),
            )
        }
    }
}
