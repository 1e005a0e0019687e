//! A `reqwest::Client` in the tower layers, with no hand-written
//! `map_request` or `map_response`, against a real HTTP server on
//! 127.0.0.1.
#![cfg(all(feature = "tower", feature = "reqwest", not(loom)))]

mod support;

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use support::{Mode, Server};
use tower_layer::Layer;
use tower_service::Service;
use tripwire::tower::{BreakerLayer, BulkheadLayer, RetryLayer, TimeoutLayer, reqwest_service};
use tripwire::{
    BreakerConfig, Bulkhead, CallError, ManualClock, NamedBreaker, RefusedBy, State,
    retry::{BackoffConfig, RetryPolicy},
    timeout::TokioTimer,
};

async fn send<S: Service<Req>, Req>(svc: &mut S, req: Req) -> Result<S::Response, S::Error> {
    poll_fn(|cx| svc.poll_ready(cx)).await?;
    svc.call(req).await
}

fn request(server: &Server) -> http::Request<String> {
    http::Request::get(format!("http://{}/book", server.addr)).body(String::new()).unwrap()
}

fn breaker(name: &str, failures: u32) -> Arc<NamedBreaker<ManualClock>> {
    let config = BreakerConfig::builder().failure_threshold(failures).build().unwrap();
    Arc::new(NamedBreaker::with_clock(name, config, ManualClock::new(1)))
}

fn retries(attempts: u32) -> RetryPolicy<'static> {
    let backoff = BackoffConfig::builder().base(Duration::from_millis(1)).cap(Duration::from_millis(2));
    RetryPolicy::builder().max_attempts(attempts).backoff(backoff.build().unwrap()).build().unwrap()
}

fn reqwest_client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

#[tokio::test]
async fn the_whole_stack_over_a_reqwest_client_retries_a_503_and_reads_the_200() {
    let server = Server::start().await;
    let breaker = breaker("reqwest-tower/stack", 5);
    let capped = RetryPolicy::builder()
        .max_attempts(3)
        .backoff(BackoffConfig::builder().base(Duration::from_millis(1)).build().unwrap())
        .max_retry_after(Duration::from_millis(2))
        .build()
        .unwrap();
    let mut svc = RetryLayer::new(capped, TokioTimer).layer(BreakerLayer::new(breaker.clone()).layer(
        BulkheadLayer::new(Arc::new(Bulkhead::new(4))).layer(
            TimeoutLayer::new(Duration::from_secs(5), TokioTimer).layer(reqwest_service(reqwest_client())),
        ),
    ));
    server.set(Mode::UnavailableUntil(1));
    let response = send(&mut svc, request(&server)).await.unwrap();
    assert_eq!(response.status(), 200);
    let body = reqwest::Response::from(response).text().await.unwrap();
    assert_eq!(body, "bids/asks");
    assert_eq!(server.hits(), 2);
    let s = breaker.snapshot();
    assert_eq!((s.failures, s.successes), (1, 1), "each attempt judged once by the HTTP classifier");

    // A 400 is sent once and ignored.
    server.set(Mode::Status(400));
    assert_eq!(send(&mut svc, request(&server)).await.unwrap().status(), 400);
    assert_eq!((server.hits(), breaker.snapshot().ignored), (3, 1));

    // A 429 holds the breaker and is the answer at once, never retried;
    // the next request meets the hold.
    server.set(Mode::TooMany("7".into()));
    assert_eq!(send(&mut svc, request(&server)).await.unwrap().status(), 429);
    let err = send(&mut svc, request(&server)).await.unwrap_err();
    let Some(RefusedBy::Breaker(r)) = tripwire::refusal(&err) else { panic!("{err:?}") };
    assert_eq!((r.state, r.retry_after), (State::Open, Some(Duration::from_secs(7))));
    assert_eq!(server.hits(), 4, "the 429 was sent once, the refused request never");
}

#[tokio::test]
async fn errors_are_failures_and_a_uri_reqwest_refuses_is_an_error_not_a_panic() {
    let server = Server::start().await;
    let breaker = breaker("reqwest-tower/errors", 2);
    let mut svc = BreakerLayer::new(breaker.clone()).layer(reqwest_service(reqwest_client()));
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let req = http::Request::get(format!("http://{closed}/")).body(String::new()).unwrap();
    let err = send(&mut svc, req).await.unwrap_err();
    assert!(matches!(&err, CallError::Inner(e) if e.is_connect()), "{err:?}");
    // A relative URI: reqwest cannot send it.
    let req = http::Request::get("/book").body(String::new()).unwrap();
    let err = send(&mut svc, req).await.unwrap_err();
    assert!(matches!(&err, CallError::Inner(e) if e.is_builder()), "{err:?}");
    assert_eq!((breaker.state(), breaker.snapshot().failures), (State::Open, 2));
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn a_plain_reqwest_client_under_the_breaker_is_judged_by_the_same_classifier() {
    let server = Server::start().await;
    let breaker = breaker("reqwest-tower/plain", 2);
    let client = reqwest_client();
    let mut svc = BreakerLayer::new(breaker.clone()).layer(client.clone());
    let url = format!("http://{}/book", server.addr);
    server.set(Mode::Status(404));
    assert_eq!(send(&mut svc, client.get(&url).build().unwrap()).await.unwrap().status(), 404);
    server.set(Mode::Unavailable);
    for _ in 0..2 {
        assert_eq!(send(&mut svc, client.get(&url).build().unwrap()).await.unwrap().status(), 503);
    }
    let s = breaker.snapshot();
    assert_eq!((breaker.state(), s.failures, s.ignored), (State::Open, 2, 1));
    let err = send(&mut svc, client.get(&url).build().unwrap()).await.unwrap_err();
    assert!(matches!(err, CallError::Rejected(_)));
    assert_eq!(server.hits(), 3);

    // Retries need a request that clones: through `reqwest_service`, the
    // exhausted 503 is the answer.
    breaker.reset();
    let mut retrying = RetryLayer::new(retries(2), TokioTimer).layer(reqwest_service(client));
    assert_eq!(send(&mut retrying, request(&server)).await.unwrap().status(), 503);
    assert_eq!(server.hits(), 5);
}
