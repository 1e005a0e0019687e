//! Arbitrary `tw_breaker_config` values and `struct_size`s: validation and
//! construction agree, every refusal is `TW_STATUS_INVALID_CONFIG` or
//! `TW_STATUS_INVALID_STRUCT_SIZE` with a message, and a breaker built from
//! an accepted config survives arbitrary calls at arbitrary times. Backoff
//! and retry budget configs likewise: refused cleanly, or working.
#![no_main]

use core::ffi::CStr;
use core::ptr::null_mut;

use libfuzzer_sys::fuzz_target;
use tripwire_ffi::*;

/// Reads fixed-size values off the front of the input, zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.bytes())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.bytes())
    }
}

/// Room for any `struct_size` the library reads, aligned as the struct.
#[repr(C, align(8))]
struct CallerStruct([u8; 4096]);

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    // Small values are the interesting ones for counts; keep a way to reach them.
    let small = |v: u32| if v & 0x8000_0000 != 0 { v } else { v % 70 };
    let config = tw_breaker_config {
        struct_size: 0,
        failure_threshold: small(input.u32()),
        half_open_max: small(input.u32()),
        open_timeout_ns: input.u64(),
        open_timeout_max_ns: input.u64(),
        open_timeout_growth: input.f64(),
        open_timeout_jitter: input.f64(),
        jitter_seed: input.u64(),
        half_open_successes: small(input.u32()),
        count_successes: input.u32() % 3,
        reserved: input.u32() % 2,
        window_bucket_ns: input.u64(),
        failure_rate: input.f64(),
        slow_call_ns: input.u64(),
        slow_rate: input.f64(),
        window_buckets: small(input.u32()),
        min_calls: small(input.u32()),
        // 0 and 1 are the kinds; 2 and 3 must be refused.
        window_kind: input.u32() % 4,
        count_window: small(input.u32()),
        probe_timeout_ns: input.u64(),
        max_hold_ns: input.u64(),
    };
    let backoff = tw_backoff_config {
        struct_size: size_of::<tw_backoff_config>() as u32,
        jitter: input.u32() % 5,
        base_ns: input.u64(),
        cap_ns: input.u64(),
        factor: input.f64(),
        seed: input.u64(),
    };
    let budget = tw_retry_budget_config {
        struct_size: size_of::<tw_retry_budget_config>() as u32,
        reserved: input.u32() % 2,
        ratio: input.f64(),
        min_retries_per_sec: input.f64(),
        ttl_ns: input.u64(),
    };
    // The breaker config as a caller's struct of any size: a layout, a
    // newer header's (its unknown bytes zero or not), or garbage. The
    // buffer holds the largest size the library reads (4096), so no size
    // can make it read past the caller's memory.
    let mut caller = Box::new(CallerStruct([0; 4096]));
    // SAFETY: `config` is 112 plain bytes, `caller.0` 4096.
    unsafe {
        core::ptr::copy_nonoverlapping(
            (&raw const config).cast::<u8>(),
            caller.0.as_mut_ptr(),
            size_of::<tw_breaker_config>(),
        )
    };
    let struct_size = match input.bytes::<1>()[0] % 8 {
        0 => input.u32(),
        1 => TW_BREAKER_CONFIG_SIZE_V1,
        2 => TW_BREAKER_CONFIG_SIZE_V2,
        3 => {
            // A newer header's, maybe setting a field unknown here.
            let size = TW_BREAKER_CONFIG_SIZE_V4 + 8 * (input.u32() % 8);
            let at = size_of::<tw_breaker_config>() + (input.u32() % 64) as usize;
            caller.0[at] = input.bytes::<1>()[0] % 2;
            size
        }
        4 => TW_BREAKER_CONFIG_SIZE_V3,
        _ => TW_BREAKER_CONFIG_SIZE_V4,
    };
    caller.0[..4].copy_from_slice(&struct_size.to_ne_bytes());
    let config_ptr = caller.0.as_ptr().cast::<tw_breaker_config>();
    // SAFETY:
    // - Every pointer passed is valid for the call; each handle is freed once.
    unsafe {
        let mut bo = null_mut();
        match tw_backoff_new(&backoff, &mut bo) {
            tw_status::Ok => {
                let mut d = 0;
                for _ in 0..8 {
                    assert_eq!(tw_backoff_next_delay(bo, &mut d), tw_status::Ok);
                    assert!(d <= backoff.cap_ns, "{d} above the cap");
                }
                tw_backoff_free(bo);
            }
            other => assert_eq!(other, tw_status::InvalidConfig),
        }
        let mut rb = null_mut();
        match tw_retry_budget_new(&budget, &mut rb) {
            tw_status::Ok => {
                for t in 0..8u64 {
                    assert_eq!(tw_retry_budget_deposit_at(rb, t << 20), tw_status::Ok);
                    let s = tw_retry_budget_try_withdraw_at(rb, t << 20);
                    assert!(matches!(s, tw_status::Ok | tw_status::Rejected));
                }
                tw_retry_budget_free(rb);
            }
            other => assert_eq!(other, tw_status::InvalidConfig),
        }
        let valid = tw_breaker_config_validate(config_ptr);
        let mut b = null_mut();
        let made = tw_breaker_new(config_ptr, &mut b);
        assert_eq!(valid, made, "validate and new disagree");
        if made != tw_status::Ok {
            assert!(b.is_null());
            let msg = CStr::from_ptr(tw_last_error_message()).to_str().unwrap();
            let prefix = match made {
                tw_status::InvalidConfig => "tw_breaker_new: invalid breaker config: ",
                tw_status::InvalidStructSize => "tw_breaker_new: tw_breaker_config.struct_size = ",
                other => panic!("{other:?}: {msg}"),
            };
            assert!(msg.starts_with(prefix), "{msg}");
            return;
        }
        let mut now = 0u64;
        while !input.0.is_empty() {
            let op = input.bytes::<1>()[0];
            now = now.saturating_add(u64::from(input.u32()));
            let mut t = tw_ticket { started_at: 0, generation: 0, flags: 0 };
            let status = match op % 6 {
                0..=2 => match tw_breaker_try_acquire_at(b, now, &mut t, null_mut()) {
                    tw_status::Ok => tw_breaker_record_at(b, now, t, u32::from(op % 3), null_mut()),
                    other => other,
                },
                3 => tw_breaker_force_open(b, null_mut()),
                4 => tw_breaker_disable(b, null_mut()),
                _ => tw_breaker_reset(b, null_mut()),
            };
            assert!(matches!(status, tw_status::Ok | tw_status::Rejected), "{status:?}");
        }
        tw_breaker_free(b);
    }
});
