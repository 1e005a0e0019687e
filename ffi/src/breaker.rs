//! The breaker handle and its hot path: try-acquire, record, state,
//! snapshot and the manual modes.

use core::mem::offset_of;
use core::sync::atomic::{AtomicU64, Ordering};

use tripwire::{Breaker, Clock, MonotonicClock, Transition, clock::FixedClock, shared::SharedRegion};

use crate::config::{core_config, tw_breaker_config};
use crate::handle::{Handle, handle, rust_ref};
use crate::status::{arg, fail, ffi_body, tw_status};
use crate::values::{
    outcome_from_c, rejection_to_c, ticket_from_c, ticket_to_c, ticket_words, transition_to_c, tw_outcome,
    tw_rejection, tw_state, tw_ticket, tw_transition,
};

/// A circuit breaker. Opaque: only ever handled through a pointer.
///
/// Made by `tw_breaker_new` (freed with `tw_breaker_free`) or placed in
/// shared memory by `tw_breaker_init_in` / `tw_breaker_attach` /
/// `tw_breaker_open_in` (never freed: unmap the memory once no thread uses
/// the handle). Every function taking a `const tw_breaker *` is
/// thread-safe and, for a shared breaker, process-safe.
pub struct tw_breaker {
    _opaque: [u8; 0],
}

// SAFETY:
// - A live handle points to a `Breaker`, on the heap (inside an `Owned`)
//   or in a shared region, only ever accessed through shared references
//   and atomics. Not `Boxed`: the handle is not the box's start (see
//   `Owned`), so `tw_breaker_new` and `tw_breaker_free` own it themselves.
unsafe impl Handle for tw_breaker {
    type Rust = Breaker;
}

/// A breaker's state and counters at one moment (each read separately, so
/// calls recorded meanwhile may be partly counted).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tw_snapshot {
    /// The current state.
    pub state: tw_state,
    /// The current generation, incremented by every transition.
    pub generation: u32,
    /// Calls recorded as successes (0 if the config does not count them).
    pub successes: u64,
    /// Calls recorded as failures.
    pub failures: u64,
    /// Calls recorded as ignored.
    pub ignored: u64,
    /// Calls refused.
    pub rejected: u64,
    /// Calls slower than the slow-call threshold.
    pub slow: u64,
    /// State transitions, manual ones included.
    pub transitions: u64,
}

/// What `tw_breaker_new` allocates: the breaker, preceded by a tag at the
/// same offset as a shared region's magic number, so that `tw_breaker_free`
/// can tell the two apart from the breaker's address alone.
#[repr(C)]
struct Owned {
    tag: AtomicU64,
    _pad: [u8; SharedRegion::BREAKER_OFFSET - 8],
    breaker: Breaker,
}

/// The tag of a heap breaker: never a shared region's magic number.
const OWNED: u64 = u64::from_ne_bytes(*b"TWOWNED!");
const _: () = assert!(offset_of!(Owned, breaker) == SharedRegion::BREAKER_OFFSET);
const _: () = assert!(OWNED != SharedRegion::MAGIC && OWNED != SharedRegion::INITIALISING);

/// Makes a Closed breaker on the heap with `*config` and writes its handle
/// to `*out`. Free it with `tw_breaker_free`.
///
/// Returns `TW_STATUS_INVALID_CONFIG` (with a message naming the field) if
/// the config is out of range, `TW_STATUS_INVALID_STRUCT_SIZE` if its
/// `struct_size` is no layout this library reads (see
/// `tw_breaker_config`); `*out` is written only on success. Neither pointer
/// may be NULL. Thread-safe.
///
/// # Safety
/// `config` is NULL or points to a readable `tw_breaker_config` of
/// `struct_size` bytes; `out` is NULL or points to a writable
/// `tw_breaker *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_new(
    config: *const tw_breaker_config,
    out: *mut *mut tw_breaker,
) -> tw_status {
    ffi_body!("tw_breaker_new"; {
        let config = arg!("tw_breaker_new", config);
        let out = arg!("tw_breaker_new", out);
        // SAFETY:
        // - Non-null (checked); readable for its `struct_size` bytes (the
        //   caller's guarantee).
        let config = match unsafe { core_config(config, "tw_breaker_new") } {
            Ok(c) => c,
            Err(status) => return status,
        };
        let owned = Box::new(Owned {
            tag: AtomicU64::new(OWNED),
            _pad: [0; SharedRegion::BREAKER_OFFSET - 8],
            breaker: Breaker::new(config),
        });
        let raw = Box::into_raw(owned);
        // SAFETY:
        // - `raw` comes from `Box::into_raw`, so it is valid; taking a
        //   field's address creates no reference. The handle keeps the
        //   provenance of the whole allocation, which `tw_breaker_free`
        //   needs to reach the tag and the box.
        // - `out` is non-null and writable (the caller's guarantee).
        unsafe { out.write(core::ptr::addr_of_mut!((*raw).breaker).cast::<tw_breaker>()) };
        tw_status::Ok
    })
}

/// Frees a breaker made by `tw_breaker_new`. NULL is allowed and does
/// nothing; so does a handle to a breaker in shared memory (from
/// `tw_breaker_init_in`, `tw_breaker_attach` or `tw_breaker_open_in`),
/// which the library does not own.
///
/// No other thread may use the breaker during or after this call.
///
/// # Safety
/// `breaker` is NULL or a live handle, not used again afterwards if it
/// came from `tw_breaker_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_free(breaker: *mut tw_breaker) {
    ffi_body!("tw_breaker_free", on_panic = (); {
        if breaker.is_null() {
            return;
        }
        // Both kinds of handle point `BREAKER_OFFSET` bytes past a u64
        // tag: the heap tag, or a shared region's magic number.
        let owned = breaker.cast::<u8>().wrapping_sub(SharedRegion::BREAKER_OFFSET).cast::<Owned>();
        // SAFETY:
        // - A live handle points into an `Owned` or a `SharedRegion`; either
        //   way an 8-aligned `u64` that is only accessed atomically lies
        //   `BREAKER_OFFSET` bytes before it, within the same allocation or
        //   mapping, whose provenance the handle carries.
        let tag = unsafe { (*core::ptr::addr_of!((*owned).tag)).load(Ordering::Relaxed) };
        // Is it ours to free?
        if tag == OWNED {
            // SAFETY:
            // - The tag says `owned` came from `Box::into_raw` in
            //   `tw_breaker_new`; the caller guarantees it is not used again.
            drop(unsafe { Box::from_raw(owned) });
        }
    })
}

/// # Safety
/// `ticket` is non-null and writable; `rejection` is NULL or writable.
#[inline(always)]
unsafe fn acquire(
    breaker: &Breaker,
    clock: &impl Clock,
    ticket: *mut tw_ticket,
    rejection: *mut tw_rejection,
) -> tw_status {
    match breaker.try_acquire(clock) {
        Ok(t) => {
            // Two 8-byte stores rather than one per field: the caller reads
            // the ticket back as two 8-byte words to pass it by value to
            // `tw_breaker_record`, and a 4-byte store cannot forward to an
            // 8-byte load (a stall of a dozen cycles on x86).
            let words = ticket_words(ticket_to_c(t));
            // SAFETY:
            // - Non-null and writable (this function's contract); a
            //   `tw_ticket` is 16 bytes, 8-aligned, so it holds two `u64`s.
            unsafe { ticket.cast::<[u64; 2]>().write(words) };
            tw_status::Ok
        }
        Err(r) => {
            if !rejection.is_null() {
                // SAFETY:
                // - Non-null (checked), writable (this function's contract).
                unsafe { rejection.write(rejection_to_c(r)) };
            }
            tw_status::Rejected
        }
    }
}

/// Asks to make a call, reading `CLOCK_MONOTONIC` only if the breaker is
/// open (the same clock in every process, as shared breakers need).
///
/// - `TW_STATUS_OK`: make the call, then hand `*ticket` to
///   `tw_breaker_record` exactly once. A probe whose outcome is never
///   recorded is taken over after the config's `probe_timeout_ns`.
/// - `TW_STATUS_REJECTED`: do not make the call; if `rejection` is not
///   NULL, `*rejection` says why and for how long. No message is set.
///
/// `breaker` and `ticket` must not be NULL; `rejection` may be. Thread-safe.
///
/// # Safety
/// `breaker` is NULL or a live handle; `ticket` and `rejection` are NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_try_acquire(
    breaker: *const tw_breaker,
    ticket: *mut tw_ticket,
    rejection: *mut tw_rejection,
) -> tw_status {
    ffi_body!("tw_breaker_try_acquire"; {
        let breaker = handle!("tw_breaker_try_acquire", breaker);
        let ticket = arg!("tw_breaker_try_acquire", ticket);
        // SAFETY:
        // - `ticket` is non-null (checked) and writable, `rejection` NULL
        //   or writable (the caller's guarantee).
        unsafe { acquire(breaker, &MonotonicClock, ticket, rejection) }
    })
}

/// `tw_breaker_try_acquire` with the caller's own clock: `now_ns` is the
/// current time in nanoseconds from a monotonic source (e.g. a calibrated
/// TSC). Every caller of one breaker must use the same clock; never mix it
/// with the functions without `_at`.
///
/// # Safety
/// As for `tw_breaker_try_acquire`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_try_acquire_at(
    breaker: *const tw_breaker,
    now_ns: u64,
    ticket: *mut tw_ticket,
    rejection: *mut tw_rejection,
) -> tw_status {
    ffi_body!("tw_breaker_try_acquire_at"; {
        let breaker = handle!("tw_breaker_try_acquire_at", breaker);
        let ticket = arg!("tw_breaker_try_acquire_at", ticket);
        // SAFETY:
        // - `ticket` is non-null (checked) and writable, `rejection` NULL
        //   or writable (the caller's guarantee).
        unsafe { acquire(breaker, &FixedClock(now_ns), ticket, rejection) }
    })
}

/// Records a success that the core's fast path settles
/// (`Breaker::record_healthy_success`) without building a core ticket,
/// and writes the unchanged state to `*transition`; false, having done
/// nothing, for every other outcome. Kept apart from [`record`], out of
/// line, so that this path needs few registers and no stack frame.
///
/// # Safety
/// `transition` is NULL or writable.
#[inline(always)]
unsafe fn record_healthy(
    breaker: &Breaker,
    ticket: &tw_ticket,
    outcome: u32,
    transition: *mut tw_transition,
) -> bool {
    if outcome != tw_outcome::Success as u32 || !breaker.record_healthy_success(ticket.generation) {
        return false;
    }
    if !transition.is_null() {
        let closed = tw_transition {
            changed: false,
            from: tw_state::Closed,
            to: tw_state::Closed,
            generation: ticket.generation,
        };
        // SAFETY:
        // - Non-null (checked), writable (this function's contract).
        unsafe { transition.write(closed) };
    }
    true
}

/// # Safety
/// `transition` is NULL or writable.
#[inline(never)]
unsafe fn record(
    fn_name: &str,
    breaker: &Breaker,
    ticket: tw_ticket,
    outcome: u32,
    clock: &impl Clock,
    transition: *mut tw_transition,
) -> tw_status {
    let Some(outcome) = outcome_from_c(outcome) else {
        return fail(
            tw_status::InvalidArgument,
            format_args!("{fn_name}: outcome = {outcome}, expected a tw_outcome (0 to 2)"),
        );
    };
    let t = breaker.record(ticket_from_c(ticket), outcome, clock);
    if !transition.is_null() {
        // SAFETY:
        // - Non-null (checked), writable (this function's contract).
        unsafe { transition.write(transition_to_c(t, breaker)) };
    }
    tw_status::Ok
}

/// Reports how an admitted call ended. `outcome` is a `tw_outcome`
/// (`TW_OUTCOME_SUCCESS`, `_FAILURE` or `_IGNORED`); any other value is
/// `TW_STATUS_INVALID_ARGUMENT` and records nothing. Reads
/// `CLOCK_MONOTONIC` only if the outcome trips the breaker.
///
/// If `transition` is not NULL, `*transition` says whether this outcome
/// changed the state (exactly one caller learns of each change). A ticket
/// from an older generation is counted but never changes the state; a
/// probe ticket recorded a second time changes nothing but the counters
/// (see `tw_ticket`).
///
/// `breaker` must not be NULL. Thread-safe.
///
/// # Safety
/// `breaker` is NULL or a live handle; `transition` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_record(
    breaker: *const tw_breaker,
    ticket: tw_ticket,
    outcome: u32,
    transition: *mut tw_transition,
) -> tw_status {
    ffi_body!("tw_breaker_record"; {
        let breaker = handle!("tw_breaker_record", breaker);
        // SAFETY:
        // - `transition` is NULL or writable (the caller's guarantee).
        if unsafe { record_healthy(breaker, &ticket, outcome, transition) } {
            return tw_status::Ok;
        }
        // SAFETY:
        // - As above.
        unsafe { record("tw_breaker_record", breaker, ticket, outcome, &MonotonicClock, transition) }
    })
}

/// `tw_breaker_record` with the caller's own clock (see
/// `tw_breaker_try_acquire_at`).
///
/// # Safety
/// As for `tw_breaker_record`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_record_at(
    breaker: *const tw_breaker,
    now_ns: u64,
    ticket: tw_ticket,
    outcome: u32,
    transition: *mut tw_transition,
) -> tw_status {
    ffi_body!("tw_breaker_record_at"; {
        let breaker = handle!("tw_breaker_record_at", breaker);
        // SAFETY:
        // - `transition` is NULL or writable (the caller's guarantee).
        if unsafe { record_healthy(breaker, &ticket, outcome, transition) } {
            return tw_status::Ok;
        }
        // SAFETY:
        // - As above.
        unsafe { record("tw_breaker_record_at", breaker, ticket, outcome, &FixedClock(now_ns), transition) }
    })
}

/// Records a success of a call admitted in `generation` (a ticket's
/// `generation`) if the breaker's fast path settles it: the breaker
/// neither times calls nor keeps a rolling window, and is Closed in that
/// generation with no failure to forget, so there is nothing to do but
/// count the success. Returns true then; false, having done nothing,
/// otherwise (record the outcome with `tw_breaker_record` or
/// `tw_breaker_record_at` then) and for NULL.
///
/// What the header's inline `tw_breaker_record_fast` calls when the
/// breaker counts successes, which only the library can do; callers
/// normally use that or `tw_breaker_record`. Thread-safe.
///
/// # Safety
/// `breaker` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_record_healthy_success(
    breaker: *const tw_breaker,
    generation: u32,
) -> bool {
    ffi_body!("tw_breaker_record_healthy_success", on_panic = false; {
        if breaker.is_null() {
            return false;
        }
        // SAFETY:
        // - Non-null (checked); live (the caller's guarantee).
        let breaker = unsafe { rust_ref(breaker) };
        breaker.record_healthy_success(generation)
    })
}

/// Whether `*ticket` is a Half-Open probe (its outcome decides the
/// breaker's next state). False for NULL.
///
/// # Safety
/// `ticket` is NULL or points to a readable `tw_ticket`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_ticket_is_probe(ticket: *const tw_ticket) -> bool {
    ffi_body!("tw_ticket_is_probe", on_panic = false; {
        if ticket.is_null() {
            return false;
        }
        // SAFETY:
        // - Non-null (checked), readable (the caller's guarantee).
        ticket_from_c(unsafe { ticket.read() }).is_probe()
    })
}

/// Writes to `*out` the transition that issuing `*ticket` caused: Open →
/// Half-Open when the cool-down had passed, Half-Open → Half-Open (a new
/// generation) when lost probes were taken over. Otherwise `changed` is
/// false and `from` = `to` is the state the ticket was issued in, with its
/// generation: Half-Open for a probe, Closed for any other ticket. (A
/// Disabled breaker's tickets read Closed too: a ticket does not record
/// which of the two admitted it; `tw_breaker_state` tells.)
///
/// Neither pointer may be NULL.
///
/// # Safety
/// `ticket` is NULL or readable; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_ticket_transition(
    ticket: *const tw_ticket,
    out: *mut tw_transition,
) -> tw_status {
    ffi_body!("tw_ticket_transition"; {
        let ticket = *arg!("tw_ticket_transition", &ticket);
        let out = arg!("tw_ticket_transition", out);
        let t = ticket_from_c(ticket);
        let c = match t.transition() {
            Some(t) => t.into(),
            None => {
                // Only a probe is issued in Half-Open; every other ticket
                // passed a Closed (or Disabled) breaker.
                let issued_in = if t.is_probe() { tw_state::HalfOpen } else { tw_state::Closed };
                tw_transition { changed: false, from: issued_in, to: issued_in, generation: t.generation() }
            }
        };
        // SAFETY:
        // - Non-null (checked), writable (the caller's guarantee).
        unsafe { out.write(c) };
        tw_status::Ok
    })
}

/// Writes the current state to `*out`. An Open breaker whose cool-down has
/// passed reads Open until a call arrives and becomes its probe.
///
/// Neither pointer may be NULL. Thread-safe.
///
/// # Safety
/// `breaker` is NULL or a live handle; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_state(breaker: *const tw_breaker, out: *mut tw_state) -> tw_status {
    ffi_body!("tw_breaker_state"; {
        let breaker = handle!("tw_breaker_state", breaker);
        let out = arg!("tw_breaker_state", out);
        // SAFETY:
        // - Non-null (checked), writable (the caller's guarantee).
        unsafe { out.write(breaker.state().into()) };
        tw_status::Ok
    })
}

/// Writes the state, generation and counters to `*out`.
///
/// Neither pointer may be NULL. Thread-safe.
///
/// # Safety
/// `breaker` is NULL or a live handle; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_snapshot(breaker: *const tw_breaker, out: *mut tw_snapshot) -> tw_status {
    ffi_body!("tw_breaker_snapshot"; {
        let b = handle!("tw_breaker_snapshot", breaker);
        let out = arg!("tw_breaker_snapshot", out);
        let s = b.snapshot();
        let snap = tw_snapshot {
            state: b.state().into(),
            generation: b.generation(),
            successes: s.successes,
            failures: s.failures,
            ignored: s.ignored,
            rejected: s.rejected,
            slow: s.slow,
            transitions: s.transitions,
        };
        // SAFETY:
        // - Non-null (checked), writable (the caller's guarantee).
        unsafe { out.write(snap) };
        tw_status::Ok
    })
}

/// Applies a manual action and reports it.
///
/// # Safety
/// `breaker` is NULL or a live handle; `transition` is NULL or writable.
#[inline]
unsafe fn manual(
    fn_name: &str,
    breaker: *const tw_breaker,
    transition: *mut tw_transition,
    action: fn(&Breaker) -> Transition,
) -> tw_status {
    let b = handle!(fn_name, breaker);
    let t = action(b);
    if !transition.is_null() {
        // SAFETY:
        // - Non-null (checked), writable (this function's contract).
        unsafe { transition.write(transition_to_c(Some(t), b)) };
    }
    tw_status::Ok
}

/// Forces the breaker open: every call is rejected (with `retry_after_ns`
/// = `UINT64_MAX`) until `tw_breaker_reset`.
///
/// `breaker` must not be NULL; if `transition` is not NULL, the change is
/// written there (`changed` is always true: a manual action always starts
/// a new generation). Thread-safe.
///
/// # Safety
/// `breaker` is NULL or a live handle; `transition` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_force_open(
    breaker: *const tw_breaker,
    transition: *mut tw_transition,
) -> tw_status {
    ffi_body!("tw_breaker_force_open"; {
        // SAFETY:
        // - The caller's guarantees are those `manual` needs.
        unsafe { manual("tw_breaker_force_open", breaker, transition, Breaker::force_open) }
    })
}

/// Disables the breaker: every call is permitted and outcomes are still
/// counted, but it never trips, until `tw_breaker_reset`.
///
/// Pointers and thread-safety as for `tw_breaker_force_open`.
///
/// # Safety
/// `breaker` is NULL or a live handle; `transition` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_disable(
    breaker: *const tw_breaker,
    transition: *mut tw_transition,
) -> tw_status {
    ffi_body!("tw_breaker_disable"; {
        // SAFETY:
        // - The caller's guarantees are those `manual` needs.
        unsafe { manual("tw_breaker_disable", breaker, transition, Breaker::disable) }
    })
}

/// Closes the breaker with fresh counts and cool-down (also ending a forced
/// open or disabled mode); outcomes of calls admitted before the reset no
/// longer affect it.
///
/// Pointers and thread-safety as for `tw_breaker_force_open`.
///
/// # Safety
/// `breaker` is NULL or a live handle; `transition` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_reset(
    breaker: *const tw_breaker,
    transition: *mut tw_transition,
) -> tw_status {
    ffi_body!("tw_breaker_reset"; {
        // SAFETY:
        // - The caller's guarantees are those `manual` needs.
        unsafe { manual("tw_breaker_reset", breaker, transition, Breaker::reset) }
    })
}
