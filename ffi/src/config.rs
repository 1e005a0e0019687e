//! `tw_breaker_config`: the breaker's config as a plain C struct, mapped
//! onto the core's builder so that every rule is checked in one place.
//!
//! Adding a field is mechanical: append it to the struct (keeping it free
//! of padding), read it back in [`from_core`], and make one builder call in
//! [`to_core`]. Fields are only ever appended, so a caller who fills the
//! struct with `tw_breaker_config_default` first keeps working with every
//! later version once recompiled.

use core::time::Duration;

use tripwire::{BreakerConfig, RollingWindow, duration_ns};

use crate::handle::handle;
use crate::status::{arg, fail, ffi_body, tw_status};
use crate::tw_breaker;

/// How a breaker decides to trip and to recover. Durations are `uint64_t`
/// nanoseconds.
///
/// Always start from `tw_breaker_config_default()`, then change the fields
/// you care about: fields are appended in later versions, and the default
/// fills them in.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct tw_breaker_config {
    /// Consecutive failures that trip a Closed breaker (1 to 65535; default
    /// 5); 0 turns the condition off when a rate condition is set.
    pub failure_threshold: u32,
    /// Probes allowed in flight at once in Half-Open (1 to 10; default 1).
    pub half_open_max: u32,
    /// The cool-down after a trip (1 µs to 7 days; default 30 s).
    pub open_timeout_ns: u64,
    /// The cap on the growing cool-down (`open_timeout_ns` to 7 days); 0
    /// (the default) means equal to `open_timeout_ns`.
    pub open_timeout_max_ns: u64,
    /// Factor applied to the cool-down on each re-open from Half-Open (1.0
    /// to 1000.0; default 1.0: no growth).
    pub open_timeout_growth: f64,
    /// Fraction of the cool-down that jitter may take off (0.0 to below
    /// 1.0; default 0.0), so that processes do not probe in one instant.
    pub open_timeout_jitter: f64,
    /// Seed mixed into the jitter (default 0).
    pub jitter_seed: u64,
    /// Successful probes that close a Half-Open breaker (1 to
    /// `half_open_max`; default 1).
    pub half_open_successes: u32,
    /// 1 to count successes in the snapshot (default), 0 not to: a Closed
    /// breaker's success path then writes nothing at all.
    pub count_successes: u32,
    /// Width of one bucket of the rolling window (1 ms to 1 h; default 1 s).
    pub window_bucket_ns: u64,
    /// Failure rate over the rolling window that trips the breaker (above
    /// 0, at most 1; default 0: off), once the window holds `min_calls`.
    pub failure_rate: f64,
    /// Calls at least this long count as slow (1 µs to 7 days; default 0:
    /// not measured). Measuring reads the clock on admission and record.
    pub slow_call_ns: u64,
    /// Slow-call rate over the rolling window that trips the breaker (above
    /// 0, at most 1; default 0: off). Needs `slow_call_ns`.
    pub slow_rate: f64,
    /// Buckets in the rolling window (1 to 32; default 10).
    pub window_buckets: u32,
    /// Calls the window must hold before a rate can trip (1 to 1,000,000;
    /// default 10; at most `count_window` for a count-based window).
    pub min_calls: u32,
    /// Which rolling window the rates are measured over, a
    /// `tw_window_kind`: `TW_WINDOW_KIND_TIME` (0, the default:
    /// `window_buckets` × `window_bucket_ns`) or `TW_WINDOW_KIND_COUNT` (1:
    /// the last `count_window` calls, with no clock read on success).
    pub window_kind: u32,
    /// A count-based window's calls (1 to 1000); must be 0 (the default)
    /// for a time-based window.
    pub count_window: u32,
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

// No padding anywhere, so that appending fields never lands one in the
// trailing padding of an older version.
const _: () =
    assert!(core::mem::size_of::<tw_breaker_config>() == 8 * 4 + 9 * 8, "tw_breaker_config has padding");

/// The C view of a valid core config.
pub(crate) fn from_core(c: &BreakerConfig) -> tw_breaker_config {
    tw_breaker_config {
        failure_threshold: c.failure_threshold(),
        half_open_max: c.half_open_max(),
        open_timeout_ns: duration_ns(c.open_timeout()),
        open_timeout_max_ns: duration_ns(c.open_timeout_max()),
        open_timeout_growth: c.open_timeout_growth(),
        open_timeout_jitter: c.open_timeout_jitter(),
        jitter_seed: c.jitter_seed(),
        half_open_successes: c.half_open_successes(),
        count_successes: c.count_successes().into(),
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
    }
}

/// The core config for a C one, or the status and message of the first
/// field that is wrong. `fn_name` prefixes the message.
pub(crate) fn to_core(c: &tw_breaker_config, fn_name: &str) -> Result<BreakerConfig, tw_status> {
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
    let max_ns = if c.open_timeout_max_ns == 0 { c.open_timeout_ns } else { c.open_timeout_max_ns };
    let mut b = BreakerConfig::builder()
        .failure_threshold(c.failure_threshold)
        .half_open_max(c.half_open_max)
        .open_timeout(Duration::from_nanos(c.open_timeout_ns))
        .open_timeout_max(Duration::from_nanos(max_ns))
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
        same => same,
    }
}

/// Fills `*out` with the default config: 5 consecutive failures trip the
/// breaker, 30 s cool-down without growth or jitter, one probe that closes
/// it on success, successes counted; no rate conditions (a time-based
/// 10 × 1 s window and `min_calls` 10 are ready for them).
///
/// `out` must not be NULL. Thread-safe.
///
/// # Safety
/// `out` is NULL or points to a writable `tw_breaker_config`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_config_default(out: *mut tw_breaker_config) -> tw_status {
    ffi_body!("tw_breaker_config_default"; {
        let out = arg!("tw_breaker_config_default", out);
        let mut c = from_core(&BreakerConfig::default());
        c.open_timeout_max_ns = 0;
        // SAFETY:
        // - `out` is non-null and writable (the caller's guarantee above).
        unsafe { out.write(c) };
        tw_status::Ok
    })
}

/// Checks `*config` as `tw_breaker_new` would: `TW_STATUS_OK`, or
/// `TW_STATUS_INVALID_CONFIG` with a message naming the first bad field
/// and its accepted range, e.g. `"invalid breaker config: half_open_max =
/// 0, expected 1 to 10"`.
///
/// `config` must not be NULL. Thread-safe.
///
/// # Safety
/// `config` is NULL or points to a readable `tw_breaker_config`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_config_validate(config: *const tw_breaker_config) -> tw_status {
    ffi_body!("tw_breaker_config_validate"; {
        let config = arg!("tw_breaker_config_validate", &config);
        match to_core(config, "tw_breaker_config_validate") {
            Ok(_) => tw_status::Ok,
            Err(status) => status,
        }
    })
}

/// Writes the config `breaker` runs with to `*out` (e.g. after attaching to
/// a shared breaker). `open_timeout_max_ns` is the actual cap, never 0.
///
/// Neither pointer may be NULL. Thread-safe.
///
/// # Safety
/// `breaker` is NULL or a live breaker handle; `out` is NULL or points to a
/// writable `tw_breaker_config`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_breaker_get_config(
    breaker: *const tw_breaker,
    out: *mut tw_breaker_config,
) -> tw_status {
    ffi_body!("tw_breaker_get_config"; {
        let breaker = handle!("tw_breaker_get_config", breaker);
        let out = arg!("tw_breaker_get_config", out);
        // SAFETY:
        // - Non-null (checked), writable (the caller's guarantee).
        unsafe { out.write(from_core(breaker.config())) };
        tw_status::Ok
    })
}
