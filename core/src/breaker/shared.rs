//! Breakers in memory shared between processes.
//!
//! The layout and the rules are in [`SharedRegion`]'s docs.

use core::fmt;
use core::mem::{align_of, offset_of, size_of};
use core::ptr::{addr_of, addr_of_mut};

use crate::breaker::circuit::{Breaker, Inconsistent};
use crate::breaker::config::{BreakerConfig, ConfigError};
use crate::sync::{AtomicU64, Ordering};

/// The header at the start of a shared region.
#[repr(C)]
struct Header {
    magic: AtomicU64,
    version: u32,
    breaker_offset: u32,
    size: u64,
    config: BreakerConfig,
}

/// The layout of a breaker in shared memory: a header (magic number, layout
/// version, size, a copy of the config) followed by the [`Breaker`].
///
/// It is never built as a Rust value: reserve [`layout`](Self::layout) bytes
/// in a shared mapping, then [`init_in`](Self::init_in),
/// [`attach`](Self::attach) or [`open_in`](Self::open_in). The layout and
/// the rules follow.
///
/// A [`Breaker`] is plain data: atomics, integers and floats, no pointers.
/// Placed in a `MAP_SHARED` mapping (a file, or an anonymous mapping made
/// before `fork`), it is one breaker for every process that maps it: when
/// the exchange goes down they all stop calling it at once.
///
/// # Layout
///
/// | offset | field | meaning |
/// | ------ | ----- | ------- |
/// | 0      | `magic: u64` | [`SharedRegion::MAGIC`] once initialised; 0 before; [`SharedRegion::INITIALISING`] while a process fills it |
/// | 8      | `version: u32` | [`SharedRegion::VERSION`], bumped whenever this layout or the breaker's changes |
/// | 12     | `breaker_offset: u32` | where the breaker starts |
/// | 16     | `size: u64` | size of the whole region in bytes |
/// | 24     | `config` | a copy of the [`BreakerConfig`] it was made with |
/// | `breaker_offset` | [`Breaker`] | the breaker itself, cache-line aligned |
///
/// [`SharedRegion::layout`] gives the size and alignment to reserve. The
/// layout is native (endianness, alignment): a region is shared between
/// processes of one host built from the same version of this crate.
///
/// # Who initialises
/// Any number of processes may race to set a region up: [`SharedRegion::init_in`]
/// claims it with a compare-and-swap of the magic from 0 to
/// [`SharedRegion::INITIALISING`], so exactly one of them writes it; the
/// others get [`SharedError::AlreadyInitialised`] or
/// [`SharedError::Initialising`] and [`attach`](SharedRegion::attach) (or
/// call [`open_in`](SharedRegion::open_in), which does all of that). A
/// freshly created file (`ftruncate`) or anonymous mapping is zero-filled,
/// which is exactly the unclaimed state. A creator that dies between the
/// claim and the publication leaves the region `INITIALISING` for good:
/// remove the file and start again.
///
/// # Validation
/// Attaching never trusts the bytes it finds: the alignment, the length, the
/// magic, the version, the recorded size, both copies of the config (which
/// must validate and agree), the state word (a known state, zero in every
/// bit that state does not use), the breaker's hot line (its layout stamp
/// and copy of the flags, see [`HotLine`](crate::HotLine)), the deadline slots (stamped for the
/// current generation, or the one before or after it) and the rolling
/// window's words (each field in range) are checked, and any mismatch is a
/// [`SharedError`], never undefined behaviour: every bit pattern is a valid
/// `Breaker` value, so the checks are about meaning.
///
/// The times in the deadline slots cannot be checked without a clock, and
/// need not be: a deadline further ahead than any wait the config allows
/// counts as passed (see the breaker's deadline rules), so a garbage time
/// never holds the breaker shut, and the next transition replaces it:
/// even one stamped for the generation that transition enters, which it
/// takes for a racer's, unless its hold bit is set (then it stands as a
/// racing hold's would, when later, within the same bound).
///
/// # Time
/// Every process must stamp the breaker with the same clock:
/// [`MonotonicClock`](crate::MonotonicClock) (`CLOCK_MONOTONIC`, absolute
/// nanoseconds) reads the same in every process on a host.
///
/// # Orderings
/// - `init_in` claims the region with a `Relaxed` CAS of the magic (the
///   claim orders no data: the claimant is the only writer until it
///   publishes), writes the header and the breaker with plain stores, then
///   publishes them with a `Release` store of [`SharedRegion::MAGIC`].
/// - `attach` loads the magic with `Acquire`, which pairs with that
///   `Release` store: a process that sees the magic sees the header and the
///   breaker it covers. The breaker's own orderings take over from there.
///
/// # Examples
/// ```
/// use tripwire::{BreakerConfig, FixedClock, SharedRegion, State};
///
/// // A stand-in for a MAP_SHARED mapping: zeroed, suitably aligned memory.
/// let (size, align) = SharedRegion::layout();
/// let layout = std::alloc::Layout::from_size_align(size, align).unwrap();
/// // SAFETY:
/// // - `layout` has a non-zero size.
/// let mem = unsafe { std::alloc::alloc_zeroed(layout) };
/// assert!(!mem.is_null());
///
/// // SAFETY:
/// // - `mem` is valid for reads and writes of `size` bytes, and is freed
/// //   only after the last use of the breakers below.
/// // - Nothing else writes to it.
/// let (ours, theirs) = unsafe {
///     let ours = SharedRegion::init_in(mem, size, BreakerConfig::default())?;
///     (ours, SharedRegion::attach(mem, size)?)
/// };
/// ours.force_open();
/// assert_eq!(theirs.state(), State::ForcedOpen);
/// assert!(theirs.try_acquire(&FixedClock(0)).is_err());
///
/// // SAFETY:
/// // - `mem` came from `alloc_zeroed` with this layout; no breaker from it
/// //   is used after this point.
/// unsafe { std::alloc::dealloc(mem, layout) };
/// # Ok::<(), tripwire::SharedError>(())
/// ```
///
/// # Size and alignment
/// 4224 bytes on x86-64 (most of it the striped counters and the two
/// rolling windows), aligned like the breaker (128 bytes there).
#[repr(C)]
pub struct SharedRegion {
    header: Header,
    breaker: Breaker,
}

impl fmt::Debug for SharedRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedRegion").field("breaker", &self.breaker).finish_non_exhaustive()
    }
}

/// Why a region could not be initialised or attached to.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum SharedError {
    /// The pointer was null.
    Null,
    /// The memory is not aligned as [`SharedRegion::layout`] asks.
    Misaligned {
        /// The address given.
        addr: usize,
        /// The alignment needed.
        align: usize,
    },
    /// The memory is shorter than [`SharedRegion::layout`] asks.
    TooSmall {
        /// The length given.
        len: usize,
        /// The length needed.
        needed: usize,
    },
    /// The region is all zeros at its start: nobody has initialised it yet.
    Uninitialised,
    /// Another process has claimed the region and not yet published it (or
    /// died before it could).
    Initialising,
    /// `init_in` found a region that already holds a breaker.
    AlreadyInitialised,
    /// `init_in` found a byte after the (zero) magic that is not zero: the
    /// memory is not fresh, and `init_in` leaves it as it found it.
    NotZeroFilled {
        /// Where the first such byte is, from the start of the region.
        offset: usize,
        /// Its value.
        byte: u8,
    },
    /// The magic number is not tripwire's: not a region, or garbage.
    NotARegion {
        /// The magic number found.
        magic: u64,
    },
    /// The region was made by a build with another layout version.
    Version {
        /// The version found.
        found: u32,
    },
    /// The header's size or breaker offset disagrees with this build's layout.
    SizeMismatch {
        /// The size recorded in the header.
        size: u64,
        /// The breaker offset recorded in the header.
        breaker_offset: u32,
    },
    /// A stored config does not validate, or the two copies disagree.
    BadConfig(Option<ConfigError>),
    /// The state word does not decode.
    BadState,
    /// The deadline slots were not stamped for the state word's generation.
    BadDeadlines,
    /// The rolling window's words do not decode.
    BadWindow,
    /// The breaker's hot line (see [`HotLine`](crate::HotLine)) has another
    /// stamp, or a copy of the flags that is not its config's.
    BadHotLine,
    /// `open_in` found a breaker made with another config.
    ConfigMismatch,
}

impl fmt::Display for SharedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SharedError::Null => f.write_str("shared region pointer is null"),
            SharedError::Misaligned { addr, align } => {
                write!(f, "shared region at {addr:#x} is not aligned to {align} bytes")
            }
            SharedError::TooSmall { len, needed } => {
                write!(f, "shared region of {len} bytes is too small: a breaker needs {needed}")
            }
            SharedError::Uninitialised => {
                f.write_str("shared region is not initialised (zero magic): initialise it first")
            }
            SharedError::Initialising => f.write_str(
                "shared region is being initialised by another process (or its creator died doing so)",
            ),
            SharedError::AlreadyInitialised => {
                f.write_str("shared region already holds a breaker: attach to it instead")
            }
            SharedError::NotZeroFilled { offset, byte } => write!(
                f,
                "shared region is not zero-filled (byte {offset} is {byte:#04x}): \
                 init_in takes fresh, zero-filled memory"
            ),
            SharedError::NotARegion { magic } => write!(
                f,
                "not a tripwire shared region: magic {magic:#018x}, expected {:#018x}",
                SharedRegion::MAGIC
            ),
            SharedError::Version { found } => write!(
                f,
                "shared region has layout version {found}, this build reads version {}",
                SharedRegion::VERSION
            ),
            SharedError::SizeMismatch { size, breaker_offset } => write!(
                f,
                "shared region header records {size} bytes with the breaker at {breaker_offset}; \
                 this build's layout is {} bytes with the breaker at {}",
                size_of::<SharedRegion>(),
                BREAKER_OFFSET
            ),
            SharedError::BadConfig(Some(e)) => write!(f, "shared region holds a bad config: {e}"),
            SharedError::BadConfig(None) => {
                f.write_str("shared region holds two different copies of its config")
            }
            SharedError::BadState => f.write_str("shared region holds a state word that does not decode"),
            SharedError::BadDeadlines => {
                f.write_str("shared region holds deadline slots that do not belong to its state word")
            }
            SharedError::BadWindow => {
                f.write_str("shared region holds rolling-window words that do not decode")
            }
            SharedError::BadHotLine => f.write_str(
                "shared region holds a breaker whose hot line (layout stamp, flags) does not match its config",
            ),
            SharedError::ConfigMismatch => {
                f.write_str("shared region holds a breaker made with a different config")
            }
        }
    }
}

impl core::error::Error for SharedError {}

/// The first byte in `from..to` of `mem` that is not zero, with its offset.
/// Also used by the shared bulkhead's `init_in`.
///
/// # Safety
/// `mem` is valid for reads of `to` bytes, none of them written meanwhile.
pub(crate) unsafe fn first_set_byte(mem: *const u8, from: usize, to: usize) -> Option<(usize, u8)> {
    (from..to).find_map(|offset| {
        // SAFETY:
        // - `offset < to`: inside the readable bytes (caller); any byte is a `u8`.
        let byte = unsafe { mem.add(offset).read() };
        (byte != 0).then_some((offset, byte))
    })
}

const BREAKER_OFFSET: usize = SharedRegion::BREAKER_OFFSET;
const _: () = assert!(BREAKER_OFFSET <= u32::MAX as usize);

impl SharedRegion {
    /// The magic number of an initialised region: `"TRIPWIRE"` in native
    /// byte order.
    pub const MAGIC: u64 = u64::from_ne_bytes(*b"TRIPWIRE");
    /// The magic number while one process fills the region in.
    pub const INITIALISING: u64 = u64::from_ne_bytes(*b"TRIPWIR~");
    /// The layout version this build reads and writes.
    pub const VERSION: u32 = 4;
    /// Where the breaker starts, in bytes from the start of the region: a
    /// multiple of the breaker's alignment, with the header before it.
    pub const BREAKER_OFFSET: usize = offset_of!(SharedRegion, breaker);

    /// The size and alignment, in bytes, that a region needs.
    pub const fn layout() -> (usize, usize) {
        (size_of::<SharedRegion>(), align_of::<SharedRegion>())
    }

    /// Checks the memory's address and length; the pointer to the region.
    fn region(mem: *mut u8, len: usize) -> Result<*mut SharedRegion, SharedError> {
        let (needed, align) = Self::layout();
        if mem.is_null() {
            return Err(SharedError::Null);
        }
        if mem.addr() % align != 0 {
            return Err(SharedError::Misaligned { addr: mem.addr(), align });
        }
        if len < needed {
            return Err(SharedError::TooSmall { len, needed });
        }
        Ok(mem.cast())
    }

    /// Sets up a Closed breaker with `config` in zero-filled memory, and
    /// returns it. Exactly one of several processes racing to initialise
    /// the same region succeeds; the others get
    /// [`SharedError::AlreadyInitialised`] or [`SharedError::Initialising`].
    ///
    /// # Errors
    /// [`Null`](SharedError::Null), [`Misaligned`](SharedError::Misaligned),
    /// [`TooSmall`](SharedError::TooSmall); [`AlreadyInitialised`](SharedError::AlreadyInitialised)
    /// and [`Initialising`](SharedError::Initialising) as above;
    /// [`NotARegion`](SharedError::NotARegion) if the magic is neither 0 nor
    /// tripwire's, [`NotZeroFilled`](SharedError::NotZeroFilled) if the
    /// magic is 0 but a later byte of the region is not (the memory is not
    /// zero-filled either way, and is left as it was).
    ///
    /// # Safety
    /// - `mem` is either null or valid for reads and writes of `len` bytes
    ///   for `'a`, in every process that maps it.
    /// - During `'a`, the region's bytes are only accessed through this
    ///   module's functions and the breakers they return (in any process):
    ///   no other code writes to them, and the mapping is not unmapped or
    ///   truncated.
    pub unsafe fn init_in<'a>(
        mem: *mut u8,
        len: usize,
        config: BreakerConfig,
    ) -> Result<&'a Breaker, SharedError> {
        let region = Self::region(mem, len)?;
        // SAFETY:
        // - `region` is non-null and aligned for `SharedRegion`, hence for
        //   the `AtomicU64` at offset 0, and the caller guarantees `len`
        //   (checked to cover the region) valid bytes for `'a`.
        // - Any bit pattern is a valid `AtomicU64`; other processes access
        //   it only atomically (caller's guarantee).
        let magic = unsafe { &*addr_of!((*region).header.magic) };
        // Relaxed: see the module's Orderings; the claimant is the only writer.
        if let Err(found) =
            magic.compare_exchange(0, Self::INITIALISING, Ordering::Relaxed, Ordering::Relaxed)
        {
            return Err(match found {
                Self::MAGIC => SharedError::AlreadyInitialised,
                Self::INITIALISING => SharedError::Initialising,
                magic => SharedError::NotARegion { magic },
            });
        }
        // Is the rest of the region zero, as fresh memory is?
        // SAFETY:
        // - The region's bytes lie inside `len` valid bytes (checked); the
        //   claim makes this process the only writer (as below).
        let set = unsafe { first_set_byte(mem, size_of::<u64>(), size_of::<SharedRegion>()) };
        if let Some((offset, byte)) = set {
            // Relaxed: the claim is given up unused; nothing was written.
            magic.store(0, Ordering::Relaxed);
            return Err(SharedError::NotZeroFilled { offset, byte });
        }
        // SAFETY:
        // - Every place written lies inside the region (checked above), is
        //   aligned (the region is), and is valid for writes (caller).
        // - The successful claim makes this process the only one touching
        //   these bytes until the Release store below publishes them: others
        //   read them only after seeing `MAGIC` (caller's guarantee that all
        //   access goes through this module).
        // - The old bytes need no drop: `Breaker` and the header fields have
        //   no drop glue.
        unsafe {
            addr_of_mut!((*region).header.version).write(Self::VERSION);
            addr_of_mut!((*region).header.breaker_offset).write(BREAKER_OFFSET as u32);
            addr_of_mut!((*region).header.size).write(size_of::<SharedRegion>() as u64);
            addr_of_mut!((*region).header.config).write(config);
            addr_of_mut!((*region).breaker).write(Breaker::new(config));
        }
        // Release pairs with the Acquire load in `attach`: see the module's Orderings.
        magic.store(Self::MAGIC, Ordering::Release);
        // SAFETY:
        // - The breaker was just written and published; it lives in memory
        //   valid for `'a` that only shared references reach (caller).
        Ok(unsafe { &*addr_of!((*region).breaker) })
    }

    /// Returns the breaker another process (or this one) initialised in
    /// `mem`, after checking that the bytes hold one.
    ///
    /// # Errors
    /// Every [`SharedError`] but `AlreadyInitialised` and `ConfigMismatch`:
    /// see [`SharedRegion`]'s docs (Validation) for what is checked.
    ///
    /// # Safety
    /// As for [`init_in`](Self::init_in).
    pub unsafe fn attach<'a>(mem: *mut u8, len: usize) -> Result<&'a Breaker, SharedError> {
        let region = Self::region(mem, len)?;
        // SAFETY:
        // - As in `init_in`: in bounds, aligned, valid for `'a`, any bit
        //   pattern is an `AtomicU64`, accessed only atomically by others.
        let magic = unsafe { &*addr_of!((*region).header.magic) };
        // Acquire pairs with the Release store in `init_in`: see the module's Orderings.
        match magic.load(Ordering::Acquire) {
            Self::MAGIC => {}
            0 => return Err(SharedError::Uninitialised),
            Self::INITIALISING => return Err(SharedError::Initialising),
            magic => return Err(SharedError::NotARegion { magic }),
        }
        // SAFETY:
        // - In bounds and aligned (checked), valid for reads (caller).
        // - The magic seen above means the header and breaker were
        //   published, and nothing writes the header afterwards; the
        //   breaker is only written atomically (caller's guarantee), so
        //   the shared reference below never races a plain write.
        // - Every bit pattern is a valid `u32`, `u64`, `BreakerConfig`
        //   (integers and floats) and `Breaker` (atomics, integers and
        //   floats), so reading garbage is no undefined behaviour: the
        //   checks below are about meaning.
        let (version, breaker_offset, size, config, breaker) = unsafe {
            (
                addr_of!((*region).header.version).read(),
                addr_of!((*region).header.breaker_offset).read(),
                addr_of!((*region).header.size).read(),
                addr_of!((*region).header.config).read(),
                &*addr_of!((*region).breaker),
            )
        };
        // Made by a build with the same layout?
        if version != Self::VERSION {
            return Err(SharedError::Version { found: version });
        }
        if size != size_of::<SharedRegion>() as u64 || breaker_offset as usize != BREAKER_OFFSET {
            return Err(SharedError::SizeMismatch { size, breaker_offset });
        }
        // Does the config the breaker runs on make sense, and match the header's copy?
        config.validate().map_err(|e| SharedError::BadConfig(Some(e)))?;
        breaker.config().validate().map_err(|e| SharedError::BadConfig(Some(e)))?;
        if *breaker.config() != config {
            return Err(SharedError::BadConfig(None));
        }
        // Does the line that bindings read on their fast path agree with it?
        if !breaker.has_valid_hot_line() {
            return Err(SharedError::BadHotLine);
        }
        // Do the state word and the deadline slots decode, and agree?
        breaker.check_consistent().map_err(|e| match e {
            Inconsistent::Word => SharedError::BadState,
            Inconsistent::Deadlines => SharedError::BadDeadlines,
        })?;
        // Do the rolling window's words decode?
        if !breaker.has_valid_window() {
            return Err(SharedError::BadWindow);
        }
        Ok(breaker)
    }

    /// Initialises the region with `config` if nobody has, otherwise
    /// attaches to it: what every process of a group can call at start-up.
    ///
    /// # Errors
    /// As for [`attach`](Self::attach), and
    /// [`ConfigMismatch`](SharedError::ConfigMismatch) if the region holds a
    /// breaker made with another config.
    /// [`Initialising`](SharedError::Initialising) means another process is
    /// between its claim and its publication: try again shortly.
    ///
    /// # Safety
    /// As for [`init_in`](Self::init_in).
    pub unsafe fn open_in<'a>(
        mem: *mut u8,
        len: usize,
        config: BreakerConfig,
    ) -> Result<&'a Breaker, SharedError> {
        // SAFETY:
        // - The caller's guarantees are those `init_in` needs.
        match unsafe { Self::init_in(mem, len, config) } {
            Err(SharedError::AlreadyInitialised) => {}
            done => return done,
        }
        // SAFETY:
        // - The caller's guarantees are those `attach` needs.
        let breaker = unsafe { Self::attach(mem, len) }?;
        // Was it made with the config this caller asks for?
        if *breaker.config() != config {
            return Err(SharedError::ConfigMismatch);
        }
        Ok(breaker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FixedClock, HotLine, Outcome, State};
    use core::alloc::Layout;
    use core::ptr;
    use core::time::Duration;
    use std::alloc::{alloc_zeroed, dealloc};
    use std::string::ToString;

    /// Zeroed memory laid out for a region, freed on drop.
    struct Mem {
        ptr: *mut u8,
        layout: Layout,
    }

    impl Mem {
        fn new(extra: usize) -> Self {
            let (size, align) = SharedRegion::layout();
            let layout = Layout::from_size_align(size + extra, align).unwrap();
            // SAFETY:
            // - The layout's size is non-zero.
            let ptr = unsafe { alloc_zeroed(layout) };
            assert!(!ptr.is_null());
            Self { ptr, layout }
        }

        fn len(&self) -> usize {
            self.layout.size()
        }

        fn init(&self, config: BreakerConfig) -> Result<&Breaker, SharedError> {
            // SAFETY:
            // - `ptr` is valid for `len` bytes for as long as `self`, which
            //   the returned reference borrows; only this module touches it.
            unsafe { SharedRegion::init_in(self.ptr, self.len(), config) }
        }

        fn attach(&self) -> Result<&Breaker, SharedError> {
            // SAFETY:
            // - As in `init`.
            unsafe { SharedRegion::attach(self.ptr, self.len()) }
        }

        /// Writes `bytes` at `offset` (tests that corrupt a region).
        fn poke(&mut self, offset: usize, bytes: &[u8]) {
            assert!(offset + bytes.len() <= self.len());
            // SAFETY:
            // - In bounds (asserted); `&mut self` means no breaker borrowed
            //   from this memory is alive.
            unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(offset), bytes.len()) }
        }
    }

    impl Drop for Mem {
        fn drop(&mut self) {
            // SAFETY:
            // - Allocated in `new` with this layout; no borrow outlives `self`.
            unsafe { dealloc(self.ptr, self.layout) }
        }
    }

    fn config() -> BreakerConfig {
        BreakerConfig::builder().failure_threshold(2).open_timeout(Duration::from_millis(10)).build().unwrap()
    }

    #[test]
    fn a_second_view_of_the_region_sees_the_first_ones_trip() {
        let mem = Mem::new(0);
        let a = mem.init(config()).unwrap();
        let b = mem.attach().unwrap();
        for _ in 0..2 {
            let t = a.try_acquire(&FixedClock(5)).unwrap();
            a.record(t, Outcome::Failure, &FixedClock(5));
        }
        assert_eq!(b.state(), State::Open);
        assert_eq!(
            b.try_acquire(&FixedClock(6)).unwrap_err().retry_after,
            Some(Duration::from_nanos(9_999_999))
        );
        assert_eq!(*b.config(), config());
    }

    /// The size the docs give (and the C README's `tw_breaker_layout` comment).
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_layout_is_the_size_the_docs_give() {
        assert_eq!(SharedRegion::layout(), (4224, 128));
    }

    #[test]
    fn initialising_twice_fails_and_open_in_attaches_with_the_same_config_only() {
        let mem = Mem::new(64);
        mem.init(config()).unwrap();
        assert_eq!(mem.init(config()).unwrap_err(), SharedError::AlreadyInitialised);
        // SAFETY:
        // - As in `Mem::init`.
        let again = unsafe { SharedRegion::open_in(mem.ptr, mem.len(), config()) };
        assert!(again.is_ok());
        // SAFETY:
        // - As in `Mem::init`.
        let other = unsafe { SharedRegion::open_in(mem.ptr, mem.len(), BreakerConfig::default()) };
        assert_eq!(other.unwrap_err(), SharedError::ConfigMismatch);
    }

    #[test]
    fn bad_memory_is_refused_before_it_is_read() {
        let mem = Mem::new(8);
        let (size, align) = SharedRegion::layout();
        // SAFETY:
        // - Null and misaligned pointers are refused before any access; the
        //   short length is refused before any access.
        unsafe {
            assert_eq!(SharedRegion::attach(ptr::null_mut(), size).unwrap_err(), SharedError::Null);
            let odd = mem.ptr.add(8);
            assert_eq!(
                SharedRegion::init_in(odd, size, config()).unwrap_err(),
                SharedError::Misaligned { addr: odd.addr(), align }
            );
            assert_eq!(
                SharedRegion::attach(mem.ptr, size - 1).unwrap_err(),
                SharedError::TooSmall { len: size - 1, needed: size }
            );
        }
        assert_eq!(mem.attach().unwrap_err(), SharedError::Uninitialised);
    }

    #[test]
    fn corrupt_headers_and_words_are_named() {
        let fresh = || {
            let mem = Mem::new(0);
            mem.init(config()).unwrap();
            mem
        };
        let mut mem = fresh();
        mem.poke(0, &SharedRegion::INITIALISING.to_ne_bytes());
        assert_eq!(mem.attach().unwrap_err(), SharedError::Initialising);
        mem.poke(0, &7u64.to_ne_bytes());
        assert_eq!(mem.attach().unwrap_err(), SharedError::NotARegion { magic: 7 });
        assert_eq!(mem.init(config()).unwrap_err(), SharedError::NotARegion { magic: 7 });

        let mut mem = fresh();
        let other = SharedRegion::VERSION + 1;
        mem.poke(8, &other.to_ne_bytes());
        assert_eq!(mem.attach().unwrap_err(), SharedError::Version { found: other });

        let mut mem = fresh();
        mem.poke(16, &1u64.to_ne_bytes());
        assert!(matches!(mem.attach().unwrap_err(), SharedError::SizeMismatch { size: 1, .. }));

        // The header's copy of half_open_max set to 0.
        let mut mem = fresh();
        let hom = offset_of!(Header, config) + offset_of!(BreakerConfig, half_open_max);
        mem.poke(hom, &0u32.to_ne_bytes());
        let err = mem.attach().unwrap_err();
        assert_eq!(
            err.to_string(),
            "shared region holds a bad config: invalid breaker config: half_open_max = 0, expected 1 to 10"
        );

        // The breaker's own copy disagreeing with the header's.
        let mut mem = fresh();
        let b = mem.attach().unwrap();
        let config_at = (b.config() as *const BreakerConfig).addr() - mem.ptr.addr();
        let theirs = config_at + offset_of!(BreakerConfig, jitter_seed);
        mem.poke(theirs, &99u64.to_ne_bytes());
        assert_eq!(mem.attach().unwrap_err(), SharedError::BadConfig(None));

        // A state word of kind 5, then one with the reserved bit set.
        for bad in [5u64, 0b1000] {
            let mut mem = fresh();
            mem.poke(BREAKER_OFFSET, &bad.to_ne_bytes());
            assert_eq!(mem.attach().unwrap_err(), SharedError::BadState);
        }

        // The rolling window's generation word with a reserved bit set.
        let mut mem = fresh();
        mem.poke(BREAKER_OFFSET + Breaker::WINDOW_OFFSET, &(1u64 << 40).to_ne_bytes());
        assert_eq!(mem.attach().unwrap_err(), SharedError::BadWindow);
        assert_eq!(
            SharedError::BadWindow.to_string(),
            "shared region holds rolling-window words that do not decode"
        );

        // The hot line's stamp, then its copy of the flags, damaged: a
        // binding's inline fast path would decide on them.
        for (at, bad) in [(HotLine::STAMP_OFFSET, HotLine::STAMP + 1), (HotLine::FLAGS_OFFSET, 0)] {
            let mut mem = fresh();
            mem.poke(BREAKER_OFFSET + at, &bad.to_ne_bytes());
            assert_eq!(mem.attach().unwrap_err(), SharedError::BadHotLine, "offset {at}");
        }
    }

    #[test]
    fn attaching_refuses_deadline_slots_that_do_not_fit_the_state() {
        // The breaker's deadline slots: `open` for generations 0 and 1, then `half_open`.
        let slot = |array: usize, generation: u32| {
            BREAKER_OFFSET + Breaker::DEADLINES_OFFSET + 8 * (2 * array + (generation & 1) as usize)
        };
        let tripped = || {
            let mem = Mem::new(0);
            let b = mem.init(config()).unwrap();
            for _ in 0..2 {
                let t = b.try_acquire(&FixedClock(5)).unwrap();
                b.record(t, Outcome::Failure, &FixedClock(5));
            }
            assert_eq!((b.state(), b.generation()), (State::Open, 1));
            mem
        };
        // Garbage in the slot the Open state reads.
        let mut mem = tripped();
        mem.poke(slot(0, 1), &u64::MAX.to_ne_bytes());
        assert_eq!(mem.attach().unwrap_err(), SharedError::BadDeadlines);
        // In the other slots: tags further behind than any transition leaves them.
        for (array, generation) in [(0, 0u32), (1, 1), (1, 0)] {
            let mut mem = tripped();
            let stale = crate::breaker::deadline::Stamp::new(generation.wrapping_sub(2 * 40), None).raw();
            mem.poke(slot(array, generation), &stale.to_ne_bytes());
            assert_eq!(mem.attach().unwrap_err(), SharedError::BadDeadlines, "slot {array}/{generation}");
        }
        // An Open breaker whose slot holds no deadline at all.
        let mut mem = tripped();
        mem.poke(slot(0, 1), &crate::breaker::deadline::Stamp::new(1, None).raw().to_ne_bytes());
        assert_eq!(mem.attach().unwrap_err(), SharedError::BadDeadlines);
        // A stamp of the right generation with an absurd time is accepted,
        // and never holds the breaker shut: it lies beyond any cool-down.
        let mut mem = tripped();
        mem.poke(
            slot(0, 1),
            &crate::breaker::deadline::Stamp::new(1, Some(u64::MAX / 3)).raw().to_ne_bytes(),
        );
        let b = mem.attach().unwrap();
        assert!(b.try_acquire(&FixedClock(6)).unwrap().is_probe());
    }

    /// A stamp for the next generation found in a region (written by
    /// anyone: `attach` cannot tell it from a racer's) is replaced by the
    /// transition into that generation, whatever its time: the cool-down
    /// is the config's, not skipped (a time beyond any wait) nor stretched
    /// (one within it), and a hold's length is its own.
    #[test]
    fn a_garbage_deadline_of_the_next_generation_is_replaced_by_the_transition_into_it() {
        let slot = BREAKER_OFFSET + Breaker::DEADLINES_OFFSET + 8; // `open`, odd generations
        let now = 1_000_000_000;
        let one_failure = BreakerConfig::builder()
            .failure_threshold(1)
            .open_timeout(Duration::from_millis(10))
            .build()
            .unwrap();
        for ahead in [Duration::from_millis(30), Duration::from_millis(15)] {
            let garbage = (1u64 << 56) | (now + ahead.as_nanos() as u64);
            for hold in [None, Some(Duration::from_millis(5))] {
                let mut mem = Mem::new(0);
                mem.init(one_failure).unwrap();
                mem.poke(slot, &garbage.to_ne_bytes());
                let b = mem.attach().unwrap();
                let clock = FixedClock(now);
                let wait = match hold {
                    None => {
                        let t = b.try_acquire(&clock).unwrap();
                        assert!(b.record(t, Outcome::Failure, &clock).is_some());
                        Duration::from_millis(10)
                    }
                    Some(d) => {
                        assert!(b.open_for(d, &clock).is_some());
                        d
                    }
                };
                assert_eq!(b.generation(), 1);
                let r = b.try_acquire(&clock).unwrap_err();
                assert_eq!(r.retry_after, Some(wait), "garbage {ahead:?} ahead, hold {hold:?}");
                let at_end = FixedClock(now + wait.as_nanos() as u64);
                assert!(b.try_acquire(&at_end).unwrap().is_probe(), "garbage {ahead:?} ahead, hold {hold:?}");
            }
        }
    }

    #[test]
    fn slots_stay_attachable_over_long_runs_of_states_without_deadlines() {
        let mem = Mem::new(0);
        let b = mem.init(config()).unwrap();
        for round in 0..3u64 {
            // Hundreds of transitions that stamp no deadline: tags are refreshed as they go.
            for _ in 0..300 {
                b.disable();
                b.reset();
            }
            assert!(mem.attach().is_ok(), "round {round}");
            let at = 1_000_000 * (round + 1);
            for _ in 0..2 {
                let t = b.try_acquire(&FixedClock(at)).unwrap();
                b.record(t, Outcome::Failure, &FixedClock(at));
            }
            assert_eq!(
                b.try_acquire(&FixedClock(at)).unwrap_err().retry_after,
                Some(Duration::from_millis(10))
            );
            assert!(mem.attach().is_ok(), "round {round}, open");
            b.reset();
        }
    }

    /// The region's address, shared with other threads.
    #[derive(Clone, Copy)]
    struct Shared(*mut u8, usize);
    // SAFETY:
    // - The memory behind it is only accessed through `SharedRegion` and the
    //   breakers it returns, which are made for concurrent use; `Mem`
    //   outlives the threads (scoped).
    unsafe impl Send for Shared {}
    // SAFETY:
    // - As for `Send`.
    unsafe impl Sync for Shared {}

    impl Shared {
        /// Taken whole, so that closures capture the `Sync` wrapper.
        fn get(self) -> (*mut u8, usize) {
            (self.0, self.1)
        }
    }

    #[test]
    fn of_racing_initialisers_exactly_one_wins_and_all_end_up_attached() {
        let mem = Mem::new(0);
        let region = Shared(mem.ptr, mem.len());
        let wins = core::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    let (ptr, len) = region.get();
                    let breaker = loop {
                        // SAFETY:
                        // - `ptr` is valid for `len` bytes until `mem` drops,
                        //   after the scope; only this module touches it.
                        let claimed = unsafe { SharedRegion::init_in(ptr, len, config()) };
                        match claimed {
                            Ok(b) => {
                                wins.fetch_add(1, Ordering::Relaxed);
                                break b;
                            }
                            Err(SharedError::AlreadyInitialised) => {
                                // SAFETY:
                                // - As above.
                                break unsafe { SharedRegion::attach(ptr, len) }.unwrap();
                            }
                            Err(SharedError::Initialising) => std::thread::yield_now(),
                            Err(e) => panic!("{e}"),
                        }
                    };
                    assert_eq!(*breaker.config(), config());
                });
            }
        });
        assert_eq!(wins.into_inner(), 1);
    }
}
