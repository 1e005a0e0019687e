//! Rate limiters in memory shared between processes: one request-weight
//! budget for every process of a host. The C face of
//! [`tripwire::shared::SharedRateLimiterRegion`] and
//! [`tripwire::limiter::SharedRateLimiter`]; the algorithm, the layout and
//! the checks are the core's. Time is `CLOCK_MONOTONIC`, the same in every
//! process of a host.

use core::ffi::{CStr, c_char, c_void};
use core::time::Duration;

use tripwire::MonotonicClock;
use tripwire::limiter::{LimitConfig, SharedRateLimiter, Throttled};
use tripwire::shared::{RegionError, SharedRateLimiterRegion};

use crate::shared::status_of;
use crate::status::{arg, fail, ffi_body, tw_status};

/// The most limits a C rate limiter has.
pub const TW_RATE_LIMITER_MAX_LIMITS: usize = 4;

/// A rate limiter in a shared region. Opaque: a `const tw_rate_limiter *`
/// is the address of the region itself (the caller's memory), handed out
/// by `tw_rate_limiter_open_in` or `_attach`. It is never freed: it is
/// valid while the memory stays mapped. Every function taking one is
/// thread-safe, and safe to call from every process mapping the region at
/// once.
pub struct tw_rate_limiter {
    _opaque: [u8; 0],
}

/// Why a rate limiter took nothing: limit number `limit` (the one that
/// waits longest) lets the cost go at once after `wait_ns`, if nothing else
/// is taken meanwhile.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tw_throttled {
    /// The index of the limit.
    pub limit: u32,
    /// The wait, in nanoseconds of `CLOCK_MONOTONIC`.
    pub wait_ns: u64,
}

/// `$body` with `$l` bound to the limiter behind handle `$h`, whatever
/// its number of limits.
macro_rules! with_limiter {
    ($h:expr, |$l:ident| $body:expr) => {{
        let mem = $h.cast::<u8>();
        // SAFETY:
        // - `mem` is a live handle (the caller's guarantee): an address
        //   `open_in` or `attach` accepted.
        let n = unsafe { SharedRateLimiterRegion::limits_in(mem) };
        match n {
            // SAFETY: as above, for each size.
            1 => match unsafe { SharedRateLimiterRegion::attached::<1>(mem) } {
                Some($l) => $body,
                None => unreachable!("an accepted region of 1 limit"),
            },
            // SAFETY: as above.
            2 => match unsafe { SharedRateLimiterRegion::attached::<2>(mem) } {
                Some($l) => $body,
                None => unreachable!("an accepted region of 2 limits"),
            },
            // SAFETY: as above.
            3 => match unsafe { SharedRateLimiterRegion::attached::<3>(mem) } {
                Some($l) => $body,
                None => unreachable!("an accepted region of 3 limits"),
            },
            // SAFETY: as above.
            4 => match unsafe { SharedRateLimiterRegion::attached::<4>(mem) } {
                Some($l) => $body,
                None => unreachable!("an accepted region of 4 limits"),
            },
            _ => unreachable!("a C handle holds 1 to 4 limits"),
        }
    }};
}

/// The `n` values at `p` (non-null, `n` of 1 to 4, checked by the caller)
/// as an array of `N` (`n == N`).
///
/// # Safety
/// `p` is valid for reads of `n` values.
unsafe fn array<T: Copy, const N: usize>(p: *const T, n: usize) -> [T; N] {
    debug_assert_eq!(n, N);
    // SAFETY: `p` holds `n == N` values (this function's contract).
    core::array::from_fn(|i| unsafe { p.add(i).read() })
}

/// `SharedRateLimiterRegion::open_in` with the first `N` of `configs`.
///
/// # Safety
/// As for `SharedRateLimiterRegion::open_in`.
unsafe fn open<const N: usize>(
    mem: *mut u8,
    len: usize,
    configs: &[LimitConfig; TW_RATE_LIMITER_MAX_LIMITS],
) -> Result<(), RegionError> {
    let configs: [LimitConfig; N] = core::array::from_fn(|i| configs[i]);
    // SAFETY: the caller's guarantees are those `open_in` needs.
    unsafe { SharedRateLimiterRegion::open_in::<N>(mem, len, configs) }.map(drop)
}

/// `SharedRateLimiterRegion::attach` for `N` limits.
///
/// # Safety
/// As for `SharedRateLimiterRegion::attach`.
unsafe fn attach<const N: usize>(mem: *mut u8, len: usize) -> Result<(), RegionError> {
    // SAFETY: the caller's guarantees are those `attach` needs.
    unsafe { SharedRateLimiterRegion::attach::<N>(mem, len) }.map(drop)
}

/// Refuses a number of limits out of 1 to 4, naming it.
fn check_count(fn_name: &str, n: usize) -> Result<(), tw_status> {
    if !(1..=TW_RATE_LIMITER_MAX_LIMITS).contains(&n) {
        return Err(fail(
            tw_status::InvalidArgument,
            format_args!("{fn_name}: `n` = {n} limits, expected 1 to {TW_RATE_LIMITER_MAX_LIMITS}"),
        ));
    }
    Ok(())
}

/// The number of costs a call passes must be the limiter's number of limits.
fn check_costs(fn_name: &str, n: usize, limits: usize) -> Result<(), tw_status> {
    if n != limits {
        return Err(fail(
            tw_status::InvalidArgument,
            format_args!(
                "{fn_name}: `n` = {n} costs, the rate limiter has {limits} limits: one cost per limit"
            ),
        ));
    }
    Ok(())
}

/// Writes the size (bytes) a region of `limits` limits needs to `*size`,
/// and the alignment it needs (64; any page from `mmap` has it) to
/// `*align`: 32 bytes of header, then 32 per limit.
/// `TW_STATUS_INVALID_ARGUMENT` for `limits` out of 1 to 4.
///
/// Neither pointer may be NULL. Thread-safe.
///
/// # Safety
/// `size` and `align` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rate_limiter_size(
    limits: usize,
    size: *mut usize,
    align: *mut usize,
) -> tw_status {
    ffi_body!("tw_rate_limiter_size"; {
        let size = arg!("tw_rate_limiter_size", size);
        let align = arg!("tw_rate_limiter_size", align);
        if let Err(status) = check_count("tw_rate_limiter_size", limits) {
            return status;
        }
        let s = SharedRateLimiterRegion::size_for(limits).expect("1 to 4 limits");
        // SAFETY:
        // - Both non-null (checked) and writable (the caller's guarantee).
        unsafe {
            size.write(s);
            align.write(SharedRateLimiterRegion::ALIGN);
        }
        tw_status::Ok
    })
}

/// Initialises the region at `mem` (`len` bytes, at least
/// `tw_rate_limiter_size(n)`: a fresh zero-filled `MAP_SHARED` mapping of
/// a file or `shm_open` object, or an anonymous one made before `fork`)
/// with `n` limits (1 to 4) if nobody has, otherwise attaches to it, and
/// writes its handle to `*out`: the one call every process of a host makes
/// at start-up. Limit `i` allows `units[i]` (2 to 10^9) in any stretch of
/// `period_ns[i]` (1 ms to 7 days), `burst[i]` of them at once (1 to half
/// the units; `burst` may be NULL for the default, a twentieth).
///
/// `TW_STATUS_INVALID_CONFIG` for a limit out of range (the message names
/// the array and the index); `TW_STATUS_REGION_CONFIG_MISMATCH` if the
/// region holds other limits; `TW_STATUS_REGION_INITIALISING` if another
/// process is initialising it right now (retry shortly); the region errors
/// of `tw_shared_bulkhead_attach` otherwise. Never trusts the bytes: a
/// garbage region is an error naming the field, never undefined behaviour.
///
/// Ownership: the memory stays the caller's; the handle points into it and
/// is valid while it stays mapped; it is never freed. No pointer but
/// `burst` may be NULL. Thread-safe.
///
/// # Safety
/// - `mem` is NULL or valid for reads and writes of `len` bytes for as long
///   as the handle is used, in every process that maps it.
/// - The region's bytes are only accessed through tripwire (in every
///   process) while any handle to it is in use.
/// - `units` and `period_ns` are NULL or hold `n` values; `burst` too, or
///   is NULL; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rate_limiter_open_in(
    mem: *mut c_void,
    len: usize,
    n: usize,
    units: *const u32,
    period_ns: *const u64,
    burst: *const u32,
    out: *mut *const tw_rate_limiter,
) -> tw_status {
    const NAME: &str = "tw_rate_limiter_open_in";
    ffi_body!(NAME; {
        let mem = arg!(NAME, mem).cast::<u8>();
        let units = arg!(NAME, units);
        let period_ns = arg!(NAME, period_ns);
        let out = arg!(NAME, out);
        if let Err(status) = check_count(NAME, n) {
            return status;
        }
        let mut configs = [None; TW_RATE_LIMITER_MAX_LIMITS];
        for (i, slot) in configs.iter_mut().enumerate().take(n) {
            // SAFETY:
            // - `units` and `period_ns` hold `n` values, `burst` too if
            //   non-null (the caller's guarantee); `i < n`.
            let (u, p, b) =
                unsafe { (units.add(i).read(), period_ns.add(i).read(), (!burst.is_null()).then(|| burst.add(i).read())) };
            let mut builder = LimitConfig::builder(u, Duration::from_nanos(p));
            if let Some(b) = b {
                builder = builder.burst(b);
            }
            match builder.build() {
                Ok(c) => *slot = Some(c),
                Err(e) => {
                    let field = match e.field() {
                        "units" => "units",
                        "period" => "period_ns",
                        _ => "burst",
                    };
                    let e = e.with_field(field);
                    return fail(tw_status::InvalidConfig, format_args!("{NAME}: `{field}[{i}]`: {}", e.renamed(|f| f)));
                }
            }
        }
        let configs = configs.map(|c| c.unwrap_or_else(|| LimitConfig::builder(2, Duration::from_secs(1)).build().expect("a valid limit")));
        // SAFETY:
        // - The caller's guarantees on `mem` and `len` are those `open_in` needs.
        let result = unsafe {
            match n {
                1 => open::<1>(mem, len, &configs),
                2 => open::<2>(mem, len, &configs),
                3 => open::<3>(mem, len, &configs),
                _ => open::<4>(mem, len, &configs),
            }
        };
        match result {
            Ok(()) => {
                // SAFETY:
                // - `out` is non-null (checked) and writable (the caller's guarantee).
                unsafe { out.write(mem.cast_const().cast()) };
                tw_status::Ok
            }
            Err(e) => fail(status_of(e), format_args!("{NAME}: {e}")),
        }
    })
}

/// Checks that `mem` (`len` bytes) holds a rate limiter made by
/// `tw_rate_limiter_open_in` (in this process or another) and writes its
/// handle to `*out`, with its number of limits to `*n`. Never trusts the
/// bytes: see `tw_rate_limiter_open_in`. No pointer may be NULL.
/// Thread-safe.
///
/// # Safety
/// As for `tw_rate_limiter_open_in`; `n` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rate_limiter_attach(
    mem: *mut c_void,
    len: usize,
    n: *mut usize,
    out: *mut *const tw_rate_limiter,
) -> tw_status {
    const NAME: &str = "tw_rate_limiter_attach";
    ffi_body!(NAME; {
        let mem = arg!(NAME, mem).cast::<u8>();
        let n = arg!(NAME, n);
        let out = arg!(NAME, out);
        // Try each size this ABI has: the region's own count decides.
        let mut last = None;
        for limits in 1..=TW_RATE_LIMITER_MAX_LIMITS {
            // SAFETY:
            // - The caller's guarantees on `mem` and `len` are those `attach` needs.
            let result = unsafe {
                match limits {
                    1 => attach::<1>(mem, len),
                    2 => attach::<2>(mem, len),
                    3 => attach::<3>(mem, len),
                    _ => attach::<4>(mem, len),
                }
            };
            match result {
                Ok(()) => {
                    // SAFETY:
                    // - `n` and `out` are non-null (checked) and writable (the caller's guarantee).
                    unsafe {
                        n.write(limits);
                        out.write(mem.cast_const().cast());
                    }
                    return tw_status::Ok;
                }
                Err(RegionError::LimitCount { .. }) => last = None,
                Err(e) => {
                    last = Some(e);
                    break;
                }
            }
        }
        match last {
            Some(e) => fail(status_of(e), format_args!("{NAME}: {e}")),
            None => fail(
                tw_status::RegionCorrupt,
                format_args!("{NAME}: the region holds more limits than this ABI's {TW_RATE_LIMITER_MAX_LIMITS}"),
            ),
        }
    })
}

/// Takes `costs` (`n` of them, one per limit, 0 for a limit a request does
/// not count on) if every limit lets them go within `max_wait_ns`,
/// reserving them ahead: `TW_STATUS_OK` with the nanoseconds to wait before
/// sending in `*ready_in_ns` (0: at once). Else takes nothing:
/// `TW_STATUS_REJECTED` with the limit that waits longest and the wait
/// after which the costs would go at once in `*throttled` (no message is
/// set). `TW_STATUS_INVALID_ARGUMENT` for `n` other than the limiter's
/// number of limits, or a cost above its limit's burst (it never goes).
///
/// Lock-free and allocation-free: one compare-and-swap per limit a cost is
/// taken from. No pointer may be NULL. Thread-safe; safe from every
/// process.
///
/// # Safety
/// `limiter` is NULL or a live handle; `costs` is NULL or holds `n`
/// values; `ready_in_ns` and `throttled` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rate_limiter_acquire(
    limiter: *const tw_rate_limiter,
    costs: *const u32,
    n: usize,
    max_wait_ns: u64,
    ready_in_ns: *mut u64,
    throttled: *mut tw_throttled,
) -> tw_status {
    const NAME: &str = "tw_rate_limiter_acquire";
    ffi_body!(NAME; {
        let h = arg!(NAME, limiter);
        let costs = arg!(NAME, costs);
        let ready = arg!(NAME, ready_in_ns);
        let why = arg!(NAME, throttled);
        // SAFETY:
        // - Every pointer is non-null (checked) and as the caller guarantees.
        with_limiter!(h, |l| unsafe { acquire(NAME, &l, costs, n, max_wait_ns, ready, why) })
    })
}

/// The body of `tw_rate_limiter_acquire` for a limiter of `N` limits.
///
/// # Safety
/// As for `tw_rate_limiter_acquire`, every pointer non-null.
unsafe fn acquire<const N: usize>(
    name: &str,
    l: &SharedRateLimiter<'_, N>,
    costs: *const u32,
    n: usize,
    max_wait_ns: u64,
    ready: *mut u64,
    why: *mut tw_throttled,
) -> tw_status {
    if let Err(status) = check_costs(name, n, N) {
        return status;
    }
    // SAFETY: `costs` holds `n == N` values (the caller's guarantee, checked count).
    let costs: [u32; N] = unsafe { array(costs, n) };
    match l.acquire(costs, Duration::from_nanos(max_wait_ns), &MonotonicClock) {
        Ok(grant) => {
            // SAFETY: non-null and writable (the caller's guarantee).
            unsafe { ready.write(u64::try_from(grant.ready_in().as_nanos()).unwrap_or(u64::MAX)) };
            tw_status::Ok
        }
        Err(Throttled::Wait { limit, wait }) => {
            let throttled = tw_throttled {
                limit: limit as u32,
                wait_ns: u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX),
            };
            // SAFETY: non-null and writable (the caller's guarantee).
            unsafe { why.write(throttled) };
            tw_status::Rejected
        }
        Err(too_costly) => fail(tw_status::InvalidArgument, format_args!("{name}: {too_costly}")),
    }
}

/// Gives back `costs` (`n` of them) of a request that was never sent, on
/// each limit where that lets nothing more through (see the core's
/// `RateLimiter::refund`). `TW_STATUS_INVALID_ARGUMENT` for `n` other than
/// the limiter's number of limits. No pointer may be NULL. Thread-safe.
///
/// # Safety
/// `limiter` is NULL or a live handle; `costs` is NULL or holds `n` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rate_limiter_refund(
    limiter: *const tw_rate_limiter,
    costs: *const u32,
    n: usize,
) -> tw_status {
    const NAME: &str = "tw_rate_limiter_refund";
    ffi_body!(NAME; {
        let h = arg!(NAME, limiter);
        let costs = arg!(NAME, costs);
        with_limiter!(h, |l| {
            let limits = l.configs().len();
            if let Err(status) = check_costs(NAME, n, limits) {
                return status;
            }
            // SAFETY: `costs` holds `n` values (the caller's guarantee, checked count).
            let costs = unsafe { array(costs, n) };
            let _ = l.refund_costs(costs, &MonotonicClock);
            tw_status::Ok
        })
    })
}

/// Counts at least `used` units on limit `limit` from now on: what the
/// server reports having seen (Binance's `X-MBX-USED-WEIGHT-1M`), in a
/// window that ends `window_left_ns` from now (`UINT64_MAX`: unknown, as
/// if it had just begun). Never lowers the count, never raises it past the
/// limit's units. `TW_STATUS_INVALID_ARGUMENT` for a `limit` out of range.
/// `limiter` may not be NULL. Thread-safe.
///
/// # Safety
/// `limiter` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rate_limiter_observe_used(
    limiter: *const tw_rate_limiter,
    limit: usize,
    used: u64,
    window_left_ns: u64,
) -> tw_status {
    const NAME: &str = "tw_rate_limiter_observe_used";
    ffi_body!(NAME; {
        let h = arg!(NAME, limiter);
        with_limiter!(h, |l| observe(NAME, &l, limit, used, window_left_ns))
    })
}

/// Reads a server's used-weight header value (`value`: whole decimal
/// digits, surrounding spaces allowed, saturating) and counts it as
/// `tw_rate_limiter_observe_used` does. A value that is no whole number is
/// `TW_STATUS_INVALID_ARGUMENT` and changes nothing: it never raises nor
/// lowers the count. No pointer may be NULL. Thread-safe.
///
/// # Safety
/// `limiter` is NULL or a live handle; `value` is NULL or a NUL-terminated
/// string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rate_limiter_observe_header(
    limiter: *const tw_rate_limiter,
    limit: usize,
    value: *const c_char,
    window_left_ns: u64,
) -> tw_status {
    const NAME: &str = "tw_rate_limiter_observe_header";
    ffi_body!(NAME; {
        let h = arg!(NAME, limiter);
        let value = arg!(NAME, value);
        // SAFETY: non-null (checked) and NUL-terminated (the caller's guarantee).
        let text = unsafe { CStr::from_ptr(value) }.to_bytes();
        let trimmed = text.trim_ascii();
        if trimmed.is_empty() || !trimmed.iter().all(u8::is_ascii_digit) {
            return fail(
                tw_status::InvalidArgument,
                format_args!("{NAME}: `value` {:?} is not a whole number", String::from_utf8_lossy(text)),
            );
        }
        let used = core::str::from_utf8(trimmed).ok().and_then(|t| t.parse().ok()).unwrap_or(u64::MAX);
        with_limiter!(h, |l| observe(NAME, &l, limit, used, window_left_ns))
    })
}

/// The body of the observe calls for a limiter of `N` limits.
fn observe<const N: usize>(
    name: &str,
    l: &SharedRateLimiter<'_, N>,
    limit: usize,
    used: u64,
    left: u64,
) -> tw_status {
    if limit >= N {
        return fail(
            tw_status::InvalidArgument,
            format_args!("{name}: `limit` = {limit}, the rate limiter has {N} limits"),
        );
    }
    let _ = if left == u64::MAX {
        l.observe_used(limit, used, &MonotonicClock)
    } else {
        l.observe_used_in(limit, used, Duration::from_nanos(left), &MonotonicClock)
    };
    tw_status::Ok
}

/// Writes the units each limit counts now to `in_use[0..n]`.
/// `TW_STATUS_INVALID_ARGUMENT` for `n` other than the limiter's number of
/// limits. No pointer may be NULL. Thread-safe.
///
/// # Safety
/// `limiter` is NULL or a live handle; `in_use` is NULL or writable for `n`
/// values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_rate_limiter_in_use(
    limiter: *const tw_rate_limiter,
    in_use: *mut u64,
    n: usize,
) -> tw_status {
    const NAME: &str = "tw_rate_limiter_in_use";
    ffi_body!(NAME; {
        let h = arg!(NAME, limiter);
        let out = arg!(NAME, in_use);
        with_limiter!(h, |l| {
            let counts = l.in_use(&MonotonicClock);
            if let Err(status) = check_costs(NAME, n, counts.len()) {
                return status;
            }
            for (i, c) in counts.iter().enumerate() {
                // SAFETY: `out` is writable for `n == counts.len()` values (the caller's guarantee).
                unsafe { out.add(i).write(*c) };
            }
            tw_status::Ok
        })
    })
}
