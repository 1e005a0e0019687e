//! Breakers in memory shared between processes.
//!
//! The layout and the rules are in [`SharedRegion`]'s docs; the header
//! protocol and every access to the memory are `region/header.rs`'s.

use core::fmt;
use core::mem::{align_of, offset_of, size_of};

use crate::breaker::circuit::{Breaker, Inconsistent};
use crate::breaker::config::BreakerConfig;
use crate::region::header::{self, Memory};
use crate::region::{RegionError, RegionKind};

/// The header at the start of a shared region: the one every kind of
/// region starts with, then the config.
#[repr(C)]
struct Header {
    region: header::Header,
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
/// others get [`RegionError::AlreadyInitialised`] or
/// [`RegionError::Initialising`] and [`attach`](SharedRegion::attach) (or
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
/// and copy of the flags, see [`HotLine`](crate::breaker::HotLine)), the deadline slots (stamped for the
/// current generation, or the one before or after it) and the rolling
/// window's words (each field in range) are checked, and any mismatch is a
/// [`RegionError`], never undefined behaviour: every bit pattern is a valid
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
/// The first 24 bytes (magic, version, breaker offset, size) are the header
/// every kind of region starts with, initialised and checked by one
/// protocol for all of them: a region holding another kind (a
/// [`SharedBulkheadRegion`](crate::shared::SharedBulkheadRegion)) is refused with
/// [`RegionError::WrongKind`].
///
/// # Orderings
/// - `init_in` claims the region with a `Relaxed` CAS of the magic (the
///   claim orders no data: the claimant is the only writer until it
///   publishes), writes the header and the breaker with plain stores, then
///   publishes them with a `Release` store of [`SharedRegion::MAGIC`].
/// - `attach` loads the magic with `Acquire`, which pairs with that
///   `Release` store: a process that sees the magic sees the header and the
///   breaker it covers. The breaker's own orderings take over from there.
///   (Both are the header protocol's, in `region/header.rs`.)
///
/// # Examples
/// ```
/// use tripwire::clock::FixedClock;
/// use tripwire::shared::SharedRegion;
/// use tripwire::{BreakerConfig, State};
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
/// # Ok::<(), tripwire::shared::RegionError>(())
/// ```
///
/// # Size and alignment
/// 5248 bytes on x86-64 (most of it the striped counters and the two
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

const BREAKER_OFFSET: usize = SharedRegion::BREAKER_OFFSET;
const _: () = assert!(BREAKER_OFFSET <= u32::MAX as usize);
/// Where the header's copy of the config starts: after the shared header.
const CONFIG_OFFSET: usize = offset_of!(Header, config);
const _: () = assert!(CONFIG_OFFSET == header::HEADER_SIZE);

impl SharedRegion {
    /// The magic number of an initialised region: `"TRIPWIRE"` in native
    /// byte order.
    pub const MAGIC: u64 = RegionKind::Breaker.magic();
    /// The magic number while one process fills the region in.
    pub const INITIALISING: u64 = RegionKind::Breaker.initialising();
    /// The layout version this build reads and writes.
    pub const VERSION: u32 = RegionKind::Breaker.version();
    /// Where the breaker starts, in bytes from the start of the region: a
    /// multiple of the breaker's alignment, with the header before it.
    pub const BREAKER_OFFSET: usize = offset_of!(SharedRegion, breaker);

    /// The size and alignment, in bytes, that a region needs.
    pub const fn layout() -> (usize, usize) {
        (size_of::<SharedRegion>(), align_of::<SharedRegion>())
    }

    /// Checks the memory's address and length.
    ///
    /// # Safety
    /// As for [`init_in`](Self::init_in).
    unsafe fn memory<'a>(mem: *mut u8, len: usize) -> Result<Memory<'a>, RegionError> {
        let (needed, align) = Self::layout();
        // SAFETY: the caller's guarantees are those `Memory::new` needs.
        unsafe { Memory::new(RegionKind::Breaker, mem, len, align, needed) }
    }

    /// Sets up a Closed breaker with `config` in zero-filled memory, and
    /// returns it. Exactly one of several processes racing to initialise
    /// the same region succeeds; the others get
    /// [`RegionError::AlreadyInitialised`] or [`RegionError::Initialising`].
    ///
    /// # Errors
    /// [`Null`](RegionError::Null), [`Misaligned`](RegionError::Misaligned),
    /// [`TooSmall`](RegionError::TooSmall); [`AlreadyInitialised`](RegionError::AlreadyInitialised)
    /// and [`Initialising`](RegionError::Initialising) as above;
    /// [`WrongKind`](RegionError::WrongKind) if the magic is another kind
    /// of region's, [`NotARegion`](RegionError::NotARegion) if it is no
    /// kind's and not 0, [`NotZeroFilled`](RegionError::NotZeroFilled) if the
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
    ) -> Result<&'a Breaker, RegionError> {
        // SAFETY: the caller's guarantees are those `memory` needs.
        let mut claim = unsafe { Self::memory(mem, len) }?.claim(size_of::<SharedRegion>())?;
        claim.write(CONFIG_OFFSET, config);
        claim.write(BREAKER_OFFSET, Breaker::new(config));
        Ok(claim.publish(BREAKER_OFFSET as u32).get(BREAKER_OFFSET))
    }

    /// Returns the breaker another process (or this one) initialised in
    /// `mem`, after checking that the bytes hold one.
    ///
    /// # Errors
    /// Every [`RegionError`] but `AlreadyInitialised` and `ConfigMismatch`:
    /// see [`SharedRegion`]'s docs (Validation) for what is checked.
    ///
    /// # Safety
    /// As for [`init_in`](Self::init_in).
    pub unsafe fn attach<'a>(mem: *mut u8, len: usize) -> Result<&'a Breaker, RegionError> {
        // SAFETY: the caller's guarantees are those `memory` needs.
        let region = unsafe { Self::memory(mem, len) }?.open()?;
        let (size, breaker_offset) = (region.size(), region.word());
        // Laid out as this build lays it out?
        if size != size_of::<SharedRegion>() as u64 || breaker_offset as usize != BREAKER_OFFSET {
            return Err(RegionError::BreakerLayout {
                size,
                breaker_offset,
                expected_size: size_of::<SharedRegion>(),
                expected_offset: BREAKER_OFFSET,
            });
        }
        let config: BreakerConfig = region.read(CONFIG_OFFSET);
        let breaker: &Breaker = region.get(BREAKER_OFFSET);
        // Does the config the breaker runs on make sense, and match the header's copy?
        config.validate().map_err(|e| RegionError::BadConfig(Some(e)))?;
        breaker.config().validate().map_err(|e| RegionError::BadConfig(Some(e)))?;
        if *breaker.config() != config {
            return Err(RegionError::BadConfig(None));
        }
        // Does the line that bindings read on their fast path agree with it?
        if !breaker.has_valid_hot_line() {
            return Err(RegionError::BadHotLine);
        }
        // Do the state word and the deadline slots decode, and agree?
        breaker.check_consistent().map_err(|e| match e {
            Inconsistent::Word => RegionError::BadState,
            Inconsistent::Deadlines => RegionError::BadDeadlines,
        })?;
        // Do the rolling window's words decode?
        if !breaker.has_valid_window() {
            return Err(RegionError::BadWindow);
        }
        Ok(breaker)
    }

    /// Initialises the region with `config` if nobody has, otherwise
    /// attaches to it: what every process of a group can call at start-up.
    ///
    /// # Errors
    /// As for [`attach`](Self::attach), and
    /// [`ConfigMismatch`](RegionError::ConfigMismatch) if the region holds a
    /// breaker made with another config.
    /// [`Initialising`](RegionError::Initialising) means another process is
    /// between its claim and its publication: try again shortly.
    ///
    /// # Safety
    /// As for [`init_in`](Self::init_in).
    pub unsafe fn open_in<'a>(
        mem: *mut u8,
        len: usize,
        config: BreakerConfig,
    ) -> Result<&'a Breaker, RegionError> {
        // SAFETY:
        // - The caller's guarantees are those `init_in` needs.
        match unsafe { Self::init_in(mem, len, config) } {
            Err(RegionError::AlreadyInitialised { .. }) => {}
            done => return done,
        }
        // SAFETY:
        // - The caller's guarantees are those `attach` needs.
        let breaker = unsafe { Self::attach(mem, len) }?;
        // Was it made with the config this caller asks for?
        if *breaker.config() != config {
            return Err(RegionError::ConfigMismatch);
        }
        Ok(breaker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outcome, State, breaker::HotLine, clock::FixedClock};
    use core::alloc::Layout;
    use core::ptr;
    use core::sync::atomic::Ordering;
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

        fn init(&self, config: BreakerConfig) -> Result<&Breaker, RegionError> {
            // SAFETY:
            // - `ptr` is valid for `len` bytes for as long as `self`, which
            //   the returned reference borrows; only this module touches it.
            unsafe { SharedRegion::init_in(self.ptr, self.len(), config) }
        }

        fn attach(&self) -> Result<&Breaker, RegionError> {
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
        assert_eq!(SharedRegion::layout(), (5248, 128));
    }

    #[test]
    fn initialising_twice_fails_and_open_in_attaches_with_the_same_config_only() {
        let mem = Mem::new(64);
        mem.init(config()).unwrap();
        assert_eq!(
            mem.init(config()).unwrap_err(),
            RegionError::AlreadyInitialised { kind: RegionKind::Breaker }
        );
        // SAFETY:
        // - As in `Mem::init`.
        let again = unsafe { SharedRegion::open_in(mem.ptr, mem.len(), config()) };
        assert!(again.is_ok());
        // SAFETY:
        // - As in `Mem::init`.
        let other = unsafe { SharedRegion::open_in(mem.ptr, mem.len(), BreakerConfig::default()) };
        assert_eq!(other.unwrap_err(), RegionError::ConfigMismatch);
    }

    #[test]
    fn bad_memory_is_refused_before_it_is_read() {
        let mem = Mem::new(8);
        let (size, align) = SharedRegion::layout();
        // SAFETY:
        // - Null and misaligned pointers are refused before any access; the
        //   short length is refused before any access.
        unsafe {
            assert_eq!(
                SharedRegion::attach(ptr::null_mut(), size).unwrap_err(),
                RegionError::Null { kind: RegionKind::Breaker }
            );
            let odd = mem.ptr.add(8);
            assert_eq!(
                SharedRegion::init_in(odd, size, config()).unwrap_err(),
                RegionError::Misaligned { kind: RegionKind::Breaker, addr: odd.addr(), align }
            );
            assert_eq!(
                SharedRegion::attach(mem.ptr, size - 1).unwrap_err(),
                RegionError::TooSmall { kind: RegionKind::Breaker, len: size - 1, needed: size }
            );
        }
        assert_eq!(mem.attach().unwrap_err(), RegionError::Uninitialised { kind: RegionKind::Breaker });
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
        assert_eq!(mem.attach().unwrap_err(), RegionError::Initialising { kind: RegionKind::Breaker });
        mem.poke(0, &7u64.to_ne_bytes());
        assert_eq!(
            mem.attach().unwrap_err(),
            RegionError::NotARegion { kind: RegionKind::Breaker, magic: 7 }
        );
        assert_eq!(
            mem.init(config()).unwrap_err(),
            RegionError::NotARegion { kind: RegionKind::Breaker, magic: 7 }
        );

        let mut mem = fresh();
        let other = SharedRegion::VERSION + 1;
        mem.poke(8, &other.to_ne_bytes());
        assert_eq!(
            mem.attach().unwrap_err(),
            RegionError::Version { kind: RegionKind::Breaker, found: other }
        );

        let mut mem = fresh();
        mem.poke(16, &1u64.to_ne_bytes());
        assert!(matches!(mem.attach().unwrap_err(), RegionError::BreakerLayout { size: 1, .. }));

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
        assert_eq!(mem.attach().unwrap_err(), RegionError::BadConfig(None));

        // A state word of kind 5, then one with the reserved bit set.
        for bad in [5u64, 0b1000] {
            let mut mem = fresh();
            mem.poke(BREAKER_OFFSET, &bad.to_ne_bytes());
            assert_eq!(mem.attach().unwrap_err(), RegionError::BadState);
        }

        // The rolling window's generation word with a reserved bit set.
        let mut mem = fresh();
        mem.poke(BREAKER_OFFSET + Breaker::WINDOW_OFFSET, &(1u64 << 40).to_ne_bytes());
        assert_eq!(mem.attach().unwrap_err(), RegionError::BadWindow);
        assert_eq!(
            RegionError::BadWindow.to_string(),
            "shared region holds rolling-window words that do not decode"
        );

        // The hot line's stamp, then its copy of the flags, damaged: a
        // binding's inline fast path would decide on them.
        for (at, bad) in [(HotLine::STAMP_OFFSET, HotLine::STAMP + 1), (HotLine::FLAGS_OFFSET, 0)] {
            let mut mem = fresh();
            mem.poke(BREAKER_OFFSET + at, &bad.to_ne_bytes());
            assert_eq!(mem.attach().unwrap_err(), RegionError::BadHotLine, "offset {at}");
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
        assert_eq!(mem.attach().unwrap_err(), RegionError::BadDeadlines);
        // In the other slots: tags further behind than any transition leaves them.
        for (array, generation) in [(0, 0u32), (1, 1), (1, 0)] {
            let mut mem = tripped();
            let stale = crate::breaker::deadline::Stamp::new(generation.wrapping_sub(2 * 40), None).raw();
            mem.poke(slot(array, generation), &stale.to_ne_bytes());
            assert_eq!(mem.attach().unwrap_err(), RegionError::BadDeadlines, "slot {array}/{generation}");
        }
        // An Open breaker whose slot holds no deadline at all.
        let mut mem = tripped();
        mem.poke(slot(0, 1), &crate::breaker::deadline::Stamp::new(1, None).raw().to_ne_bytes());
        assert_eq!(mem.attach().unwrap_err(), RegionError::BadDeadlines);
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
            // Hundreds of transitions that stamp no deadline, past a wrap of
            // the slots' tags (256 generations): tags are refreshed as they go.
            for _ in 0..if cfg!(miri) { 140 } else { 300 } {
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
                            Err(RegionError::AlreadyInitialised { .. }) => {
                                // SAFETY:
                                // - As above.
                                break unsafe { SharedRegion::attach(ptr, len) }.unwrap();
                            }
                            Err(RegionError::Initialising { .. }) => std::thread::yield_now(),
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
