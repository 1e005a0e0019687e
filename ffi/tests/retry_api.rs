//! The bulkhead, backoff and retry budget through the C ABI, as C would
//! call them. Runs under miri too.

use core::ffi::CStr;
use core::mem::MaybeUninit;
use core::ptr::{null, null_mut};

use tripwire_ffi::*;

fn last_error() -> String {
    // SAFETY:
    // - A NUL-terminated string valid until the next failing call on this
    //   thread; copied at once.
    unsafe { CStr::from_ptr(tw_last_error_message()) }.to_str().unwrap().to_owned()
}

#[test]
fn the_bulkhead_caps_calls_in_flight_and_refuses_stray_releases() {
    let mut b = null_mut();
    // SAFETY:
    // - `b` is a live handle from `tw_bulkhead_new` until `tw_bulkhead_free`;
    //   every out-pointer is writable.
    unsafe {
        assert_eq!(tw_bulkhead_new(2, &mut b), tw_status::Ok);
        assert_eq!(tw_bulkhead_try_acquire(b), tw_status::Ok);
        assert_eq!(tw_bulkhead_try_acquire(b), tw_status::Ok);
        assert_eq!(tw_bulkhead_try_acquire(b), tw_status::Rejected);
        assert_eq!(tw_bulkhead_release(b), tw_status::Ok);
        assert_eq!(tw_bulkhead_release(b), tw_status::Ok);
        assert_eq!(tw_bulkhead_release(b), tw_status::InvalidArgument);
        assert_eq!(last_error(), "tw_bulkhead_release: no call is in flight (a release without an acquire)");
        let mut s = MaybeUninit::uninit();
        assert_eq!(tw_bulkhead_snapshot(b, s.as_mut_ptr()), tw_status::Ok);
        assert_eq!(
            s.assume_init(),
            tw_bulkhead_stats { acquired: 2, rejected: 1, in_flight: 0, peak_in_flight: 2 }
        );
        assert_eq!(tw_bulkhead_try_acquire(null()), tw_status::NullArgument);
        assert_eq!(last_error(), "tw_bulkhead_try_acquire: `bulkhead` is NULL");
        assert_eq!(tw_bulkhead_snapshot(b, null_mut()), tw_status::NullArgument);
        assert_eq!(tw_bulkhead_new(1, null_mut()), tw_status::NullArgument);
        tw_bulkhead_free(b);
        tw_bulkhead_free(null_mut());
    }
}

#[test]
fn backoff_delays_grow_to_the_cap_and_reset() {
    let mut c = MaybeUninit::uninit();
    let mut b = null_mut();
    let mut d = 0u64;
    // SAFETY:
    // - `b` is a live handle until `tw_backoff_free`; out-pointers are writable.
    unsafe {
        assert_eq!(tw_backoff_config_default(c.as_mut_ptr()), tw_status::Ok);
        let mut c = c.assume_init();
        assert_eq!((c.base_ns, c.cap_ns, c.factor, c.jitter), (100_000_000, 30_000_000_000, 2.0, 1));
        c.jitter = tw_jitter::None as u32;
        c.base_ns = 10;
        c.cap_ns = 50;
        assert_eq!(tw_backoff_new(&c, &mut b), tw_status::Ok);
        let mut delays = [0u64; 5];
        for slot in &mut delays {
            assert_eq!(tw_backoff_next_delay(b, &mut d), tw_status::Ok);
            *slot = d;
        }
        assert_eq!(delays, [10, 20, 40, 50, 50]);
        assert_eq!(tw_backoff_reset(b), tw_status::Ok);
        assert_eq!(tw_backoff_next_delay(b, &mut d), tw_status::Ok);
        assert_eq!(d, 10);
        assert_eq!(tw_backoff_next_delay(b, null_mut()), tw_status::NullArgument);
        tw_backoff_free(b);

        let mut bad = c;
        bad.jitter = 9;
        let mut none = null_mut();
        assert_eq!(tw_backoff_new(&bad, &mut none), tw_status::InvalidConfig);
        assert_eq!(last_error(), "tw_backoff_new: invalid backoff config: jitter = 9, expected 0 to 3");
        bad = c;
        bad.factor = 0.5;
        assert_eq!(tw_backoff_new(&bad, &mut none), tw_status::InvalidConfig);
        assert_eq!(last_error(), "tw_backoff_new: invalid backoff config: factor = 0.5, expected 1 to 100");
        assert!(none.is_null());
        // A duration's message names the C field, `_ns` and all.
        bad = c;
        bad.base_ns = 0;
        assert_eq!(tw_backoff_new(&bad, &mut none), tw_status::InvalidConfig);
        assert_eq!(
            last_error(),
            "tw_backoff_new: invalid backoff config: base_ns = 0ns, expected 1ns to 604800s"
        );
        bad = c;
        bad.cap_ns = u64::MAX;
        assert_eq!(tw_backoff_new(&bad, &mut none), tw_status::InvalidConfig);
        assert!(
            last_error().starts_with("tw_backoff_new: invalid backoff config: cap_ns = "),
            "{}",
            last_error()
        );
        bad = c;
        bad.cap_ns = 5;
        assert_eq!(tw_backoff_new(&bad, &mut none), tw_status::InvalidConfig);
        assert!(
            last_error().starts_with("tw_backoff_new: invalid backoff config: cap_ns = 5ns"),
            "{}",
            last_error()
        );
        assert!(none.is_null());
    }
}

#[test]
fn the_retry_budget_allows_its_reserve_then_a_share_of_calls() {
    let mut c = MaybeUninit::uninit();
    let mut b = null_mut();
    // SAFETY:
    // - `b` is a live handle until `tw_retry_budget_free`; out-pointers are writable.
    unsafe {
        assert_eq!(tw_retry_budget_config_default(c.as_mut_ptr()), tw_status::Ok);
        let mut c = c.assume_init();
        assert_eq!((c.ratio, c.min_retries_per_sec, c.ttl_ns), (0.2, 10.0, 10_000_000_000));
        c.min_retries_per_sec = 0.0;
        c.ratio = 0.5;
        assert_eq!(tw_retry_budget_new(&c, &mut b), tw_status::Ok);
        assert_eq!(tw_retry_budget_try_withdraw_at(b, 1_000), tw_status::Rejected, "no reserve");
        assert_eq!(tw_retry_budget_deposit_at(b, 1_000), tw_status::Ok);
        assert_eq!(tw_retry_budget_deposit_at(b, 1_000), tw_status::Ok);
        let mut milli = 0;
        assert_eq!(tw_retry_budget_available_at(b, 1_000, &mut milli), tw_status::Ok);
        assert_eq!(milli, 1_000);
        assert_eq!(tw_retry_budget_try_withdraw_at(b, 1_000), tw_status::Ok);
        assert_eq!(tw_retry_budget_try_withdraw_at(b, 1_000), tw_status::Rejected);
        assert_eq!(tw_retry_budget_deposit(b), tw_status::Ok);
        let _ = tw_retry_budget_try_withdraw(b);
        tw_retry_budget_free(b);

        c.ratio = -1.0;
        let mut none = null_mut();
        assert_eq!(tw_retry_budget_new(&c, &mut none), tw_status::InvalidConfig);
        assert_eq!(
            last_error(),
            "tw_retry_budget_new: invalid retry budget config: ratio = -1, expected 0 to 100"
        );
        c.ratio = 0.5;
        c.ttl_ns = 1;
        assert_eq!(tw_retry_budget_new(&c, &mut none), tw_status::InvalidConfig);
        assert_eq!(
            last_error(),
            "tw_retry_budget_new: invalid retry budget config: ttl_ns = 1ns, expected 100ms to 604800s"
        );
        assert!(none.is_null());
        assert_eq!(tw_retry_budget_deposit(null()), tw_status::NullArgument);
        assert_eq!(tw_retry_budget_new(null(), &mut none), tw_status::NullArgument);
        tw_retry_budget_free(null_mut());
    }
}
