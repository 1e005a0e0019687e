//! Arbitrary statuses and headers through `http::assess`: whatever a server
//! sends, classifying it never panics, and the hold it asks for, recorded
//! on a breaker, is capped by the config's `max_hold` and never wedges it.
#![no_main]

use core::time::Duration;

use http::StatusCode;
use libfuzzer_sys::fuzz_target;
use tripwire::{Assessment, Breaker, BreakerConfig, Clock, State, clock::FixedClock};

mod headers;

/// The headers the classifier reads, and some it must ignore.
const NAMES: [&str; 6] = [
    "retry-after",
    "ratelimit-reset",
    "x-ratelimit-reset",
    "x-ratelimit-remaining",
    "date",
    "retry-after-ms",
];

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_at_checked(2) else { return };
    // Every u16 the status type accepts (100 to 999); anything else is no status.
    let Ok(status) = StatusCode::from_u16(u16::from_le_bytes([head[0], head[1]])) else { return };
    // Headers as (name selector, length, value bytes), until the input runs out.
    let headers = headers::headers(rest, &NAMES, 8);
    let assessment = tripwire::http::assess(status, &headers);
    let _ = tripwire::http::retry_after(&headers);
    assert_eq!(matches!(assessment, Assessment::Backpressure(_)), matches!(status.as_u16(), 429 | 418));

    // What a pipeline does with it: record the outcome, hold for the time asked.
    let config = BreakerConfig::builder().max_hold(Duration::from_secs(60)).build().unwrap();
    let breaker = Breaker::new(config);
    let clock = FixedClock(u64::from_le_bytes(*data.first_chunk().unwrap_or(&[0; 8])));
    let ticket = breaker.try_acquire(&clock).unwrap();
    breaker.record(ticket, assessment.outcome(), &clock);
    if let Assessment::Backpressure(hold) = assessment {
        let d = hold.unwrap_or(config.open_timeout());
        breaker.open_for(d, &clock);
        if let Some(left) = breaker.hold_left(&clock) {
            assert!(left <= config.max_hold(), "{left:?}");
            assert_eq!(breaker.state(), State::Open);
        }
        assert_eq!(breaker.snapshot().capped_holds, u64::from(d > config.max_hold()));
        // Once the cap has passed, the next call is a probe.
        let later = FixedClock(clock.now().wrapping_add(60_000_000_000));
        assert!(breaker.try_acquire(&later).is_ok_and(|t| t.is_probe()) || d.is_zero());
    }
});
