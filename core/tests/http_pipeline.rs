//! The pipeline against a real HTTP server on 127.0.0.1: timeouts, trips,
//! recovery, stale fallback, 429 holds and a 503's `Retry-After`.
#![cfg(all(feature = "tokio", feature = "http", not(loom)))]

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{Mode, Server, client, get, get_ok};
use tripwire::{
    Assessment, BreakerConfig, ManualClock, NamedBreaker, Pipeline, State,
    http::HttpClassifier,
    pipeline::PipelineError,
    stale::{Served, StaleCache, StalePolicy},
    timeout::TokioTimer,
};

const TIMEOUT: Duration = Duration::from_millis(30);
const COOL_DOWN: Duration = Duration::from_millis(40);

/// A breaker on a clock the test moves, so that no pause of a busy machine
/// can end a cool-down early.
fn breaker(name: &str, threshold: u32) -> Arc<NamedBreaker<ManualClock>> {
    let config =
        BreakerConfig::builder().failure_threshold(threshold).open_timeout(COOL_DOWN).build().unwrap();
    Arc::new(NamedBreaker::with_clock(name, config, ManualClock::new(1)))
}

#[tokio::test]
async fn a_timeout_is_a_failure_and_an_open_breaker_stops_calling() {
    let server = Server::start().await;
    let client = client();
    let breaker = breaker("test/hang", 2);
    let pipeline = Pipeline::builder().breaker(breaker.clone()).timeout(TIMEOUT).timer(TokioTimer).build();
    server.set(Mode::Hang);
    for _ in 0..2 {
        let got = pipeline.call_async(|| get_ok(&client, server.url("/book"))).await;
        assert_eq!(got, Err(PipelineError::Timeout(TIMEOUT)));
    }
    assert_eq!((breaker.state(), breaker.snapshot().failures), (State::Open, 2));
    let hits = server.hits();
    let refused = pipeline.call_async(|| get_ok(&client, server.url("/book"))).await.unwrap_err();
    assert!(matches!(refused, PipelineError::Open(r) if r.retry_after.is_some_and(|d| d <= COOL_DOWN)));
    assert_eq!(server.hits(), hits, "an open breaker never calls");
}

#[tokio::test]
async fn the_breaker_opens_on_503s_and_recovers_with_one_probe() {
    let server = Server::start().await;
    let client = client();
    let breaker = breaker("test/503", 3);
    let pipeline = Pipeline::builder().breaker(breaker.clone()).timeout(TIMEOUT).timer(TokioTimer).build();
    let changes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = changes.clone();
    breaker.on_state_change(move |c| log.lock().unwrap().push((c.from, c.to)));

    server.set(Mode::Unavailable);
    for _ in 0..3 {
        let got = pipeline.call_async(|| get_ok(&client, server.url("/book"))).await;
        assert_eq!(got, Err(PipelineError::Call("HTTP 503 Service Unavailable".into())));
    }
    assert_eq!(breaker.state(), State::Open);
    server.set(Mode::Up);
    assert!(matches!(
        pipeline.call_async(|| get_ok(&client, server.url("/book"))).await,
        Err(PipelineError::Open(_))
    ));

    breaker.clock().advance(COOL_DOWN);
    let got = pipeline.call_async(|| get_ok(&client, server.url("/book"))).await;
    assert_eq!(got.as_deref(), Ok("bids/asks"));
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(
        *changes.lock().unwrap(),
        [(State::Closed, State::Open), (State::Open, State::HalfOpen), (State::HalfOpen, State::Closed)]
    );
}

#[tokio::test]
async fn stale_data_is_served_with_its_age_where_allowed_and_refused_for_balances() {
    let server = Server::start().await;
    let client = client();
    let pipeline =
        Pipeline::builder().breaker(breaker("test/stale", 5)).timeout(TIMEOUT).timer(TokioTimer).build();
    let cache: StaleCache<&str, String> = StaleCache::new();
    let book = StalePolicy::UpTo(Duration::from_secs(60));

    let fresh =
        cache.serve_async("book", book, pipeline.call_async(|| get_ok(&client, server.url("/book")))).await;
    assert_eq!(fresh, Ok(Served::Fresh("bids/asks".into())));
    let balance = cache.serve_async(
        "balance",
        StalePolicy::Never,
        pipeline.call_async(|| get_ok(&client, server.url("/bal"))),
    );
    assert!(balance.await.is_ok());

    server.set(Mode::Unavailable);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let stale =
        cache.serve_async("book", book, pipeline.call_async(|| get_ok(&client, server.url("/book")))).await;
    let Ok(Served::Stale { value, age }) = stale else { panic!("{stale:?}") };
    assert_eq!(value, "bids/asks");
    assert!(age >= Duration::from_millis(20) && age < Duration::from_secs(5), "{age:?}");

    let balance = cache.serve_async(
        "balance",
        StalePolicy::Never,
        pipeline.call_async(|| get_ok(&client, server.url("/bal"))),
    );
    assert_eq!(balance.await, Err(PipelineError::Call("HTTP 503 Service Unavailable".into())));
    let s = cache.stats().snapshot();
    assert_eq!((s.fresh, s.stale, s.refused), (2, 1, 1));
}

#[tokio::test]
async fn a_429_holds_the_breaker_open_exactly_until_its_retry_after() {
    let server = Server::start().await;
    let client = client();
    let clock = ManualClock::new(1_000_000_000);
    let breaker = Arc::new(NamedBreaker::with_clock("test/429", BreakerConfig::default(), clock));
    let pipeline = Pipeline::builder().breaker(breaker.clone()).timeout(TIMEOUT).timer(TokioTimer).build();
    let assess = |r: &Result<http::Response<String>, String>| match r {
        Ok(response) => tripwire::http::assess_response(response),
        Err(_) => Assessment::Failure,
    };

    server.set(Mode::TooMany("2".into()));
    let reply = pipeline.call_async_with(assess, || get(&client, server.url("/order"))).await.unwrap();
    assert_eq!(reply.status(), 429);
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(breaker.snapshot().failures, 0, "backpressure is not an ordinary failure");

    server.set(Mode::Up);
    let hits = server.hits();
    let refused = pipeline.call_async_with(assess, || get(&client, server.url("/order"))).await.unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_secs(2)));
    breaker.clock().advance(Duration::from_millis(1999));
    let refused = pipeline.call_async_with(assess, || get(&client, server.url("/order"))).await.unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(1)));
    assert_eq!(server.hits(), hits);

    breaker.clock().advance(Duration::from_millis(1));
    let reply = pipeline.call_async_with(assess, || get(&client, server.url("/order"))).await.unwrap();
    assert_eq!((reply.status().as_u16(), breaker.state()), (200, State::Closed));
}

#[tokio::test]
async fn a_dropped_call_counts_as_ignored_and_frees_the_probe() {
    let server = Server::start().await;
    let client = client();
    let breaker = breaker("test/drop", 1);
    let pipeline = Pipeline::builder().breaker(breaker.clone()).timer(TokioTimer).build();
    server.set(Mode::Hang);
    let call = pipeline.call_async(|| get_ok(&client, server.url("/book")));
    assert!(tokio::time::timeout(Duration::from_millis(20), call).await.is_err());
    let s = breaker.snapshot();
    assert_eq!((s.ignored, s.failures, breaker.state()), (1, 0, State::Closed));
}

/// A client's result judged by the HTTP classifier.
fn by_status(r: &Result<http::Response<String>, String>) -> Assessment {
    tripwire::http::assess_result(r)
}

#[tokio::test]
async fn a_503_response_is_retried_and_a_400_is_not_judged_once_by_the_same_classifier() {
    use tripwire::retry::{BackoffConfig, RetryPolicy};

    let server = Server::start().await;
    let client = client();
    let breaker = breaker("test/retry-503", 100);
    let backoff = BackoffConfig::builder().base(Duration::from_millis(1)).cap(Duration::from_millis(2));
    let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff.build().unwrap()).build().unwrap();
    for nesting_outside in [false, true] {
        let b = Pipeline::builder().retry(policy).breaker(breaker.clone()).timer(TokioTimer);
        let pipeline = if nesting_outside { b.breaker_outside_retry() } else { b }.build();
        let hits = server.hits();
        // A 503 then a 200: the 200 is the answer.
        server.set(Mode::UnavailableUntil(hits + 1));
        let got = pipeline.call_async_with(by_status, || get(&client, server.url("/book"))).await;
        assert_eq!(got.unwrap().status(), 200);
        assert_eq!(server.hits(), hits + 2, "the 503 response was retried once");
        // Only 503s: the last 503 is the answer once the attempts run out.
        server.set(Mode::Unavailable);
        let got = pipeline.call_async_with(by_status, || get(&client, server.url("/book"))).await;
        assert_eq!(got.unwrap().status(), 503);
        assert_eq!(server.hits(), hits + 5);
        // A 400 is the caller's fault: sent once.
        server.set(Mode::Status(400));
        let got = pipeline.call_async_with(by_status, || get(&client, server.url("/book"))).await;
        assert_eq!(got.unwrap().status(), 400);
        assert_eq!(server.hits(), hits + 6);
    }
    // Retry outside the breaker: each attempt one outcome (1 + 3 failures, 1
    // success, 1 ignored); breaker outside: one per request (the last attempt's).
    let s = breaker.snapshot();
    assert_eq!((s.failures, s.successes, s.ignored), (4 + 1, 1 + 1, 1 + 1));

    // The sync pipeline judges the same way.
    let sync = Pipeline::builder().retry(policy).build();
    let mut n = 0;
    let got = sync.call_with(
        |r: &Result<u16, ()>| if matches!(r, Ok(503)) { Assessment::Failure } else { Assessment::Success },
        || {
            n += 1;
            Ok(if n == 1 { 503 } else { 200 })
        },
    );
    assert_eq!((got, n), (Ok(200), 2));
}

/// Three attempts 1–2 ms apart unless a server names its pause, which is
/// capped at `cap`.
fn quick_retries(cap: Duration) -> tripwire::retry::RetryPolicy<'static> {
    use tripwire::retry::{BackoffConfig, RetryPolicy};
    let backoff = BackoffConfig::builder().base(Duration::from_millis(1)).cap(Duration::from_millis(2));
    let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff.build().unwrap());
    policy.max_retry_after(cap).build().unwrap()
}

/// A 503 asking for `retry_after`, then 200s.
fn unavailable_once(server: &Server, retry_after: &str) {
    let last = server.hits() + 1;
    server.set(Mode::StatusUntil { status: 503, retry_after: Some(retry_after.into()), last });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503s_retry_after_is_the_pause_before_its_retry_sync_and_async() {
    let server = Server::start().await;
    let client = client();
    let pipeline =
        Pipeline::builder().retry(quick_retries(Duration::from_secs(60))).timer(TokioTimer).build();

    unavailable_once(&server, "1");
    let got = pipeline.call_async_with(HttpClassifier, || get(&client, server.url("/book"))).await;
    assert_eq!(got.unwrap().status(), 200);
    assert_eq!(server.hits(), 2, "the 503 was retried once");
    let gap = server.gap(1, 2).unwrap();
    assert!(gap >= Duration::from_secs(1), "the async pipeline waited its backoff only: {gap:?}");

    // The sync pipeline, on a thread of its own, sleeps the same pause.
    unavailable_once(&server, "1");
    let (runtime, url) = (tokio::runtime::Handle::current(), server.url("/book"));
    let got = tokio::task::spawn_blocking(move || {
        pipeline.call_with(HttpClassifier, || runtime.block_on(get(&client, url.clone())))
    });
    assert_eq!(got.await.unwrap().unwrap().status(), 200);
    assert_eq!(server.hits(), 4, "the 503 was retried once");
    let gap = server.gap(3, 4).unwrap();
    assert!(gap >= Duration::from_secs(1), "the sync pipeline waited its backoff only: {gap:?}");
}

#[tokio::test]
async fn a_503s_pause_above_max_retry_after_is_cut_to_it_and_a_closure_names_none() {
    use tripwire::events::{Events, RetryCause, RetryNotice};

    let server = Server::start().await;
    let client = client();
    let events = Arc::new(Events::new("pipeline/retry-after"));
    let pauses = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = pauses.clone();
    events.on_retry(move |e| {
        if let RetryNotice::Scheduled { delay, capped_from, cause, .. } = *e {
            let status = match cause {
                RetryCause::Response(status) => status,
                _ => None,
            };
            seen.lock().unwrap().push((delay, capped_from, status));
        }
    });
    let cap = Duration::from_millis(300);
    let pipeline = Pipeline::builder().retry(quick_retries(cap)).events(events).timer(TokioTimer).build();

    unavailable_once(&server, "30");
    let got = pipeline.call_async_with(HttpClassifier, || get(&client, server.url("/book"))).await;
    assert_eq!(got.unwrap().status(), 200);
    assert!(server.gap(1, 2).unwrap() >= cap);
    let asked = Some(Duration::from_secs(30));
    assert_eq!(pauses.lock().unwrap().pop(), Some((cap, asked, Some(503))), "the cap, and what was asked");

    // The same verdict from a closure: a failure, retried after the backoff.
    unavailable_once(&server, "30");
    let got = pipeline.call_async_with(by_status, || get(&client, server.url("/book"))).await;
    assert_eq!(got.unwrap().status(), 200);
    let (delay, capped_from, status) = pauses.lock().unwrap().pop().unwrap();
    assert!(delay <= Duration::from_millis(2) && capped_from.is_none() && status.is_none(), "{delay:?}");
}
