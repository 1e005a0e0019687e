//! Arbitrary headers through `http::usage`: whatever a server sends,
//! reading its rate-limit counts never panics, a count read from a server's
//! limit never scales past the limiter's units, and no count raises a
//! limiter past them.
#![no_main]

use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use tripwire::clock::FixedClock;
use tripwire::http::usage;
use tripwire::limiter::{LimitConfig, RateLimiter};

mod headers;

/// The headers the reader reads, and a name made of the value's bytes.
const NAMES: [&str; 9] = [
    "x-mbx-used-weight-1m",
    "x-mbx-order-count-10s",
    "ratelimit",
    "ratelimit-policy",
    "ratelimit-remaining",
    "ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-limit",
    "x-mbx-used-weight",
];

fuzz_target!(|data: &[u8]| {
    // Headers as (name selector, length, value bytes), until the input runs out.
    let headers = headers::headers(data, &NAMES, 12);
    let found = usage(&headers);
    let limiter = RateLimiter::new([LimitConfig::builder(1_200, Duration::from_secs(60)).build().unwrap()]);
    let now = FixedClock(u64::from(data.len() as u32) << 32);
    for count in &found.counts {
        let Some(used) = count.used_of(1_200) else { continue };
        if count.used.is_none() {
            assert!(used <= 1_200, "{count:?} scaled to {used}");
        }
        limiter.observe_used(0, used, &now);
        assert!(limiter.in_use(&now)[0] <= 1_200);
    }
});
