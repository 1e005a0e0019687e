//! Keyed breakers in the tower layer and the reqwest middleware: two real
//! HTTP servers on 127.0.0.1, one down, one up, each behind its own
//! breaker. Every check counts what reached each server; none measures time.
#![cfg(all(feature = "tower", feature = "reqwest", not(loom)))]

mod support;

use std::future::poll_fn;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Empty;
use support::{Mode, Server, client};
use tower_layer::Layer;
use tower_service::Service;
use tripwire::keyed::Breakers;
use tripwire::reqwest::GuardMiddleware;
use tripwire::tower::{Host, KeyedBreakerLayer, host};
use tripwire::{BreakerConfig, CallError, State};

fn trips_on_two() -> BreakerConfig {
    BreakerConfig::builder().failure_threshold(2).build().unwrap()
}

async fn send<S: Service<Req>, Req>(svc: &mut S, req: Req) -> Result<S::Response, S::Error> {
    poll_fn(|cx| svc.poll_ready(cx)).await?;
    svc.call(req).await
}

fn request(server: &Server, path: &str) -> http::Request<Empty<Bytes>> {
    http::Request::get(server.url(path)).body(Empty::new()).unwrap()
}

#[tokio::test]
async fn a_breaker_per_host_in_tower_trips_for_the_host_that_is_down_only() {
    let (down, up) = (Server::start().await, Server::start().await);
    down.set(Mode::Unavailable);
    let per_host: Arc<Breakers<Host>> = Arc::new(Breakers::new("tower", trips_on_two()));
    let mut svc = KeyedBreakerLayer::new(per_host.clone(), host).layer(client());
    for _ in 0..2 {
        assert_eq!(send(&mut svc, request(&down, "/book")).await.unwrap().status(), 503);
        assert_eq!(send(&mut svc, request(&up, "/book")).await.unwrap().status(), 200);
    }
    // The down host's breaker is open: refused without reaching it.
    assert!(matches!(send(&mut svc, request(&down, "/book")).await, Err(CallError::Rejected(_))));
    assert_eq!(down.hits(), 2);
    for _ in 0..3 {
        assert_eq!(send(&mut svc, request(&up, "/book")).await.unwrap().status(), 200);
    }
    assert_eq!(up.hits(), 5);
    let down_key = request(&down, "/").uri().authority().unwrap().to_string();
    let mut seen = Vec::new();
    per_host.for_each(|k, b| seen.push((k.to_string(), b.state(), b.name().to_string())));
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    let up_key = request(&up, "/").uri().authority().unwrap().to_string();
    let mut want = vec![
        (down_key.clone(), State::Open, format!("tower/{down_key}")),
        (up_key.clone(), State::Closed, format!("tower/{up_key}")),
    ];
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(seen, want);
}

#[tokio::test]
async fn a_key_function_may_key_by_anything_in_the_request() {
    let server = Server::start().await;
    server.set(Mode::Unavailable);
    let per_path: Arc<Breakers<String>> = Arc::new(Breakers::new("routes", trips_on_two()));
    let mut svc =
        KeyedBreakerLayer::new(per_path.clone(), |r: &http::Request<Empty<Bytes>>| r.uri().path().to_owned())
            .layer(client());
    for _ in 0..2 {
        assert_eq!(send(&mut svc, request(&server, "/book")).await.unwrap().status(), 503);
    }
    assert!(matches!(send(&mut svc, request(&server, "/book")).await, Err(CallError::Rejected(_))));
    // Another route of the same host has its own breaker.
    assert_eq!(send(&mut svc, request(&server, "/ticker")).await.unwrap().status(), 503);
    assert_eq!(server.hits(), 3);
    assert_eq!(per_path.with("/ticker", |b| b.state()), State::Closed);
}

#[tokio::test]
async fn a_breaker_per_host_in_reqwest_trips_for_the_host_that_is_down_only() {
    let (down, up) = (Server::start().await, Server::start().await);
    down.set(Mode::Unavailable);
    let per_host: Arc<Breakers<String>> = Arc::new(Breakers::new("reqwest", trips_on_two()));
    let middleware = GuardMiddleware::per_host(per_host.clone());
    assert!(middleware.breaker().is_none() && middleware.breakers().is_some());
    let client = middleware.client(reqwest::Client::builder().no_proxy().build().unwrap());
    let get = |s: &Server| client.get(format!("http://{}/book", s.addr)).send();
    for _ in 0..2 {
        assert_eq!(get(&down).await.unwrap().status(), 503);
        assert_eq!(get(&up).await.unwrap().status(), 200);
    }
    assert!(get(&down).await.is_err(), "refused: the host's breaker is open");
    assert_eq!(get(&up).await.unwrap().status(), 200);
    assert_eq!((down.hits(), up.hits()), (2, 3));
    assert_eq!(per_host.with(&down.addr.to_string(), |b| b.state()), State::Open);
    assert_eq!(per_host.with(&up.addr.to_string(), |b| b.state()), State::Closed);
    assert_eq!(per_host.len(), 2);
}
