//! The tower breaker layer around a real hyper client, against a real
//! HTTP server on 127.0.0.1.
#![cfg(all(feature = "tower", feature = "tokio", not(loom)))]

mod support;

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use support::{Mode, Server, client};
use tower_layer::Layer;
use tower_service::Service;
use tripwire::tower::BreakerLayer;
use tripwire::{Assessment, BreakerConfig, CallError, ManualClock, NamedBreaker, State};

fn request(server: &Server) -> http::Request<Empty<Bytes>> {
    http::Request::get(server.url("/book")).body(Empty::new()).unwrap()
}

/// `poll_ready` then `call`, as tower's `oneshot` does.
async fn send<S, Req>(svc: &mut S, req: Req) -> Result<S::Response, S::Error>
where
    S: Service<Req>,
{
    poll_fn(|cx| svc.poll_ready(cx)).await?;
    svc.call(req).await
}

#[tokio::test]
async fn five_hundreds_trip_the_breaker_unless_the_classifier_says_otherwise() {
    let server = Server::start().await;
    let breaker = Arc::new(NamedBreaker::with_clock(
        "tower/503",
        BreakerConfig::builder().failure_threshold(2).build().unwrap(),
        ManualClock::new(1),
    ));
    let mut svc = BreakerLayer::new(breaker.clone()).layer(client());

    assert_eq!(send(&mut svc, request(&server)).await.unwrap().status(), 200);
    server.set(Mode::Unavailable);
    for _ in 0..2 {
        assert_eq!(send(&mut svc, request(&server)).await.unwrap().status(), 503);
    }
    assert_eq!(breaker.state(), State::Open);
    let hits = server.hits();
    assert!(matches!(send(&mut svc, request(&server)).await, Err(CallError::Rejected(_))));
    assert_eq!(server.hits(), hits);

    // A custom classifier: every response is the caller's business.
    breaker.reset();
    let mut lenient = BreakerLayer::new(breaker.clone())
        .classify(
            |r: &Result<http::Response<_>, _>| {
                if r.is_ok() { Assessment::Ignored } else { Assessment::Failure }
            },
        )
        .layer(client());
    for _ in 0..3 {
        assert_eq!(send(&mut lenient, request(&server)).await.unwrap().status(), 503);
    }
    assert_eq!((breaker.state(), breaker.snapshot().ignored), (State::Closed, 3));
}

#[tokio::test]
async fn a_429_holds_the_breaker_open_until_its_retry_after() {
    let server = Server::start().await;
    let breaker =
        Arc::new(NamedBreaker::with_clock("tower/429", BreakerConfig::default(), ManualClock::new(1)));
    let mut svc = BreakerLayer::new(breaker.clone()).layer(client());
    server.set(Mode::TooMany("3".into()));
    assert_eq!(send(&mut svc, request(&server)).await.unwrap().status(), 429);
    server.set(Mode::Up);
    let Err(CallError::Rejected(r)) = send(&mut svc, request(&server)).await else { panic!("admitted") };
    assert_eq!(r.retry_after, Some(Duration::from_secs(3)));
    breaker.clock().advance(Duration::from_secs(3));
    assert_eq!(send(&mut svc, request(&server)).await.unwrap().status(), 200);
    assert_eq!(breaker.state(), State::Closed);
}

#[tokio::test]
async fn connection_errors_fail_and_dropped_futures_are_ignored() {
    let server = Server::start().await;
    let breaker =
        Arc::new(NamedBreaker::with_clock("tower/drop", BreakerConfig::default(), ManualClock::new(1)));
    let mut svc = BreakerLayer::new(breaker.clone()).layer(client());

    // Readiness alone takes nothing.
    poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
    assert_eq!(breaker.snapshot().calls(), 0);

    server.set(Mode::Hang);
    let hung = send(&mut svc, request(&server));
    assert!(tokio::time::timeout(Duration::from_millis(20), hung).await.is_err());
    assert_eq!(breaker.snapshot().ignored, 1);

    // Nothing listens on a port we just freed: connection refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let req = http::Request::get(format!("http://{closed}/")).body(Empty::<Bytes>::new()).unwrap();
    assert!(matches!(send(&mut svc, req).await, Err(CallError::Inner(_))));
    assert_eq!(breaker.snapshot().failures, 1);
}

#[tokio::test]
async fn the_bulkhead_layer_refuses_beyond_its_cap_and_frees_slots_on_drop() {
    use tripwire::Bulkhead;
    use tripwire::tower::{BulkheadError, BulkheadLayer};

    let server = Server::start().await;
    let bulkhead = Arc::new(Bulkhead::new(1));
    let mut svc = BulkheadLayer::new(bulkhead.clone()).layer(client());
    server.set(Mode::Hang);
    let hung = send(&mut svc, request(&server));
    let mut hung = Box::pin(hung);
    assert!(tokio::time::timeout(Duration::from_millis(10), hung.as_mut()).await.is_err());
    let mut other = BulkheadLayer::new(bulkhead.clone()).layer(client());
    assert!(matches!(send(&mut other, request(&server)).await, Err(BulkheadError::Full(_))));
    drop(hung);
    assert_eq!(bulkhead.in_flight(), 0);
    server.set(Mode::Up);
    assert_eq!(send(&mut other, request(&server)).await.unwrap().status(), 200);
    assert_eq!(bulkhead.in_flight(), 0, "freed when the response arrived");
}

#[tokio::test]
async fn the_retry_layer_retries_5xx_stops_at_a_rejection_and_respects_its_budget() {
    use tripwire::tower::RetryLayer;
    use tripwire::{BackoffConfig, RetryBudget, RetryBudgetConfig, RetryError, RetryPolicy, TokioTimer};

    let server = Server::start().await;
    let backoff =
        BackoffConfig::builder().base(Duration::from_millis(1)).cap(Duration::from_millis(2)).build();
    let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff.unwrap()).build().unwrap();

    // 503s are retried, and the last 503 is the answer.
    let mut svc = RetryLayer::new(policy, TokioTimer).layer(client());
    server.set(Mode::Unavailable);
    assert_eq!(send(&mut svc, request(&server)).await.unwrap().status(), 503);
    assert_eq!(server.hits(), 3);

    // Outside a breaker: its refusal ends the retries at once.
    let breaker = Arc::new(NamedBreaker::with_clock(
        "tower/retry",
        BreakerConfig::builder().failure_threshold(2).build().unwrap(),
        ManualClock::new(1),
    ));
    let mut guarded =
        RetryLayer::new(policy, TokioTimer).layer(BreakerLayer::new(breaker.clone()).layer(client()));
    let got = send(&mut guarded, request(&server)).await;
    assert!(matches!(got, Err(RetryError::Final { attempts: 3, error: CallError::Rejected(_) })), "{got:?}");
    assert_eq!(server.hits(), 5);

    // With a budget that holds no token, nothing is retried.
    let empty = RetryBudgetConfig::builder().ratio(0.0).min_retries_per_sec(0.0).build().unwrap();
    let mut frugal =
        RetryLayer::new(policy, TokioTimer).budget(Arc::new(RetryBudget::new(empty))).layer(client());
    assert_eq!(send(&mut frugal, request(&server)).await.unwrap().status(), 503);
    assert_eq!(server.hits(), 6);

    // Requests that succeed pass straight through.
    server.set(Mode::Up);
    assert_eq!(send(&mut frugal, request(&server)).await.unwrap().status(), 200);
}
