//! Backpressure through the C ABI: holds, their time left, and HTTP
//! responses judged by the core's `http::assess`. Runs under miri too.

use core::ffi::{CStr, c_char};
use core::ptr::{null, null_mut};

use tripwire_ffi::*;

const SEC: u64 = 1_000_000_000;

fn last_error() -> String {
    // SAFETY:
    // - A NUL-terminated string, copied before the next call.
    unsafe { CStr::from_ptr(tw_last_error_message()) }.to_str().unwrap().to_owned()
}

/// A heap breaker (default config: 30 s cool-down, 1 h max hold), freed on
/// drop.
struct Owned(*mut tw_breaker);

impl Owned {
    fn new() -> Self {
        let mut c = core::mem::MaybeUninit::<tw_breaker_config>::uninit();
        let mut b = null_mut();
        // SAFETY:
        // - Every pointer is valid for its call; `c` is written on OK.
        unsafe {
            assert_eq!(tw_breaker_config_default(c.as_mut_ptr()), tw_status::Ok);
            assert_eq!(tw_breaker_new(c.as_ptr(), &mut b), tw_status::Ok, "{}", last_error());
        }
        Owned(b)
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY:
        // - A handle from `tw_breaker_new`, not used after this.
        unsafe { tw_breaker_free(self.0) }
    }
}

fn acquire_at(b: &Owned, now: u64) -> Result<tw_ticket, tw_rejection> {
    let mut t = tw_ticket { started_at: 0, generation: 0, flags: 0 };
    let mut r = tw_rejection { state: tw_state::Closed, retry_after_ns: 0 };
    // SAFETY:
    // - A live handle; `t` and `r` are writable.
    match unsafe { tw_breaker_try_acquire_at(b.0, now, &mut t, &mut r) } {
        tw_status::Ok => Ok(t),
        tw_status::Rejected => Err(r),
        other => panic!("{other:?}: {}", last_error()),
    }
}

fn hold_at(b: &Owned, now: u64, ns: u64) -> tw_transition {
    let mut t = tw_transition { changed: false, from: tw_state::Closed, to: tw_state::Closed, generation: 0 };
    // SAFETY:
    // - A live handle; `t` is writable.
    assert_eq!(unsafe { tw_breaker_hold_for_at(b.0, now, ns, &mut t) }, tw_status::Ok);
    t
}

fn left_at(b: &Owned, now: u64) -> u64 {
    let mut left = 7;
    // SAFETY:
    // - A live handle; `left` is writable.
    assert_eq!(unsafe { tw_breaker_hold_left_at(b.0, now, &mut left) }, tw_status::Ok);
    left
}

fn assess(status: u16, headers: [Option<&CStr>; 3]) -> Result<tw_assessment, tw_status> {
    let p = |h: Option<&CStr>| h.map_or(null(), CStr::as_ptr);
    let mut a = tw_assessment { outcome: 7, hold_ns: 7 };
    // SAFETY:
    // - The header pointers are NULL or NUL-terminated; `a` is writable.
    match unsafe { tw_http_assess(status, p(headers[0]), p(headers[1]), p(headers[2]), &mut a) } {
        tw_status::Ok => Ok(a),
        other => Err(other),
    }
}

#[test]
fn a_hold_refuses_with_the_time_left_then_lets_a_probe_through() {
    let b = Owned::new();
    let now = 5 * SEC;
    assert_eq!(left_at(&b, now), 0, "no hold");
    let t = hold_at(&b, now, 7 * SEC);
    assert!(t.changed && t.from == tw_state::Closed && t.to == tw_state::Open, "{t:?}");
    assert_eq!(left_at(&b, now + 2 * SEC), 5 * SEC);
    assert!(!hold_at(&b, now, 3 * SEC).changed, "a shorter hold leaves the longer one");
    assert!(!hold_at(&b, now, 0).changed);
    let refused = acquire_at(&b, now + 2 * SEC).unwrap_err();
    assert_eq!((refused.state, refused.retry_after_ns), (tw_state::Open, 5 * SEC));
    assert!(hold_at(&b, now + 2 * SEC, 9 * SEC).changed, "a longer hold replaces it");
    assert_eq!(left_at(&b, now + 11 * SEC), 0);
    let probe = acquire_at(&b, now + 11 * SEC).unwrap();
    // SAFETY:
    // - A live ticket.
    assert!(unsafe { tw_ticket_is_probe(&probe) });
}

#[test]
fn a_hold_is_capped_at_an_hour_and_never_ends_an_operators_mode() {
    let b = Owned::new();
    assert!(hold_at(&b, SEC, u64::MAX - 1).changed);
    assert_eq!(left_at(&b, SEC), 3600 * SEC);
    // SAFETY:
    // - A live handle; the transition pointer may be NULL.
    assert_eq!(unsafe { tw_breaker_force_open(b.0, null_mut()) }, tw_status::Ok);
    assert!(!hold_at(&b, SEC, 5 * SEC).changed);
    let mut state = tw_state::Closed;
    // SAFETY:
    // - A live handle; `state` is writable.
    assert_eq!(unsafe { tw_breaker_state(b.0, &mut state) }, tw_status::Ok);
    assert_eq!(state, tw_state::ForcedOpen);
}

#[test]
fn responses_are_judged_as_the_core_judges_them() {
    let none = [None; 3];
    let ok = tw_assessment { outcome: tw_outcome::Success as u32, hold_ns: 0 };
    assert_eq!(assess(200, none), Ok(ok));
    assert_eq!(assess(304, none), Ok(ok));
    assert_eq!(assess(503, none), Ok(tw_assessment { outcome: tw_outcome::Failure as u32, hold_ns: 0 }));
    let ignored = tw_assessment { outcome: tw_outcome::Ignored as u32, hold_ns: 0 };
    assert_eq!(assess(404, none), Ok(ignored));
    // A 4xx other than 429/418 holds nothing, whatever its headers say.
    assert_eq!(assess(400, [Some(c"7"), None, None]), Ok(ignored));
    let hold = |ns| Ok(tw_assessment { outcome: tw_outcome::Ignored as u32, hold_ns: ns });
    assert_eq!(assess(429, none), hold(TW_HOLD_UNSPECIFIED));
    assert_eq!(assess(429, [Some(c" 7 "), None, None]), hold(7 * SEC));
    assert_eq!(assess(418, [None, Some(c"3"), Some(c"50")]), hold(3 * SEC));
    assert_eq!(assess(429, [None, None, Some(c"12")]), hold(12 * SEC));
    assert_eq!(assess(429, [Some(c"5"), None, Some(c"50")]), hold(5 * SEC), "Retry-After first");
    // Unreadable: as if absent. Too large: as long as can be, still a wait.
    for bad in [c"-1", c"+5", c"1.5", c"soon", c"", c"\x01\x02"] {
        assert_eq!(assess(429, [Some(bad), None, None]), hold(TW_HOLD_UNSPECIFIED), "{bad:?}");
    }
    assert_eq!(assess(429, [Some(c"99999999999999999999999999"), None, None]), hold(TW_HOLD_UNSPECIFIED - 1));
    let not_utf8: &[u8] = b"\xff\xfe 12\0";
    let not_utf8 = CStr::from_bytes_with_nul(not_utf8).unwrap();
    assert_eq!(assess(429, [Some(not_utf8), None, None]), hold(TW_HOLD_UNSPECIFIED));
}

#[test]
fn bad_arguments_are_named() {
    for status in [0u16, 99, 1000, u16::MAX] {
        assert_eq!(assess(status, [None; 3]), Err(tw_status::InvalidArgument));
        assert!(last_error().contains(&format!("tw_http_assess: status = {status}")), "{}", last_error());
    }
    // SAFETY:
    // - NULL pointers are refused before any is read.
    unsafe {
        let s: *const c_char = null();
        assert_eq!(tw_http_assess(200, s, s, s, null_mut()), tw_status::NullArgument);
        assert!(last_error().contains("`assessment` is NULL"), "{}", last_error());
        assert_eq!(tw_breaker_hold_for(null(), SEC, null_mut()), tw_status::NullArgument);
        assert_eq!(tw_breaker_hold_left(null(), null_mut()), tw_status::NullArgument);
    }
    let b = Owned::new();
    // SAFETY:
    // - A live handle; NULL out-pointers are refused.
    unsafe {
        assert_eq!(tw_breaker_hold_left(b.0, null_mut()), tw_status::NullArgument);
        assert!(last_error().contains("tw_breaker_hold_left: `left_ns` is NULL"), "{}", last_error());
    }
    let t = acquire_at(&b, SEC).unwrap();
    // SAFETY:
    // - A live handle; the transition pointer may be NULL.
    let status = unsafe { tw_breaker_settle_at(b.0, SEC, t, 9, SEC, null_mut()) };
    assert_eq!(status, tw_status::InvalidArgument);
    assert!(last_error().contains("tw_breaker_settle_at: outcome = 9"), "{}", last_error());
    assert_eq!(left_at(&b, SEC), 0, "a refused settle holds nothing");
}

#[test]
fn settling_a_429_records_it_as_ignored_and_holds() {
    let b = Owned::new();
    let now = 10 * SEC;
    for (assessment, held_for) in [
        (assess(429, [Some(c"7"), None, None]).unwrap(), 7 * SEC),
        (assess(429, [None; 3]).unwrap(), 30 * SEC), // the default open_timeout
    ] {
        let t = acquire_at(&b, now).unwrap();
        let mut tr =
            tw_transition { changed: false, from: tw_state::Closed, to: tw_state::Closed, generation: 0 };
        // SAFETY:
        // - A live handle; `tr` is writable.
        let status =
            unsafe { tw_breaker_settle_at(b.0, now, t, assessment.outcome, assessment.hold_ns, &mut tr) };
        assert_eq!(status, tw_status::Ok, "{}", last_error());
        assert!(tr.changed && tr.to == tw_state::Open, "{tr:?}");
        assert_eq!(left_at(&b, now), held_for);
        // SAFETY:
        // - A live handle.
        assert_eq!(unsafe { tw_breaker_reset(b.0, null_mut()) }, tw_status::Ok);
    }
    let mut s = core::mem::MaybeUninit::<tw_snapshot>::uninit();
    // SAFETY:
    // - A live handle; `s` is written on OK.
    let s = unsafe {
        assert_eq!(tw_breaker_snapshot(b.0, s.as_mut_ptr()), tw_status::Ok);
        s.assume_init()
    };
    assert_eq!((s.ignored, s.failures), (2, 0), "the exchange is up: no failure");
    // A success settles like a record, holding nothing.
    let t = acquire_at(&b, now).unwrap();
    let ok = assess(200, [None; 3]).unwrap();
    // SAFETY:
    // - A live handle; the transition pointer may be NULL.
    let status = unsafe { tw_breaker_settle_at(b.0, now, t, ok.outcome, ok.hold_ns, null_mut()) };
    assert_eq!(status, tw_status::Ok);
    assert_eq!(left_at(&b, now), 0);
}
