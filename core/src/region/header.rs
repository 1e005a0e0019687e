//! The header every shared region starts with, and the one protocol that
//! initialises and checks it. All of the crate's `unsafe` access to shared
//! memory is in this file: the kinds' layouts (`breaker/shared.rs`,
//! `shared_bulkhead/region.rs`) read and write their regions through
//! [`Claim`] and [`Region`], which check every offset.
//!
//! # The header
//!
//! | offset | field | meaning |
//! | ------ | ----- | ------- |
//! | 0  | `magic: u64` | the kind's [`magic`](RegionKind::magic) once initialised; 0 before; its [`initialising`](RegionKind::initialising) while a process fills it |
//! | 8  | `version: u32` | the kind's [`version`](RegionKind::version) |
//! | 12 | `word: u32` | the kind's own (a breaker's offset, a bulkhead's `max`) |
//! | 16 | `size: u64` | the region's size in bytes, as the kind computes it |
//!
//! The kind's own fields follow. These are the bytes both kinds wrote
//! before the header was shared, so regions made by earlier builds of the
//! same layout versions read the same.
//!
//! # Who initialises
//! [`Memory::claim`] takes the region with a compare-and-swap of the magic
//! from 0 to the kind's `initialising`, so exactly one of several racing
//! processes writes it; it then checks that every other byte of the region
//! is zero (fresh memory: `ftruncate`, an anonymous mapping), and gives the
//! claim back if not. [`Claim::publish`] writes the header and stores the
//! magic. A creator that dies between its claim and its publication leaves
//! the region `initialising` for good.
//!
//! # Orderings
//! - The claim is a `Relaxed` CAS: it orders no data, the claimant is the
//!   only writer until it publishes.
//! - [`Claim::publish`] stores the magic with `Release` after every plain
//!   write of the claim; [`Memory::open`] loads it with `Acquire`, which
//!   pairs with it: a process that sees the magic sees everything written
//!   before it. The kinds' own atomics take over from there.

use core::marker::PhantomData;
use core::mem::{align_of, size_of};
use core::ptr::addr_of;

use crate::breaker::circuit::Breaker;
use crate::breaker::config::BreakerConfig;
use crate::limiter::LimitWords;
use crate::region::error::RegionError;
use crate::region::kind::RegionKind;
use crate::shared_bulkhead::slots::Header as BulkheadHeader;
use crate::sync::{AtomicU64, Ordering};

/// The first 24 bytes of every region (module docs).
#[repr(C)]
pub(crate) struct Header {
    pub(crate) magic: AtomicU64,
    pub(crate) version: u32,
    pub(crate) word: u32,
    pub(crate) size: u64,
}

/// The header's size: where a kind's own fields may start.
pub(crate) const HEADER_SIZE: usize = size_of::<Header>();
const _: () = assert!(HEADER_SIZE == 24 && align_of::<Header>() <= 8);

/// A type a region may hold.
///
/// # Safety
/// - Every bit pattern of its size is a valid value (integers, floats,
///   atomics and structs of them: no `bool`, enum, reference or pointer),
///   so garbage in a region is no undefined behaviour.
/// - It has no drop glue, so bytes overwritten or forgotten need none.
/// - After a region is published, every process changes it only through
///   atomics, so shared references to it from many processes are sound.
pub(crate) unsafe trait Plain {}

// SAFETY: every bit pattern is a `u32`; no drop glue; written only before publication.
unsafe impl Plain for u32 {}
// SAFETY: every bit pattern is a `u64`; no drop glue; written only before publication.
unsafe impl Plain for u64 {}
// SAFETY: every bit pattern is an `AtomicU64`; no drop glue; changed only atomically.
unsafe impl Plain for AtomicU64 {}
// SAFETY: integers and floats only (see its fields); no drop glue; never changed after publication.
unsafe impl Plain for BreakerConfig {}
// SAFETY: atomics, integers and floats (its docs and `SharedRegion`'s); no drop glue; changed only atomically.
unsafe impl Plain for Breaker {}
// SAFETY: atomics and integers; no drop glue; its integers are written only before publication.
unsafe impl Plain for BulkheadHeader {}
// SAFETY: two atomics (`repr(C)`); no drop glue; changed only atomically.
unsafe impl Plain for LimitWords {}

/// Memory handed to a region's `init_in` or `attach`: non-null, aligned,
/// and at least the length the kind asked for (checked), valid for `'a`
/// (the caller's guarantee).
pub(crate) struct Memory<'a> {
    kind: RegionKind,
    mem: *mut u8,
    len: usize,
    _valid: PhantomData<&'a ()>,
}

impl<'a> Memory<'a> {
    /// Checks `mem`'s address and that it holds at least `needed` bytes
    /// (at least the header).
    ///
    /// # Safety
    /// - `mem` is either null or valid for reads and writes of `len` bytes
    ///   for `'a`, in every process that maps it.
    /// - During `'a`, the region's bytes are only accessed through this
    ///   module (in any process): no other code writes to them, and the
    ///   mapping is not unmapped or truncated.
    pub(crate) unsafe fn new(
        kind: RegionKind,
        mem: *mut u8,
        len: usize,
        align: usize,
        needed: usize,
    ) -> Result<Memory<'a>, RegionError> {
        // The header is always read: a kind asks for at least that much.
        assert!(align >= align_of::<Header>() && needed >= HEADER_SIZE, "a region holds its header");
        if mem.is_null() {
            return Err(RegionError::Null { kind });
        }
        if !mem.addr().is_multiple_of(align) {
            return Err(RegionError::Misaligned { kind, addr: mem.addr(), align });
        }
        if len < needed {
            return Err(RegionError::TooSmall { kind, len, needed });
        }
        Ok(Memory { kind, mem, len, _valid: PhantomData })
    }

    /// The magic word.
    fn magic(&self) -> &'a AtomicU64 {
        // SAFETY: non-null, aligned and at least `HEADER_SIZE` valid bytes (checked in `new`, caller); every bit pattern is an `AtomicU64`, accessed only atomically by every process.
        unsafe { &*addr_of!((*self.mem.cast::<Header>()).magic) }
    }

    /// The error for a magic that is neither this kind's initialised one
    /// nor 0.
    fn refusal(&self, magic: u64) -> RegionError {
        let kind = self.kind;
        match RegionKind::of_magic(magic) {
            Some(found) if found == kind => RegionError::Initialising { kind },
            Some(found) => RegionError::WrongKind { kind, found },
            None => RegionError::NotARegion { kind, magic },
        }
    }

    /// Claims the first `size` bytes (no more than the memory's length)
    /// for this process to initialise: exactly one of several racing
    /// processes gets the claim.
    ///
    /// # Errors
    /// `AlreadyInitialised`, `Initialising` when another process got there
    /// first; `WrongKind` or `NotARegion` when the magic is another kind's
    /// or nobody's; `NotZeroFilled` when a byte after the magic is not
    /// zero (the memory is left as it was); `TooSmall` if `size` exceeds
    /// the memory.
    pub(crate) fn claim(self, size: usize) -> Result<Claim<'a>, RegionError> {
        let kind = self.kind;
        if self.len < size {
            return Err(RegionError::TooSmall { kind, len: self.len, needed: size });
        }
        let magic = self.magic();
        // Is the region unclaimed? Relaxed: see the module's Orderings.
        if let Err(found) =
            magic.compare_exchange(0, kind.initialising(), Ordering::Relaxed, Ordering::Relaxed)
        {
            return Err(match found {
                f if f == kind.magic() => RegionError::AlreadyInitialised { kind },
                f => self.refusal(f),
            });
        }
        // Is the rest of the region zero, as fresh memory is?
        if let Some((offset, byte)) = self.first_set_byte(size_of::<u64>(), size) {
            // Relaxed: the claim is given up unused; nothing was written.
            magic.store(0, Ordering::Relaxed);
            return Err(RegionError::NotZeroFilled { kind, offset, byte });
        }
        Ok(Claim { memory: self, size })
    }

    /// The first byte in `from..to` that is not zero, and its offset.
    /// Read a block of 64 bytes at a time, one compare each: a region is
    /// kilobytes, and a claim reads it all.
    fn first_set_byte(&self, from: usize, to: usize) -> Option<(usize, u8)> {
        const BLOCK: usize = 64;
        let mut offset = from;
        while to - offset >= BLOCK {
            // SAFETY: `offset + BLOCK <= to <= len` valid bytes (caller of `claim` checked `to`, caller of `Memory::new`); only the claimer writes them; any bytes are a `[u8; BLOCK]`, read unaligned.
            let block = unsafe { self.mem.add(offset).cast::<[u8; BLOCK]>().read_unaligned() };
            if block != [0; BLOCK] {
                break;
            }
            offset += BLOCK;
        }
        (offset..to).find_map(|offset| {
            // SAFETY: `offset < to <= len` valid bytes (as above); any byte is a `u8`.
            let byte = unsafe { self.mem.add(offset).read() };
            (byte != 0).then_some((offset, byte))
        })
    }

    /// Opens a published region of this kind: its magic seen with
    /// `Acquire`, its version this build's.
    ///
    /// # Errors
    /// `Uninitialised`, `Initialising`, `WrongKind`, `NotARegion` for the
    /// magic; `Version` for the layout version.
    pub(crate) fn open(self) -> Result<Region<'a>, RegionError> {
        let kind = self.kind;
        // Acquire pairs with the Release store in `Claim::publish`: see the module's Orderings.
        let magic = self.magic().load(Ordering::Acquire);
        // Is it a published region of this kind?
        if magic != kind.magic() {
            return Err(if magic == 0 { RegionError::Uninitialised { kind } } else { self.refusal(magic) });
        }
        let region = Region { mem: self.mem, len: self.len, _valid: PhantomData };
        // Made by a build with this layout?
        let version = region.read::<u32>(8);
        if version != kind.version() {
            return Err(RegionError::Version { kind, found: version });
        }
        Ok(region)
    }
}

/// A region claimed by this process and not yet published: only this
/// process writes it, and nobody reads it.
pub(crate) struct Claim<'a> {
    memory: Memory<'a>,
    size: usize,
}

impl<'a> Claim<'a> {
    /// Writes `value` at `offset`, inside the claimed bytes and after the
    /// header.
    ///
    /// # Panics
    /// If `value` does not fit there, or is misaligned: a bug in the
    /// kind's layout, never caused by the memory's contents.
    pub(crate) fn write<T: Plain>(&mut self, offset: usize, value: T) {
        assert!(offset >= HEADER_SIZE && offset + size_of::<T>() <= self.size, "write out of the claim");
        let at = self.memory.mem.wrapping_add(offset);
        assert!(at.addr().is_multiple_of(align_of::<T>()), "misaligned write");
        // SAFETY: inside the claimed bytes and aligned (asserted), valid for writes (caller of `Memory::new`); the claim makes this process the only one touching them until `publish`; the old bytes need no drop (`Plain`).
        unsafe { at.cast::<T>().write(value) }
    }

    /// Writes the header (this kind's version, its `word`, the claimed
    /// size) and publishes the region with a `Release` store of the magic.
    pub(crate) fn publish(self, word: u32) -> Region<'a> {
        let Memory { kind, mem, len, .. } = self.memory;
        let header = mem.cast::<Header>();
        // SAFETY: the header lies in the claimed bytes, aligned (checked in `Memory::new`); only this process touches them before the store below publishes them.
        unsafe {
            (&raw mut (*header).version).write(kind.version());
            (&raw mut (*header).word).write(word);
            (&raw mut (*header).size).write(self.size as u64);
        }
        let region = Region { mem, len, _valid: PhantomData };
        // Release pairs with the Acquire load in `Memory::open`: see the module's Orderings.
        region.get::<AtomicU64>(0).store(kind.magic(), Ordering::Release);
        region
    }
}

/// A published region (opened by [`Memory::open`], or published by this
/// process): reads of its fields, and references to its atomics, for `'a`.
#[derive(Clone, Copy)]
pub(crate) struct Region<'a> {
    mem: *mut u8,
    len: usize,
    _valid: PhantomData<&'a ()>,
}

impl<'a> Region<'a> {
    /// A region that `init_in` or `attach` accepted before, from its
    /// address alone (a C handle): its header's `size` is taken as its
    /// length.
    ///
    /// # Safety
    /// - `mem` is the address a kind's `init_in` or `attach` succeeded on
    ///   (in this process), with its provenance, and their guarantees
    ///   still hold for `'a`.
    pub(crate) unsafe fn accepted(mem: *const u8) -> Region<'a> {
        let mem = mem.cast_mut();
        // SAFETY: the header was validated when the region was accepted (caller), and `size` is written only before publication: a plain read races with nothing.
        let size = unsafe { addr_of!((*mem.cast::<Header>()).size).read() };
        Region { mem, len: size as usize, _valid: PhantomData }
    }

    /// The memory's length (at least the kind's size once checked).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The header's `word` (the kind's own field).
    pub(crate) fn word(&self) -> u32 {
        self.read(12)
    }

    /// The header's `size`.
    pub(crate) fn size(&self) -> u64 {
        self.read::<u64>(16)
    }

    /// Where `count` values of `T` start at `offset`.
    ///
    /// # Panics
    /// If they do not fit in the memory, or are misaligned: a bug in the
    /// kind's layout (its offsets come from checked fields).
    fn at<T>(&self, offset: usize, count: usize) -> *mut T {
        let end = count.checked_mul(size_of::<T>()).and_then(|n| n.checked_add(offset));
        assert!(end.is_some_and(|end| end <= self.len), "read out of the region");
        let at = self.mem.wrapping_add(offset);
        assert!(at.addr().is_multiple_of(align_of::<T>()), "misaligned read");
        at.cast()
    }

    /// A plain read of the value at `offset`: for fields written only
    /// before publication.
    pub(crate) fn read<T: Plain + Copy>(&self, offset: usize) -> T {
        let at = self.at::<T>(offset, 1);
        // SAFETY: in bounds and aligned (checked in `at`), valid for reads (caller of `Memory::new`); published, so written before the magic this process acquired, or by this process; every bit pattern is a `T` (`Plain`).
        unsafe { at.read() }
    }

    /// A shared reference to the value at `offset`, for `'a`.
    pub(crate) fn get<T: Plain + Sync>(&self, offset: usize) -> &'a T {
        let at = self.at::<T>(offset, 1);
        // SAFETY: in bounds and aligned (checked in `at`), valid for `'a` (caller of `Memory::new`); every bit pattern is a `T` and every process changes it only atomically (`Plain`), so the reference never races a plain write.
        unsafe { &*at }
    }

    /// A shared reference to the `count` values at `offset`, for `'a`.
    pub(crate) fn slice<T: Plain + Sync>(&self, offset: usize, count: usize) -> &'a [T] {
        let at = self.at::<T>(offset, count);
        // SAFETY: as in `get`, for `count` values (checked in `at`).
        unsafe { core::slice::from_raw_parts(at, count) }
    }
}

const _: () = assert!(size_of::<u64>() == 8 && size_of::<AtomicU64>() == 8);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::vec;

    #[test]
    fn a_claim_names_the_first_byte_that_is_not_zero_and_leaves_the_memory_as_it_was() {
        // Blocks of 64 bytes and a tail: 8 + 4 × 64 + 37.
        const LEN: usize = 301;
        let mut words = vec![0u64; LEN.div_ceil(8)];
        let mem = words.as_mut_ptr().cast::<u8>();
        let memory = || {
            // SAFETY: `words` holds `LEN` valid, aligned bytes for the test, touched only here.
            unsafe { Memory::new(RegionKind::Breaker, mem, LEN, 8, HEADER_SIZE) }.unwrap()
        };
        // SAFETY: `at < LEN`, inside `words`; no claim is held.
        let set = |at: usize, byte: u8| unsafe { mem.add(at).write(byte) };
        // Under miri, every third offset: each block position still comes up.
        for at in (size_of::<u64>()..LEN).step_by(if cfg!(miri) { 3 } else { 1 }) {
            // The last byte set too: the first one is named.
            set(LEN - 1, 0x80);
            let byte = (at % 255) as u8 + 1;
            set(at, byte);
            let kind = RegionKind::Breaker;
            assert_eq!(
                memory().claim(LEN).err(),
                Some(RegionError::NotZeroFilled { kind, offset: at, byte })
            );
            // SAFETY: the magic word, inside `words`.
            assert_eq!(unsafe { mem.cast::<u64>().read() }, 0, "the claim is given up");
            set(at, 0);
            set(LEN - 1, 0);
        }
        assert!(words.iter().all(|&w| w == 0));
        assert!(memory().claim(LEN).is_ok());
    }
}
