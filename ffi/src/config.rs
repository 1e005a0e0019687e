//! `tw_breaker_config`: the breaker's config as a plain C struct, mapped
//! onto the core's builder so that every rule is checked in one place.
//!
//! The struct is versioned by its `struct_size` (`struct_size.rs`): adding a
//! field means appending it (keeping the struct free of padding: u32s in
//! pairs), a new `TW_BREAKER_CONFIG_SIZE_V<n>` that ends after it and an
//! entry in [`Versioned::SIZES`], reading it back in [`from_core`], and one
//! builder call in [`to_core`] whose default is the behaviour without the
//! field. Programs built against an older header keep working unchanged.

use core::mem::offset_of;
use core::time::Duration;

use tripwire::{BreakerConfig, breaker::RollingWindow, clock::duration_ns};

use crate::handle::handle;
use crate::status::{arg, fail, ffi_body, tw_status};
use crate::struct_size::{Versioned, read_in, write_out};
use crate::tw_breaker;

/// How a breaker decides to trip and to recover. Durations are `uint64_t`
/// nanoseconds.
///
/// Always start from `tw_breaker_config_default()`, then change the fields
/// you care about. It sets `struct_size` to `sizeof(tw_breaker_config)` as
/// your header declares it, and the library reads that many bytes and no
/// more: a program built against an older header (a smaller struct) gets
/// the defaults for the fields added since; one built against a newer
/// header works with this library as long as it leaves the newer fields at
/// zero, and gets `TW_STATUS_INVALID_STRUCT_SIZE` otherwise. The sizes
/// this library reads are `TW_BREAKER_CONFIG_SIZE_V1` (up to
/// `reserved`), `_V2` (up to `min_calls`), `_V3` (up to
/// `count_window`) and `_V4` (up to `max_hold_ns`); any other `struct_size` is
/// `TW_STATUS_INVALID_STRUCT_SIZE`, with a message naming
/// `tw_breaker_config.struct_size`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct tw_breaker_config {
    /// The size of the struct in the caller's header:
    /// `tw_breaker_config_default()` sets it; leave it alone.
    pub struct_size: u32,
    /// Consecutive failures that trip a Closed breaker (1 to 65535; default
    /// 5); 0 turns the condition off when a rate condition is set.
    pub failure_threshold: u32,
    /// Probes allowed in flight at once in Half-Open (1 to 10; default 1).
    pub half_open_max: u32,
    /// Successful probes that close a Half-Open breaker (1 to
    /// `half_open_max`; default 1).
    pub half_open_successes: u32,
    /// The cool-down after a trip (1 µs to 7 days; default 30 s).
    pub open_timeout_ns: u64,
    /// The cap on the growing cool-down (`open_timeout_ns` to 7 days); 0
    /// (the default) means equal to `open_timeout_ns`.
    pub open_timeout_max_ns: u64,
    /// Factor applied to the cool-down on each re-open from Half-Open (1.0
    /// to 1000.0; default 1.0: no growth), up to `open_timeout_max_ns`,
    /// which a factor above 1.0 needs set (non-zero).
    pub open_timeout_growth: f64,
    /// Fraction of the cool-down that jitter may take off (0.0 to below
    /// 1.0; default 0.0), so that processes do not probe in one instant.
    pub open_timeout_jitter: f64,
    /// Seed mixed into the jitter (default 0).
    pub jitter_seed: u64,
    /// 1 to count successes in the snapshot (default), 0 not to: a Closed
    /// breaker's success path then writes nothing at all.
    pub count_successes: u32,
    /// Must be 0: keeps the struct free of padding. The end of
    /// `TW_BREAKER_CONFIG_SIZE_V1`.
    pub reserved: u32,
    /// Width of one bucket of the rolling window (1 ms to 1 h; default 1 s).
    pub window_bucket_ns: u64,
    /// Failure rate over the rolling window that trips the breaker (above
    /// 0, at most 1; default 0: off), once the window holds `min_calls`.
    /// Compared exactly, in integers: a rate of k/n (0.28 = 7/25) trips at
    /// exactly k failures of n calls, for every n up to 23,170; any other
    /// rate is taken as the simplest fraction within 2^-30 of it.
    pub failure_rate: f64,
    /// Calls at least this long count as slow (1 µs to 7 days; default 0:
    /// not measured). Measuring reads the clock on admission and record.
    pub slow_call_ns: u64,
    /// Slow-call rate over the rolling window that trips the breaker (above
    /// 0, at most 1; default 0: off), compared as `failure_rate` is. Needs
    /// `slow_call_ns`.
    pub slow_rate: f64,
    /// Buckets in the rolling window (1 to 32; default 10).
    pub window_buckets: u32,
    /// Calls the window must hold before a rate can trip (1 to 1,000,000;
    /// default 10; at most `count_window` for a count-based window). The
    /// end of `TW_BREAKER_CONFIG_SIZE_V2`.
    pub min_calls: u32,
    /// Which rolling window the rates are measured over, a
    /// `tw_window_kind`: `TW_WINDOW_KIND_TIME` (0, the default:
    /// `window_buckets` × `window_bucket_ns`) or `TW_WINDOW_KIND_COUNT` (1:
    /// the last `count_window` calls, with no clock read on success).
    pub window_kind: u32,
    /// A count-based window's calls (1 to 1000); must be 0 (the default)
    /// for a time-based window. The end of `TW_BREAKER_CONFIG_SIZE_V3`.
    pub count_window: u32,
    /// How long a Half-Open probe may run before it counts as lost and the
    /// next call may take over as a new probe (1 µs to 7 days; 0, the
    /// default, means 60 s). Independent of the cool-down: set it above
    /// the longest a probe can take (every attempt's timeout plus the
    /// pauses, where retries run inside the breaker).
    pub probe_timeout_ns: u64,
    /// The longest hold a server's backpressure may place
    /// (`tw_breaker_hold`, `tw_http_assess`): a longer `Retry-After` holds
    /// this long and is counted in `capped_holds` (1 µs to 7 days; 0, the
    /// default, means one hour). The end of `TW_BREAKER_CONFIG_SIZE_V4`.
    pub max_hold_ns: u64,
}

/// `tw_breaker_config.struct_size` of the first layout: the fields up to
/// `reserved` (the cool-down, probes and success counting).
pub const TW_BREAKER_CONFIG_SIZE_V1: u32 = 64;
/// `tw_breaker_config.struct_size` with the time-based rolling window and
/// its rates: the fields up to `min_calls`.
pub const TW_BREAKER_CONFIG_SIZE_V2: u32 = 104;
/// `tw_breaker_config.struct_size` with the choice of window
/// (`window_kind`, `count_window`).
pub const TW_BREAKER_CONFIG_SIZE_V3: u32 = 112;
/// `tw_breaker_config.struct_size` with the probe timeout and the longest
/// hold (`probe_timeout_ns`, `max_hold_ns`): this header's layout.
pub const TW_BREAKER_CONFIG_SIZE_V4: u32 = 128;

const _: () = {
    assert!(offset_of!(tw_breaker_config, window_bucket_ns) == TW_BREAKER_CONFIG_SIZE_V1 as usize);
    assert!(offset_of!(tw_breaker_config, window_kind) == TW_BREAKER_CONFIG_SIZE_V2 as usize);
    assert!(offset_of!(tw_breaker_config, probe_timeout_ns) == TW_BREAKER_CONFIG_SIZE_V3 as usize);
    assert!(size_of::<tw_breaker_config>() == TW_BREAKER_CONFIG_SIZE_V4 as usize);
    // No padding anywhere, so that every layout ends on a field and no field
    // is ever appended into an older layout's trailing padding.
    assert!(size_of::<tw_breaker_config>() == 10 * 4 + 11 * 8, "tw_breaker_config has padding");
};

// SAFETY:
// - `#[repr(C)]`, `struct_size: u32` first, no padding (asserted above),
//   integers and floats only; the sizes end on fields (asserted above),
//   ascend, are multiples of 8, and the last is the struct's size.
unsafe impl Versioned for tw_breaker_config {
    const NAME: &'static str = "tw_breaker_config";
    const SIZES: &'static [usize] = &[
        TW_BREAKER_CONFIG_SIZE_V1 as usize,
        TW_BREAKER_CONFIG_SIZE_V2 as usize,
        TW_BREAKER_CONFIG_SIZE_V3 as usize,
        TW_BREAKER_CONFIG_SIZE_V4 as usize,
    ];
    fn defaults() -> Self {
        let mut c = from_core(&BreakerConfig::default());
        c.open_timeout_max_ns = 0;
        c.probe_timeout_ns = 0;
        c.max_hold_ns = 0;
        c
    }
}

/// `tw_breaker_config.window_kind`, as a `uint32_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_window_kind {
    /// The calls of the last `window_buckets` buckets of `window_bucket_ns`.
    Time = 0,
    /// The last `count_window` calls.
    Count = 1,
}

/// The C view of a valid core config.
pub(crate) fn from_core(c: &BreakerConfig) -> tw_breaker_config {
    tw_breaker_config {
        struct_size: TW_BREAKER_CONFIG_SIZE_V4,
        failure_threshold: c.failure_threshold(),
        half_open_max: c.half_open_max(),
        open_timeout_ns: duration_ns(c.open_timeout()),
        open_timeout_max_ns: duration_ns(c.open_timeout_max()),
        open_timeout_growth: c.open_timeout_growth(),
        open_timeout_jitter: c.open_timeout_jitter(),
        jitter_seed: c.jitter_seed(),
        half_open_successes: c.half_open_successes(),
        count_successes: c.count_successes().into(),
        reserved: 0,
        window_bucket_ns: duration_ns(c.window().1),
        failure_rate: c.failure_rate(),
        slow_call_ns: duration_ns(c.slow_call()),
        slow_rate: c.slow_rate(),
        window_buckets: c.window().0,
        min_calls: c.min_calls(),
        window_kind: match c.rolling_window() {
            RollingWindow::Time { .. } => tw_window_kind::Time as u32,
            RollingWindow::Count { .. } => tw_window_kind::Count as u32,
        },
        count_window: match c.rolling_window() {
            RollingWindow::Time { .. } => 0,
            RollingWindow::Count { calls } => calls,
        },
        probe_timeout_ns: duration_ns(c.probe_timeout()),
        max_hold_ns: duration_ns(c.max_hold()),
    }
}

/// The core config for a C one, or the status and message of the first
/// field that is wrong. `fn_name` prefixes the message.
pub(crate) fn to_core(c: &tw_breaker_config, fn_name: &str) -> Result<BreakerConfig, tw_status> {
    if c.reserved != 0 {
        return Err(fail(
            tw_status::InvalidConfig,
            format_args!("{fn_name}: invalid breaker config: reserved = {}, expected 0", c.reserved),
        ));
    }
    // The builder takes a bool; refuse anything but 0 and 1 rather than guess.
    if c.count_successes > 1 {
        return Err(fail(
            tw_status::InvalidConfig,
            format_args!(
                "{fn_name}: invalid breaker config: count_successes = {}, expected 0 to 1",
                c.count_successes
            ),
        ));
    }
    // Which window? A count given with a time-based window is a mistake,
    // not something to ignore.
    let count = match c.window_kind {
        k if k == tw_window_kind::Time as u32 && c.count_window == 0 => None,
        k if k == tw_window_kind::Time as u32 => {
            return Err(fail(
                tw_status::InvalidConfig,
                format_args!(
                    "{fn_name}: invalid breaker config: count_window = {}, expected 0 with window_kind \
                     TW_WINDOW_KIND_TIME",
                    c.count_window
                ),
            ));
        }
        k if k == tw_window_kind::Count as u32 => Some(c.count_window),
        other => {
            return Err(fail(
                tw_status::InvalidConfig,
                format_args!(
                    "{fn_name}: invalid breaker config: window_kind = {other}, expected a tw_window_kind (0 to 1)"
                ),
            ));
        }
    };
    let mut b = BreakerConfig::builder()
        .failure_threshold(c.failure_threshold)
        .half_open_max(c.half_open_max)
        .open_timeout(Duration::from_nanos(c.open_timeout_ns))
        .open_timeout_growth(c.open_timeout_growth)
        .open_timeout_jitter(c.open_timeout_jitter)
        .jitter_seed(c.jitter_seed)
        .half_open_successes(c.half_open_successes)
        .count_successes(c.count_successes != 0)
        .window(c.window_buckets, Duration::from_nanos(c.window_bucket_ns))
        .failure_rate(c.failure_rate)
        .slow_call(Duration::from_nanos(c.slow_call_ns))
        .slow_rate(c.slow_rate)
        .min_calls(c.min_calls);
    // 0: the cap stays the builder's default, the cool-down itself.
    if c.open_timeout_max_ns != 0 {
        b = b.open_timeout_max(Duration::from_nanos(c.open_timeout_max_ns));
    }
    // 0: the builder's defaults (60 s, one hour).
    if c.probe_timeout_ns != 0 {
        b = b.probe_timeout(Duration::from_nanos(c.probe_timeout_ns));
    }
    if c.max_hold_ns != 0 {
        b = b.max_hold(Duration::from_nanos(c.max_hold_ns));
    }
    if let Some(calls) = count {
        b = b.count_window(calls);
    }
    b.build().map_err(|e| fail(tw_status::InvalidConfig, format_args!("{fn_name}: {}", e.renamed(c_field))))
}

/// The `tw_breaker_config` field a builder method sets: errors name the
/// field a C caller wrote, with its value in nanoseconds.
fn c_field(builder_method: &'static str) -> &'static str {
    match builder_method {
        "open_timeout" => "open_timeout_ns",
        "open_timeout_max" => "open_timeout_max_ns",
        "slow_call" => "slow_call_ns",
        "window_bucket_width" => "window_bucket_ns",
        "probe_timeout" => "probe_timeout_ns",
        "max_hold" => "max_hold_ns",
        same => same,
    }
}

/// The core config for the caller's struct at `p`, read by its
/// `struct_size` (`struct_size.rs`), or the status and message of what is
/// wrong with it. `fn_name` prefixes the message.
///
/// # Safety
/// `p` is non-null and points to a readable `tw_breaker_config` of the
/// caller's header, `struct_size` bytes long.
pub(crate) unsafe fn core_config(
    p: *const tw_breaker_config,
    fn_name: &str,
) -> Result<BreakerConfig, tw_status> {
    // SAFETY: the caller's guarantee is `read_in`'s.
    let c = unsafe { read_in(fn_name, p) }?;
    to_core(&c, fn_name)
}

/// Fills the first `size` bytes at `out` with the default config and sets
/// `struct_size` to `size`: what `tw_breaker_config_default(out)` does with
/// `size = sizeof *out`. Call that instead; this is the symbol it reaches.
///
/// The default: 5 consecutive failures trip the breaker, 30 s cool-down
/// without growth or jitter, one probe that closes it on success, successes
/// counted; no rate conditions (a time-based 10 × 1 s window and
/// `min_calls` 10 are ready for them).
///
/// `size` must be one of `TW_BREAKER_CONFIG_SIZE_V1`, `_V2`, `_V3`, or
/// larger (a newer header's struct, at most 4096 and a multiple of 8: the
/// bytes past the fields this library knows are zeroed); any other is
/// `TW_STATUS_INVALID_STRUCT_SIZE`. `out` must not be NULL. Thread-safe.
///
/// # Safety
/// `out` is NULL or points to `size` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_config_init(out: *mut tw_breaker_config, size: usize) -> tw_status {
    ffi_body!("tw_breaker_config_init"; {
        let out = arg!("tw_breaker_config_init", out);
        // SAFETY:
        // - `out` is non-null and holds `size` writable bytes (the caller's
        //   guarantee).
        unsafe { write_out("tw_breaker_config_init", out, size, tw_breaker_config::defaults()) }
    })
}

/// The header's `static inline tw_breaker_config_default(out)`, for Rust
/// callers of this crate: `tw_breaker_config_init` with this crate's
/// layout.
///
/// # Safety
/// `out` is NULL or points to a writable `tw_breaker_config`.
pub unsafe fn tw_breaker_config_default(out: *mut tw_breaker_config) -> tw_status {
    // SAFETY: the caller's guarantee, for this crate's size.
    unsafe { tw_breaker_config_init(out, size_of::<tw_breaker_config>()) }
}

/// Checks `*config` as `tw_breaker_new` would: `TW_STATUS_OK`;
/// `TW_STATUS_INVALID_STRUCT_SIZE` for a `struct_size` this library cannot
/// read (see `tw_breaker_config`); or `TW_STATUS_INVALID_CONFIG` with a
/// message naming the first bad field and its accepted range, e.g.
/// `"invalid breaker config: half_open_max = 0, expected 1 to 10"`.
///
/// `config` must not be NULL. Thread-safe.
///
/// # Safety
/// `config` is NULL or points to a readable `tw_breaker_config` of
/// `struct_size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_config_validate(config: *const tw_breaker_config) -> tw_status {
    ffi_body!("tw_breaker_config_validate"; {
        let config = arg!("tw_breaker_config_validate", config);
        // SAFETY: non-null (checked); readable for `struct_size` bytes (the
        // caller's guarantee).
        match unsafe { core_config(config, "tw_breaker_config_validate") } {
            Ok(_) => tw_status::Ok,
            Err(status) => status,
        }
    })
}

/// Writes the first `size` bytes of the config `breaker` runs with to
/// `out` (e.g. after attaching to a shared breaker), `struct_size` set to
/// `size`: what `tw_breaker_get_config(breaker, out)` does with `size =
/// sizeof *out`. Call that instead; `size` is as for
/// `tw_breaker_config_init`. `open_timeout_max_ns` reads as the effective
/// cap (never 0).
///
/// Neither pointer may be NULL. Thread-safe.
///
/// # Safety
/// `breaker` is NULL or a live handle; `out` is NULL or points to `size`
/// writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_get_config_sized(
    breaker: *const tw_breaker,
    out: *mut tw_breaker_config,
    size: usize,
) -> tw_status {
    ffi_body!("tw_breaker_get_config_sized"; {
        let breaker = handle!("tw_breaker_get_config_sized", breaker);
        let out = arg!("tw_breaker_get_config_sized", out);
        // SAFETY:
        // - Non-null (checked), `size` writable bytes (the caller's guarantee).
        unsafe { write_out("tw_breaker_get_config_sized", out, size, from_core(breaker.config())) }
    })
}

/// The header's `static inline tw_breaker_get_config(breaker, out)`, for
/// Rust callers of this crate: `tw_breaker_get_config_sized` with this
/// crate's layout.
///
/// # Safety
/// `breaker` is NULL or a live handle; `out` is NULL or writable.
pub unsafe fn tw_breaker_get_config(breaker: *const tw_breaker, out: *mut tw_breaker_config) -> tw_status {
    // SAFETY: the caller's guarantee, for this crate's size.
    unsafe { tw_breaker_get_config_sized(breaker, out, size_of::<tw_breaker_config>()) }
}
