//! Breakers in memory shared between processes: the C face of
//! [`tripwire::shared::SharedRegion`].

use core::ffi::c_void;

use tripwire::{
    Breaker,
    shared::{RegionError, SharedRegion},
};

use crate::config::{core_config, tw_breaker_config};
use crate::status::{arg, fail, ffi_body, tw_status};
use crate::tw_breaker;

/// The status for a region's error, whatever the region's kind (the C
/// faces of both kinds use it).
pub(crate) fn status_of(e: RegionError) -> tw_status {
    use RegionError as E;
    match e {
        E::Null { .. } => tw_status::NullArgument,
        E::Misaligned { .. } => tw_status::RegionMisaligned,
        E::TooSmall { .. } => tw_status::RegionTooSmall,
        E::Uninitialised { .. } => tw_status::RegionUninitialised,
        E::Initialising { .. } => tw_status::RegionInitialising,
        E::AlreadyInitialised { .. } => tw_status::RegionAlreadyInitialised,
        E::NotARegion { .. } | E::WrongKind { .. } | E::NotZeroFilled { .. } => tw_status::RegionInvalid,
        E::Version { .. } => tw_status::RegionVersionMismatch,
        E::ConfigMismatch | E::MaxMismatch { .. } | E::LimitMismatch { .. } | E::LimitCount { .. } => {
            tw_status::RegionConfigMismatch
        }
        // The bulkhead's callers check their `max` argument first: a `max`
        // out of range here is the header's.
        E::BreakerLayout { .. }
        | E::BadConfig(_)
        | E::BadState
        | E::BadDeadlines
        | E::BadWindow
        | E::BadHotLine
        | E::MaxOutOfRange { .. }
        | E::BulkheadSize { .. }
        | E::Reserved { .. }
        | E::BadSlot { .. }
        | E::LimiterSize { .. }
        | E::LimiterReserved { .. }
        | E::BadLimit { .. } => tw_status::RegionCorrupt,
        // A variant added to the core later: still an error, never OK.
        _ => tw_status::RegionCorrupt,
    }
}

/// Writes the handle for a breaker in the region at `mem` to `*out`, or
/// sets the message for `result`'s error.
///
/// # Safety
/// `out` is non-null and writable; `mem` is the region `result` came from.
unsafe fn hand_out(
    fn_name: &str,
    mem: *mut u8,
    result: Result<&Breaker, RegionError>,
    out: *mut *const tw_breaker,
) -> tw_status {
    match result {
        Ok(breaker) => {
            // The handle keeps `mem`'s provenance, covering the whole region:
            // `tw_breaker_free` reads the magic before the breaker.
            let handle = mem.with_addr((breaker as *const Breaker).addr()).cast::<tw_breaker>();
            // SAFETY:
            // - `out` is non-null and writable (this function's contract).
            unsafe { out.write(handle) };
            tw_status::Ok
        }
        Err(e) => fail(status_of(e), format_args!("{fn_name}: {e}")),
    }
}

/// Writes the size and alignment (bytes) of the memory a shared breaker
/// needs. Page-aligned memory from `mmap` is always aligned enough.
///
/// Neither pointer may be NULL. Thread-safe.
///
/// # Safety
/// `size` and `align` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_layout(size: *mut usize, align: *mut usize) -> tw_status {
    ffi_body!("tw_breaker_layout"; {
        let size = arg!("tw_breaker_layout", size);
        let align = arg!("tw_breaker_layout", align);
        let (s, a) = SharedRegion::layout();
        // SAFETY:
        // - Both non-null (checked) and writable (the caller's guarantee).
        unsafe {
            size.write(s);
            align.write(a);
        }
        tw_status::Ok
    })
}

/// Sets up a Closed breaker with `*config` in zero-filled shared memory
/// (`mem`, `len` bytes: e.g. a fresh `MAP_SHARED` mapping of a file or an
/// anonymous mapping made before `fork`) and writes its handle to `*out`.
///
/// Of several processes racing to initialise one region exactly one
/// succeeds (a compare-and-swap claims it); the others get
/// `TW_STATUS_REGION_ALREADY_INITIALISED` or
/// `TW_STATUS_REGION_INITIALISING` and should `tw_breaker_attach`, or all
/// of them call `tw_breaker_open_in`. Other errors:
/// `TW_STATUS_INVALID_CONFIG`, `TW_STATUS_INVALID_STRUCT_SIZE`,
/// `TW_STATUS_REGION_MISALIGNED`,
/// `TW_STATUS_REGION_TOO_SMALL`, `TW_STATUS_REGION_INVALID` (memory not
/// zero-filled).
///
/// The handle is valid while the memory stays mapped; it is not freed
/// (`tw_breaker_free` ignores it). Every process must use the same clock:
/// the functions without `_at` read `CLOCK_MONOTONIC`, which agrees across
/// processes. No pointer may be NULL. Thread-safe.
///
/// # Safety
/// - `mem` is NULL or valid for reads and writes of `len` bytes for as long
///   as the handle is used, in every process that maps it.
/// - The region's bytes are only accessed through tripwire (in every
///   process) while any handle to it is in use.
/// - `config` is NULL or points to a readable `tw_breaker_config` of
///   `struct_size` bytes; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const tw_breaker_config,
    out: *mut *const tw_breaker,
) -> tw_status {
    ffi_body!("tw_breaker_init_in"; {
        let mem = arg!("tw_breaker_init_in", mem).cast::<u8>();
        let config = arg!("tw_breaker_init_in", config);
        let out = arg!("tw_breaker_init_in", out);
        // SAFETY:
        // - Non-null (checked); readable for its `struct_size` bytes (the
        //   caller's guarantee).
        let config = match unsafe { core_config(config, "tw_breaker_init_in") } {
            Ok(c) => c,
            Err(status) => return status,
        };
        // SAFETY:
        // - The caller's guarantees on `mem` and `len` are those `init_in`
        //   needs; `out` is non-null and writable.
        unsafe { hand_out("tw_breaker_init_in", mem, SharedRegion::init_in(mem, len, config), out) }
    })
}

/// Checks that `mem` (`len` bytes) holds a breaker initialised by
/// `tw_breaker_init_in` (in this process or another) and writes its handle
/// to `*out`.
///
/// Never trusts the bytes: memory that is misaligned, too small, zero
/// (`TW_STATUS_REGION_UNINITIALISED`), being initialised, not a region
/// (`TW_STATUS_REGION_INVALID`), of another layout version, or whose
/// header, config, state word or deadline slots make no sense
/// (`TW_STATUS_REGION_CORRUPT`) is an error with a message, never
/// undefined behaviour.
///
/// As for `tw_breaker_init_in`, the handle is never freed. No pointer may
/// be NULL. Thread-safe.
///
/// # Safety
/// As for `tw_breaker_init_in` (without `config`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *const tw_breaker,
) -> tw_status {
    ffi_body!("tw_breaker_attach"; {
        let mem = arg!("tw_breaker_attach", mem).cast::<u8>();
        let out = arg!("tw_breaker_attach", out);
        // SAFETY:
        // - The caller's guarantees on `mem` and `len` are those `attach`
        //   needs; `out` is non-null and writable.
        unsafe { hand_out("tw_breaker_attach", mem, SharedRegion::attach(mem, len), out) }
    })
}

/// Initialises the region with `*config` if nobody has, otherwise attaches
/// to it: the one call every process of a group can make at start-up.
/// `TW_STATUS_REGION_CONFIG_MISMATCH` if it holds a breaker made with
/// another config; `TW_STATUS_REGION_INITIALISING` if another process is
/// initialising it right now (retry shortly).
///
/// # Safety
/// As for `tw_breaker_init_in`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_open_in(
    mem: *mut c_void,
    len: usize,
    config: *const tw_breaker_config,
    out: *mut *const tw_breaker,
) -> tw_status {
    ffi_body!("tw_breaker_open_in"; {
        let mem = arg!("tw_breaker_open_in", mem).cast::<u8>();
        let config = arg!("tw_breaker_open_in", config);
        let out = arg!("tw_breaker_open_in", out);
        // SAFETY:
        // - Non-null (checked); readable for its `struct_size` bytes (the
        //   caller's guarantee).
        let config = match unsafe { core_config(config, "tw_breaker_open_in") } {
            Ok(c) => c,
            Err(status) => return status,
        };
        // SAFETY:
        // - The caller's guarantees on `mem` and `len` are those `open_in`
        //   needs; `out` is non-null and writable.
        unsafe { hand_out("tw_breaker_open_in", mem, SharedRegion::open_in(mem, len, config), out) }
    })
}
