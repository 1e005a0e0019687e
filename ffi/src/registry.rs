//! `tw_registry_*`: named breakers exported in the Prometheus text format.
//! The text is the core's writer's (`tripwire::prometheus`), so its
//! families, labels and help texts are those of a Rust `Registry`; this
//! file keeps the names and copies the text to the caller's buffer.

use core::ffi::{CStr, c_char};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tripwire::Breaker;
use tripwire::prometheus::{BreakerRow, write_breakers};

use crate::breaker::tw_breaker;
use crate::handle::{Boxed, Handle, box_into_out, free_box, handle};
use crate::status::{arg, fail, ffi_body, tw_status};

/// Named breakers to export together. Opaque; made by `tw_registry_new`,
/// freed by `tw_registry_free`.
///
/// It borrows the breakers added to it: each must stay alive (a shared
/// one, mapped) until the registry is freed. Adding and exporting are
/// thread-safe: they take the registry's lock for the time it takes to
/// insert a name or to read the counters, never on a breaker's call path.
pub struct tw_registry {
    _opaque: [u8; 0],
}

/// A breaker a C caller keeps alive for as long as the registry
/// (`tw_registry_add_breaker`'s contract).
struct Borrowed(*const Breaker);

// SAFETY:
// - A `Breaker` is `Sync` (atomics only) and only read through shared
//   references here; `tw_registry_add_breaker`'s caller guarantees it
//   outlives the registry, whichever thread uses the registry.
unsafe impl Send for Borrowed {}

/// What a `tw_registry` handle points to: the breakers, by name.
#[derive(Default)]
pub(crate) struct Registry {
    breakers: Mutex<BTreeMap<String, Borrowed>>,
}

impl Registry {
    fn breakers(&self) -> MutexGuard<'_, BTreeMap<String, Borrowed>> {
        // Every change is one insert, which leaves the map whole even if a
        // panic interrupted a holder: a poisoned lock is usable.
        self.breakers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The text of every breaker, sorted by name.
    fn prometheus(&self) -> String {
        let map = self.breakers();
        let rows: Vec<BreakerRow<'_>> = map
            .iter()
            .map(|(name, b)| {
                // SAFETY:
                // - Live until the registry is freed (`Borrowed`), and read
                //   through a shared reference only.
                let b = unsafe { &*b.0 };
                (name.as_str(), b.state(), b.snapshot())
            })
            .collect();
        let mut out = String::new();
        // Writing to a `String` cannot fail.
        let _ = write_breakers(&mut out, &rows);
        out
    }
}

// SAFETY:
// - A live handle points to a `Registry` made by `tw_registry_new`, only
//   used through shared references (its map is behind a mutex).
unsafe impl Handle for tw_registry {
    type Rust = Registry;
}

// SAFETY:
// - `tw_registry_new` is the only maker, through `box_into_out`.
unsafe impl Boxed for tw_registry {}

/// Makes an empty registry and writes its handle to `*out`. Free it with
/// `tw_registry_free`. `out` must not be NULL. Thread-safe.
///
/// # Safety
/// `out` is NULL or points to a writable `tw_registry *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_registry_new(out: *mut *mut tw_registry) -> tw_status {
    ffi_body!("tw_registry_new"; {
        let out = arg!("tw_registry_new", out);
        // SAFETY:
        // - `out` is non-null (checked) and writable (the caller's guarantee).
        unsafe { box_into_out(out, Registry::default()) };
        tw_status::Ok
    })
}

/// Frees a registry; the breakers it named are left alone. NULL is allowed
/// and does nothing. No other thread may use the registry during or after
/// this call.
///
/// # Safety
/// `registry` is NULL or a live handle from `tw_registry_new`, not used
/// again afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_registry_free(registry: *mut tw_registry) {
    ffi_body!("tw_registry_free", on_panic = (); {
        // SAFETY:
        // - NULL or a live handle from `tw_registry_new`, not used again
        //   (the caller's guarantee).
        unsafe { free_box(registry) }
    })
}

/// Adds `breaker` (heap or shared memory) to the registry under `name`, a
/// non-empty NUL-terminated UTF-8 string that becomes the `breaker` label
/// of its series (copied: the caller's string may go). The registry
/// borrows the breaker: it must stay alive until the registry is freed.
///
/// `TW_STATUS_INVALID_ARGUMENT` if the name is empty, not UTF-8 or taken
/// already (one breaker per name, as in a Rust `Registry`). No pointer may
/// be NULL. Thread-safe.
///
/// # Safety
/// `registry` is NULL or a live handle; `name` is NULL or NUL-terminated;
/// `breaker` is NULL or a live handle that outlives `registry`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_registry_add_breaker(
    registry: *const tw_registry,
    name: *const c_char,
    breaker: *const tw_breaker,
) -> tw_status {
    const F: &str = "tw_registry_add_breaker";
    ffi_body!(F; {
        let registry = handle!(F, registry);
        let name = arg!(F, name);
        let breaker = handle!(F, breaker);
        // SAFETY:
        // - Non-null (checked) and NUL-terminated (the caller's guarantee).
        let Ok(name) = unsafe { CStr::from_ptr(name) }.to_str() else {
            return fail(tw_status::InvalidArgument, format_args!("{F}: `name` is not UTF-8"));
        };
        if name.is_empty() {
            return fail(tw_status::InvalidArgument, format_args!("{F}: `name` is empty"));
        }
        let mut map = registry.breakers();
        if map.contains_key(name) {
            return fail(tw_status::InvalidArgument, format_args!("{F}: a breaker named \"{name}\" is registered already"));
        }
        map.insert(name.to_owned(), Borrowed(breaker));
        tw_status::Ok
    })
}

/// Writes every named breaker's state and counters in the Prometheus text
/// exposition format (version 0.0.4) to `buf`, as `snprintf` does: at most
/// `cap` bytes, the text cut at `cap - 1` bytes if longer, always followed
/// by a NUL when `cap` > 0; `*len` gets the text's whole length (without
/// the NUL). So `*len >= cap` means the text was cut: call again with a
/// buffer of at least `*len + 1` bytes (a little more, as counters may
/// grow a digit meanwhile). An empty registry gives the empty text.
///
/// The text is what a Rust `Registry` holding the same breakers gives
/// from `prometheus()`: `tripwire_breaker_state` (a gauge per state),
/// `tripwire_breaker_calls_total` by `outcome`,
/// `tripwire_breaker_rejected_total`, `tripwire_breaker_slow_calls_total`
/// and `tripwire_breaker_transitions_total`, each labelled
/// `breaker="<name>"`, sorted by name. Each breaker's counters are read
/// separately (see `tw_snapshot`).
///
/// `buf` may be NULL only when `cap` is 0 (to ask for the length);
/// `registry` and `len` must not be NULL. Allocates (the text, once) and
/// takes the registry's lock. Thread-safe.
///
/// # Safety
/// `registry` is NULL or a live handle; `buf` is NULL or points to `cap`
/// writable bytes; `len` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_registry_prometheus(
    registry: *const tw_registry,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> tw_status {
    const F: &str = "tw_registry_prometheus";
    ffi_body!(F; {
        let registry = handle!(F, registry);
        let len = arg!(F, len);
        if cap > 0 && buf.is_null() {
            return fail(tw_status::NullArgument, format_args!("{F}: `buf` is NULL and `cap` = {cap}, not 0"));
        }
        let text = registry.prometheus();
        if cap > 0 {
            let n = text.len().min(cap - 1);
            // SAFETY:
            // - `buf` is non-null (checked) with `cap` > `n` writable bytes
            //   (the caller's guarantee); `text` is a distinct allocation.
            unsafe {
                core::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
                buf.add(n).write(0);
            }
        }
        // SAFETY:
        // - Non-null (checked), writable (the caller's guarantee).
        unsafe { len.write(text.len()) };
        tw_status::Ok
    })
}
