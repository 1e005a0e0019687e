//! Status codes, the last error message, and the boundary every exported
//! function runs inside.

use core::cell::Cell;
use core::ffi::c_char;
use core::fmt::{self, Write};

/// What a fallible function did. Every fallible function returns one.
///
/// The values are fixed forever: a new status gets a new number, and no
/// number is ever reused or changed. `TW_STATUS_OK` is 0.
///
/// On any status but `TW_STATUS_OK` and `TW_STATUS_REJECTED`,
/// `tw_last_error_message()` explains what went wrong.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_status {
    /// Success.
    Ok = 0,
    /// The breaker refused the call (not an error: the breaker is doing
    /// its job). The rejection out-parameter says why and for how long.
    Rejected = 1,
    /// A pointer argument that must not be NULL was NULL.
    NullArgument = 2,
    /// An argument was out of range (e.g. an unknown `tw_outcome`).
    InvalidArgument = 3,
    /// A `tw_breaker_config` field was out of range; the message names it.
    InvalidConfig = 4,
    /// The shared memory is not aligned as `tw_breaker_layout` asks.
    RegionMisaligned = 5,
    /// The shared memory is shorter than `tw_breaker_layout` asks.
    RegionTooSmall = 6,
    /// The shared region has not been initialised (it is all zeros).
    RegionUninitialised = 7,
    /// Another process is initialising the shared region: retry shortly.
    RegionInitialising = 8,
    /// `tw_breaker_init_in` found a region that already holds a breaker.
    RegionAlreadyInitialised = 9,
    /// The memory does not hold a tripwire region (wrong magic number), or
    /// an `_init_in` found memory that is not zero-filled (it is left as
    /// it was).
    RegionInvalid = 10,
    /// The region was made by a build with another layout version.
    RegionVersionMismatch = 11,
    /// The region's header, config, state word or deadline slots do not
    /// make sense.
    RegionCorrupt = 12,
    /// `tw_breaker_open_in` found a breaker made with another config.
    RegionConfigMismatch = 13,
    /// A bug in tripwire: a Rust panic was caught at the boundary. Please
    /// report it with the message.
    Panic = 14,
    /// A config struct's `struct_size` is no layout this library can read:
    /// smaller than the first, between two, garbage, or a newer header's
    /// struct that sets fields this library does not know. The message
    /// names the struct.
    InvalidStructSize = 15,
}

/// The longest message kept, terminating NUL included; longer ones are cut.
const MESSAGE_CAP: usize = 512;

const fn message(text: &[u8]) -> [u8; MESSAGE_CAP] {
    let mut buf = [0u8; MESSAGE_CAP];
    let mut i = 0;
    while i < text.len() && i < MESSAGE_CAP - 1 {
        buf[i] = text[i];
        i += 1;
    }
    buf
}

thread_local! {
    /// This thread's last error message, NUL-terminated. A fixed buffer:
    /// setting a message allocates nothing.
    static LAST_ERROR: Cell<[u8; MESSAGE_CAP]> = const { Cell::new(message(b"no error")) };
}

/// Shown when the thread's storage is already gone (the thread is exiting).
static NO_STORAGE: &[u8] = b"no error message: thread-local storage is gone\0";

/// Writes into a fixed buffer, cutting at a character boundary.
struct Truncating {
    buf: [u8; MESSAGE_CAP],
    len: usize,
}

impl Write for Truncating {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = MESSAGE_CAP - 1 - self.len;
        let mut take = s.len().min(room);
        while !s.is_char_boundary(take) {
            take -= 1;
        }
        // A NUL inside the text would end the C string early: show it as '?'.
        for (dst, &b) in self.buf[self.len..self.len + take].iter_mut().zip(s.as_bytes()) {
            *dst = if b == 0 { b'?' } else { b };
        }
        self.len += take;
        Ok(())
    }
}

/// Sets this thread's last error message.
#[cold]
pub(crate) fn set_error(args: fmt::Arguments<'_>) {
    let mut w = Truncating { buf: [0; MESSAGE_CAP], len: 0 };
    let _ = w.write_fmt(args);
    // Nothing to report to if the thread is exiting.
    let _ = LAST_ERROR.try_with(|cell| cell.set(w.buf));
}

/// Sets the message and returns `status`: `return fail(...)` in a body.
#[cold]
pub(crate) fn fail(status: tw_status, args: fmt::Arguments<'_>) -> tw_status {
    set_error(args);
    status
}

/// The thread's message buffer (or a fixed text if it is gone).
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|cell| cell.as_ptr().cast::<c_char>().cast_const())
        .unwrap_or(NO_STORAGE.as_ptr().cast())
}

/// Runs an exported function's body, turning a panic into `on_panic` with
/// a message instead of unwinding into C. Use through [`ffi_body!`].
#[inline(always)]
pub(crate) fn boundary<R>(name: &str, on_panic: R, body: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(core::panic::AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(_) => {
            set_error(format_args!("{name}: internal error (a Rust panic was caught); please report it"));
            on_panic
        }
    }
}

/// The boundary macro: every exported function's whole body goes through
/// it. `ffi_body!(name; { ... })` for functions returning `tw_status` (a
/// panic becomes `TW_STATUS_PANIC`); `ffi_body!(name, on_panic = v; { ... })`
/// for the few that return something else. Inside, [`arg!`] checks
/// pointers; `return` leaves the body with a value.
macro_rules! ffi_body {
    ($name:expr; $body:block) => {
        $crate::status::boundary($name, $crate::status::tw_status::Panic, || -> $crate::status::tw_status {
            $body
        })
    };
    ($name:expr, on_panic = $on_panic:expr; $body:block) => {
        $crate::status::boundary($name, $on_panic, || $body)
    };
}

/// Checks a pointer argument inside [`ffi_body!`]: returns
/// `TW_STATUS_NULL_ARGUMENT` with a message naming it if it is NULL.
/// `arg!(name, p)` gives the non-null raw pointer; `arg!(name, &p)` a
/// shared reference to the pointee.
macro_rules! arg {
    ($fn_name:expr, & $p:ident) => {{
        let p = $crate::status::arg!($fn_name, $p);
        // SAFETY:
        // - `p` is non-null (checked just above).
        // - The exported function's `# Safety` section makes the caller
        //   guarantee that a non-null argument points to a valid, live,
        //   suitably aligned value for the duration of the call, which no
        //   one writes non-atomically meanwhile.
        unsafe { &*p }
    }};
    ($fn_name:expr, $p:ident) => {{
        if $p.is_null() {
            return $crate::status::fail(
                $crate::status::tw_status::NullArgument,
                format_args!("{}: `{}` is NULL", $fn_name, stringify!($p)),
            );
        }
        $p
    }};
}

pub(crate) use {arg, ffi_body};

/// A description of the last failure on the calling thread: a
/// NUL-terminated UTF-8 string, e.g. `"tw_breaker_new: invalid breaker
/// config: half_open_max = 0, expected 1 to 10"`.
///
/// Set by every call that returns a status other than `TW_STATUS_OK` and
/// `TW_STATUS_REJECTED` (rejections are the hot path and set nothing);
/// successful calls leave it alone. Reads `"no error"` before the first
/// failure.
///
/// Ownership: the string belongs to the library. It stays valid and
/// unchanged until the next failing tripwire call on the same thread
/// (copy it to keep it) and must not be freed. Never NULL. Thread-safe:
/// each thread has its own.
#[unsafe(no_mangle)]
pub extern "C" fn tw_last_error_message() -> *const c_char {
    ffi_body!("tw_last_error_message", on_panic = NO_STORAGE.as_ptr().cast(); { last_error_ptr() })
}

/// The name of a status, e.g. `"TW_STATUS_INVALID_CONFIG"`, or
/// `"TW_STATUS_UNKNOWN"` for a value this library does not define.
/// `status` is a `tw_status`, taken as an integer so that any value is safe.
///
/// Ownership: a static string; never NULL, never freed.
#[unsafe(no_mangle)]
pub extern "C" fn tw_status_name(status: u32) -> *const c_char {
    ffi_body!("tw_status_name", on_panic = c"TW_STATUS_UNKNOWN".as_ptr(); {
        let name = match status {
            0 => c"TW_STATUS_OK",
            1 => c"TW_STATUS_REJECTED",
            2 => c"TW_STATUS_NULL_ARGUMENT",
            3 => c"TW_STATUS_INVALID_ARGUMENT",
            4 => c"TW_STATUS_INVALID_CONFIG",
            5 => c"TW_STATUS_REGION_MISALIGNED",
            6 => c"TW_STATUS_REGION_TOO_SMALL",
            7 => c"TW_STATUS_REGION_UNINITIALISED",
            8 => c"TW_STATUS_REGION_INITIALISING",
            9 => c"TW_STATUS_REGION_ALREADY_INITIALISED",
            10 => c"TW_STATUS_REGION_INVALID",
            11 => c"TW_STATUS_REGION_VERSION_MISMATCH",
            12 => c"TW_STATUS_REGION_CORRUPT",
            13 => c"TW_STATUS_REGION_CONFIG_MISMATCH",
            14 => c"TW_STATUS_PANIC",
            15 => c"TW_STATUS_INVALID_STRUCT_SIZE",
            _ => c"TW_STATUS_UNKNOWN",
        };
        name.as_ptr()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::ffi::CStr;

    fn last() -> &'static str {
        // SAFETY:
        // - `last_error_ptr` returns a NUL-terminated buffer that lives as
        //   long as the thread, and this test sets no message meanwhile.
        unsafe { CStr::from_ptr(last_error_ptr()) }.to_str().unwrap()
    }

    #[test]
    fn long_messages_are_cut_at_a_character_boundary_and_nuls_are_masked() {
        let long = "é".repeat(MESSAGE_CAP);
        set_error(format_args!("x{long}"));
        let got = last();
        assert!(got.len() < MESSAGE_CAP && got.len() >= MESSAGE_CAP - 3, "{}", got.len());
        set_error(format_args!("a\0b"));
        assert_eq!(last(), "a?b");
    }

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let status = boundary("tw_test", tw_status::Panic, || -> tw_status { panic!("boom") });
        assert_eq!(status, tw_status::Panic);
        assert_eq!(last(), "tw_test: internal error (a Rust panic was caught); please report it");
    }

    #[test]
    fn every_status_has_its_header_name() {
        // SAFETY:
        // - `tw_status_name` returns static NUL-terminated strings.
        let name = |s| unsafe { CStr::from_ptr(tw_status_name(s)) }.to_str().unwrap();
        assert_eq!(name(tw_status::Ok as u32), "TW_STATUS_OK");
        assert_eq!(name(tw_status::Panic as u32), "TW_STATUS_PANIC");
        assert_eq!(name(tw_status::InvalidStructSize as u32), "TW_STATUS_INVALID_STRUCT_SIZE");
        assert_eq!(name(16), "TW_STATUS_UNKNOWN");
    }
}
