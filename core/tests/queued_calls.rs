//! What a breaker learns of calls that queue for a bulkhead slot on this
//! host: a call is slow for what the dependency takes, not for its wait
//! (local queueing must not trip a slow-call rate against a dependency that
//! answers at once), and an attempt that got no slot hides no failure of
//! the attempts before it.
#![cfg(all(feature = "reqwest", not(loom)))]

mod support;

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tripwire::reqwest::GuardMiddleware;
use tripwire::{
    BreakerConfig, Bulkhead, NamedBreaker, Pipeline, State, retry::RetryPolicy, timeout::TokioTimer,
};

const SLOW: Duration = Duration::from_millis(100);
/// How long the slot is held elsewhere: well past `SLOW`.
const HELD: Duration = Duration::from_millis(250);

/// A breaker that opens on one slow call in one.
fn breaker() -> Arc<NamedBreaker> {
    let config = BreakerConfig::builder()
        .slow_call(SLOW)
        .slow_rate(0.5)
        .min_calls(1)
        .count_window(10)
        .build()
        .unwrap();
    Arc::new(NamedBreaker::new("queued", config))
}

/// A bulkhead of one slot, held by another thread for [`HELD`].
fn busy_bulkhead() -> (Arc<Bulkhead>, thread::JoinHandle<()>) {
    let bulkhead = Arc::new(Bulkhead::new(1));
    assert!(bulkhead.try_acquire_raw());
    let b = bulkhead.clone();
    (
        bulkhead,
        thread::spawn(move || {
            thread::sleep(HELD);
            assert!(b.release_raw());
        }),
    )
}

fn check(what: &str, breaker: &NamedBreaker) {
    let s = breaker.snapshot();
    assert_eq!((s.successes, s.slow, breaker.state()), (1, 0, State::Closed), "{what}: {s:?}");
}

fn pipelines(
    breaker: &Arc<NamedBreaker>,
    bulkhead: &Arc<Bulkhead>,
) -> [(&'static str, Pipeline<tripwire::MonotonicClock, TokioTimer>); 2] {
    let build = || {
        Pipeline::builder()
            .breaker(breaker.clone())
            .bulkhead(bulkhead.clone())
            .bulkhead_wait(Duration::from_secs(5))
            .timer(TokioTimer)
    };
    let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    [("without retries", build().build()), ("with retries", build().retry(policy).build())]
}

#[test]
fn a_sync_pipeline_times_the_call_not_the_wait_for_a_slot() {
    for i in 0..2 {
        let (breaker, (bulkhead, holder)) = (breaker(), busy_bulkhead());
        let (what, pipeline) = pipelines(&breaker, &bulkhead).into_iter().nth(i).unwrap();
        assert_eq!(pipeline.call(|| Ok::<_, ()>(1)), Ok(1));
        holder.join().unwrap();
        check(what, &breaker);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_pipeline_times_the_call_not_the_wait_for_a_slot() {
    for i in 0..2 {
        let (breaker, (bulkhead, holder)) = (breaker(), busy_bulkhead());
        let (what, pipeline) = pipelines(&breaker, &bulkhead).into_iter().nth(i).unwrap();
        assert_eq!(pipeline.call_async(|| async { Ok::<_, ()>(1) }).await, Ok(1));
        tokio::task::spawn_blocking(move || holder.join().unwrap()).await.unwrap();
        check(what, &breaker);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reqwest_middleware_times_the_request_not_the_wait_for_a_slot() {
    let server = support::Server::start().await;
    let (breaker, (bulkhead, holder)) = (breaker(), busy_bulkhead());
    let guard =
        GuardMiddleware::new(breaker.clone()).bulkhead(bulkhead).bulkhead_wait(Duration::from_secs(5));
    let inner = reqwest::Client::builder().no_proxy().build().unwrap();
    let client = reqwest_middleware::ClientBuilder::new(inner).with(guard).build();
    let response = client.get(format!("http://{}/book", server.addr)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    tokio::task::spawn_blocking(move || holder.join().unwrap()).await.unwrap();
    check("middleware", &breaker);
}

#[test]
fn a_slow_call_after_a_wait_for_a_slot_is_still_slow() {
    let (breaker, (bulkhead, holder)) = (breaker(), busy_bulkhead());
    let (_, pipeline) = pipelines(&breaker, &bulkhead).into_iter().next().unwrap();
    let got = pipeline.call(|| {
        thread::sleep(SLOW + Duration::from_millis(20));
        Ok::<_, ()>(1)
    });
    assert_eq!(got, Ok(1));
    holder.join().unwrap();
    let s = breaker.snapshot();
    assert_eq!((s.successes, s.slow, breaker.state()), (1, 1, State::Open), "{s:?}");
}

/// A breaker outside the retries, whose second attempt finds the bulkhead
/// taken (by someone else, during the pause after the first failure).
fn outside_retries() -> (Arc<NamedBreaker>, Arc<Bulkhead>, Pipeline<tripwire::MonotonicClock, TokioTimer>) {
    let config = BreakerConfig::builder().failure_threshold(5).build().unwrap();
    let breaker = Arc::new(NamedBreaker::new("outside", config));
    let bulkhead = Arc::new(Bulkhead::new(1));
    let events = Arc::new(tripwire::events::Events::new("outside"));
    events.on_retry({
        let bulkhead = bulkhead.clone();
        move |_| assert!(bulkhead.try_acquire_raw())
    });
    let backoff = tripwire::retry::BackoffConfig::builder()
        .base(Duration::from_millis(1))
        .cap(Duration::from_millis(2));
    let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff.build().unwrap()).build().unwrap();
    let pipeline = Pipeline::builder()
        .breaker(breaker.clone())
        .bulkhead(bulkhead.clone())
        .retry(policy)
        .breaker_outside_retry()
        .events(events)
        .timer(TokioTimer)
        .build();
    (breaker, bulkhead, pipeline)
}

fn check_one_failure(what: &str, breaker: &NamedBreaker, bulkhead: &Bulkhead) {
    let s = breaker.snapshot();
    assert_eq!((s.failures, s.ignored), (1, 0), "{what}: the request failed at the dependency: {s:?}");
    assert!(bulkhead.release_raw());
}

#[test]
fn sync_breaker_outside_retries_counts_the_failure_before_a_full_bulkhead() {
    let (breaker, bulkhead, pipeline) = outside_retries();
    let got = pipeline.call(|| Err::<(), _>("503"));
    assert!(got.is_err());
    check_one_failure("sync", &breaker, &bulkhead);
}

#[tokio::test]
async fn async_breaker_outside_retries_counts_the_failure_before_a_full_bulkhead() {
    let (breaker, bulkhead, pipeline) = outside_retries();
    let got = pipeline.call_async(|| async { Err::<(), _>("503") }).await;
    assert!(got.is_err());
    check_one_failure("async", &breaker, &bulkhead);
}
