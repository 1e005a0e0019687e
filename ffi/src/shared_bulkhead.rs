//! Bulkheads in memory shared between processes: one cap for every worker
//! process of a host. The C face of [`tripwire::shared::SharedBulkheadRegion`] and
//! [`tripwire::shared::SharedBulkhead`]; the protocol, the layout and the
//! liveness rules are the core's.

use core::ffi::c_void;

use tripwire::shared::{Holder, RegionError, SharedBulkhead, SharedBulkheadRegion, SharedSlot};

use crate::shared::status_of;
use crate::status::{arg, fail, ffi_body, tw_status};

/// A bulkhead in a shared region. Opaque: a `const tw_shared_bulkhead *`
/// is the address of the region itself (the caller's memory), handed out
/// by `tw_shared_bulkhead_init_in`, `_attach` or `_open_in`. It is never
/// freed: it is valid while the memory stays mapped. Every function taking
/// one is thread-safe, and safe to call from every process mapping the
/// region at once.
pub struct tw_shared_bulkhead {
    _opaque: [u8; 0],
}

/// The receipt for one slot of a shared bulkhead, written by
/// `tw_shared_bulkhead_try_acquire`: pass it to `tw_shared_bulkhead_release`
/// exactly once. Plain data: copy it freely, but release it once.
///
/// The slot belongs to the process that took it: the reclaim pass frees it
/// once that process dies, whoever holds a copy of the receipt. A child
/// made by `fork` after the acquire inherits the copy, not the slot.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tw_shared_slot {
    /// Which slot of the region's table.
    pub index: u32,
    /// The holder word the slot was taken with (this process's pid, a tag
    /// of its start time, and which acquire it was, modulo 2^16).
    pub holder: u64,
    /// How many releases had freed the slot when this acquire took it: a
    /// receipt whose slot was released and taken again since is refused by
    /// it, even once `holder` comes round to the same word.
    pub releases: u64,
}

/// A shared bulkhead's counters at one moment (each read separately).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tw_shared_bulkhead_stats {
    /// The cap.
    pub max: u32,
    /// Slots held now, by every process.
    pub held: u32,
    /// Slots handed out since the region was made, by every process.
    pub acquired: u64,
    /// Acquires refused.
    pub rejected: u64,
    /// Slots of dead processes freed by reclaim passes.
    pub reclaimed: u64,
}

/// Refuses a `max` argument out of range, naming it.
fn check_max(fn_name: &str, max: u32) -> Result<(), tw_status> {
    if max > SharedBulkheadRegion::MAX_SLOTS {
        return Err(fail(
            tw_status::InvalidArgument,
            format_args!("{fn_name}: `max` = {max}, expected 0 to {}", SharedBulkheadRegion::MAX_SLOTS),
        ));
    }
    Ok(())
}

/// Writes the handle for the region at `mem` to `*out`, or sets the
/// message for `result`'s error.
///
/// # Safety
/// `out` is non-null and writable; `mem` is the region `result` came from.
unsafe fn hand_out(
    fn_name: &str,
    mem: *mut u8,
    result: Result<SharedBulkhead<'_>, RegionError>,
    out: *mut *const tw_shared_bulkhead,
) -> tw_status {
    match result {
        Ok(_) => {
            // SAFETY:
            // - `out` is non-null and writable (this function's contract).
            unsafe { out.write(mem.cast_const().cast()) };
            tw_status::Ok
        }
        Err(e) => fail(status_of(e), format_args!("{fn_name}: {e}")),
    }
}

/// The bulkhead behind a handle.
///
/// # Safety
/// `b` is non-null and a live handle: it came from a successful
/// `_init_in`, `_attach` or `_open_in` in this process, whose guarantees
/// still hold.
unsafe fn bulkhead<'a>(b: *const tw_shared_bulkhead) -> SharedBulkhead<'a> {
    // SAFETY:
    // - `b` is the address `init_in` or `attach` accepted, with its
    //   provenance (this function's contract).
    unsafe { SharedBulkheadRegion::attached(b.cast()) }
}

/// Writes the size (bytes) a region of `max` slots needs to `*size`, and
/// the alignment it needs (64; any page from `mmap` has it) to `*align`:
/// 64 bytes of header plus 16 per slot (its word and its release count).
/// `TW_STATUS_INVALID_ARGUMENT` if `max` is above 65536.
///
/// Neither pointer may be NULL. Thread-safe.
///
/// # Safety
/// `size` and `align` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_shared_bulkhead_size(max: u32, size: *mut usize, align: *mut usize) -> tw_status {
    ffi_body!("tw_shared_bulkhead_size"; {
        let size = arg!("tw_shared_bulkhead_size", size);
        let align = arg!("tw_shared_bulkhead_size", align);
        let Some(s) = SharedBulkheadRegion::size_for(max) else {
            return check_max("tw_shared_bulkhead_size", max).err().unwrap_or(tw_status::InvalidArgument);
        };
        // SAFETY:
        // - Both non-null (checked) and writable (the caller's guarantee).
        unsafe {
            size.write(s);
            align.write(SharedBulkheadRegion::ALIGN);
        }
        tw_status::Ok
    })
}

/// Sets up an empty bulkhead of `max` slots (0 to 65536; 0 refuses every
/// call) in zero-filled shared memory (`mem`, at least
/// `tw_shared_bulkhead_size(max)` bytes: a fresh `MAP_SHARED` mapping of a
/// file or `shm_open` object, or an anonymous one made before `fork`) and
/// writes its handle to `*out`.
///
/// Of several processes racing to initialise one region exactly one
/// succeeds (a compare-and-swap claims it); the others get
/// `TW_STATUS_REGION_ALREADY_INITIALISED` or `TW_STATUS_REGION_INITIALISING`
/// and should `tw_shared_bulkhead_attach`, or all of them call
/// `tw_shared_bulkhead_open_in`. Other errors: `TW_STATUS_INVALID_ARGUMENT`
/// (`max`), `TW_STATUS_REGION_MISALIGNED`, `TW_STATUS_REGION_TOO_SMALL`,
/// `TW_STATUS_REGION_INVALID` (memory not zero-filled).
///
/// Ownership: the memory stays the caller's; the handle points into it and
/// is valid while it stays mapped; it is never freed. No pointer may be
/// NULL. Thread-safe.
///
/// # Safety
/// - `mem` is NULL or valid for reads and writes of `len` bytes for as long
///   as the handle is used, in every process that maps it.
/// - The region's bytes are only accessed through tripwire (in every
///   process) while any handle to it is in use.
/// - `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_shared_bulkhead_init_in(
    mem: *mut c_void,
    len: usize,
    max: u32,
    out: *mut *const tw_shared_bulkhead,
) -> tw_status {
    ffi_body!("tw_shared_bulkhead_init_in"; {
        let mem = arg!("tw_shared_bulkhead_init_in", mem).cast::<u8>();
        let out = arg!("tw_shared_bulkhead_init_in", out);
        if let Err(status) = check_max("tw_shared_bulkhead_init_in", max) {
            return status;
        }
        // SAFETY:
        // - The caller's guarantees on `mem` and `len` are those `init_in`
        //   needs; `out` is non-null and writable.
        unsafe {
            hand_out("tw_shared_bulkhead_init_in", mem, SharedBulkheadRegion::init_in(mem, len, max), out)
        }
    })
}

/// Checks that `mem` (`len` bytes) holds a shared bulkhead initialised by
/// `tw_shared_bulkhead_init_in` (in this process or another) and writes
/// its handle to `*out`.
///
/// Never trusts the bytes: memory that is misaligned, too small for the
/// header or for the slots its `max` asks (`TW_STATUS_REGION_TOO_SMALL`),
/// zero (`TW_STATUS_REGION_UNINITIALISED`), being initialised, not a
/// region (`TW_STATUS_REGION_INVALID`), of another layout version, or whose
/// `max`, `size`, `reserved` or slot words make no sense
/// (`TW_STATUS_REGION_CORRUPT`) is an error whose message names the field,
/// never undefined behaviour.
///
/// As for `tw_shared_bulkhead_init_in`, the handle is never freed. No
/// pointer may be NULL. Thread-safe.
///
/// # Safety
/// As for `tw_shared_bulkhead_init_in`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_shared_bulkhead_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *const tw_shared_bulkhead,
) -> tw_status {
    ffi_body!("tw_shared_bulkhead_attach"; {
        let mem = arg!("tw_shared_bulkhead_attach", mem).cast::<u8>();
        let out = arg!("tw_shared_bulkhead_attach", out);
        // SAFETY:
        // - The caller's guarantees on `mem` and `len` are those `attach`
        //   needs; `out` is non-null and writable.
        unsafe { hand_out("tw_shared_bulkhead_attach", mem, SharedBulkheadRegion::attach(mem, len), out) }
    })
}

/// Initialises the region with `max` slots if nobody has, otherwise
/// attaches to it: the one call every process of a group can make at
/// start-up. `TW_STATUS_REGION_CONFIG_MISMATCH` if it holds a bulkhead with
/// another `max`; `TW_STATUS_REGION_INITIALISING` if another process is
/// initialising it right now (retry shortly).
///
/// # Safety
/// As for `tw_shared_bulkhead_init_in`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_shared_bulkhead_open_in(
    mem: *mut c_void,
    len: usize,
    max: u32,
    out: *mut *const tw_shared_bulkhead,
) -> tw_status {
    ffi_body!("tw_shared_bulkhead_open_in"; {
        let mem = arg!("tw_shared_bulkhead_open_in", mem).cast::<u8>();
        let out = arg!("tw_shared_bulkhead_open_in", out);
        if let Err(status) = check_max("tw_shared_bulkhead_open_in", max) {
            return status;
        }
        // SAFETY:
        // - The caller's guarantees on `mem` and `len` are those `open_in`
        //   needs; `out` is non-null and writable.
        unsafe {
            hand_out("tw_shared_bulkhead_open_in", mem, SharedBulkheadRegion::open_in(mem, len, max), out)
        }
    })
}

/// Takes a slot for this process if one is free, without waiting:
/// `TW_STATUS_OK` with the receipt in `*slot` (make the call, then
/// `tw_shared_bulkhead_release` it exactly once), or `TW_STATUS_REJECTED`
/// (every slot is held, by any process; no message is set).
///
/// Never more than `max` slots are held at once across all processes, not
/// even for an instant. When it finds every slot held, it runs a reclaim
/// pass (at most one per 10 ms per region, across all processes) that frees
/// the slots of processes known to be dead, and tries once more: a worker
/// killed while holding slots does not keep them. A refusal means every
/// slot was seen held during the call (not necessarily all at one instant).
/// Allocation-free; lock-free; no system call unless every slot is held.
///
/// Neither pointer may be NULL. Thread-safe; safe from every process.
///
/// # Safety
/// `bulkhead` is NULL or a live handle; `slot` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_shared_bulkhead_try_acquire(
    bulkhead: *const tw_shared_bulkhead,
    slot: *mut tw_shared_slot,
) -> tw_status {
    ffi_body!("tw_shared_bulkhead_try_acquire"; {
        let b = arg!("tw_shared_bulkhead_try_acquire", bulkhead);
        let out = arg!("tw_shared_bulkhead_try_acquire", slot);
        // SAFETY:
        // - Non-null (checked) and a live handle (the caller's guarantee).
        let b = unsafe { self::bulkhead(b) };
        match b.try_acquire_here() {
            Ok(s) => {
                // SAFETY:
                // - Non-null (checked), writable (the caller's guarantee).
                unsafe {
                    out.write(tw_shared_slot { index: s.index(), holder: s.holder().raw(), releases: s.releases() })
                };
                tw_status::Ok
            }
            Err(_) => tw_status::Rejected,
        }
    })
}

/// Frees the slot `slot` names, if it still holds `slot`'s acquire.
///
/// A slot is owned: a receipt that was released already, whose slot a
/// reclaim pass freed, or whose slot has been taken again since (by any
/// process, or by another acquire of this one, even with the same
/// `holder` word: `releases` tells them apart) changes nothing and returns
/// `TW_STATUS_INVALID_ARGUMENT`, as does an index out of range; the count
/// is never corrupted. Releasing another process's receipt (passed to it)
/// is allowed and frees that slot.
///
/// `bulkhead` must not be NULL. Thread-safe; safe from every process.
///
/// # Safety
/// `bulkhead` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_shared_bulkhead_release(
    bulkhead: *const tw_shared_bulkhead,
    slot: tw_shared_slot,
) -> tw_status {
    ffi_body!("tw_shared_bulkhead_release"; {
        let b = arg!("tw_shared_bulkhead_release", bulkhead);
        // SAFETY:
        // - Non-null (checked) and a live handle (the caller's guarantee).
        let b = unsafe { self::bulkhead(b) };
        if slot.index >= b.max() {
            return fail(
                tw_status::InvalidArgument,
                format_args!(
                    "tw_shared_bulkhead_release: `slot.index` = {} is out of range: the bulkhead has {} slots",
                    slot.index,
                    b.max()
                ),
            );
        }
        let Some(holder) = Holder::from_raw(slot.holder) else {
            return fail(
                tw_status::InvalidArgument,
                format_args!("tw_shared_bulkhead_release: `slot.holder` = {:#x} names no holder", slot.holder),
            );
        };
        if b.release(SharedSlot::from_parts(slot.index, holder, slot.releases)) {
            tw_status::Ok
        } else {
            fail(
                tw_status::InvalidArgument,
                format_args!(
                    "tw_shared_bulkhead_release: `slot` {} is not held by this receipt (released already, \
                     reclaimed, or taken again since)",
                    slot.index
                ),
            )
        }
    })
}

/// Writes the number of slots free now to `*available` (`max` minus the
/// slots held by every process: a scan of the table).
///
/// Neither pointer may be NULL. Thread-safe.
///
/// # Safety
/// `bulkhead` is NULL or a live handle; `available` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_shared_bulkhead_available(
    bulkhead: *const tw_shared_bulkhead,
    available: *mut u32,
) -> tw_status {
    ffi_body!("tw_shared_bulkhead_available"; {
        let b = arg!("tw_shared_bulkhead_available", bulkhead);
        let out = arg!("tw_shared_bulkhead_available", available);
        // SAFETY:
        // - Non-null (checked) and a live handle (the caller's guarantee).
        let b = unsafe { self::bulkhead(b) };
        // SAFETY:
        // - Non-null (checked), writable (the caller's guarantee).
        unsafe { out.write(b.available()) };
        tw_status::Ok
    })
}

/// Runs one reclaim pass now, whatever the 10 ms spacing, and writes the
/// number of slots it freed to `*freed` (NULL allowed: not written).
///
/// A slot is freed only when its holder is known to be gone: no process
/// has its pid (`kill(pid, 0)` gives `ESRCH`), or, where `/proc` exists,
/// the process with that pid is a zombie or started at another time (the
/// pid was reused). A live holder's slot is never freed; when in doubt a
/// slot stays held. Every process of a region must be in one PID
/// namespace. For a supervisor that has just reaped a worker;
/// `tw_shared_bulkhead_try_acquire` reclaims by itself when it finds every
/// slot held.
///
/// `bulkhead` must not be NULL. Thread-safe; safe from every process.
///
/// # Safety
/// `bulkhead` is NULL or a live handle; `freed` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_shared_bulkhead_reclaim(
    bulkhead: *const tw_shared_bulkhead,
    freed: *mut u32,
) -> tw_status {
    ffi_body!("tw_shared_bulkhead_reclaim"; {
        let b = arg!("tw_shared_bulkhead_reclaim", bulkhead);
        // SAFETY:
        // - Non-null (checked) and a live handle (the caller's guarantee).
        let n = unsafe { self::bulkhead(b) }.reclaim_dead();
        if !freed.is_null() {
            // SAFETY:
            // - Non-null (checked), writable (the caller's guarantee).
            unsafe { freed.write(n) };
        }
        tw_status::Ok
    })
}

/// Writes the bulkhead's counters to `*out`.
///
/// Neither pointer may be NULL. Thread-safe.
///
/// # Safety
/// `bulkhead` is NULL or a live handle; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_shared_bulkhead_snapshot(
    bulkhead: *const tw_shared_bulkhead,
    out: *mut tw_shared_bulkhead_stats,
) -> tw_status {
    ffi_body!("tw_shared_bulkhead_snapshot"; {
        let b = arg!("tw_shared_bulkhead_snapshot", bulkhead);
        let out = arg!("tw_shared_bulkhead_snapshot", out);
        // SAFETY:
        // - Non-null (checked) and a live handle (the caller's guarantee).
        let s = unsafe { self::bulkhead(b) }.snapshot();
        let stats = tw_shared_bulkhead_stats {
            max: s.max,
            held: s.held,
            acquired: s.acquired,
            rejected: s.rejected,
            reclaimed: s.reclaimed,
        };
        // SAFETY:
        // - Non-null (checked), writable (the caller's guarantee).
        unsafe { out.write(stats) };
        tw_status::Ok
    })
}
