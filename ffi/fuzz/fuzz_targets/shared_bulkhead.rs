//! Attaching a shared bulkhead to arbitrary bytes, and to valid regions
//! with arbitrary bytes patched in, is an error or a working bulkhead that
//! keeps its cap: never a crash, a panic or undefined behaviour (the fuzzer
//! runs with AddressSanitizer).
#![no_main]

use core::alloc::Layout;
use core::ffi::c_void;
use core::ptr::null;
use std::alloc::{alloc_zeroed, dealloc};

use libfuzzer_sys::fuzz_target;
use tripwire_ffi::*;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let max = u32::from(mode >> 4);
    let (mut size, mut align) = (0, 0);
    // SAFETY:
    // - Both out-pointers are writable.
    assert_eq!(unsafe { tw_shared_bulkhead_size(max, &mut size, &mut align) }, tw_status::Ok);
    let layout = Layout::from_size_align(size, align).unwrap();
    // SAFETY:
    // - The layout's size is non-zero (64 bytes of header at least).
    let mem = unsafe { alloc_zeroed(layout) };
    assert!(!mem.is_null());
    // SAFETY:
    // - `mem` is valid for `size` bytes until the `dealloc` below, and only
    //   tripwire and this function (never while a handle is in use) touch it.
    unsafe {
        let region = mem.cast::<c_void>();
        let len = if mode & 1 == 0 {
            // Raw bytes: the input itself, as long as it is.
            let n = rest.len().min(size);
            core::ptr::copy_nonoverlapping(rest.as_ptr(), mem, n);
            if mode & 2 == 0 { n } else { size }
        } else {
            // A valid region with (offset, byte) patches applied.
            let mut b = null();
            assert_eq!(tw_shared_bulkhead_init_in(region, size, max, &mut b), tw_status::Ok);
            for patch in rest.chunks_exact(3) {
                let offset = usize::from(u16::from_le_bytes([patch[0], patch[1]])) % size;
                *mem.add(offset) ^= patch[2];
            }
            size
        };
        let mut b = null();
        let status = tw_shared_bulkhead_attach(region, len, &mut b);
        assert_ne!(status, tw_status::Panic);
        if status == tw_status::Ok {
            // Whatever the bytes said, the cap holds: this process gets at
            // most the free slots, and releases each exactly once.
            let mut stats = core::mem::zeroed::<tw_shared_bulkhead_stats>();
            assert_eq!(tw_shared_bulkhead_snapshot(b, &mut stats), tw_status::Ok);
            assert!(stats.held <= stats.max);
            let mut mine = Vec::new();
            let mut slot = tw_shared_slot { index: 0, holder: 0, releases: 0 };
            while mine.len() <= stats.max as usize {
                match tw_shared_bulkhead_try_acquire(b, &mut slot) {
                    tw_status::Ok => mine.push(slot),
                    tw_status::Rejected => break,
                    other => panic!("{other:?}"),
                }
            }
            assert!(mine.len() <= stats.max as usize);
            for s in mine {
                assert_eq!(tw_shared_bulkhead_release(b, s), tw_status::Ok);
                assert_eq!(tw_shared_bulkhead_release(b, s), tw_status::InvalidArgument);
            }
        }
        dealloc(mem, layout);
    }
});
