//! Retry helpers: the backoff that spaces attempts and the budget that
//! caps retries to a share of recent calls.

use core::time::Duration;

use tripwire::{
    ConfigError, MonotonicClock,
    clock::{FixedClock, duration_ns},
    retry::{Backoff, BackoffConfig, Jitter, RetryBudget, RetryBudgetConfig},
};

use crate::handle::{Boxed, Handle, box_into_out, free_box, handle};
use crate::status::{arg, fail, ffi_body, tw_status};
use crate::struct_size::{Versioned, read_in, write_out};

/// The core's message under the C struct's field name: a duration is a
/// `_ns` field in C (`base_ns`, not the builder's `base`).
fn config_error(fn_name: &str, e: ConfigError) -> tw_status {
    let e = match e.field() {
        "base" => e.with_field("base_ns"),
        "cap" => e.with_field("cap_ns"),
        "ttl" => e.with_field("ttl_ns"),
        _ => e,
    };
    fail(tw_status::InvalidConfig, format_args!("{fn_name}: {e}"))
}

/// How a backoff spreads the delays it computes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_jitter {
    /// The exponential curve itself: every client retries in step.
    None = 0,
    /// Anywhere between zero and the curve: the least total work.
    Full = 1,
    /// At least half the curve: never retries almost at once.
    Equal = 2,
    /// Grows from the previous delay rather than the attempt count
    /// (`factor` is not used).
    Decorrelated = 3,
}

/// How a backoff spaces retries. Durations are `uint64_t` nanoseconds.
/// Start from `tw_backoff_config_default()`, which sets `struct_size`:
/// the library reads that many bytes, by the rules of `tw_breaker_config`
/// (one layout so far, `sizeof(tw_backoff_config)`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct tw_backoff_config {
    /// The size of the struct in the caller's header:
    /// `tw_backoff_config_default()` sets it; leave it alone.
    pub struct_size: u32,
    /// A `tw_jitter` (default `TW_JITTER_FULL`).
    pub jitter: u32,
    /// The first delay, before jitter (1 ns up to the cap; default 100 ms).
    pub base_ns: u64,
    /// The longest delay (default 30 s).
    pub cap_ns: u64,
    /// Growth per attempt (1.0 to 100.0; default 2.0).
    pub factor: f64,
    /// Mixed into each instance's random generator (default 0).
    pub seed: u64,
}

const _: () = assert!(size_of::<tw_backoff_config>() == 40, "tw_backoff_config has padding");

// SAFETY:
// - `#[repr(C)]`, `struct_size: u32` first, no padding (asserted above),
//   integers and floats only; one size, a multiple of 8.
unsafe impl Versioned for tw_backoff_config {
    const NAME: &'static str = "tw_backoff_config";
    const SIZES: &'static [usize] = &[size_of::<tw_backoff_config>()];
    fn defaults() -> Self {
        backoff_from_core(&BackoffConfig::default())
    }
}

/// The `tw_jitter` value of a core mode. The C values are the core's
/// discriminants, which `Jitter::ALL` lists in order; a test pins each one
/// to its variant, as the header promises them forever.
fn jitter_to_c(j: Jitter) -> u32 {
    j as u32
}

/// The core mode for a `tw_jitter` passed as an integer; `None` for a value
/// the header does not define.
fn jitter_from_c(value: u32) -> Option<Jitter> {
    Jitter::ALL.into_iter().find(|&j| jitter_to_c(j) == value)
}

fn backoff_from_core(c: &BackoffConfig) -> tw_backoff_config {
    tw_backoff_config {
        struct_size: size_of::<tw_backoff_config>() as u32,
        jitter: jitter_to_c(c.jitter()),
        base_ns: duration_ns(c.base()),
        cap_ns: duration_ns(c.cap()),
        factor: c.factor(),
        seed: c.seed(),
    }
}

fn backoff_to_core(c: &tw_backoff_config, fn_name: &str) -> Result<BackoffConfig, tw_status> {
    let Some(jitter) = jitter_from_c(c.jitter) else {
        return Err(fail(
            tw_status::InvalidConfig,
            format_args!(
                "{fn_name}: invalid backoff config: jitter = {}, expected 0 to {}",
                c.jitter,
                Jitter::ALL.len() - 1
            ),
        ));
    };
    BackoffConfig::builder()
        .base(Duration::from_nanos(c.base_ns))
        .cap(Duration::from_nanos(c.cap_ns))
        .factor(c.factor)
        .seed(c.seed)
        .jitter(jitter)
        .build()
        .map_err(|e| config_error(fn_name, e))
}

/// Computes the delays between attempts of one operation. Opaque; made by
/// `tw_backoff_new`, freed by `tw_backoff_free`. A backoff is a small
/// piece of per-operation state: one thread uses it at a time.
pub struct tw_backoff {
    _opaque: [u8; 0],
}

// SAFETY:
// - A live handle points to a `Backoff` made by `tw_backoff_new`; the
//   functions that change it are documented as one thread at a time.
unsafe impl Handle for tw_backoff {
    type Rust = Backoff;
}

// SAFETY:
// - `tw_backoff_new` is the only maker, through `box_into_out`.
unsafe impl Boxed for tw_backoff {}

/// Fills the first `size` bytes at `out` with the default backoff config
/// (100 ms doubling up to 30 s, full jitter) and sets `struct_size` to
/// `size`: what `tw_backoff_config_default(out)` does with `size = sizeof
/// *out`. `size` is checked as for `tw_breaker_config_init`. `out` must
/// not be NULL.
///
/// # Safety
/// `out` is NULL or points to `size` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_backoff_config_init(out: *mut tw_backoff_config, size: usize) -> tw_status {
    ffi_body!("tw_backoff_config_init"; {
        let out = arg!("tw_backoff_config_init", out);
        // SAFETY:
        // - Non-null (checked), `size` writable bytes (the caller's guarantee).
        unsafe { write_out("tw_backoff_config_init", out, size, tw_backoff_config::defaults()) }
    })
}

/// The header's `static inline tw_backoff_config_default(out)`, for Rust
/// callers of this crate: `tw_backoff_config_init` with this crate's layout.
///
/// # Safety
/// `out` is NULL or writable.
pub unsafe fn tw_backoff_config_default(out: *mut tw_backoff_config) -> tw_status {
    // SAFETY: the caller's guarantee, for this crate's size.
    unsafe { tw_backoff_config_init(out, size_of::<tw_backoff_config>()) }
}

/// Makes a backoff from `*config` and writes its handle to `*out`;
/// `TW_STATUS_INVALID_CONFIG` with a message naming the field if the config
/// is out of range, `TW_STATUS_INVALID_STRUCT_SIZE` for a `struct_size`
/// this library cannot read. Each backoff gets its own random sequence.
/// Neither pointer may be NULL.
///
/// # Safety
/// `config` is NULL or readable for its `struct_size` bytes; `out` is NULL
/// or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_backoff_new(
    config: *const tw_backoff_config,
    out: *mut *mut tw_backoff,
) -> tw_status {
    ffi_body!("tw_backoff_new"; {
        let config = arg!("tw_backoff_new", config);
        let out = arg!("tw_backoff_new", out);
        // SAFETY:
        // - Non-null (checked), readable for its `struct_size` bytes (the
        //   caller's guarantee).
        let config = match unsafe { read_in("tw_backoff_new", config) }
            .and_then(|c| backoff_to_core(&c, "tw_backoff_new"))
        {
            Ok(c) => c,
            Err(status) => return status,
        };
        // SAFETY:
        // - `out` is non-null (checked) and writable (the caller's guarantee).
        unsafe { box_into_out(out, Backoff::new(config)) };
        tw_status::Ok
    })
}

/// Frees a backoff. NULL is allowed and does nothing.
///
/// # Safety
/// `backoff` is NULL or a live handle from `tw_backoff_new`, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_backoff_free(backoff: *mut tw_backoff) {
    ffi_body!("tw_backoff_free", on_panic = (); {
        // SAFETY:
        // - NULL or a live handle from `tw_backoff_new`, not used again (caller).
        unsafe { free_box(backoff) }
    })
}

/// Writes the delay before the next attempt (nanoseconds) to `*delay_ns`
/// and moves on to the following attempt. Neither pointer may be NULL. Not
/// thread-safe for one backoff: use one per operation.
///
/// # Safety
/// `backoff` is NULL or a live handle no other thread uses meanwhile;
/// `delay_ns` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_backoff_next_delay(backoff: *mut tw_backoff, delay_ns: *mut u64) -> tw_status {
    ffi_body!("tw_backoff_next_delay"; {
        let backoff = handle!("tw_backoff_next_delay", mut backoff);
        let delay_ns = arg!("tw_backoff_next_delay", delay_ns);
        let d = backoff.next_delay();
        // SAFETY:
        // - Non-null (checked), writable (the caller's guarantee).
        unsafe { delay_ns.write(duration_ns(d)) };
        tw_status::Ok
    })
}

/// Starts the backoff over from the first delay (after a success).
/// `backoff` must not be NULL. Not thread-safe for one backoff.
///
/// # Safety
/// As for `tw_backoff_next_delay`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_backoff_reset(backoff: *mut tw_backoff) -> tw_status {
    ffi_body!("tw_backoff_reset"; {
        handle!("tw_backoff_reset", mut backoff).reset();
        tw_status::Ok
    })
}

/// How a retry budget limits retries. Start from
/// `tw_retry_budget_config_default()`, which sets `struct_size`: the
/// library reads that many bytes, by the rules of `tw_breaker_config` (one
/// layout so far, `sizeof(tw_retry_budget_config)`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct tw_retry_budget_config {
    /// The size of the struct in the caller's header:
    /// `tw_retry_budget_config_default()` sets it; leave it alone.
    pub struct_size: u32,
    /// Must be 0: keeps the struct free of padding.
    pub reserved: u32,
    /// The share of a token each call deposits: 0.2 lets retries add 20% to
    /// the load (0.0 to 100.0; default 0.2).
    pub ratio: f64,
    /// Retries per second allowed however few calls there are (default 10.0).
    pub min_retries_per_sec: f64,
    /// How long a deposit counts, on average (100 ms to 7 days; default 10 s).
    pub ttl_ns: u64,
}

const _: () = assert!(size_of::<tw_retry_budget_config>() == 32, "tw_retry_budget_config has padding");

// SAFETY:
// - `#[repr(C)]`, `struct_size: u32` first, no padding (asserted above),
//   integers and floats only; one size, a multiple of 8.
unsafe impl Versioned for tw_retry_budget_config {
    const NAME: &'static str = "tw_retry_budget_config";
    const SIZES: &'static [usize] = &[size_of::<tw_retry_budget_config>()];
    fn defaults() -> Self {
        let c = RetryBudgetConfig::default();
        tw_retry_budget_config {
            struct_size: size_of::<tw_retry_budget_config>() as u32,
            reserved: 0,
            ratio: c.ratio(),
            min_retries_per_sec: c.min_retries_per_sec(),
            ttl_ns: duration_ns(c.ttl()),
        }
    }
}

/// Retries allowed as a fraction of recent calls, shared by every caller of
/// one dependency. Opaque; made by `tw_retry_budget_new`, freed by
/// `tw_retry_budget_free`. Every function taking a
/// `const tw_retry_budget *` is thread-safe.
pub struct tw_retry_budget {
    _opaque: [u8; 0],
}

// SAFETY:
// - A live handle points to a `RetryBudget` made by `tw_retry_budget_new`,
//   only ever used through shared references (its state is atomic).
unsafe impl Handle for tw_retry_budget {
    type Rust = RetryBudget;
}

// SAFETY:
// - `tw_retry_budget_new` is the only maker, through `box_into_out`.
unsafe impl Boxed for tw_retry_budget {}

/// Fills the first `size` bytes at `out` with the default budget config
/// (20% of calls over 10 s, at least 10 retries per second) and sets
/// `struct_size` to `size`: what `tw_retry_budget_config_default(out)` does
/// with `size = sizeof *out`. `size` is checked as for
/// `tw_breaker_config_init`. `out` must not be NULL.
///
/// # Safety
/// `out` is NULL or points to `size` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_retry_budget_config_init(
    out: *mut tw_retry_budget_config,
    size: usize,
) -> tw_status {
    ffi_body!("tw_retry_budget_config_init"; {
        let out = arg!("tw_retry_budget_config_init", out);
        // SAFETY:
        // - Non-null (checked), `size` writable bytes (the caller's guarantee).
        unsafe { write_out("tw_retry_budget_config_init", out, size, tw_retry_budget_config::defaults()) }
    })
}

/// The header's `static inline tw_retry_budget_config_default(out)`, for
/// Rust callers of this crate: `tw_retry_budget_config_init` with this
/// crate's layout.
///
/// # Safety
/// `out` is NULL or writable.
pub unsafe fn tw_retry_budget_config_default(out: *mut tw_retry_budget_config) -> tw_status {
    // SAFETY: the caller's guarantee, for this crate's size.
    unsafe { tw_retry_budget_config_init(out, size_of::<tw_retry_budget_config>()) }
}

/// Makes a retry budget from `*config` and writes its handle to `*out`;
/// `TW_STATUS_INVALID_CONFIG` with a message if the config is out of
/// range, `TW_STATUS_INVALID_STRUCT_SIZE` for a `struct_size` this library
/// cannot read. Neither pointer may be NULL.
///
/// # Safety
/// `config` is NULL or readable for its `struct_size` bytes; `out` is NULL
/// or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_retry_budget_new(
    config: *const tw_retry_budget_config,
    out: *mut *mut tw_retry_budget,
) -> tw_status {
    ffi_body!("tw_retry_budget_new"; {
        let config = arg!("tw_retry_budget_new", config);
        let out = arg!("tw_retry_budget_new", out);
        // SAFETY:
        // - Non-null (checked), readable for its `struct_size` bytes (the
        //   caller's guarantee).
        let c = match unsafe { read_in("tw_retry_budget_new", config) } {
            Ok(c) => c,
            Err(status) => return status,
        };
        if c.reserved != 0 {
            return fail(
                tw_status::InvalidConfig,
                format_args!("tw_retry_budget_new: invalid retry budget config: reserved = {}, expected 0", c.reserved),
            );
        }
        let built = RetryBudgetConfig::builder()
            .ratio(c.ratio)
            .min_retries_per_sec(c.min_retries_per_sec)
            .ttl(Duration::from_nanos(c.ttl_ns))
            .build();
        let config = match built {
            Ok(c) => c,
            Err(e) => return config_error("tw_retry_budget_new", e),
        };
        // SAFETY:
        // - `out` is non-null (checked) and writable (the caller's guarantee).
        unsafe { box_into_out(out, RetryBudget::new(config)) };
        tw_status::Ok
    })
}

/// Frees a retry budget. NULL is allowed and does nothing. No other thread
/// may use it during or after this call.
///
/// # Safety
/// `budget` is NULL or a live handle from `tw_retry_budget_new`, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_retry_budget_free(budget: *mut tw_retry_budget) {
    ffi_body!("tw_retry_budget_free", on_panic = (); {
        // SAFETY:
        // - NULL or a live handle from `tw_retry_budget_new`, not used again (caller).
        unsafe { free_box(budget) }
    })
}

/// Counts one call (first attempts and retries alike), adding `ratio` of a
/// token, at `CLOCK_MONOTONIC` time. `budget` must not be NULL. Thread-safe.
///
/// # Safety
/// `budget` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_retry_budget_deposit(budget: *const tw_retry_budget) -> tw_status {
    ffi_body!("tw_retry_budget_deposit"; {
        let b = handle!("tw_retry_budget_deposit", budget);
        b.deposit(&MonotonicClock);
        tw_status::Ok
    })
}

/// `tw_retry_budget_deposit` at the caller's own time (`now_ns`, one clock
/// per budget).
///
/// # Safety
/// As for `tw_retry_budget_deposit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_retry_budget_deposit_at(
    budget: *const tw_retry_budget,
    now_ns: u64,
) -> tw_status {
    ffi_body!("tw_retry_budget_deposit_at"; {
        let b = handle!("tw_retry_budget_deposit_at", budget);
        b.deposit(&FixedClock(now_ns));
        tw_status::Ok
    })
}

/// Takes one token for a retry: `TW_STATUS_OK` (retry) or
/// `TW_STATUS_REJECTED` (less than a whole token left: do not retry; no
/// message is set). Reads `CLOCK_MONOTONIC`. `budget` must not be NULL.
/// Thread-safe.
///
/// # Safety
/// `budget` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_retry_budget_try_withdraw(budget: *const tw_retry_budget) -> tw_status {
    ffi_body!("tw_retry_budget_try_withdraw"; {
        let b = handle!("tw_retry_budget_try_withdraw", budget);
        if b.try_withdraw(&MonotonicClock) { tw_status::Ok } else { tw_status::Rejected }
    })
}

/// `tw_retry_budget_try_withdraw` at the caller's own time.
///
/// # Safety
/// As for `tw_retry_budget_try_withdraw`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_retry_budget_try_withdraw_at(
    budget: *const tw_retry_budget,
    now_ns: u64,
) -> tw_status {
    ffi_body!("tw_retry_budget_try_withdraw_at"; {
        let b = handle!("tw_retry_budget_try_withdraw_at", budget);
        let ok = b.try_withdraw(&FixedClock(now_ns));
        if ok { tw_status::Ok } else { tw_status::Rejected }
    })
}

/// Writes the balance at `now_ns` (thousandths of a token) to `*out`: a
/// report, which another thread may change at once. Neither pointer may be
/// NULL. Thread-safe.
///
/// # Safety
/// `budget` is NULL or a live handle; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_retry_budget_available_at(
    budget: *const tw_retry_budget,
    now_ns: u64,
    out: *mut u32,
) -> tw_status {
    ffi_body!("tw_retry_budget_available_at"; {
        let b = handle!("tw_retry_budget_available_at", budget);
        let out = arg!("tw_retry_budget_available_at", out);
        // SAFETY:
        // - Non-null (checked), writable (the caller's guarantee).
        unsafe { out.write(b.available_milli(&FixedClock(now_ns))) };
        tw_status::Ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tw_jitter_value_is_pinned_to_its_core_variant() {
        // The header's values, written out: they never change.
        let pinned = [
            (tw_jitter::None, 0, Jitter::None),
            (tw_jitter::Full, 1, Jitter::Full),
            (tw_jitter::Equal, 2, Jitter::Equal),
            (tw_jitter::Decorrelated, 3, Jitter::Decorrelated),
        ];
        assert_eq!(pinned.len(), Jitter::ALL.len(), "a core mode without a tw_jitter value");
        for (c, value, core) in pinned {
            assert_eq!(c as u32, value, "TW_JITTER value of {core}");
            assert_eq!(jitter_from_c(value), Some(core), "C {value} to core");
            assert_eq!(jitter_to_c(core), value, "core {core} to C");
            // TW_JITTER_<NAME> and the core's name agree.
            assert_eq!(format!("{c:?}").to_lowercase(), core.as_str());
        }
        assert_eq!(jitter_from_c(4), None);
        assert_eq!(jitter_from_c(u32::MAX), None);
    }
}
