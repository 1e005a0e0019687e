//! Retries, the retry budget and the bulkhead in the pipeline, against a
//! real HTTP server on 127.0.0.1.
#![cfg(all(feature = "tokio", feature = "http", not(loom)))]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{Mode, Server, client, get_ok};
use tripwire::{
    Assessment, BreakerConfig, Bulkhead, ManualClock, NamedBreaker, Pipeline, State,
    pipeline::PipelineError,
    retry::{BackoffConfig, Jitter, RetryBudget, RetryBudgetConfig, RetryPolicy},
    timeout::TokioTimer,
};

const TIMEOUT: Duration = Duration::from_millis(30);

fn policy(attempts: u32) -> RetryPolicy<'static> {
    let backoff =
        BackoffConfig::builder().base(Duration::from_millis(1)).cap(Duration::from_millis(2)).build();
    RetryPolicy::builder().max_attempts(attempts).backoff(backoff.unwrap()).build().unwrap()
}

fn breaker(threshold: u32) -> Arc<NamedBreaker<ManualClock>> {
    let config = BreakerConfig::builder().failure_threshold(threshold).build().unwrap();
    Arc::new(NamedBreaker::with_clock("retry", config, ManualClock::new(1)))
}

#[tokio::test]
async fn retries_give_up_with_the_count_and_the_last_error() {
    let server = Server::start().await;
    let client = client();
    let pipeline = Pipeline::builder().retry(policy(3)).timeout(TIMEOUT).timer(TokioTimer).build();
    server.set(Mode::Unavailable);
    let got = pipeline.call_async(|| get_ok(&client, server.url("/book"))).await.unwrap_err();
    let PipelineError::RetriesExhausted { attempts: 3, last } = &got else { panic!("{got:?}") };
    assert_eq!(**last, PipelineError::Call("HTTP 503 Service Unavailable".into()));
    assert_eq!(server.hits(), 3);

    // A hang is retried too: each attempt times out.
    server.set(Mode::Hang);
    let got = pipeline.call_async(|| get_ok(&client, server.url("/book"))).await.unwrap_err();
    assert!(
        matches!(&got, PipelineError::RetriesExhausted { attempts: 3, last } if **last == PipelineError::Timeout(TIMEOUT))
    );
}

#[tokio::test]
async fn a_breaker_rejection_stops_the_retries_at_once() {
    let server = Server::start().await;
    let client = client();
    let breaker = breaker(2);
    let pipeline = Pipeline::builder()
        .retry(policy(5))
        .breaker(breaker.clone())
        .timeout(TIMEOUT)
        .timer(TokioTimer)
        .build();
    server.set(Mode::Unavailable);
    let got = pipeline.call_async(|| get_ok(&client, server.url("/book"))).await.unwrap_err();
    assert!(matches!(got, PipelineError::Open(r) if r.retry_after.is_some()), "{got:?}");
    assert_eq!(server.hits(), 2, "two failures tripped it; the third attempt was refused");
    assert_eq!(breaker.state(), State::Open);
}

#[tokio::test]
async fn breaker_outside_retry_counts_one_outcome_per_request() {
    let server = Server::start().await;
    let client = client();
    let breaker = breaker(2);
    let pipeline = Pipeline::builder()
        .retry(policy(3))
        .breaker(breaker.clone())
        .breaker_outside_retry()
        .timeout(TIMEOUT)
        .timer(TokioTimer)
        .build();
    server.set(Mode::Unavailable);
    let got = pipeline.call_async(|| get_ok(&client, server.url("/book"))).await.unwrap_err();
    assert_eq!(got.attempts(), 3);
    assert_eq!((server.hits(), breaker.snapshot().failures, breaker.state()), (3, 1, State::Closed));
    // The sync pipeline nests the same way.
    let got = pipeline.call(|| Err::<(), _>("503")).unwrap_err();
    assert_eq!((got.attempts(), breaker.snapshot().failures, breaker.state()), (3, 2, State::Open));
}

#[tokio::test]
async fn the_budget_caps_retries_during_an_outage() {
    let server = Server::start().await;
    let client = client();
    let budget = RetryBudgetConfig::builder().ratio(0.1).min_retries_per_sec(0.0).build().unwrap();
    let pipeline = Pipeline::builder()
        .retry(policy(3))
        .retry_budget(Arc::new(RetryBudget::new(budget)))
        .timeout(TIMEOUT)
        .timer(TokioTimer)
        .build();
    server.set(Mode::Unavailable);
    let mut capped = 0;
    for _ in 0..20 {
        let got = pipeline.call_async(|| get_ok(&client, server.url("/book"))).await.unwrap_err();
        capped += usize::from(matches!(got, PipelineError::BudgetExhausted { attempts: 1, .. }));
    }
    // 20 calls deposit 2 tokens: about 2 retries, not the 40 the policy allows.
    assert!(server.hits() <= 20 + 3, "{} requests", server.hits());
    assert!(capped >= 17, "{capped} calls capped");
}

#[tokio::test]
async fn a_full_bulkhead_refuses_without_calling_and_is_not_retried() {
    let server = Server::start().await;
    let client = client();
    let bulkhead = Arc::new(Bulkhead::new(1));
    let pipeline = Pipeline::builder()
        .retry(policy(3))
        .bulkhead(bulkhead.clone())
        .bulkhead_wait(Duration::from_millis(10))
        .timer(TokioTimer)
        .build();
    let held = bulkhead.try_acquire().unwrap();
    let got = pipeline.call_async(|| get_ok(&client, server.url("/book"))).await;
    assert_eq!(got, Err(PipelineError::Full(tripwire::BulkheadFull { max: 1 })));
    assert_eq!(server.hits(), 0);
    drop(held);
    assert_eq!(
        pipeline.call_async(|| get_ok(&client, server.url("/book"))).await.as_deref(),
        Ok("bids/asks")
    );
}

#[tokio::test]
async fn a_deadline_stops_retrying_and_cuts_the_attempt_short_without_blaming_the_dependency() {
    let server = Server::start().await;
    let client = client();
    let breaker = breaker(1);
    let pipeline = Pipeline::builder()
        .retry(policy(100))
        .breaker(breaker.clone())
        .timeout(Duration::from_secs(5))
        .timer(TokioTimer)
        .build();
    server.set(Mode::Hang);
    let start = Instant::now();
    let deadline = start + Duration::from_millis(40);
    let got =
        pipeline.call_async_before(deadline, ok_is_success, || get_ok(&client, server.url("/book"))).await;
    let elapsed = start.elapsed();
    assert!(matches!(got, Err(PipelineError::Deadline { attempts: 1, last: None })), "{got:?}");
    assert!(elapsed < Duration::from_millis(500), "{elapsed:?}");
    let s = breaker.snapshot();
    assert_eq!((s.failures, s.ignored, breaker.state()), (0, 1, State::Closed));

    // The sync pipeline starts nothing past its deadline.
    let hits = server.hits();
    let got = pipeline.call_before(Instant::now(), ok_is_success, || Ok::<_, ()>(1));
    assert_eq!(got, Err(PipelineError::Deadline { attempts: 0, last: None }));
    assert_eq!(server.hits(), hits);
}

fn ok_is_success<T, E>(r: &Result<T, E>) -> Assessment {
    if r.is_ok() { Assessment::Success } else { Assessment::Failure }
}

#[tokio::test]
async fn dropping_the_call_stops_its_retries_at_once() {
    let server = Server::start().await;
    let client = client();
    // No jitter: a full-jitter delay drawn under 300 ms (3% of draws) would
    // start the second attempt before the drop.
    let slow_backoff =
        BackoffConfig::builder().base(Duration::from_secs(10)).jitter(Jitter::None).build().unwrap();
    let policy = RetryPolicy::builder().max_attempts(5).backoff(slow_backoff).build().unwrap();
    let pipeline = Pipeline::builder().retry(policy).timer(TokioTimer).build();
    server.set(Mode::Unavailable);
    let call = pipeline.call_async(|| get_ok(&client, server.url("/book")));
    // Long enough for the first attempt on a busy machine; the 10 s backoff
    // keeps the second one far away.
    assert!(tokio::time::timeout(Duration::from_millis(300), call).await.is_err());
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(server.hits(), 1, "no attempt after the drop");
}
