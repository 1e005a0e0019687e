//! `tw_fleet_*`: the fleet link of the Rust `tripwire-fleet` crate for C
//! breakers. Everything it does is the Rust implementation's; this file
//! checks pointers and strings, and turns counters into a C struct.

use core::ffi::{CStr, c_char};
use core::time::Duration;

use tripwire::{Breaker, MonotonicClock};
use tripwire_fleet::{AsBreaker, Fleet, FleetConfig, FleetError, RejectReason};

use crate::breaker::tw_breaker;
use crate::status::{arg, fail, ffi_body, tw_status};
use crate::struct_size::{Versioned, read_in, write_out};

/// A link from this process's breakers to the other hosts of a fleet,
/// through Redis. Opaque; made by `tw_fleet_new`, freed by `tw_fleet_free`.
/// Every function taking a `const tw_fleet *` is thread-safe.
pub struct tw_fleet {
    _opaque: [u8; 0],
}

/// Optional settings of `tw_fleet_new`: a zero (or NULL) field keeps the
/// default. Start from `tw_fleet_options_default()`, which zeroes it and
/// sets `struct_size`: the library reads that many bytes, by the rules of
/// `tw_breaker_config` (one layout so far, `sizeof(tw_fleet_options)`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_fleet_options {
    /// The size of the struct in the caller's header:
    /// `tw_fleet_options_default()` sets it; leave it alone.
    pub struct_size: u32,
    /// Must be 0: keeps the struct free of padding.
    pub reserved: u32,
    /// The ACL user (NUL-terminated), or NULL.
    pub username: *const c_char,
    /// The password (`AUTH`, NUL-terminated), or NULL.
    pub password: *const c_char,
    /// How long before a cool-down ends the lease is asked for (default 100 ms).
    pub lease_lead_ns: u64,
    /// How long a probe may take before another host probes (default 10 s).
    pub probe_timeout_ns: u64,
    /// How old (or how far ahead of Redis's clock) a message may be (default 5 s).
    pub max_skew_ns: u64,
    /// How long opening a connection may take (default 500 ms).
    pub connect_timeout_ns: u64,
    /// How long one command may take (default 500 ms).
    pub io_timeout_ns: u64,
}

const _: () = assert!(
    size_of::<tw_fleet_options>() == 8 + 2 * size_of::<*const c_char>() + 5 * 8,
    "tw_fleet_options has padding"
);

// SAFETY:
// - `#[repr(C)]`, `struct_size: u32` first, no padding (asserted above),
//   integers and raw pointers only; one size, a multiple of 8 (two
//   pointers of 4 or 8 bytes).
unsafe impl Versioned for tw_fleet_options {
    const NAME: &'static str = "tw_fleet_options";
    const SIZES: &'static [usize] = &[size_of::<tw_fleet_options>()];
    fn defaults() -> Self {
        tw_fleet_options {
            struct_size: size_of::<tw_fleet_options>() as u32,
            reserved: 0,
            username: core::ptr::null(),
            password: core::ptr::null(),
            lease_lead_ns: 0,
            probe_timeout_ns: 0,
            max_skew_ns: 0,
            connect_timeout_ns: 0,
            io_timeout_ns: 0,
        }
    }
}

/// Fills the first `size` bytes at `out` with the default options (every
/// field zero or NULL: the defaults) and sets `struct_size` to `size`: what
/// `tw_fleet_options_default(out)` does with `size = sizeof *out`. `size`
/// is checked as for `tw_breaker_config_init`. `out` must not be NULL.
///
/// # Safety
/// `out` is NULL or points to `size` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_fleet_options_init(out: *mut tw_fleet_options, size: usize) -> tw_status {
    ffi_body!("tw_fleet_options_init"; {
        let out = arg!("tw_fleet_options_init", out);
        // SAFETY:
        // - Non-null (checked), `size` writable bytes (the caller's guarantee).
        unsafe { write_out("tw_fleet_options_init", out, size, tw_fleet_options::defaults()) }
    })
}

/// The header's `static inline tw_fleet_options_default(out)`, for Rust
/// callers of this crate: `tw_fleet_options_init` with this crate's layout.
///
/// # Safety
/// `out` is NULL or writable.
pub unsafe fn tw_fleet_options_default(out: *mut tw_fleet_options) -> tw_status {
    // SAFETY: the caller's guarantee, for this crate's size.
    unsafe { tw_fleet_options_init(out, size_of::<tw_fleet_options>()) }
}

/// A fleet link's counters at one moment.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct tw_fleet_stats {
    /// Messages published.
    pub sent: u64,
    /// Messages from other hosts, checked and taken.
    pub received: u64,
    /// Messages that could not be published (the link was down).
    pub dropped: u64,
    /// Received messages refused: not of the format.
    pub rejected_malformed: u64,
    /// Received messages refused: not signed with the fleet's key.
    pub rejected_signature: u64,
    /// Received messages refused: sent too long ago.
    pub rejected_stale: u64,
    /// Received messages refused: sent too far ahead of this host's clock.
    pub rejected_future: u64,
    /// Received messages refused: taken once already.
    pub rejected_replayed: u64,
    /// States of the fleet put into a local breaker.
    pub applied: u64,
    /// Probe leases won.
    pub leases_won: u64,
    /// Probe leases held by another host when asked for.
    pub leases_lost: u64,
    /// Connections made again.
    pub reconnects: u64,
    /// 1 while the publishing connection is up.
    pub publisher_up: u8,
    /// 1 while the subscribed connection is up.
    pub subscriber_up: u8,
}

/// A C caller's breaker, which the caller keeps alive until the fleet is
/// freed (`tw_fleet_join`'s contract).
struct Borrowed(*const Breaker);

// SAFETY:
// - A `Breaker` is `Sync` (atomics only); `tw_fleet_join`'s caller
//   guarantees the pointee outlives the fleet, whose threads are the only
//   users of this pointer, and stop in `tw_fleet_free`.
unsafe impl Send for Borrowed {}
// SAFETY: as for `Send`.
unsafe impl Sync for Borrowed {}

impl AsBreaker for Borrowed {
    fn as_breaker(&self) -> &Breaker {
        // SAFETY:
        // - Non-null and live until the fleet is freed (`tw_fleet_join`'s
        //   contract); used through shared references only.
        unsafe { &*self.0 }
    }
}

/// A NUL-terminated UTF-8 argument as `&str`, or a failed status naming it.
///
/// # Safety
/// `p` is non-null and points to a NUL-terminated string.
unsafe fn text<'a>(f: &str, field: &str, p: *const c_char) -> Result<&'a str, tw_status> {
    // SAFETY: the caller's guarantee.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| fail(tw_status::InvalidArgument, format_args!("{f}: `{field}` is not UTF-8")))
}

/// Makes a fleet link to the Redis at `url` (`redis://[user:pass@]host:port`)
/// for the namespace `ns`, signing with the `key_len` bytes at `key` (at
/// least 16, not one byte repeated, shared by every host), with
/// `*options` (NULL: defaults), and writes its handle to `*out`.
/// Connecting happens on the link's threads: this returns at once, whether
/// Redis is up or not (`tw_fleet_last_error` then says why it is down).
///
/// Returns `TW_STATUS_INVALID_ARGUMENT` with a message naming the setting if
/// one is out of range or the URL does not parse, and
/// `TW_STATUS_INVALID_STRUCT_SIZE` if `options->struct_size` is no layout
/// this library reads; `*out` is written only on
/// success. `url`, `ns`, `key` and `out` must not be NULL. Thread-safe.
///
/// # Safety
/// `url` and `ns` are NULL or NUL-terminated strings; `key` is NULL or
/// points to `key_len` readable bytes; `options` is NULL or points to a
/// readable `tw_fleet_options` of `struct_size` bytes whose strings are
/// NULL or NUL-terminated;
/// `out` is NULL or points to a writable `tw_fleet *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_fleet_new(
    url: *const c_char,
    ns: *const c_char,
    key: *const u8,
    key_len: usize,
    options: *const tw_fleet_options,
    out: *mut *mut tw_fleet,
) -> tw_status {
    const F: &str = "tw_fleet_new";
    ffi_body!(F; {
        let (url, ns, key, out) = (arg!(F, url), arg!(F, ns), arg!(F, key), arg!(F, out));
        // SAFETY: non-null (checked) and NUL-terminated (the caller's guarantee).
        let (url, ns) = match unsafe { (text(F, "url", url), text(F, "ns", ns)) } {
            (Ok(u), Ok(n)) => (u, n),
            (Err(s), _) | (_, Err(s)) => return s,
        };
        // SAFETY: non-null (checked), `key_len` readable bytes (caller).
        let key = unsafe { core::slice::from_raw_parts(key, key_len) };
        let mut b = FleetConfig::builder(url, ns, key);
        // The options given (all zero, the defaults, for NULL), for a
        // message naming the field a setting came from.
        let mut given = tw_fleet_options::defaults();
        if !options.is_null() {
            // SAFETY: non-null (checked) and readable for its `struct_size`
            // bytes (the caller's guarantee).
            let o = match unsafe { read_in(F, options) } {
                Ok(o) => o,
                Err(status) => return status,
            };
            if o.reserved != 0 {
                return fail(
                    tw_status::InvalidArgument,
                    format_args!("{F}: options.reserved = {}, expected 0", o.reserved),
                );
            }
            // SAFETY: each non-null string is NUL-terminated (the caller's guarantee).
            let strings = unsafe { (opt_text(F, "options.username", o.username), opt_text(F, "options.password", o.password)) };
            match strings {
                (Ok(user), Ok(password)) => {
                    if let Some(u) = user { b = b.username(u); }
                    if let Some(p) = password { b = b.password(p); }
                }
                (Err(s), _) | (_, Err(s)) => return s,
            }
            let ns_or = |ns: u64| (ns != 0).then(|| Duration::from_nanos(ns));
            if let Some(d) = ns_or(o.lease_lead_ns) { b = b.lease_lead(d); }
            if let Some(d) = ns_or(o.probe_timeout_ns) { b = b.probe_timeout(d); }
            if let Some(d) = ns_or(o.max_skew_ns) { b = b.max_skew(d); }
            if let Some(d) = ns_or(o.connect_timeout_ns) { b = b.connect_timeout(d); }
            if let Some(d) = ns_or(o.io_timeout_ns) { b = b.io_timeout(d); }
            given = o;
        }
        let fleet = match b.build().and_then(Fleet::new) {
            Ok(f) => f,
            Err(FleetError::Config(e)) => {
                let Some((name, value)) = c_setting(e.field(), ns, key, &given) else {
                    return fail(tw_status::InvalidArgument, format_args!("{F}: {e}"));
                };
                return fail(
                    tw_status::InvalidArgument,
                    format_args!("{F}: fleet setting `{name}` = {value}: must be {}", e.expected()),
                );
            }
            Err(e) => return fail(tw_status::InvalidArgument, format_args!("{F}: {e}")),
        };
        let raw = Box::into_raw(Box::new(fleet)).cast::<tw_fleet>();
        // SAFETY: `out` is non-null (checked) and writable (the caller's guarantee).
        unsafe { out.write(raw) };
        tw_status::Ok
    })
}

/// The `tw_fleet_new` argument or `tw_fleet_options` field behind the
/// core's setting `field`, and the value the caller gave it, so that a
/// message names what C wrote (`options.probe_timeout_ns` = 1, not the
/// builder's `probe_timeout`); None for a setting C cannot give.
fn c_setting(field: &str, ns: &str, key: &[u8], o: &tw_fleet_options) -> Option<(&'static str, String)> {
    let (name, ns_value) = match field {
        "namespace" => return Some(("ns", format!("{ns:?}"))),
        // Too short: its length; long enough, its bytes are the matter
        // (one byte repeated), told without the key itself.
        "key" if key.len() < tripwire_fleet::MIN_KEY_LEN => return Some(("key_len", key.len().to_string())),
        "key" => return Some(("key", format!("{} bytes of 0x{:02x}", key.len(), key[0]))),
        "lease_lead" => ("options.lease_lead_ns", o.lease_lead_ns),
        "probe_timeout" => ("options.probe_timeout_ns", o.probe_timeout_ns),
        "max_skew" => ("options.max_skew_ns", o.max_skew_ns),
        "connect_timeout" => ("options.connect_timeout_ns", o.connect_timeout_ns),
        "io_timeout" => ("options.io_timeout_ns", o.io_timeout_ns),
        _ => return None,
    };
    Some((name, ns_value.to_string()))
}

/// As [`text`], for a string that may be NULL (`None`).
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
unsafe fn opt_text<'a>(f: &str, field: &str, p: *const c_char) -> Result<Option<&'a str>, tw_status> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null (checked); the caller's guarantee for the rest.
    unsafe { text(f, field, p) }.map(Some)
}

/// The fleet behind a non-null handle.
///
/// # Safety
/// `f` is a live handle from `tw_fleet_new`.
unsafe fn fleet_ref<'a>(f: *const tw_fleet) -> &'a Fleet {
    // SAFETY: a live handle points to a `Fleet` made by `tw_fleet_new`,
    // used only through shared references until `tw_fleet_free`.
    unsafe { &*f.cast::<Fleet>() }
}

/// Joins `breaker` to the fleet under `name` (1 to 255 bytes, NUL-terminated
/// UTF-8): its trips, holds and closes go to the other hosts (looked at
/// every 5 ms), and theirs come into it. The breaker's callers must read
/// `CLOCK_MONOTONIC` (the plain calls, or `_at` calls with its time).
///
/// The breaker (heap or shared memory) must stay alive until the fleet is
/// freed: free the fleet first. Returns `TW_STATUS_INVALID_ARGUMENT` if the
/// name is empty, too long, not UTF-8 or joined already. No pointer may be
/// NULL. Thread-safe.
///
/// # Safety
/// `fleet` is NULL or a live handle; `name` is NULL or NUL-terminated;
/// `breaker` is NULL or a live handle that outlives `fleet`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_fleet_join(
    fleet: *const tw_fleet,
    name: *const c_char,
    breaker: *const tw_breaker,
) -> tw_status {
    const F: &str = "tw_fleet_join";
    ffi_body!(F; {
        let (fleet, name, breaker) = (arg!(F, fleet), arg!(F, name), arg!(F, breaker));
        // SAFETY: non-null (checked), NUL-terminated (the caller's guarantee).
        let name = match unsafe { text(F, "name", name) } {
            Ok(n) => n,
            Err(s) => return s,
        };
        let borrowed = std::sync::Arc::new(Borrowed(breaker.cast::<Breaker>()));
        // SAFETY: non-null (checked) and live (the caller's guarantee).
        match unsafe { fleet_ref(fleet) }.join_core(name, borrowed, MonotonicClock) {
            Ok(()) => tw_status::Ok,
            Err(e) => fail(tw_status::InvalidArgument, format_args!("{F}: {e}")),
        }
    })
}

/// Writes the link's counters to `*out`. Neither pointer may be NULL.
/// Thread-safe.
///
/// # Safety
/// `fleet` is NULL or a live handle; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_fleet_snapshot(fleet: *const tw_fleet, out: *mut tw_fleet_stats) -> tw_status {
    const F: &str = "tw_fleet_snapshot";
    ffi_body!(F; {
        let (fleet, out) = (arg!(F, fleet), arg!(F, out));
        // SAFETY: non-null (checked) and live (the caller's guarantee).
        let s = unsafe { fleet_ref(fleet) }.snapshot();
        let stats = tw_fleet_stats {
            sent: s.sent,
            received: s.received,
            dropped: s.dropped,
            rejected_malformed: s.rejected(RejectReason::Malformed),
            rejected_signature: s.rejected(RejectReason::Signature),
            rejected_stale: s.rejected(RejectReason::Stale),
            rejected_future: s.rejected(RejectReason::Future),
            rejected_replayed: s.rejected(RejectReason::Replayed),
            applied: s.applied,
            leases_won: s.leases_won,
            leases_lost: s.leases_lost,
            reconnects: s.reconnects,
            publisher_up: s.publisher_up as u8,
            subscriber_up: s.subscriber_up as u8,
        };
        // SAFETY: non-null (checked) and writable (the caller's guarantee).
        unsafe { out.write(stats) };
        tw_status::Ok
    })
}

/// Writes why the link last failed to `buf`, as `snprintf` does: at most
/// `cap` bytes, the UTF-8 text cut (at a character boundary) to fit
/// `cap - 1` bytes if longer, always followed by a NUL when `cap` > 0;
/// `*len` gets the text's whole length (without the NUL), so `*len >= cap`
/// means it was cut. Until the link fails the text is empty (`*len` = 0).
///
/// The text is the Rust `Fleet::last_error`: the connection, the step and
/// the reason (`"subscriber: AUTH failed: WRONGPASS ..."`, `"publisher:
/// SELECT 99: ... DB index is out of range"`, `"publisher: connect:
/// Connection refused (os error 111)"`), a connection dropped, or messages
/// that keep failing the signature check. It stays once the link is up
/// again (`tw_fleet_snapshot` says whether it is); the password is never in
/// it. `tw_fleet_connect_failures` counts the failed attempts.
///
/// `buf` may be NULL only when `cap` is 0 (to ask for the length); `fleet`
/// and `len` must not be NULL. Allocates (a copy of the text). Thread-safe.
///
/// # Safety
/// `fleet` is NULL or a live handle; `buf` is NULL or points to `cap`
/// writable bytes; `len` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_fleet_last_error(
    fleet: *const tw_fleet,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> tw_status {
    const F: &str = "tw_fleet_last_error";
    ffi_body!(F; {
        let (fleet, len) = (arg!(F, fleet), arg!(F, len));
        if cap > 0 && buf.is_null() {
            return fail(tw_status::NullArgument, format_args!("{F}: `buf` is NULL and `cap` = {cap}, not 0"));
        }
        // SAFETY: non-null (checked) and live (the caller's guarantee).
        let text = unsafe { fleet_ref(fleet) }.last_error().unwrap_or_default();
        if cap > 0 {
            let mut n = text.len().min(cap - 1);
            while !text.is_char_boundary(n) {
                n -= 1;
            }
            // SAFETY:
            // - `buf` is non-null (checked) with `cap` > `n` writable bytes
            //   (the caller's guarantee); `text` is a distinct allocation.
            unsafe {
                core::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
                buf.add(n).write(0);
            }
        }
        // SAFETY: non-null (checked), writable (the caller's guarantee).
        unsafe { len.write(text.len()) };
        tw_status::Ok
    })
}

/// Writes to `*out` how many attempts to connect have failed, by either
/// of the link's connections (refused, timed out, a log-in or `SELECT`
/// refused): `tw_fleet_last_error` says why. Neither pointer may be NULL.
/// Thread-safe.
///
/// # Safety
/// `fleet` is NULL or a live handle; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_fleet_connect_failures(fleet: *const tw_fleet, out: *mut u64) -> tw_status {
    const F: &str = "tw_fleet_connect_failures";
    ffi_body!(F; {
        let (fleet, out) = (arg!(F, fleet), arg!(F, out));
        // SAFETY: non-null (checked) and live (the caller's guarantee).
        let n = unsafe { fleet_ref(fleet) }.snapshot().connect_failures;
        // SAFETY: non-null (checked) and writable (the caller's guarantee).
        unsafe { out.write(n) };
        tw_status::Ok
    })
}

/// Stops the link's threads and frees the fleet; the joined breakers go on
/// as plain local breakers. Returns within the longer of
/// `options.connect_timeout_ns` and `options.io_timeout_ns` (500 ms each by
/// default), plus 0.1 s, however the server behaves (one that accepts and
/// never answers included). NULL is allowed and
/// does nothing. No other thread may use the handle meanwhile or after.
///
/// # Safety
/// `fleet` is NULL or a live handle from `tw_fleet_new`, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_fleet_free(fleet: *mut tw_fleet) {
    ffi_body!("tw_fleet_free", on_panic = (); {
        if !fleet.is_null() {
            // SAFETY: a live handle comes from `Box::into_raw` in
            // `tw_fleet_new`; the caller guarantees it is not used again.
            drop(unsafe { Box::from_raw(fleet.cast::<Fleet>()) });
        }
    })
}
