//! `tw_http_assess` over every status it takes (100 to 999): the core's
//! table, as C callers get it (under miri, a few statuses only).

use core::ptr::null;

use tripwire_ffi::*;

fn outcome_of(status: u16) -> u32 {
    let mut a = tw_assessment { outcome: 7, hold_ns: 7 };
    // SAFETY:
    // - No header pointers (NULL: absent); `a` is writable.
    assert_eq!(unsafe { tw_http_assess(status, null(), null(), null(), &mut a) }, tw_status::Ok);
    a.outcome
}

/// The table of `tw_assessment`'s doc, written out independently of it.
fn expected(status: u16) -> tw_outcome {
    match status {
        100..=399 => tw_outcome::Success,
        408 => tw_outcome::Failure,
        // A 429 or 418 is ignored and held (its `hold_ns`, tested in hold_api.rs).
        400..=499 => tw_outcome::Ignored,
        _ => tw_outcome::Failure,
    }
}

#[test]
fn every_status_gets_the_cores_outcome() {
    let statuses: Vec<u16> = if cfg!(miri) {
        vec![100, 200, 401, 403, 404, 408, 418, 429, 503, 600, 999]
    } else {
        (100..=999).collect()
    };
    for status in statuses {
        assert_eq!(outcome_of(status), expected(status) as u32, "{status}");
    }
}

#[test]
fn an_unsigned_or_forbidden_request_is_the_callers_fault_and_a_server_timeout_is_not() {
    for status in [400, 401, 403, 404, 422] {
        assert_eq!(outcome_of(status), tw_outcome::Ignored as u32, "{status}");
    }
    assert_eq!(outcome_of(408), tw_outcome::Failure as u32);
}

#[test]
fn a_status_outside_http_is_a_failure() {
    for status in [600, 700, 999] {
        assert_eq!(outcome_of(status), tw_outcome::Failure as u32, "{status}");
    }
}
