//! The shared rate limiter's C ABI called from Rust, as C would call it:
//! every function, NULL arguments, wrong counts, and attaching to regions
//! of garbage, with statuses and messages naming the field. Runs under miri
//! too (`cargo +nightly miri test -p tripwire-ffi --test rate_limiter_api`),
//! which checks that no byte pattern is undefined behaviour.

use core::ptr::{null, null_mut};

use region::{Mem, last_error};
use tripwire_ffi::*;

mod region;

const UNITS: [u32; 2] = [100, 10];
const PERIODS: [u64; 2] = [60_000_000_000, 10_000_000_000];
const BURSTS: [u32; 2] = [10, 2];

/// A region of the two limits above, and its handle.
fn opened(mem: &Mem) -> *const tw_rate_limiter {
    let mut l = null();
    // SAFETY:
    // - `mem` is valid for its length while the handle is used (the test's
    //   scope); the arrays hold 2 values; `l` is writable.
    let st = unsafe {
        tw_rate_limiter_open_in(
            mem.void(),
            mem.len(),
            2,
            UNITS.as_ptr(),
            PERIODS.as_ptr(),
            BURSTS.as_ptr(),
            &mut l,
        )
    };
    assert_eq!(st, tw_status::Ok, "{}", last_error());
    l
}

#[test]
fn every_call_works_on_one_region_and_counts_once() {
    let mem = Mem::new(96);
    let l = opened(&mem);
    let (mut ready, mut why) = (0u64, tw_throttled { limit: 9, wait_ns: 0 });
    let order = [1u32, 1];
    // SAFETY: every call below:
    // - `l` is a live handle; every array holds 2 values; every out-pointer is writable.
    unsafe {
        assert_eq!(tw_rate_limiter_acquire(l, order.as_ptr(), 2, 0, &mut ready, &mut why), tw_status::Ok);
        assert_eq!(tw_rate_limiter_acquire(l, order.as_ptr(), 2, 0, &mut ready, &mut why), tw_status::Ok);
        assert_eq!(
            tw_rate_limiter_acquire(l, order.as_ptr(), 2, 0, &mut ready, &mut why),
            tw_status::Rejected
        );
        assert_eq!(why.limit, 1);
        assert!(why.wait_ns > 0);
        let mut in_use = [0u64; 2];
        assert_eq!(tw_rate_limiter_in_use(l, in_use.as_mut_ptr(), 2), tw_status::Ok);
        assert_eq!(in_use, [2, 2], "the refused order took no weight");
        // Another view of the same region sees the same counts.
        let (mut n, mut again) = (0usize, null());
        assert_eq!(tw_rate_limiter_attach(mem.void(), mem.len(), &mut n, &mut again), tw_status::Ok);
        assert_eq!((n, again), (2, l));
        assert_eq!(tw_rate_limiter_observe_used(l, 0, 50, u64::MAX), tw_status::Ok);
        assert_eq!(tw_rate_limiter_observe_header(l, 0, c"70".as_ptr(), 0), tw_status::Ok);
        assert_eq!(tw_rate_limiter_in_use(again, in_use.as_mut_ptr(), 2), tw_status::Ok);
        assert_eq!(in_use[0], 50, "a window that ends now adds nothing past the pace");
        assert_eq!(tw_rate_limiter_refund(l, order.as_ptr(), 2), tw_status::Ok);
    }
}

#[test]
fn bad_arguments_are_refused_by_name() {
    let mem = Mem::new(96);
    let l = opened(&mem);
    let (mut ready, mut why) = (0u64, tw_throttled { limit: 0, wait_ns: 0 });
    let mut in_use = [0u64; 2];
    // SAFETY: every call below:
    // - NULL or live handles and pointers valid for what each call reads or writes.
    unsafe {
        assert_eq!(
            tw_rate_limiter_acquire(null(), [1u32, 0].as_ptr(), 2, 0, &mut ready, &mut why),
            tw_status::NullArgument
        );
        assert!(last_error().contains("`limiter`"), "{}", last_error());
        assert_eq!(tw_rate_limiter_acquire(l, null(), 2, 0, &mut ready, &mut why), tw_status::NullArgument);
        assert_eq!(
            tw_rate_limiter_acquire(l, [1u32].as_ptr(), 1, 0, &mut ready, &mut why),
            tw_status::InvalidArgument
        );
        assert!(last_error().contains("`n` = 1 costs, the rate limiter has 2 limits"), "{}", last_error());
        assert_eq!(
            tw_rate_limiter_acquire(l, [11u32, 0].as_ptr(), 2, 0, &mut ready, &mut why),
            tw_status::InvalidArgument
        );
        assert!(last_error().contains("a cost of 11 is above its burst of 10"), "{}", last_error());
        assert_eq!(tw_rate_limiter_observe_header(l, 0, c"-5".as_ptr(), 0), tw_status::InvalidArgument);
        assert_eq!(tw_rate_limiter_observe_header(l, 0, null(), 0), tw_status::NullArgument);
        assert_eq!(tw_rate_limiter_observe_used(l, 7, 1, 0), tw_status::InvalidArgument);
        assert!(last_error().contains("`limit` = 7, the rate limiter has 2 limits"), "{}", last_error());
        assert_eq!(tw_rate_limiter_in_use(l, in_use.as_mut_ptr(), 3), tw_status::InvalidArgument);
        assert_eq!(tw_rate_limiter_in_use(l, null_mut(), 2), tw_status::NullArgument);
        let (mut size, mut align) = (0usize, 0usize);
        assert_eq!(tw_rate_limiter_size(5, &mut size, &mut align), tw_status::InvalidArgument);
        assert!(last_error().contains("`n` = 5 limits, expected 1 to 4"), "{}", last_error());
        assert_eq!(tw_rate_limiter_size(4, &mut size, &mut align), tw_status::Ok);
        assert_eq!((size, align), (160, 64));
    }
    assert_eq!(in_use, [0, 0], "nothing taken by a refused call");
}

#[test]
fn garbage_regions_are_refused_never_undefined_behaviour() {
    for seed in 0u8..8 {
        let mut mem = Mem::new(96);
        opened(&mem);
        // Garbage over the configs (seed 0..4) or the whole region.
        let from = if seed < 4 { 32 } else { 0 };
        for (i, b) in mem.bytes()[from..].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(31).wrapping_add(seed.wrapping_mul(17)) | 1;
        }
        let (mut n, mut l) = (0usize, null());
        // SAFETY:
        // - `mem` is valid for its length; `n` and `l` are writable.
        let st = unsafe { tw_rate_limiter_attach(mem.void(), mem.len(), &mut n, &mut l) };
        assert_ne!(st, tw_status::Ok, "seed {seed}");
        assert!(
            matches!(st, tw_status::RegionCorrupt | tw_status::RegionInvalid),
            "seed {seed}: {st:?} {}",
            last_error()
        );
    }
}
