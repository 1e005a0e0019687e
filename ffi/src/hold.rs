//! Backpressure: holding a breaker open for the time a server asks
//! (`Retry-After`), and reading that time from an HTTP response through
//! the core's `tripwire::http::assess`.

use core::ffi::{CStr, c_char};
use core::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tripwire::{
    Assessment, Breaker, Clock, MonotonicClock,
    clock::{FixedClock, duration_ns},
};

use crate::breaker::tw_breaker;
use crate::handle::handle;
use crate::status::{arg, fail, ffi_body, tw_status};
use crate::values::{outcome_from_c, outcome_to_c, ticket_from_c, transition_to_c, tw_ticket, tw_transition};

/// A `hold_ns` for a response that asked for less traffic without naming a
/// wait: `tw_breaker_settle` holds for the breaker's `open_timeout_ns`.
pub const TW_HOLD_UNSPECIFIED: u64 = u64::MAX;

/// What an HTTP response says about the dependency (`tw_http_assess`).
///
/// | status | `outcome` | `hold_ns` |
/// | --- | --- | --- |
/// | 1xx, 2xx, 3xx | `TW_OUTCOME_SUCCESS` | 0 |
/// | 5xx, 408 (the server timed out), 600 to 999 (no HTTP status) | `TW_OUTCOME_FAILURE` | 0 |
/// | 429, 418: the server is up and asks for less traffic | `TW_OUTCOME_IGNORED` | the wait its headers name, or `TW_HOLD_UNSPECIFIED` |
/// | other 4xx (the caller's fault) | `TW_OUTCOME_IGNORED` | 0 |
///
/// Pass both fields to `tw_breaker_settle`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tw_assessment {
    /// The outcome to record for the call: a `tw_outcome`, as a `uint32_t`
    /// like `tw_breaker_record`'s.
    pub outcome: u32,
    /// How long the breaker should be held open, in nanoseconds: 0 for no
    /// hold, `TW_HOLD_UNSPECIFIED` (`UINT64_MAX`) for a 429 or 418 whose
    /// headers named no wait (the breaker's `open_timeout_ns` is used).
    pub hold_ns: u64,
}

/// The header value at `p`: absent when NULL, not valid as a header value
/// (control characters), or not UTF-8, as an HTTP client would drop it.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn header(p: *const c_char) -> Option<HeaderValue> {
    if p.is_null() {
        return None;
    }
    // SAFETY:
    // - Non-null (checked) and NUL-terminated (the caller's guarantee).
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    HeaderValue::from_bytes(bytes).ok()
}

/// Classifies an HTTP response by its status and the values of its
/// `Retry-After`, `RateLimit-Reset` and `X-RateLimit-Reset` headers, as
/// the Rust crate's `tripwire::http::assess` does (the table at
/// `tw_assessment`). The wait is read from `Retry-After` (whole seconds or
/// an HTTP date), else `RateLimit-Reset`, else `X-RateLimit-Reset` (seconds,
/// or a Unix time when that large); a value that cannot be read is as if
/// absent, and one too large saturates (the breaker caps every hold at its
/// `max_hold`, one hour).
///
/// `status` must be 100 to 999 (`TW_STATUS_INVALID_ARGUMENT` otherwise);
/// each header pointer may be NULL (header absent); `assessment` must not
/// be NULL. Reads the wall clock for dates and Unix times. Thread-safe.
///
/// # Safety
/// Each header pointer is NULL or a NUL-terminated string; `assessment` is
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_http_assess(
    status: u16,
    retry_after: *const c_char,
    ratelimit_reset: *const c_char,
    x_ratelimit_reset: *const c_char,
    assessment: *mut tw_assessment,
) -> tw_status {
    ffi_body!("tw_http_assess"; {
        let out = arg!("tw_http_assess", assessment);
        let Ok(code) = StatusCode::from_u16(status) else {
            return fail(
                tw_status::InvalidArgument,
                format_args!("tw_http_assess: status = {status}, expected an HTTP status from 100 to 999"),
            );
        };
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("retry-after", retry_after),
            ("ratelimit-reset", ratelimit_reset),
            ("x-ratelimit-reset", x_ratelimit_reset),
        ] {
            // SAFETY:
            // - NULL or NUL-terminated (the caller's guarantee).
            if let Some(v) = unsafe { header(value) } {
                headers.insert(HeaderName::from_static(name), v);
            }
        }
        let a = tripwire::http::assess(code, &headers);
        let hold_ns = match a {
            // A wait of UINT64_MAX ns is 584 years: one hour after the cap,
            // as an unspecified one would be its cool-down. Kept distinct.
            Assessment::Backpressure(Some(d)) => duration_ns(d).min(TW_HOLD_UNSPECIFIED - 1),
            Assessment::Backpressure(None) => TW_HOLD_UNSPECIFIED,
            _ => 0,
        };
        let result = tw_assessment { outcome: outcome_to_c(a.outcome()), hold_ns };
        // SAFETY:
        // - Non-null (checked), writable (this function's contract).
        unsafe { out.write(result) };
        tw_status::Ok
    })
}

/// Writes `t` (or the current state) to `transition` if it is not NULL.
///
/// # Safety
/// `transition` is NULL or writable.
unsafe fn report(t: Option<tripwire::Transition>, breaker: &Breaker, transition: *mut tw_transition) {
    if !transition.is_null() {
        // SAFETY:
        // - Non-null (checked), writable (the caller's guarantee).
        unsafe { transition.write(transition_to_c(t, breaker)) };
    }
}

/// # Safety
/// `transition` is NULL or writable.
unsafe fn hold(
    breaker: &Breaker,
    hold_ns: u64,
    clock: &impl Clock,
    transition: *mut tw_transition,
) -> tw_status {
    let t = breaker.open_for(Duration::from_nanos(hold_ns), clock);
    // SAFETY:
    // - The caller's guarantee.
    unsafe { report(t, breaker, transition) };
    tw_status::Ok
}

/// Holds the breaker open for `hold_ns` nanoseconds (at most its
/// `max_hold`, one hour; longer asks are cut to it), as a server's
/// `Retry-After` asks: every call is refused with the time left in
/// `retry_after_ns`, and the first call after the hold is a probe.
///
/// `*transition` (if not NULL) says whether this placed the hold or made it
/// longer (`changed` true); nothing changes when a hold at least as long is
/// in place, `hold_ns` is 0, or the breaker is forced open or disabled (a
/// hold never ends an operator's mode). Reads `CLOCK_MONOTONIC`.
/// `breaker` must not be NULL. Thread-safe.
///
/// # Safety
/// `breaker` is NULL or a live handle; `transition` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_hold_for(
    breaker: *const tw_breaker,
    hold_ns: u64,
    transition: *mut tw_transition,
) -> tw_status {
    ffi_body!("tw_breaker_hold_for"; {
        let b = handle!("tw_breaker_hold_for", breaker);
        // SAFETY:
        // - The caller's guarantee.
        unsafe { hold(b, hold_ns, &MonotonicClock, transition) }
    })
}

/// `tw_breaker_hold_for` with the caller's clock (`now_ns`, as for
/// `tw_breaker_try_acquire_at`).
///
/// # Safety
/// As for `tw_breaker_hold_for`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_hold_for_at(
    breaker: *const tw_breaker,
    now_ns: u64,
    hold_ns: u64,
    transition: *mut tw_transition,
) -> tw_status {
    ffi_body!("tw_breaker_hold_for_at"; {
        let b = handle!("tw_breaker_hold_for_at", breaker);
        // SAFETY:
        // - The caller's guarantee.
        unsafe { hold(b, hold_ns, &FixedClock(now_ns), transition) }
    })
}

/// Writes to `*left_ns` the nanoseconds left on the hold in place, or 0
/// when the breaker is not held (or the hold is over and the next call is a
/// probe). Reads `CLOCK_MONOTONIC`. Neither pointer may be NULL.
/// Thread-safe.
///
/// # Safety
/// `breaker` is NULL or a live handle; `left_ns` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_hold_left(breaker: *const tw_breaker, left_ns: *mut u64) -> tw_status {
    ffi_body!("tw_breaker_hold_left"; {
        let b = handle!("tw_breaker_hold_left", breaker);
        let out = arg!("tw_breaker_hold_left", left_ns);
        let left = b.hold_left(&MonotonicClock).map_or(0, duration_ns);
        // SAFETY:
        // - Non-null (checked), writable (this function's contract).
        unsafe { out.write(left) };
        tw_status::Ok
    })
}

/// `tw_breaker_hold_left` with the caller's clock.
///
/// # Safety
/// As for `tw_breaker_hold_left`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_hold_left_at(
    breaker: *const tw_breaker,
    now_ns: u64,
    left_ns: *mut u64,
) -> tw_status {
    ffi_body!("tw_breaker_hold_left_at"; {
        let b = handle!("tw_breaker_hold_left_at", breaker);
        let out = arg!("tw_breaker_hold_left_at", left_ns);
        let left = b.hold_left(&FixedClock(now_ns)).map_or(0, duration_ns);
        // SAFETY:
        // - Non-null (checked), writable (this function's contract).
        unsafe { out.write(left) };
        tw_status::Ok
    })
}

/// # Safety
/// `transition` is NULL or writable.
unsafe fn settle(
    fn_name: &str,
    breaker: &Breaker,
    ticket: tw_ticket,
    outcome: u32,
    hold_ns: u64,
    clock: &impl Clock,
    transition: *mut tw_transition,
) -> tw_status {
    let Some(core_outcome) = outcome_from_c(outcome) else {
        return fail(
            tw_status::InvalidArgument,
            format_args!("{fn_name}: outcome = {outcome}, expected a tw_outcome (0 to 2)"),
        );
    };
    let recorded = breaker.record(ticket_from_c(ticket), core_outcome, clock);
    let held = match hold_ns {
        0 => None,
        TW_HOLD_UNSPECIFIED => breaker.open_for(breaker.config().open_timeout(), clock),
        ns => breaker.open_for(Duration::from_nanos(ns), clock),
    };
    // SAFETY:
    // - The caller's guarantee.
    unsafe { report(held.or(recorded), breaker, transition) };
    tw_status::Ok
}

/// Records an admitted call as an assessment says (`tw_http_assess`): its
/// `outcome` (a `tw_outcome`), then, unless `hold_ns` is 0, a hold of
/// `hold_ns` nanoseconds (the breaker's `open_timeout_ns` for
/// `TW_HOLD_UNSPECIFIED`), as `tw_breaker_record` then
/// `tw_breaker_hold_for` would. `*transition` (if not NULL) reports the
/// hold's change if it made one, else the record's. An `outcome` that is
/// no `tw_outcome` is `TW_STATUS_INVALID_ARGUMENT` and records nothing.
/// `breaker` must not be NULL. Reads `CLOCK_MONOTONIC`. Thread-safe.
///
/// # Safety
/// `breaker` is NULL or a live handle; `transition` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_settle(
    breaker: *const tw_breaker,
    ticket: tw_ticket,
    outcome: u32,
    hold_ns: u64,
    transition: *mut tw_transition,
) -> tw_status {
    ffi_body!("tw_breaker_settle"; {
        let b = handle!("tw_breaker_settle", breaker);
        // SAFETY:
        // - The caller's guarantee.
        unsafe { settle("tw_breaker_settle", b, ticket, outcome, hold_ns, &MonotonicClock, transition) }
    })
}

/// `tw_breaker_settle` with the caller's clock.
///
/// # Safety
/// As for `tw_breaker_settle`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_settle_at(
    breaker: *const tw_breaker,
    now_ns: u64,
    ticket: tw_ticket,
    outcome: u32,
    hold_ns: u64,
    transition: *mut tw_transition,
) -> tw_status {
    ffi_body!("tw_breaker_settle_at"; {
        let b = handle!("tw_breaker_settle_at", breaker);
        // SAFETY:
        // - The caller's guarantee.
        unsafe { settle("tw_breaker_settle_at", b, ticket, outcome, hold_ns, &FixedClock(now_ns), transition) }
    })
}
