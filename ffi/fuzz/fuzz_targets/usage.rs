//! Arbitrary headers through `http::usage`: whatever a server sends,
//! reading its rate-limit counts never panics, a count read from a server's
//! limit never scales past the limiter's units, and no count raises a
//! limiter past them.
#![no_main]

use core::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use tripwire::clock::FixedClock;
use tripwire::http::usage;
use tripwire::limiter::{LimitConfig, RateLimiter};

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
    let mut rest = data;
    let mut headers = HeaderMap::new();
    // Headers as (name selector, length, value bytes), until the input runs out.
    while let [selector, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (value, tail) = tail.split_at(n);
        rest = tail;
        let name = match NAMES.get(usize::from(*selector) % 12) {
            Some(known) => HeaderName::from_static(known),
            // A name of the value's own bytes (`x-mbx-used-weight-<anything>`, say).
            None => match HeaderName::from_bytes(value) {
                Ok(name) => name,
                Err(_) => continue,
            },
        };
        if let Ok(value) = HeaderValue::from_bytes(value) {
            headers.append(name, value);
        }
    }
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
