//! Attaching to arbitrary bytes, and to valid regions with arbitrary bytes
//! patched in, is an error or a working breaker: never a crash, a panic or
//! undefined behaviour (the fuzzer runs with AddressSanitizer).
#![no_main]

use core::alloc::Layout;
use core::ffi::c_void;
use core::ptr::null;
use std::alloc::{alloc_zeroed, dealloc};

use libfuzzer_sys::fuzz_target;
use tripwire_ffi::*;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let (mut size, mut align) = (0, 0);
    // SAFETY:
    // - Both out-pointers are writable.
    unsafe { tw_breaker_layout(&mut size, &mut align) };
    let layout = Layout::from_size_align(size, align).unwrap();
    // SAFETY:
    // - The layout's size is non-zero.
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
            let mut config = core::mem::zeroed();
            tw_breaker_config_default(&mut config);
            config.half_open_max = 3;
            let mut b = null();
            assert_eq!(tw_breaker_init_in(region, size, &config, &mut b), tw_status::Ok);
            for patch in rest.chunks_exact(3) {
                let offset = usize::from(u16::from_le_bytes([patch[0], patch[1]])) % size;
                *mem.add(offset) ^= patch[2];
            }
            size
        };
        let mut b = null();
        let status = tw_breaker_attach(region, len, &mut b);
        assert_ne!(status, tw_status::Panic);
        if status == tw_status::Ok {
            // Whatever the bytes said, the breaker must work.
            for (i, &op) in rest.iter().take(64).enumerate() {
                let now = (i as u64) << (op % 40);
                let mut t = tw_ticket { started_at: 0, generation: 0, flags: 0 };
                let s = match tw_breaker_try_acquire_at(b, now, &mut t, core::ptr::null_mut()) {
                    tw_status::Ok => {
                        tw_breaker_record_at(b, now, t, u32::from(op % 3), core::ptr::null_mut())
                    }
                    other => other,
                };
                assert!(matches!(s, tw_status::Ok | tw_status::Rejected), "{s:?}");
            }
            let mut snap = core::mem::zeroed();
            assert_eq!(tw_breaker_snapshot(b, &mut snap), tw_status::Ok);
        }
        dealloc(mem, layout);
    }
});
