//! The shared bulkhead's C ABI called from Rust, as C would call it: every
//! function, NULL arguments, refused releases, and attaching to regions of
//! random bytes, with statuses and messages naming the field. Runs under
//! miri too (`cargo +nightly miri test -p tripwire-ffi --test
//! shared_bulkhead_api`), which checks that no byte pattern is undefined
//! behaviour.

use core::ptr::{null, null_mut};

use region::{Mem, last_error};
use tripwire_ffi::*;

mod region;

fn size_for(max: u32) -> usize {
    let (mut size, mut align) = (0, 0);
    // SAFETY:
    // - Both pointers are writable.
    assert_eq!(unsafe { tw_shared_bulkhead_size(max, &mut size, &mut align) }, tw_status::Ok);
    assert_eq!(align, 64);
    size
}

fn attach(mem: &Mem, len: usize) -> Result<*const tw_shared_bulkhead, tw_status> {
    let mut b = null();
    // SAFETY:
    // - `mem` holds `len` valid bytes while the handle is used; `b` is writable.
    match unsafe { tw_shared_bulkhead_attach(mem.void(), len, &mut b) } {
        tw_status::Ok => Ok(b),
        other => Err(other),
    }
}

fn acquire(b: *const tw_shared_bulkhead) -> Option<tw_shared_slot> {
    let mut slot = tw_shared_slot { index: 7, holder: 7, releases: 7 };
    // SAFETY:
    // - A live handle; `slot` is writable.
    match unsafe { tw_shared_bulkhead_try_acquire(b, &mut slot) } {
        tw_status::Ok => Some(slot),
        tw_status::Rejected => {
            assert_eq!(slot, tw_shared_slot { index: 7, holder: 7, releases: 7 }, "written only on success");
            None
        }
        other => panic!("{other:?}: {}", last_error()),
    }
}

fn release(b: *const tw_shared_bulkhead, slot: tw_shared_slot) -> tw_status {
    // SAFETY:
    // - A live handle.
    unsafe { tw_shared_bulkhead_release(b, slot) }
}

fn stats(b: *const tw_shared_bulkhead) -> tw_shared_bulkhead_stats {
    let mut s = tw_shared_bulkhead_stats { max: 9, held: 9, acquired: 9, rejected: 9, reclaimed: 9 };
    // SAFETY:
    // - A live handle; `s` is writable.
    assert_eq!(unsafe { tw_shared_bulkhead_snapshot(b, &mut s) }, tw_status::Ok);
    s
}

/// `tw_shared_bulkhead_init_in` takes only zero-filled memory: a byte set
/// anywhere in the region after the magic is refused with
/// `TW_STATUS_REGION_INVALID`, naming it, and left as it was.
#[test]
fn init_in_refuses_memory_that_is_not_zero_filled() {
    let size = size_for(2);
    let mut mem = Mem::new(size);
    for at in [8, 24, 60, 64, size - 1] {
        mem.bytes()[at] = 0x42;
        let mut b = null();
        // SAFETY:
        // - `mem` holds `size` valid bytes; `b` is writable.
        let status = unsafe { tw_shared_bulkhead_init_in(mem.void(), size, 2, &mut b) };
        assert_eq!(status, tw_status::RegionInvalid);
        assert_eq!(
            last_error(),
            format!(
                "tw_shared_bulkhead_init_in: shared bulkhead region is not zero-filled (byte {at} is 0x42): \
                 init_in takes fresh, zero-filled memory"
            )
        );
        assert!(b.is_null());
        assert!(mem.bytes().iter().enumerate().all(|(i, &v)| v == if i == at { 0x42 } else { 0 }));
        assert_eq!(attach(&mem, size), Err(tw_status::RegionUninitialised));
        mem.bytes()[at] = 0;
    }
    let mut b = null();
    // SAFETY:
    // - As above; zero-filled again.
    assert_eq!(unsafe { tw_shared_bulkhead_init_in(mem.void(), size, 2, &mut b) }, tw_status::Ok);
}

/// A one-slot region taken again with the holder word of a receipt
/// released long ago (this process's 16-bit acquire counter wrapped): the
/// old receipt is refused with `TW_STATUS_INVALID_ARGUMENT` and leaves the
/// new holder's slot alone.
#[test]
#[cfg_attr(miri, ignore)] // 65,536 acquires and releases
fn a_receipt_from_before_the_acquire_counter_wrapped_is_refused() {
    let size = size_for(1);
    let mem = Mem::new(size);
    let mut b = null();
    // SAFETY:
    // - `mem` holds `size` valid bytes for as long as the handle is used; `b` is writable.
    assert_eq!(unsafe { tw_shared_bulkhead_init_in(mem.void(), size, 1, &mut b) }, tw_status::Ok);
    let old = acquire(b).unwrap();
    assert_eq!(release(b, old), tw_status::Ok);
    // Other tests acquire too (the counter is the process's): go round
    // until the slot is taken with the old word again, or twice round.
    let cur = (0..2 << 16)
        .find_map(|_| {
            let s = acquire(b).unwrap();
            if s.holder == old.holder {
                return Some(s);
            }
            assert_eq!(release(b, s), tw_status::Ok);
            None
        })
        .expect("the 16-bit acquire counter comes round");
    assert_eq!((cur.index, cur.holder), (old.index, old.holder));
    assert_eq!(release(b, old), tw_status::InvalidArgument);
    assert!(last_error().contains("is not held by this receipt"), "{}", last_error());
    assert_eq!(stats(b).held, 1, "the stale receipt freed the new holder's slot");
    assert_eq!(release(b, cur), tw_status::Ok);
    assert_eq!(stats(b).held, 0);
}

#[test]
fn a_region_caps_its_holders_and_refuses_releases_not_held() {
    let size = size_for(2);
    assert_eq!(size, 96);
    let mem = Mem::new(size);
    let mut b = null();
    // SAFETY:
    // - `mem` holds `size` bytes for the test; `b` is writable.
    assert_eq!(unsafe { tw_shared_bulkhead_init_in(mem.void(), size, 2, &mut b) }, tw_status::Ok);
    assert_eq!(b.cast::<u8>(), mem.ptr.cast_const(), "the handle is the region's address");
    let other = attach(&mem, size).unwrap();
    let x = acquire(b).unwrap();
    let y = acquire(other).unwrap();
    assert_ne!(x.index, y.index);
    assert!(acquire(b).is_none(), "both slots held by this process: no reclaim frees them");
    let mut available = 9;
    // SAFETY:
    // - A live handle; `available` is writable.
    assert_eq!(unsafe { tw_shared_bulkhead_available(b, &mut available) }, tw_status::Ok);
    assert_eq!(available, 0);

    assert_eq!(release(other, x), tw_status::Ok, "any handle releases a receipt");
    assert_eq!(release(b, x), tw_status::InvalidArgument);
    assert!(last_error().contains("is not held by this receipt"), "{}", last_error());
    assert_eq!(release(b, tw_shared_slot { index: 2, ..y }), tw_status::InvalidArgument);
    assert_eq!(
        last_error(),
        "tw_shared_bulkhead_release: `slot.index` = 2 is out of range: the bulkhead has 2 slots"
    );
    assert_eq!(release(b, tw_shared_slot { holder: 0, ..y }), tw_status::InvalidArgument);
    assert_eq!(last_error(), "tw_shared_bulkhead_release: `slot.holder` = 0x0 names no holder");
    // Another process's word (pid 1, the init process) for y's slot: refused.
    let forged = tw_shared_slot { holder: (1 << 40) | (y.holder & 0xff_ffff), ..y };
    assert_eq!(release(b, forged), tw_status::InvalidArgument);
    assert_eq!(release(b, y), tw_status::Ok);
    let s = stats(b);
    assert_eq!((s.max, s.held, s.acquired, s.rejected, s.reclaimed), (2, 0, 2, 1, 0));
}

#[test]
fn null_arguments_and_a_bad_max_are_named() {
    let mem = Mem::new(128);
    let mut b = null();
    let (mut size, mut align) = (0, 0);
    // SAFETY:
    // - Every non-null pointer is valid; NULLs are refused before use.
    unsafe {
        assert_eq!(tw_shared_bulkhead_size(1, null_mut(), &mut align), tw_status::NullArgument);
        assert_eq!(last_error(), "tw_shared_bulkhead_size: `size` is NULL");
        assert_eq!(tw_shared_bulkhead_size(65_537, &mut size, &mut align), tw_status::InvalidArgument);
        assert_eq!(last_error(), "tw_shared_bulkhead_size: `max` = 65537, expected 0 to 65536");
        assert_eq!(tw_shared_bulkhead_init_in(null_mut(), 128, 1, &mut b), tw_status::NullArgument);
        assert_eq!(tw_shared_bulkhead_init_in(mem.void(), 128, 1, null_mut()), tw_status::NullArgument);
        assert_eq!(tw_shared_bulkhead_open_in(mem.void(), 128, 65_537, &mut b), tw_status::InvalidArgument);
        assert_eq!(last_error(), "tw_shared_bulkhead_open_in: `max` = 65537, expected 0 to 65536");
        assert_eq!(
            tw_shared_bulkhead_try_acquire(null(), &mut tw_shared_slot { index: 0, holder: 0, releases: 0 }),
            tw_status::NullArgument
        );
        assert_eq!(last_error(), "tw_shared_bulkhead_try_acquire: `bulkhead` is NULL");
        assert_eq!(
            tw_shared_bulkhead_release(null(), tw_shared_slot { index: 0, holder: 0, releases: 0 }),
            tw_status::NullArgument
        );
        assert_eq!(tw_shared_bulkhead_reclaim(null(), null_mut()), tw_status::NullArgument);
        assert_eq!(tw_shared_bulkhead_available(null(), null_mut()), tw_status::NullArgument);
    }
    assert!(b.is_null(), "out-parameters are written only on success");
    assert_eq!(attach(&mem, 128), Err(tw_status::RegionUninitialised));
    assert_eq!(attach(&mem, 63), Err(tw_status::RegionTooSmall));
    assert_eq!(
        last_error(),
        "tw_shared_bulkhead_attach: shared bulkhead region of 63 bytes is too small: it needs 64"
    );
}

#[test]
fn corrupt_fields_get_their_statuses_and_names() {
    let size = size_for(2);
    let fresh = || {
        let mem = Mem::new(size);
        let mut b = null();
        // SAFETY:
        // - As in the first test.
        assert_eq!(unsafe { tw_shared_bulkhead_init_in(mem.void(), size, 2, &mut b) }, tw_status::Ok);
        mem
    };
    let cases: [(usize, &[u8], tw_status, &str); 6] = [
        (0, &7u64.to_ne_bytes(), tw_status::RegionInvalid, "`magic` 0x0000000000000007"),
        (8, &9u32.to_ne_bytes(), tw_status::RegionVersionMismatch, "layout `version` 9"),
        (12, &70_000u32.to_ne_bytes(), tw_status::RegionCorrupt, "`max` = 70000, expected 0 to 65536"),
        (16, &81u64.to_ne_bytes(), tw_status::RegionCorrupt, "`size` = 81 for `max` = 2"),
        (60, &1u32.to_ne_bytes(), tw_status::RegionCorrupt, "`reserved` = 1, expected 0"),
        (72, &0xffu64.to_ne_bytes(), tw_status::RegionCorrupt, "`slot[1]` = 0x00000000000000ff"),
    ];
    for (offset, bytes, status, text) in cases {
        let mut mem = fresh();
        mem.bytes()[offset..offset + bytes.len()].copy_from_slice(bytes);
        assert_eq!(attach(&mem, size), Err(status), "offset {offset}");
        assert!(last_error().contains(text), "offset {offset}: {}", last_error());
        assert!(last_error().starts_with("tw_shared_bulkhead_attach: "));
    }
    let mem = fresh();
    let mut b = null();
    // SAFETY:
    // - As in the first test.
    let status = unsafe { tw_shared_bulkhead_open_in(mem.void(), size, 3, &mut b) };
    assert_eq!(status, tw_status::RegionConfigMismatch);
    assert_eq!(
        last_error(),
        "tw_shared_bulkhead_open_in: shared bulkhead region has `max` = 2, not the 3 asked for"
    );
}

#[test]
fn random_regions_are_refused_or_keep_the_cap() {
    let rounds = if cfg!(miri) { 24 } else { 5_000 };
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut accepted = 0;
    for round in 0..rounds {
        let max = (next() % 4) as u32;
        let size = size_for(max);
        let mut mem = Mem::new(size);
        for byte in mem.bytes() {
            *byte = next() as u8;
        }
        // Most rounds get a plausible header, to reach the later checks.
        if round % 4 != 0 {
            let bytes = mem.bytes();
            bytes[0..8].copy_from_slice(&u64::from_ne_bytes(*b"TWBULKHD").to_ne_bytes());
            bytes[8..12].copy_from_slice(&2u32.to_ne_bytes());
            bytes[12..16].copy_from_slice(&max.to_ne_bytes());
            bytes[16..24].copy_from_slice(&(size as u64).to_ne_bytes());
            bytes[60..64].copy_from_slice(&0u32.to_ne_bytes());
            for i in 0..max as usize {
                // Keep some slot words' pid fields non-zero and some zero.
                if next() % 2 == 0 {
                    bytes[64 + 8 * i + 5..64 + 8 * i + 8].copy_from_slice(&[0, 0, 0]);
                } else if next() % 2 == 0 {
                    bytes[64 + 8 * i..64 + 8 * i + 8].copy_from_slice(&[0; 8]);
                }
            }
        }
        let len = if round % 3 == 0 { (next() as usize) % (size + 1) } else { size };
        match attach(&mem, len) {
            Ok(b) => {
                accepted += 1;
                let s = stats(b);
                assert!(s.held <= s.max);
                // Whatever the slots hold, this process never gets more than the free ones.
                let mut mine = Vec::new();
                while let Some(slot) = acquire_without_reclaim(b, &s) {
                    mine.push(slot);
                }
                assert!(stats(b).held <= s.max);
                for slot in mine {
                    assert_eq!(release(b, slot), tw_status::Ok);
                }
            }
            Err(status) => {
                assert_ne!(status, tw_status::Panic);
                assert!(last_error().starts_with("tw_shared_bulkhead_attach: "), "{}", last_error());
            }
        }
    }
    assert!(accepted > 0, "no region was accepted: the test checks too little");
}

/// Takes a slot while one is free: stops before a full bulkhead would run a
/// reclaim pass, whose liveness checks (`kill`, `/proc`) miri cannot run.
fn acquire_without_reclaim(
    b: *const tw_shared_bulkhead,
    s: &tw_shared_bulkhead_stats,
) -> Option<tw_shared_slot> {
    let mut available = 0;
    // SAFETY:
    // - A live handle; `available` is writable.
    assert_eq!(unsafe { tw_shared_bulkhead_available(b, &mut available) }, tw_status::Ok);
    assert!(available <= s.max);
    if available == 0 { None } else { acquire(b) }
}

/// Memory that holds a breaker's region (its magic, initialised or being
/// initialised) is another kind of region: `TW_STATUS_REGION_INVALID`, as
/// for any region that is not a bulkhead's, with a message that names
/// the kind it holds, and left as it was.
#[test]
fn a_breakers_region_is_refused_as_another_kind() {
    let size = size_for(2);
    let mut mem = Mem::new(size);
    for magic in [b"TRIPWIRE", b"TRIPWIR~"] {
        mem.bytes()[..8].copy_from_slice(magic);
        assert_eq!(attach(&mem, size), Err(tw_status::RegionInvalid));
        assert_eq!(
            last_error(),
            "tw_shared_bulkhead_attach: shared bulkhead region holds a breaker, not a bulkhead: \
             open it as a breaker"
        );
        let mut b = null();
        // SAFETY:
        // - `mem` holds `size` valid bytes; `b` is writable.
        let status = unsafe { tw_shared_bulkhead_init_in(mem.void(), size, 2, &mut b) };
        assert_eq!(status, tw_status::RegionInvalid);
        assert!(last_error().ends_with("holds a breaker, not a bulkhead: open it as a breaker"));
        assert!(b.is_null());
        assert_eq!(&mem.bytes()[..8], magic, "left as it was");
    }
}
