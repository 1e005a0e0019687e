//! The blocking retry executor: why it stops, and how fast.
#![cfg(feature = "std")]

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use core::time::Duration;
use std::time::Instant;

use tripwire::{
    Assessment, Breaker, BreakerConfig, BulkheadFull, CallError,
    clock::FixedClock,
    retry::{
        BackoffConfig, Jitter, Refusal, RetryBudget, RetryBudgetConfig, RetryError, RetryEvent, RetryPolicy,
        Stop, retry, retry_notify,
    },
};

#[derive(Debug, PartialEq)]
struct Http(u16);
impl Refusal for Http {}

fn policy(attempts: u32, base: Duration) -> RetryPolicy<'static> {
    let backoff = BackoffConfig::builder().base(base).jitter(Jitter::None).build().unwrap();
    RetryPolicy::builder().max_attempts(attempts).backoff(backoff).build().unwrap()
}

#[test]
fn retries_until_success() {
    let r = retry(&policy(5, Duration::from_millis(1)), &Stop::never(), |n| {
        if n < 4 { Err(Http(503)) } else { Ok(n) }
    });
    assert_eq!(r, Ok(4));
}

#[test]
fn exhausted_carries_the_count_and_the_last_error() {
    let r =
        retry(&policy(3, Duration::from_millis(1)), &Stop::never(), |n| Err::<(), _>(Http(500 + n as u16)));
    assert_eq!(r, Err(RetryError::Exhausted { attempts: 3, last: Http(503) }));
}

#[test]
fn final_errors_and_refusals_stop_at_once() {
    let p = policy(5, Duration::from_millis(1))
        .classify(|e: &Http| if e.0 >= 500 { Assessment::Failure } else { Assessment::Ignored });
    assert_eq!(
        retry(&p, &Stop::never(), |_| Err::<(), _>(Http(404))),
        Err(RetryError::Final { attempts: 1, error: Http(404) })
    );

    let breaker = Breaker::new(BreakerConfig::builder().failure_threshold(1).build().unwrap());
    breaker.force_open();
    let calls = AtomicU32::new(0);
    let p = policy(5, Duration::from_millis(1));
    let r = retry(&p, &Stop::never(), |_| {
        calls.fetch_add(1, Ordering::Relaxed);
        breaker.call(&FixedClock(0), || Ok::<(), Http>(()))
    });
    assert!(matches!(r, Err(RetryError::Final { attempts: 1, error: CallError::Rejected(_) })), "{r:?}");
    assert_eq!(calls.load(Ordering::Relaxed), 1);

    let r = retry(&p, &Stop::never(), |_| Err::<(), _>(BulkheadFull { max: 4 }));
    assert_eq!(r, Err(RetryError::Final { attempts: 1, error: BulkheadFull { max: 4 } }));
}

#[test]
fn a_wait_past_the_deadline_is_not_started() {
    let started = Instant::now();
    let r = retry(&policy(5, Duration::from_secs(60)), &Stop::after(Duration::from_secs(5)), |_| {
        Err::<(), _>(Http(503))
    });
    assert_eq!(r, Err(RetryError::Deadline { attempts: 1, last: Some(Http(503)) }));
    assert!(started.elapsed() < Duration::from_secs(5));
    // The policy's own total limit acts the same way.
    let backoff = BackoffConfig::builder().base(Duration::from_secs(60)).build().unwrap();
    let p = RetryPolicy::builder().backoff(backoff).max_total(Duration::from_secs(1)).build().unwrap();
    assert!(matches!(
        retry(&p, &Stop::never(), |_| Err::<(), _>(Http(503))),
        Err(RetryError::Deadline { .. })
    ));
    // A deadline already passed makes no attempt at all.
    let r = retry(&p, &Stop::at(Instant::now()), |_| Ok::<_, Http>(()));
    assert_eq!(r, Err(RetryError::Deadline { attempts: 0, last: None }));
}

#[test]
fn cancellation_wakes_a_sleeping_retry_promptly() {
    let cancel = AtomicBool::new(false);
    let started = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(30));
            cancel.store(true, Ordering::Release);
        });
        retry(&policy(5, Duration::from_secs(60)), &Stop::never().or_cancelled(&cancel), |_| {
            Err::<(), _>(Http(503))
        })
    });
    assert_eq!(r, Err(RetryError::Cancelled { attempts: 1, last: Some(Http(503)) }));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // Cancelled before the start: no attempt.
    let r = retry(&policy(5, Duration::from_millis(1)), &Stop::never().or_cancelled(&cancel), |_| {
        Ok::<_, Http>(())
    });
    assert_eq!(r, Err(RetryError::Cancelled { attempts: 0, last: None }));
}

#[test]
fn retry_after_overrides_the_backoff() {
    // A bare retry has no breaker to hold for a 429: to wait it out and
    // try again, it is a failure whose pause the server named.
    let p = policy(3, Duration::from_secs(60))
        .classify((|_: &Http| Assessment::Failure, |_: &Http| Some(Duration::from_millis(5))));
    let started = Instant::now();
    let r = retry(&p, &Stop::never(), |n| if n < 3 { Err(Http(429)) } else { Ok(n) });
    assert_eq!(r, Ok(3));
    assert!(started.elapsed() < Duration::from_secs(30));
    // Classed as backpressure, it ends the retries and is the answer.
    let held = policy(3, Duration::from_millis(1))
        .classify(|_: &Http| Assessment::Backpressure(Some(Duration::from_millis(5))));
    let r = retry(&held, &Stop::never(), |_| Err::<(), _>(Http(429)));
    assert_eq!(r, Err(RetryError::Final { attempts: 1, error: Http(429) }));
}

#[test]
fn an_error_the_classifier_calls_a_success_ends_the_retries_with_the_attempts_made() {
    let p = policy(5, Duration::from_millis(1))
        .classify(|e: &Http| if e.0 == 503 { Assessment::Failure } else { Assessment::Success });
    let r = retry(&p, &Stop::never(), |n| Err::<(), _>(Http(if n == 1 { 503 } else { 200 })));
    assert_eq!(r, Err(RetryError::Final { attempts: 2, error: Http(200) }));
}

#[test]
fn an_empty_budget_stops_the_retries() {
    let config =
        RetryBudgetConfig::builder().ratio(0.0).min_retries_per_sec(10.0).ttl(Duration::from_millis(100));
    let budget = RetryBudget::new(config.build().unwrap());
    let p = policy(10, Duration::from_millis(1)).budget(&budget);
    // One reserve token: one retry, then the budget says no.
    let r = retry(&p, &Stop::never(), |_| Err::<(), _>(Http(503)));
    assert_eq!(r, Err(RetryError::BudgetExhausted { attempts: 2, last: Http(503) }));
}

#[test]
fn a_refusal_inside_a_breaker_call_also_stops_at_once() {
    #[derive(Debug, PartialEq)]
    enum Guarded {
        Full(BulkheadFull),
        Status(u16),
    }
    impl Refusal for Guarded {
        fn is_refusal(&self) -> bool {
            matches!(self, Guarded::Full(_))
        }
    }
    let breaker = Breaker::new(BreakerConfig::default());
    let p = policy(5, Duration::from_millis(1));
    let r = retry(&p, &Stop::never(), |_| {
        breaker.call(&FixedClock(0), || Err::<(), _>(Guarded::Full(BulkheadFull { max: 2 })))
    });
    assert!(matches!(r, Err(RetryError::Final { attempts: 1, .. })), "{r:?}");
    let breaker = Breaker::new(BreakerConfig::builder().failure_threshold(10).build().unwrap());
    let r =
        retry(&p, &Stop::never(), |_| breaker.call(&FixedClock(0), || Err::<(), _>(Guarded::Status(503))));
    assert!(matches!(r, Err(RetryError::Exhausted { attempts: 5, .. })), "{r:?}");
}

#[test]
fn the_hook_hears_each_retry_before_its_pause_and_never_the_last_attempt() {
    let mut heard = Vec::new();
    let r = retry_notify(
        &policy(3, Duration::from_millis(1)),
        &Stop::never(),
        |e: RetryEvent<'_, Http>| heard.push((e.attempt, e.delay, e.error.0)),
        |n| Err::<(), _>(Http(500 + n as u16)),
    );
    assert_eq!(r, Err(RetryError::Exhausted { attempts: 3, last: Http(503) }));
    // No jitter: the backoff doubles from 1 ms; the third attempt is the last.
    assert_eq!(heard, [(1, Duration::from_millis(1), 501), (2, Duration::from_millis(2), 502)]);

    // A server's hint is the pause the hook hears; a final error is heard never.
    let hinted = policy(3, Duration::from_millis(1)).classify((
        |e: &Http| if e.0 >= 500 { Assessment::Failure } else { Assessment::Ignored },
        |e: &Http| (e.0 == 503).then_some(Duration::from_millis(3)),
    ));
    let mut heard = Vec::new();
    let r = retry_notify(
        &hinted,
        &Stop::never(),
        |e: RetryEvent<'_, Http>| heard.push((e.attempt, e.delay)),
        |n| Err::<(), _>(Http(if n == 1 { 503 } else { 404 })),
    );
    assert_eq!(r, Err(RetryError::Final { attempts: 2, error: Http(404) }));
    assert_eq!(heard, [(1, Duration::from_millis(3))]);

    // A retry the budget refuses is no retry: the hook is not called.
    let budget =
        RetryBudget::new(RetryBudgetConfig::builder().min_retries_per_sec(0.0).ratio(0.0).build().unwrap());
    let mut calls = 0;
    let r = retry_notify(
        &policy(3, Duration::from_millis(1)).budget(&budget),
        &Stop::never(),
        |_: RetryEvent<'_, Http>| calls += 1,
        |_| Err::<(), _>(Http(503)),
    );
    assert!(matches!(r, Err(RetryError::BudgetExhausted { attempts: 1, .. })), "{r:?}");
    assert_eq!(calls, 0);
}
