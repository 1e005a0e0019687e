//! The bulkhead: a cap on the calls in flight to one dependency.

use tripwire::Bulkhead;

use crate::handle::{Boxed, Handle, box_into_out, free_box, handle};
use crate::status::{arg, fail, ffi_body, tw_status};

/// A cap on concurrent calls. Opaque; made by `tw_bulkhead_new`, freed by
/// `tw_bulkhead_free`. Every function taking a `const tw_bulkhead *` is
/// thread-safe.
pub struct tw_bulkhead {
    _opaque: [u8; 0],
}

/// A bulkhead's counters at one moment.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tw_bulkhead_stats {
    /// Slots handed out since the bulkhead was made.
    pub acquired: u64,
    /// Calls refused.
    pub rejected: u64,
    /// Calls in flight now.
    pub in_flight: u32,
    /// The most calls ever in flight at once.
    pub peak_in_flight: u32,
}

// SAFETY:
// - A live handle points to a `Bulkhead` made by `tw_bulkhead_new`, only
//   ever used through shared references (its counters are atomics).
unsafe impl Handle for tw_bulkhead {
    type Rust = Bulkhead;
}

// SAFETY:
// - `tw_bulkhead_new` is the only maker, through `box_into_out`.
unsafe impl Boxed for tw_bulkhead {}

/// Makes a bulkhead that lets at most `max` calls be in flight at once (0
/// refuses every call: a kill switch) and writes its handle to `*out`.
///
/// `out` must not be NULL. Thread-safe.
///
/// # Safety
/// `out` is NULL or points to a writable `tw_bulkhead *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_bulkhead_new(max: u32, out: *mut *mut tw_bulkhead) -> tw_status {
    ffi_body!("tw_bulkhead_new"; {
        let out = arg!("tw_bulkhead_new", out);
        // SAFETY:
        // - `out` is non-null (checked) and writable (the caller's guarantee).
        unsafe { box_into_out(out, Bulkhead::new(max)) };
        tw_status::Ok
    })
}

/// Frees a bulkhead. NULL is allowed and does nothing. No other thread may
/// use it during or after this call.
///
/// # Safety
/// `bulkhead` is NULL or a live handle from `tw_bulkhead_new`, not used
/// again afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_bulkhead_free(bulkhead: *mut tw_bulkhead) {
    ffi_body!("tw_bulkhead_free", on_panic = (); {
        // SAFETY:
        // - NULL or a live handle from `tw_bulkhead_new`, not used again
        //   (the caller's guarantee).
        unsafe { free_box(bulkhead) }
    })
}

/// Takes a slot if one is free, without waiting: `TW_STATUS_OK` (make the
/// call, then `tw_bulkhead_release` exactly once) or `TW_STATUS_REJECTED`
/// (all `max` slots are taken; no message is set). The count of calls in
/// flight never exceeds `max`, not even for an instant; with releases paired
/// as `tw_bulkhead_release` says, neither do the calls.
///
/// `bulkhead` must not be NULL. Thread-safe.
///
/// # Safety
/// `bulkhead` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_bulkhead_try_acquire(bulkhead: *const tw_bulkhead) -> tw_status {
    ffi_body!("tw_bulkhead_try_acquire"; {
        let b = handle!("tw_bulkhead_try_acquire", bulkhead);
        if b.try_acquire_raw() { tw_status::Ok } else { tw_status::Rejected }
    })
}

/// Frees a slot taken by `tw_bulkhead_try_acquire`.
///
/// A slot has no owner: the bulkhead counts calls in flight and cannot tell
/// whose slot a release gives back. Whatever the caller does, the count
/// never goes below zero: releasing when no call is in flight changes
/// nothing and returns `TW_STATUS_INVALID_ARGUMENT`. Each `TW_STATUS_OK`
/// frees exactly one slot, so the count is always the acquires that
/// returned `TW_STATUS_OK` minus the releases that did.
///
/// The count is only as true as the caller's pairing: call this exactly once
/// per `TW_STATUS_OK` from `tw_bulkhead_try_acquire`, after it. A release
/// without an acquire of its own, made while other calls are in flight,
/// frees one of *their* slots: one call more than `max` may then be admitted
/// while they run (one more per such release), and the release of that
/// slot's holder later returns `TW_STATUS_INVALID_ARGUMENT`. That status
/// therefore says that the pairing is broken somewhere, not necessarily at
/// this call.
///
/// `bulkhead` must not be NULL. Thread-safe.
///
/// # Safety
/// `bulkhead` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_bulkhead_release(bulkhead: *const tw_bulkhead) -> tw_status {
    ffi_body!("tw_bulkhead_release"; {
        let b = handle!("tw_bulkhead_release", bulkhead);
        if b.release_raw() {
            tw_status::Ok
        } else {
            fail(
                tw_status::InvalidArgument,
                format_args!("tw_bulkhead_release: no call is in flight (a release without an acquire)"),
            )
        }
    })
}

/// Writes the bulkhead's counters to `*out`.
///
/// Neither pointer may be NULL. Thread-safe.
///
/// # Safety
/// `bulkhead` is NULL or a live handle; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_bulkhead_snapshot(
    bulkhead: *const tw_bulkhead,
    out: *mut tw_bulkhead_stats,
) -> tw_status {
    ffi_body!("tw_bulkhead_snapshot"; {
        let b = handle!("tw_bulkhead_snapshot", bulkhead);
        let out = arg!("tw_bulkhead_snapshot", out);
        let s = b.snapshot();
        let snap = tw_bulkhead_stats {
            acquired: s.acquired,
            rejected: s.rejected,
            in_flight: s.in_flight,
            peak_in_flight: s.peak_in_flight,
        };
        // SAFETY:
        // - Non-null (checked), writable (the caller's guarantee).
        unsafe { out.write(snap) };
        tw_status::Ok
    })
}
