//! A shared bulkhead's region refuses every garbage and truncated region
//! with an error naming the field, never undefined behaviour or a panic;
//! runs under miri (`cargo +nightly miri test -p tripwire-breaker --test
//! shared_bulkhead_region`), which checks the "never undefined behaviour".

use region::Mem;
use std::alloc::{Layout, alloc_zeroed, dealloc};

use tripwire::{
    BreakerConfig,
    shared::{
        Holder, RegionError as E, RegionKind, SharedBulkhead, SharedBulkheadRegion as Region, SharedRegion,
    },
};

mod region;

const KIND: RegionKind = RegionKind::Bulkhead;

/// The bulkhead's functions on test memory.
trait Bulkheads {
    fn init(&self, max: u32) -> Result<SharedBulkhead<'_>, E>;
    fn attach_len(&self, len: usize) -> Result<SharedBulkhead<'_>, E>;
    fn attach(&self) -> Result<SharedBulkhead<'_>, E>;
}

impl Bulkheads for Mem {
    fn init(&self, max: u32) -> Result<SharedBulkhead<'_>, E> {
        // SAFETY:
        // - `ptr` is valid for `len` bytes for as long as `self`, which the
        //   view borrows; only the region's functions touch it.
        unsafe { Region::init_in(self.ptr, self.len(), max) }
    }

    fn attach_len(&self, len: usize) -> Result<SharedBulkhead<'_>, E> {
        assert!(len <= self.len());
        // SAFETY:
        // - As in `init`, for the first `len` bytes.
        unsafe { Region::attach(self.ptr, len) }
    }

    fn attach(&self) -> Result<SharedBulkhead<'_>, E> {
        self.attach_len(self.len())
    }
}

fn holder(pid: u32, nonce: u16) -> Holder {
    Holder::new(pid, 1, nonce).unwrap()
}

/// A freshly initialised region of `max` slots.
fn fresh(max: u32) -> Mem {
    let mem = Mem::new(Region::size_for(max).unwrap());
    mem.init(max).unwrap();
    mem
}

#[test]
fn two_views_share_one_cap() {
    let mem = fresh(2);
    let (a, b) = (mem.attach().unwrap(), mem.attach().unwrap());
    let x = a.try_acquire(holder(1, 0)).unwrap();
    let _y = b.try_acquire(holder(2, 0)).unwrap();
    assert!(a.try_acquire(holder(1, 1)).is_err());
    assert_eq!(b.holder_of(x.index()), Some(holder(1, 0)));
    assert!(b.release(x), "any view releases a receipt");
    assert_eq!(a.available(), 1);
    assert_eq!(Region::size_for(2), Some(96));
    assert_eq!(Region::size_for(Region::MAX_SLOTS + 1), None);
}

#[test]
fn initialising_twice_fails_and_open_in_wants_the_same_max() {
    let mem = Mem::new(Region::size_for(4).unwrap());
    assert_eq!(mem.init(4).unwrap().max(), 4);
    assert_eq!(mem.init(4).unwrap_err(), E::AlreadyInitialised { kind: KIND });
    // SAFETY:
    // - As in `Mem::init`.
    let again = unsafe { Region::open_in(mem.ptr, mem.len(), 4) };
    assert_eq!(again.unwrap().max(), 4);
    // SAFETY:
    // - As in `Mem::init`.
    let other = unsafe { Region::open_in(mem.ptr, mem.len(), 3) };
    assert_eq!(other.unwrap_err(), E::MaxMismatch { found: 4, wanted: 3 });
    // A larger `max` than the memory has room for: still the mismatch, not
    // "too small", since the region holds a bulkhead already.
    // SAFETY:
    // - As in `Mem::init`.
    let larger = unsafe { Region::open_in(mem.ptr, mem.len(), 5) };
    assert_eq!(larger.unwrap_err(), E::MaxMismatch { found: 4, wanted: 5 });
    // Zero memory too short for the `max` asked: too small.
    let short = Mem::new(Region::size_for(1).unwrap());
    // SAFETY:
    // - As in `Mem::init`.
    let err = unsafe { Region::open_in(short.ptr, short.len(), 2) }.unwrap_err();
    assert_eq!(err, E::TooSmall { kind: KIND, len: 80, needed: 96 });
    assert_eq!(
        E::MaxMismatch { found: 4, wanted: 3 }.to_string(),
        "shared bulkhead region has `max` = 4, not the 3 asked for"
    );
}

#[test]
fn bad_memory_and_bad_max_are_refused_before_anything_is_written() {
    let mem = Mem::new(Region::size_for(2).unwrap() + 64);
    // SAFETY:
    // - Null and misaligned pointers, and a `max` out of range, are refused
    //   before any access.
    unsafe {
        assert_eq!(Region::attach(std::ptr::null_mut(), 64).unwrap_err(), E::Null { kind: KIND });
        let odd = mem.ptr.add(8);
        assert_eq!(
            Region::init_in(odd, 64, 1).unwrap_err(),
            E::Misaligned { kind: KIND, addr: odd.addr(), align: Region::ALIGN }
        );
        assert_eq!(
            Region::init_in(mem.ptr, mem.len(), Region::MAX_SLOTS + 1).unwrap_err(),
            E::MaxOutOfRange { max: u64::from(Region::MAX_SLOTS) + 1, limit: Region::MAX_SLOTS }
        );
        assert_eq!(
            Region::init_in(mem.ptr, 95, 2).unwrap_err(),
            E::TooSmall { kind: KIND, len: 95, needed: 96 }
        );
    }
    assert_eq!(mem.attach().unwrap_err(), E::Uninitialised { kind: KIND });
    assert_eq!(
        E::MaxOutOfRange { max: 70_000, limit: Region::MAX_SLOTS }.to_string(),
        "shared bulkhead `max` = 70000, expected 0 to 65536"
    );
}

#[test]
fn every_truncation_of_a_region_is_too_small() {
    let mem = fresh(3);
    let size = Region::size_for(3).unwrap();
    for len in 0..size {
        let needed = if len < Region::HEADER { Region::HEADER } else { size };
        assert_eq!(mem.attach_len(len).unwrap_err(), E::TooSmall { kind: KIND, len, needed }, "len {len}");
    }
    assert!(mem.attach_len(size).is_ok());
}

#[test]
fn each_corrupt_field_is_named() {
    let mut mem = fresh(2);
    mem.poke(0, &Region::INITIALISING.to_ne_bytes());
    assert_eq!(mem.attach().unwrap_err(), E::Initialising { kind: KIND });
    mem.poke(0, &7u64.to_ne_bytes());
    assert_eq!(mem.attach().unwrap_err(), E::NotARegion { kind: KIND, magic: 7 });
    assert_eq!(mem.init(2).unwrap_err(), E::NotARegion { kind: KIND, magic: 7 });
    assert!(
        mem.attach()
            .unwrap_err()
            .to_string()
            .starts_with("not a shared bulkhead region: `magic` 0x0000000000000007")
    );

    let mut mem = fresh(2);
    mem.poke(8, &(Region::VERSION + 1).to_ne_bytes());
    assert_eq!(mem.attach().unwrap_err(), E::Version { kind: KIND, found: Region::VERSION + 1 });

    let mut mem = fresh(2);
    mem.poke(12, &70_000u32.to_ne_bytes());
    let err = mem.attach().unwrap_err();
    assert_eq!(err, E::MaxOutOfRange { max: 70_000, limit: Region::MAX_SLOTS });

    // A `max` in range but larger than the region: the recorded size gives it away.
    let mut mem = fresh(2);
    mem.poke(12, &3u32.to_ne_bytes());
    assert_eq!(mem.attach().unwrap_err(), E::BulkheadSize { size: 96, max: 3, needed: 112 });
    assert_eq!(
        E::BulkheadSize { size: 96, max: 3, needed: 112 }.to_string(),
        "shared bulkhead region header records `size` = 96 for `max` = 3; that `max` needs 112"
    );
    // Both changed together: the memory is too short for the slots it claims.
    mem.poke(16, &112u64.to_ne_bytes());
    assert_eq!(mem.attach().unwrap_err(), E::TooSmall { kind: KIND, len: 96, needed: 112 });

    let mut mem = fresh(2);
    mem.poke(60, &1u32.to_ne_bytes());
    assert_eq!(mem.attach().unwrap_err(), E::Reserved { value: 1 });

    // A slot word with pid 0 but other bits set.
    let mut mem = fresh(2);
    mem.poke(Region::HEADER + 8, &0xffu64.to_ne_bytes());
    assert_eq!(mem.attach().unwrap_err(), E::BadSlot { index: 1, word: 0xff });
    assert_eq!(
        E::BadSlot { index: 1, word: 0xff }.to_string(),
        "shared bulkhead region `slot[1]` = 0x00000000000000ff names no holder (pid 0)"
    );

    // Statistics, the hint and the gate accept anything.
    let mut mem = fresh(2);
    for offset in [24, 32, 40, 48] {
        mem.poke(offset, &u64::MAX.to_ne_bytes());
    }
    mem.poke(56, &u32::MAX.to_ne_bytes());
    let b = mem.attach().unwrap();
    let s = b.try_acquire(holder(1, 0)).unwrap();
    assert!(b.release(s));
    assert_eq!(b.reclaim_gated(5, 10, |_| true), Some(0), "a gate far ahead counts as passed");
}

/// xorshift64*: deterministic garbage.
struct Garbage(u64);

impl Garbage {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn random_bytes_never_panic_and_an_accepted_region_keeps_its_cap() {
    let rounds = if cfg!(miri) { 40 } else { 20_000 };
    let mut g = Garbage(0x9e37_79b9_7f4a_7c15);
    let mut accepted = 0;
    for round in 0..rounds {
        let max = (g.next() % 6) as u32;
        let len = Region::size_for(max).unwrap() + (g.next() % 24) as usize;
        let mut mem = Mem::new(len);
        // Random bytes everywhere; then, in most rounds, a header that gets
        // further into the checks.
        let bytes: Vec<u8> = (0..len).map(|_| g.next() as u8).collect();
        mem.poke(0, &bytes);
        let plausible = round % 8;
        if plausible >= 1 {
            mem.poke(0, &Region::MAGIC.to_ne_bytes());
        }
        if plausible >= 2 {
            mem.poke(8, &Region::VERSION.to_ne_bytes());
        }
        if plausible >= 3 {
            mem.poke(12, &max.to_ne_bytes());
            mem.poke(16, &(Region::size_for(max).unwrap() as u64).to_ne_bytes());
        }
        if plausible >= 4 {
            mem.poke(60, &0u32.to_ne_bytes());
        }
        if plausible >= 5 {
            // Slot words: free, a holder, or random (some of them pid 0).
            for i in 0..max as usize {
                let word = match g.next() % 3 {
                    0 => 0,
                    1 => holder(1 + (g.next() % 1000) as u32, g.next() as u16).raw(),
                    _ => g.next() >> (g.next() % 64),
                };
                mem.poke(Region::HEADER + 8 * i, &word.to_ne_bytes());
            }
        }
        let cut = if round % 5 == 0 { (g.next() as usize) % (len + 1) } else { len };
        match mem.attach_len(cut) {
            Ok(b) => {
                accepted += 1;
                assert!(plausible >= 4, "round {round}: garbage accepted");
                assert!(b.held() <= b.max());
                // Whatever it holds, the protocol stays within the cap.
                let mut mine = Vec::new();
                while let Ok(s) = b.try_acquire(holder(4242, mine.len() as u16)) {
                    mine.push(s);
                    assert!(mine.len() <= b.max() as usize);
                }
                assert_eq!(b.held(), b.max());
                b.reclaim(|h| h.pid() != 4242);
                for s in mine {
                    assert!(b.release(s));
                }
                assert!(b.held() <= b.max());
            }
            Err(e) => {
                // Every error explains itself.
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(accepted > 0, "no round got past the checks: the test checks too little");
}

/// Zeroed memory of `len` bytes aligned to `align`, freed on drop.
struct Aligned {
    ptr: *mut u8,
    layout: Layout,
}

impl Aligned {
    fn new(len: usize, align: usize) -> Self {
        let layout = Layout::from_size_align(len, align).unwrap();
        // SAFETY:
        // - The layout's size is non-zero.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Self { ptr, layout }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY:
        // - Allocated in `new` with this layout; no view outlives `self`.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// One header protocol for every kind: a bulkhead region refuses a
/// breaker's region (initialised, or being initialised) with `WrongKind`,
/// never as garbage, and leaves it as it was.
#[test]
fn a_bulkhead_region_refuses_a_breakers_region_as_another_kind() {
    let (size, align) = SharedRegion::layout();
    let mem = Aligned::new(size, align);
    // SAFETY:
    // - `mem` holds `size` valid bytes for the whole test; only the regions'
    //   functions touch it.
    unsafe {
        let breaker = SharedRegion::init_in(mem.ptr, size, BreakerConfig::default()).unwrap();
        let wrong = E::WrongKind { kind: KIND, found: RegionKind::Breaker };
        assert_eq!(Region::attach(mem.ptr, size).unwrap_err(), wrong);
        assert_eq!(Region::init_in(mem.ptr, size, 2).unwrap_err(), wrong);
        assert_eq!(Region::open_in(mem.ptr, size, 2).unwrap_err(), wrong);
        assert_eq!(
            wrong.to_string(),
            "shared bulkhead region holds a breaker, not a bulkhead: open it as a breaker"
        );
        assert_eq!(*breaker.config(), BreakerConfig::default(), "left as it was");
        assert!(SharedRegion::attach(mem.ptr, size).is_ok());
        // Being initialised as a breaker: still the other kind's.
        mem.ptr.cast::<u64>().write(RegionKind::Breaker.initialising());
        assert_eq!(Region::attach(mem.ptr, size).unwrap_err(), wrong);
    }
}

/// And the other way round: a breaker region refuses a bulkhead's.
#[test]
fn a_breaker_region_refuses_a_bulkheads_region_as_another_kind() {
    let (size, align) = SharedRegion::layout();
    let mem = Aligned::new(size, align);
    // SAFETY:
    // - As above.
    unsafe {
        Region::init_in(mem.ptr, size, 4).unwrap();
        let wrong = E::WrongKind { kind: RegionKind::Breaker, found: KIND };
        assert_eq!(SharedRegion::attach(mem.ptr, size).unwrap_err(), wrong);
        assert_eq!(SharedRegion::init_in(mem.ptr, size, BreakerConfig::default()).unwrap_err(), wrong);
        assert_eq!(wrong.to_string(), "shared region holds a bulkhead, not a breaker: open it as a bulkhead");
        assert_eq!(Region::attach(mem.ptr, size).unwrap().max(), 4);
    }
}

/// The shared header keeps the bytes both kinds wrote before it was
/// shared (magic, version, the kind's word, size): a bulkhead region laid
/// out by hand as version 2 was is accepted.
#[test]
fn a_region_of_the_layout_before_the_shared_header_is_read_the_same() {
    let size = Region::size_for(3).unwrap();
    let mut mem = Mem::new(size);
    mem.poke(0, b"TWBULKHD");
    mem.poke(8, &2u32.to_ne_bytes());
    mem.poke(12, &3u32.to_ne_bytes());
    mem.poke(16, &(size as u64).to_ne_bytes());
    mem.poke(Region::HEADER + 8, &holder(7, 1).raw().to_ne_bytes());
    let b = mem.attach().unwrap();
    assert_eq!((b.max(), b.held(), b.holder_of(1)), (3, 1, Some(holder(7, 1))));
    assert_eq!((Region::MAGIC, Region::VERSION), (u64::from_ne_bytes(*b"TWBULKHD"), 2));
    assert_eq!((SharedRegion::MAGIC, SharedRegion::VERSION), (u64::from_ne_bytes(*b"TRIPWIRE"), 6));
}
