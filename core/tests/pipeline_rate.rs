//! The rate limiter as a step of the pipeline: each attempt takes its
//! units before the bulkhead and waits for them within the deadline; a
//! refusal is no failure of the dependency; units of an attempt that is not
//! sent go back.
#![cfg(all(feature = "tokio", not(loom)))]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tripwire::{
    Assessment, BreakerConfig, Bulkhead, MonotonicClock, NamedBreaker, Pipeline,
    limiter::{LimitConfig, RateLimiter, Throttled},
    pipeline::PipelineError,
    refusal,
    retry::{BackoffConfig, Jitter, RetryPolicy},
    timeout::TokioTimer,
};

/// 10 a second, 2 at once: a unit stays counted 125 ms.
fn limiter() -> Arc<RateLimiter<1>> {
    Arc::new(RateLimiter::new([LimitConfig::builder(10, Duration::from_secs(1)).burst(2).build().unwrap()]))
}

const UNIT: Duration = Duration::from_millis(125);

#[test]
fn calls_past_the_burst_wait_for_their_units() {
    let limiter = limiter();
    let pipeline = Pipeline::builder().rate_limit(limiter.clone(), [1]).build();
    let start = Instant::now();
    for _ in 0..4 {
        assert_eq!(pipeline.call(|| Ok::<_, ()>(())), Ok(()));
    }
    // Two went at once, the third and fourth one unit's time apart.
    assert!(start.elapsed() >= 2 * UNIT, "{:?}", start.elapsed());
}

#[test]
fn a_wait_longer_than_allowed_is_a_refusal_and_no_failure() {
    let limiter = limiter();
    let breaker =
        Arc::new(NamedBreaker::new("books", BreakerConfig::builder().failure_threshold(1).build().unwrap()));
    let pipeline = Pipeline::builder()
        .breaker(breaker.clone())
        .rate_limit(limiter.clone(), [1])
        .rate_limit_wait(Duration::ZERO)
        .build();
    let calls = AtomicU32::new(0);
    let call = || {
        calls.fetch_add(1, Ordering::Relaxed);
        Ok::<_, std::io::Error>(())
    };
    assert!(pipeline.call(call).is_ok());
    assert!(pipeline.call(call).is_ok());
    let err = pipeline.call(call).unwrap_err();
    // One unit's time, less the moments since the second call.
    let soon = |wait: Duration| wait <= UNIT && wait > UNIT / 2;
    assert!(matches!(err, PipelineError::RateLimited(Throttled::Wait { wait, .. }) if soon(wait)), "{err:?}");
    assert!(err.retry_after().is_some_and(soon));
    assert_eq!(err.attempts(), 0);
    assert!(matches!(refusal(&err), Some(tripwire::RefusedBy::RateLimited(_))));
    assert_eq!(calls.load(Ordering::Relaxed), 2, "the refused call was not made");
    let s = breaker.snapshot();
    assert_eq!((s.failures, s.ignored, s.successes), (0, 1, 2), "the refused admission is ignored");
}

#[test]
fn the_wait_counts_against_the_deadline() {
    let limiter = limiter();
    let pipeline = Pipeline::builder().rate_limit(limiter.clone(), [2]).build();
    assert!(pipeline.call(|| Ok::<_, ()>(())).is_ok());
    // Two units' wait, a deadline of one.
    let start = Instant::now();
    let err =
        pipeline.call_before(start + UNIT, |_: &Result<(), ()>| Assessment::Success, || Ok(())).unwrap_err();
    assert!(matches!(err, PipelineError::RateLimited(_)), "{err:?}");
    assert!(start.elapsed() < 2 * UNIT, "it did not wait past the deadline");
}

#[test]
fn units_of_an_attempt_the_bulkhead_refuses_go_back() {
    let limiter = limiter();
    let bulkhead = Arc::new(Bulkhead::new(1));
    let pipeline = Pipeline::builder().rate_limit(limiter.clone(), [1]).bulkhead(bulkhead.clone()).build();
    assert!(bulkhead.try_acquire_raw(), "the one slot, held by someone else");
    let err = pipeline.call(|| Ok::<_, ()>(())).unwrap_err();
    assert!(matches!(err, PipelineError::Full(_)), "{err:?}");
    assert_eq!(limiter.in_use(&MonotonicClock), [0], "given back");
    assert!(bulkhead.release_raw());
}

#[test]
fn each_attempt_takes_its_units_and_a_breaker_refusal_takes_none() {
    // A unit stays counted 2 s: none runs out during the test.
    let limiter = Arc::new(RateLimiter::new([LimitConfig::builder(100, Duration::from_secs(100))
        .burst(50)
        .build()
        .unwrap()]));
    let breaker =
        Arc::new(NamedBreaker::new("books", BreakerConfig::builder().failure_threshold(3).build().unwrap()));
    let backoff =
        BackoffConfig::builder().base(Duration::from_millis(1)).jitter(Jitter::None).build().unwrap();
    let pipeline = Pipeline::builder()
        .breaker(breaker.clone())
        .rate_limit(limiter.clone(), [5])
        .retry(RetryPolicy::builder().max_attempts(4).backoff(backoff).build().unwrap())
        .build();
    let err = pipeline.call(|| Err::<(), _>("503")).unwrap_err();
    // Three failures trip the breaker; the fourth attempt is refused by it.
    assert!(matches!(err, PipelineError::Open(_)), "{err:?}");
    assert_eq!(limiter.in_use(&MonotonicClock), [15], "three attempts of 5 units");
}

#[tokio::test]
async fn an_async_call_waits_on_the_timer() {
    let limiter = limiter();
    let pipeline = Pipeline::builder().rate_limit(limiter.clone(), [1]).timer(TokioTimer).build();
    let start = Instant::now();
    for _ in 0..3 {
        assert_eq!(pipeline.call_async(|| async { Ok::<_, ()>(()) }).await, Ok(()));
    }
    assert!(start.elapsed() >= UNIT, "{:?}", start.elapsed());
}
