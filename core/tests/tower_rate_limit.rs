//! The tower rate limit layer around a real hyper client, against a real
//! HTTP server on 127.0.0.1: calls past the burst wait for their units, a
//! wait longer than allowed sends nothing and is a refusal that a breaker
//! outside ignores, and a call dropped while it waits is never made.
#![cfg(all(feature = "tower", feature = "tokio", not(loom)))]

mod support;

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use support::{Server, client};
use tower_layer::Layer;
use tower_service::Service;
use tripwire::limiter::{LimitConfig, RateLimiter, Throttled};
use tripwire::timeout::TokioTimer;
use tripwire::tower::{BreakerLayer, RateLimitError, RateLimitLayer};
use tripwire::{BreakerConfig, MonotonicClock, NamedBreaker, RefusedBy, refusal};

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

/// 10 a second, 2 at once: a unit stays counted 125 ms.
fn ten_a_second() -> Arc<RateLimiter<1>> {
    Arc::new(RateLimiter::new([LimitConfig::builder(10, Duration::from_secs(1)).burst(2).build().unwrap()]))
}

fn one_each<B>(_: &http::Request<B>) -> [u32; 1] {
    [1]
}

#[tokio::test]
async fn calls_past_the_burst_wait_for_their_units_and_are_all_made() {
    let server = Server::start().await;
    let limiter = ten_a_second();
    let mut svc = RateLimitLayer::new(limiter.clone(), one_each, TokioTimer).layer(client());
    for _ in 0..3 {
        let response = send(&mut svc, request(&server)).await.unwrap();
        assert_eq!(response.status(), 200);
    }
    assert_eq!(server.hits(), 3);
    // The third went past the burst: all three count, the next would wait.
    assert!(limiter.wait_for([1], &MonotonicClock).unwrap() > Duration::ZERO);
}

#[tokio::test]
async fn a_wait_longer_than_allowed_sends_nothing_and_a_breaker_outside_ignores_it() {
    let server = Server::start().await;
    let breaker = Arc::new(NamedBreaker::new("tower/rate", BreakerConfig::default()));
    let inner =
        RateLimitLayer::new(ten_a_second(), one_each, TokioTimer).max_wait(Duration::ZERO).layer(client());
    let mut svc = BreakerLayer::new(breaker.clone()).layer(inner);
    for _ in 0..2 {
        assert_eq!(send(&mut svc, request(&server)).await.unwrap().status(), 200);
    }
    let err = send(&mut svc, request(&server)).await.unwrap_err();
    assert!(matches!(refusal(&err), Some(RefusedBy::RateLimited(Throttled::Wait { .. }))), "{err}");
    assert_eq!(server.hits(), 2, "the refused call was not sent");
    let s = breaker.snapshot();
    assert_eq!((s.successes, s.failures, s.ignored), (2, 0, 1), "a refusal is no failure");
}

#[tokio::test]
async fn a_call_dropped_while_it_waits_is_never_made() {
    let server = Server::start().await;
    let limiter = ten_a_second();
    let mut svc = RateLimitLayer::new(limiter.clone(), one_each, TokioTimer).layer(client());
    for _ in 0..2 {
        send(&mut svc, request(&server)).await.unwrap();
    }
    poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
    let waiting = svc.call(request(&server));
    let cut = tokio::time::timeout(Duration::from_millis(20), waiting).await;
    assert!(cut.is_err(), "still waiting for its unit");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(server.hits(), 2, "the dropped call was never sent");
    let err: RateLimitError<std::io::Error> =
        RateLimitError::Throttled(Throttled::TooCostly { limit: 0, cost: 3, burst: 2 });
    assert_eq!(err.to_string(), "rate limit 0: a cost of 3 is above its burst of 2");
}
