//! `struct_size`: each config struct C passes by pointer is read and
//! written by the size the caller's header gave it, never more. Older
//! layouts get the defaults for the fields they lack, a newer header's
//! struct is read if the fields this library does not know are zero, and
//! every other size is `TW_STATUS_INVALID_STRUCT_SIZE` with a message
//! naming the struct's `struct_size`, before a byte past the caller's
//! struct is touched. Runs under miri too, which would flag any such byte.

use core::ffi::CStr;
use core::ptr::{null, null_mut};

use tripwire_ffi::*;

fn last_error() -> String {
    // SAFETY:
    // - A NUL-terminated string valid until the next failing call on this
    //   thread; copied at once.
    unsafe { CStr::from_ptr(tw_last_error_message()) }.to_str().unwrap().to_owned()
}

/// Bytes as a caller's struct of any layout: 8-aligned like every config
/// struct, with room past the largest size tried so that a write past
/// `size` shows as a changed guard byte.
#[repr(C, align(8))]
struct Buf([u8; 256]);

const GUARD: u8 = 0xA5;

impl Buf {
    fn guarded() -> Self {
        Buf([GUARD; 256])
    }
    fn with_size(size: u32) -> Self {
        let mut b = Self::guarded();
        b.0[..4].copy_from_slice(&size.to_ne_bytes());
        b
    }
    fn u32_at(&self, at: usize) -> u32 {
        u32::from_ne_bytes(self.0[at..at + 4].try_into().unwrap())
    }
    fn set_u32(&mut self, at: usize, v: u32) {
        self.0[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    }
    fn ptr<T>(&self) -> *const T {
        self.0.as_ptr().cast()
    }
    fn mut_ptr<T>(&mut self) -> *mut T {
        self.0.as_mut_ptr().cast()
    }
    fn untouched_from(&self, at: usize) -> bool {
        self.0[at..].iter().all(|&b| b == GUARD)
    }
}

const SIZES: [usize; 4] = [
    TW_BREAKER_CONFIG_SIZE_V1 as usize,
    TW_BREAKER_CONFIG_SIZE_V2 as usize,
    TW_BREAKER_CONFIG_SIZE_V3 as usize,
    TW_BREAKER_CONFIG_SIZE_V4 as usize,
];

fn full_default() -> tw_breaker_config {
    let mut c = core::mem::MaybeUninit::<tw_breaker_config>::uninit();
    // SAFETY: `c` is writable; on `TW_STATUS_OK` it is fully written.
    unsafe {
        assert_eq!(tw_breaker_config_default(c.as_mut_ptr()), tw_status::Ok);
        c.assume_init()
    }
}

/// The config a breaker runs with, read through this crate's layout.
fn config_of(b: *const tw_breaker) -> tw_breaker_config {
    let mut got = full_default();
    // SAFETY: a live handle; `got` is writable.
    assert_eq!(unsafe { tw_breaker_get_config(b, &mut got) }, tw_status::Ok);
    got
}

#[test]
fn the_layouts_are_the_ones_the_header_names() {
    assert_eq!(SIZES, [64, 104, 112, 128]);
    assert_eq!(size_of::<tw_breaker_config>(), SIZES[3]);
    assert_eq!(core::mem::offset_of!(tw_breaker_config, struct_size), 0);
    assert_eq!(core::mem::offset_of!(tw_breaker_config, window_bucket_ns), SIZES[0]);
    assert_eq!(core::mem::offset_of!(tw_breaker_config, window_kind), SIZES[1]);
    assert_eq!(core::mem::offset_of!(tw_breaker_config, probe_timeout_ns), SIZES[2]);
    for off in [
        core::mem::offset_of!(tw_backoff_config, struct_size),
        core::mem::offset_of!(tw_retry_budget_config, struct_size),
        core::mem::offset_of!(tw_fleet_options, struct_size),
    ] {
        assert_eq!(off, 0);
    }
    assert_eq!(full_default().struct_size as usize, size_of::<tw_breaker_config>());
}

#[test]
fn an_older_layout_is_filled_and_read_by_its_own_size_and_gets_the_defaults_it_lacks() {
    let defaults = full_default();
    for size in SIZES {
        let mut buf = Buf::guarded();
        // SAFETY: `buf` holds 256 ≥ `size` writable bytes.
        assert_eq!(unsafe { tw_breaker_config_init(buf.mut_ptr(), size) }, tw_status::Ok, "{size}");
        assert!(buf.untouched_from(size), "tw_breaker_config_init wrote past {size} bytes");
        assert_eq!(buf.u32_at(0) as usize, size);
        // The prefix is the default config's.
        // SAFETY: both are `size` ≤ 128 readable bytes.
        let prefix = unsafe { core::slice::from_raw_parts((&raw const defaults).cast::<u8>(), size) };
        assert_eq!(&buf.0[4..size], &prefix[4..]);
        // A field of the first layout, set by the caller: failure_threshold.
        buf.set_u32(4, 2);
        // Past `size`: garbage, which must not be read.
        let mut b = null_mut();
        // SAFETY: `buf` holds a struct of `size` readable bytes; `b` is writable.
        unsafe {
            assert_eq!(tw_breaker_config_validate(buf.ptr()), tw_status::Ok, "{size}: {}", last_error());
            assert_eq!(tw_breaker_new(buf.ptr(), &mut b), tw_status::Ok, "{size}: {}", last_error());
        }
        let got = config_of(b);
        assert_eq!(got.failure_threshold, 2);
        // The fields the caller's layout lacks are the defaults, not its
        // garbage bytes nor zeros (window_buckets and min_calls are 10);
        // the zeros that mean "the default" read back as the values in force.
        let expect = tw_breaker_config {
            failure_threshold: 2,
            open_timeout_max_ns: defaults.open_timeout_ns,
            probe_timeout_ns: 60_000_000_000,
            max_hold_ns: 3_600_000_000_000,
            ..defaults
        };
        assert_eq!(got, expect, "{size}");
        // And the breaker works: two failures trip it.
        for now in [1, 2] {
            let mut t = tw_ticket { started_at: 0, generation: 0, flags: 0 };
            // SAFETY: a live handle; `t` is writable.
            unsafe {
                assert_eq!(tw_breaker_try_acquire_at(b, now, &mut t, null_mut()), tw_status::Ok);
                assert_eq!(
                    tw_breaker_record_at(b, now, t, tw_outcome::Failure as u32, null_mut()),
                    tw_status::Ok
                );
            }
        }
        let mut state = tw_state::Closed;
        // SAFETY: a live handle, freed once; `state` is writable.
        unsafe {
            assert_eq!(tw_breaker_state(b, &mut state), tw_status::Ok);
            tw_breaker_free(b);
        }
        assert_eq!(state, tw_state::Open);
    }
}

#[test]
fn get_config_writes_only_the_callers_layout() {
    let c = tw_breaker_config { failure_threshold: 3, min_calls: 20, ..full_default() };
    let mut b = null_mut();
    // SAFETY: valid pointers.
    assert_eq!(unsafe { tw_breaker_new(&c, &mut b) }, tw_status::Ok);
    for size in SIZES {
        let mut buf = Buf::guarded();
        // SAFETY: a live handle; `buf` holds 256 ≥ `size` writable bytes.
        assert_eq!(unsafe { tw_breaker_get_config_sized(b, buf.mut_ptr(), size) }, tw_status::Ok);
        assert!(buf.untouched_from(size), "tw_breaker_get_config_sized wrote past {size} bytes");
        assert_eq!(buf.u32_at(0) as usize, size);
        assert_eq!(buf.u32_at(4), 3, "failure_threshold");
    }
    // A newer header's struct: its fields this library does not know read 0.
    let mut buf = Buf::guarded();
    // SAFETY: as above.
    assert_eq!(unsafe { tw_breaker_get_config_sized(b, buf.mut_ptr(), 144) }, tw_status::Ok);
    assert_eq!(buf.u32_at(0), 144);
    assert!(buf.0[128..144].iter().all(|&x| x == 0));
    assert!(buf.untouched_from(144));
    // SAFETY: a live handle, freed once.
    unsafe { tw_breaker_free(b) };
}

#[test]
fn a_newer_headers_struct_is_read_only_if_the_fields_unknown_here_are_zero() {
    let mut buf = Buf::guarded();
    // SAFETY: `buf` holds 256 ≥ 152 writable bytes.
    assert_eq!(unsafe { tw_breaker_config_init(buf.mut_ptr(), 152) }, tw_status::Ok);
    assert_eq!(buf.u32_at(0), 152);
    assert!(buf.0[128..152].iter().all(|&x| x == 0), "the unknown fields zeroed");
    assert!(buf.untouched_from(152));
    let mut b = null_mut();
    // SAFETY: `buf` holds a struct of 152 readable bytes; `b` is writable.
    unsafe {
        assert_eq!(tw_breaker_new(buf.ptr(), &mut b), tw_status::Ok, "{}", last_error());
        tw_breaker_free(b);
    }
    // A field this library does not know, set: refused, not ignored.
    buf.0[147] = 1;
    b = null_mut();
    // SAFETY: as above.
    unsafe {
        assert_eq!(tw_breaker_config_validate(buf.ptr()), tw_status::InvalidStructSize);
        assert_eq!(tw_breaker_new(buf.ptr(), &mut b), tw_status::InvalidStructSize);
    }
    assert!(b.is_null(), "*out written on failure");
    assert_eq!(
        last_error(),
        format!(
            "tw_breaker_new: tw_breaker_config.struct_size = 152, larger than this library's 128 bytes, and \
             byte 147 is not zero: the program sets a field of a newer header than this library's ({})",
            env!("CARGO_PKG_VERSION")
        )
    );
}

/// Sizes no layout has: too small, between two layouts, not a multiple of
/// 8, above the cap, garbage. The buffer is 256 bytes: the big ones would
/// be read past its end (which miri flags) if they were not refused first.
const GARBAGE: [u32; 14] = [0, 4, 8, 63, 65, 96, 111, 113, 120, 127, 129, 4104, 0xDEAD_BEEF, u32::MAX];

#[test]
fn every_other_breaker_config_size_is_refused_naming_struct_size() {
    for size in GARBAGE {
        let buf = Buf::with_size(size);
        let mut b = null_mut();
        let expect_start = |f: &str| format!("{f}: tw_breaker_config.struct_size = {size}, ");
        // SAFETY: `buf` is readable; the sizes are refused before any byte
        // past its first four is read.
        unsafe {
            assert_eq!(tw_breaker_config_validate(buf.ptr()), tw_status::InvalidStructSize, "{size}");
            assert!(
                last_error().starts_with(&expect_start("tw_breaker_config_validate")),
                "{}",
                last_error()
            );
            assert_eq!(tw_breaker_new(buf.ptr(), &mut b), tw_status::InvalidStructSize, "{size}");
            assert!(last_error().starts_with(&expect_start("tw_breaker_new")), "{}", last_error());
            assert!(
                last_error().ends_with("expected 64, 104, 112 or 128 bytes, or more from a newer header; tw_breaker_config_default() sets it"),
                "{}",
                last_error()
            );
            assert!(b.is_null());
        }
        let mut out = Buf::guarded();
        // SAFETY: refused before writing: `out` holds 256 bytes but the
        // sizes above 256 are refused first.
        unsafe {
            assert_eq!(tw_breaker_config_init(out.mut_ptr(), size as usize), tw_status::InvalidStructSize);
        }
        assert!(last_error().starts_with(&expect_start("tw_breaker_config_init")), "{}", last_error());
        assert!(out.untouched_from(0), "written on failure");
    }
    let mut huge = Buf::guarded();
    // SAFETY: refused before writing anything.
    unsafe { assert_eq!(tw_breaker_config_init(huge.mut_ptr(), usize::MAX), tw_status::InvalidStructSize) };
    assert!(huge.untouched_from(0));
    let why = |size: u32| {
        let buf = Buf::with_size(size);
        // SAFETY: as above.
        unsafe { tw_breaker_config_validate(buf.ptr()) };
        last_error()
    };
    assert!(why(63).contains("smaller than the first layout"), "{}", why(63));
    assert!(why(96).contains("between two layouts"));
    assert!(why(113).contains("between two layouts"));
    assert!(why(129).contains("not the size of any layout (at most 4096, a multiple of 8)"));
    assert!(why(4104).contains("not the size of any layout"));
}

#[test]
fn shared_regions_read_the_config_by_its_size_too() {
    let (mut size, mut align) = (0, 0);
    // SAFETY: writable out-pointers.
    assert_eq!(unsafe { tw_breaker_layout(&mut size, &mut align) }, tw_status::Ok);
    let layout = std::alloc::Layout::from_size_align(size, align).unwrap();
    // SAFETY: a layout of non-zero size; freed at the end.
    let raw = unsafe { std::alloc::alloc_zeroed(layout) };
    assert!(!raw.is_null());
    let mem = raw.cast::<core::ffi::c_void>();
    let mut h = null();
    let bad = Buf::with_size(12);
    // SAFETY: `mem` holds `size` zeroed bytes; `bad` is readable.
    unsafe {
        assert_eq!(tw_breaker_init_in(mem, size, bad.ptr(), &mut h), tw_status::InvalidStructSize);
        assert!(last_error().starts_with("tw_breaker_init_in: tw_breaker_config.struct_size = 12, "));
        assert_eq!(tw_breaker_open_in(mem, size, bad.ptr(), &mut h), tw_status::InvalidStructSize);
        assert!(h.is_null());
    }
    // The first layout, in a region.
    let mut v1 = Buf::guarded();
    // SAFETY: as above; `v1` holds 64 ≤ 256 bytes.
    unsafe {
        assert_eq!(tw_breaker_config_init(v1.mut_ptr(), SIZES[0]), tw_status::Ok);
        v1.set_u32(4, 9);
        assert_eq!(tw_breaker_init_in(mem, size, v1.ptr(), &mut h), tw_status::Ok, "{}", last_error());
        assert_eq!(config_of(h).failure_threshold, 9);
        assert_eq!(config_of(h).min_calls, full_default().min_calls);
        assert_eq!(tw_breaker_open_in(mem, size, v1.ptr(), &mut h), tw_status::Ok, "{}", last_error());
        // No handle is used past here.
        std::alloc::dealloc(raw, layout);
    }
}

#[test]
fn reserved_fields_must_be_zero() {
    let c = tw_breaker_config { reserved: 1, ..full_default() };
    // SAFETY: a readable config.
    assert_eq!(unsafe { tw_breaker_config_validate(&c) }, tw_status::InvalidConfig);
    assert_eq!(last_error(), "tw_breaker_config_validate: invalid breaker config: reserved = 1, expected 0");
    let mut rc = core::mem::MaybeUninit::uninit();
    // SAFETY: writable; fully written on `TW_STATUS_OK`.
    let rc = unsafe {
        assert_eq!(tw_retry_budget_config_default(rc.as_mut_ptr()), tw_status::Ok);
        rc.assume_init()
    };
    let rc = tw_retry_budget_config { reserved: 2, ..rc };
    let mut h = null_mut();
    // SAFETY: readable config, writable out.
    assert_eq!(unsafe { tw_retry_budget_new(&rc, &mut h) }, tw_status::InvalidConfig);
    assert_eq!(last_error(), "tw_retry_budget_new: invalid retry budget config: reserved = 2, expected 0");
}

/// The single-layout structs: their own size, a newer one with zeros, and
/// garbage, through each one's `_init` and the function reading it.
#[test]
fn the_other_config_structs_follow_the_same_rules() {
    // (name, this size, init, read)
    type Init = unsafe fn(*mut u8, usize) -> tw_status;
    type Read = unsafe fn(*const u8) -> tw_status;
    unsafe fn backoff_init(p: *mut u8, n: usize) -> tw_status {
        // SAFETY: the caller's guarantee.
        unsafe { tw_backoff_config_init(p.cast(), n) }
    }
    unsafe fn backoff_read(p: *const u8) -> tw_status {
        let mut h = null_mut();
        // SAFETY: the caller's guarantee; a handle made is freed.
        unsafe {
            let s = tw_backoff_new(p.cast(), &mut h);
            tw_backoff_free(h);
            s
        }
    }
    unsafe fn budget_init(p: *mut u8, n: usize) -> tw_status {
        // SAFETY: the caller's guarantee.
        unsafe { tw_retry_budget_config_init(p.cast(), n) }
    }
    unsafe fn budget_read(p: *const u8) -> tw_status {
        let mut h = null_mut();
        // SAFETY: the caller's guarantee; a handle made is freed.
        unsafe {
            let s = tw_retry_budget_new(p.cast(), &mut h);
            tw_retry_budget_free(h);
            s
        }
    }
    unsafe fn fleet_init(p: *mut u8, n: usize) -> tw_status {
        // SAFETY: the caller's guarantee.
        unsafe { tw_fleet_options_init(p.cast(), n) }
    }
    unsafe fn fleet_read(p: *const u8) -> tw_status {
        // An unsupported scheme: any options accepted end in
        // INVALID_ARGUMENT for the URL, before a thread or socket.
        let mut h = null_mut();
        let key = *b"0123456789abcdef0123456789abcdef";
        // SAFETY: the caller's guarantee; valid strings and key.
        unsafe { tw_fleet_new(c"http://x".as_ptr(), c"ns".as_ptr(), key.as_ptr(), 32, p.cast(), &mut h) }
    }
    let structs: [(&str, usize, Init, Read, tw_status); 3] = [
        ("tw_backoff_config", size_of::<tw_backoff_config>(), backoff_init, backoff_read, tw_status::Ok),
        (
            "tw_retry_budget_config",
            size_of::<tw_retry_budget_config>(),
            budget_init,
            budget_read,
            tw_status::Ok,
        ),
        (
            "tw_fleet_options",
            size_of::<tw_fleet_options>(),
            fleet_init,
            fleet_read,
            tw_status::InvalidArgument,
        ),
    ];
    for (name, own, init, read, accepted) in structs {
        for size in [own, own + 8, 256] {
            let mut buf = Buf::guarded();
            // SAFETY: `buf` holds 256 ≥ `size` bytes.
            unsafe {
                assert_eq!(init(buf.0.as_mut_ptr(), size), tw_status::Ok, "{name} {size}");
                assert!(buf.untouched_from(size), "{name}: init wrote past {size}");
                assert_eq!(buf.u32_at(0) as usize, size);
                assert_eq!(read(buf.0.as_ptr()), accepted, "{name} {size}: {}", last_error());
                if size > own {
                    buf.0[size - 1] = 1;
                    assert_eq!(read(buf.0.as_ptr()), tw_status::InvalidStructSize, "{name} {size}");
                    assert!(
                        last_error().contains(&format!("{name}.struct_size = {size}, larger")),
                        "{}",
                        last_error()
                    );
                }
            }
        }
        // Each a single layout, so a larger multiple of 8 is a newer one.
        let own32 = own as u32;
        for size in [0, 4, own32 - 8, own32 - 1, own32 + 4, 4104, 0xDEAD_BEEF, u32::MAX] {
            let buf = Buf::with_size(size);
            // SAFETY: refused before reading past the first four bytes.
            unsafe { assert_eq!(read(buf.0.as_ptr()), tw_status::InvalidStructSize, "{name} {size}") };
            let msg = last_error();
            assert!(msg.contains(&format!(": {name}.struct_size = {size}, ")), "{msg}");
            assert!(msg.ends_with(&format!("{name}_default() sets it")), "{msg}");
            let mut out = Buf::guarded();
            // SAFETY: refused before writing.
            unsafe { assert_eq!(init(out.0.as_mut_ptr(), size as usize), tw_status::InvalidStructSize) };
            assert!(out.untouched_from(0));
        }
    }
}
