//! The tower layers (breaker, bulkhead, retry, rate limit) around a real
//! hyper client, against a real HTTP server on 127.0.0.1.
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
use tripwire::limiter::{LimitConfig, RateLimiter, Throttled};
use tripwire::timeout::TokioTimer;
use tripwire::tower::{BreakerLayer, RateLimitError, RateLimitLayer};
use tripwire::{
    Assessment, BreakerConfig, Bulkhead, BulkheadFull, CallError, ManualClock, MonotonicClock, NamedBreaker,
    RefusedBy, State, refusal,
};

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
    let refused = send(&mut svc, request(&server)).await.unwrap_err();
    let Some(RefusedBy::Breaker(r)) = tripwire::refusal(&refused) else { panic!("{refused:?}") };
    assert_eq!((r.state, r.retry_after), (State::Open, Some(Duration::from_secs(3))));
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
    use tripwire::{
        retry::{BackoffConfig, RetryBudget, RetryBudgetConfig, RetryError, RetryPolicy},
        timeout::TokioTimer,
    };

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

/// 20 calls at once, each on its own clone of `svc`: 8 that the server
/// answers after 500 ms, and once those fill the bulkhead, 12 more.
async fn twenty_at_once<S>(
    svc: &S,
    server: &Server,
    bulkhead: &Bulkhead,
) -> Vec<Result<S::Response, S::Error>>
where
    S: Service<http::Request<Empty<Bytes>>> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
{
    server.set(Mode::Slow(Duration::from_millis(500)));
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..20 {
        if n == 8 {
            // Every slot taken, before the rest arrive.
            while bulkhead.in_flight() < 8 {
                tokio::task::yield_now().await;
            }
        }
        let (mut svc, req) = (svc.clone(), request(server));
        calls.spawn(async move { send(&mut svc, req).await });
    }
    calls.join_all().await
}

fn breaker_of_five(name: &str) -> Arc<NamedBreaker<ManualClock>> {
    let config = BreakerConfig::builder().failure_threshold(5).build().unwrap();
    Arc::new(NamedBreaker::with_clock(name, config, ManualClock::new(1)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_bulkhead_inside_the_breaker_is_no_failure_of_the_dependency() {
    use tripwire::tower::{BulkheadError, BulkheadLayer};

    let server = Server::start().await;
    let breaker = breaker_of_five("tower/breaker-over-bulkhead");
    let bulkhead = Arc::new(Bulkhead::new(8));
    let svc = BreakerLayer::new(breaker.clone()).layer(BulkheadLayer::new(bulkhead.clone()).layer(client()));
    let results = twenty_at_once(&svc, &server, &bulkhead).await;

    let ok = results.iter().filter(|r| matches!(r, Ok(r) if r.status() == 200)).count();
    let full = results.iter().filter(|r| matches!(r, Err(CallError::Inner(BulkheadError::Full(_))))).count();
    assert_eq!((ok, full), (8, 12), "{results:?}");
    let s = breaker.snapshot();
    assert_eq!((breaker.state(), s.failures, s.successes, s.ignored), (State::Closed, 0, 8, 12));
    assert_eq!(bulkhead.in_flight(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_bulkhead_outside_the_breaker_never_reaches_it() {
    use tripwire::tower::{BulkheadError, BulkheadLayer};

    let server = Server::start().await;
    let breaker = breaker_of_five("tower/bulkhead-over-breaker");
    let bulkhead = Arc::new(Bulkhead::new(8));
    let svc = BulkheadLayer::new(bulkhead.clone()).layer(BreakerLayer::new(breaker.clone()).layer(client()));
    let results = twenty_at_once(&svc, &server, &bulkhead).await;

    let ok = results.iter().filter(|r| matches!(r, Ok(r) if r.status() == 200)).count();
    let full = results.iter().filter(|r| matches!(r, Err(BulkheadError::Full(_)))).count();
    assert_eq!((ok, full), (8, 12), "{results:?}");
    let s = breaker.snapshot();
    assert_eq!((breaker.state(), s.failures, s.successes, s.calls()), (State::Closed, 0, 8, 8));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breaker_outside_the_retries_counts_a_refused_request_as_no_failure() {
    use tripwire::tower::{BulkheadError, BulkheadLayer, RetryLayer};
    use tripwire::{
        retry::{BackoffConfig, RetryError, RetryPolicy},
        timeout::TokioTimer,
    };

    let server = Server::start().await;
    let breaker = breaker_of_five("tower/breaker-over-retry");
    let bulkhead = Arc::new(Bulkhead::new(8));
    let backoff = BackoffConfig::builder().base(Duration::from_millis(1)).cap(Duration::from_millis(2));
    let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff.build().unwrap()).build().unwrap();
    let inner =
        RetryLayer::new(policy, TokioTimer).layer(BulkheadLayer::new(bulkhead.clone()).layer(client()));
    let svc = BreakerLayer::new(breaker.clone()).layer(inner);
    let results = twenty_at_once(&svc, &server, &bulkhead).await;

    let ok = results.iter().filter(|r| matches!(r, Ok(r) if r.status() == 200)).count();
    let full = results
        .iter()
        .filter(|r| {
            matches!(
                r,
                Err(CallError::Inner(RetryError::Final { attempts: 1, error: BulkheadError::Full(_) }))
            )
        })
        .count();
    assert_eq!((ok, full), (8, 12), "{results:?}");
    // The same question, asked of any layer's error in one call.
    let refused = results.iter().filter_map(|r| tripwire::refusal(r.as_ref().err()?)).collect::<Vec<_>>();
    assert_eq!(refused, vec![RefusedBy::Bulkhead(BulkheadFull { max: 8 }); 12]);
    let s = breaker.snapshot();
    assert_eq!((breaker.state(), s.failures, s.successes, s.ignored), (State::Closed, 0, 8, 12));
    assert_eq!(server.hits(), 8, "a refusal is never retried");
}

#[tokio::test]
async fn an_inner_breakers_refusal_is_no_failure_for_an_outer_one() {
    let server = Server::start().await;
    // One breaker per endpoint, over one for the whole exchange.
    let endpoint = breaker_of_five("tower/endpoint");
    let exchange = breaker_of_five("tower/exchange");
    let mut svc =
        BreakerLayer::new(endpoint.clone()).layer(BreakerLayer::new(exchange.clone()).layer(client()));
    exchange.force_open();
    for _ in 0..10 {
        let err = send(&mut svc, request(&server)).await.unwrap_err();
        assert!(matches!(err, CallError::Inner(CallError::Rejected(_))), "{err:?}");
        assert!(
            matches!(tripwire::refusal(&err), Some(RefusedBy::Breaker(r)) if r.state == State::ForcedOpen)
        );
    }
    let s = endpoint.snapshot();
    assert_eq!((endpoint.state(), s.failures, s.ignored), (State::Closed, 0, 10));
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn a_bulkhead_outside_an_open_breaker_frees_its_slot_with_the_refusal() {
    use tripwire::tower::{BulkheadError, BulkheadLayer};

    let server = Server::start().await;
    let breaker = breaker_of_five("tower/open-under-bulkhead");
    let bulkhead = Arc::new(Bulkhead::new(1));
    let mut svc =
        BulkheadLayer::new(bulkhead.clone()).layer(BreakerLayer::new(breaker.clone()).layer(client()));
    breaker.force_open();
    for _ in 0..3 {
        let err = send(&mut svc, request(&server)).await.unwrap_err();
        assert!(matches!(err, BulkheadError::Inner(CallError::Rejected(_))), "{err:?}");
        assert_eq!(bulkhead.in_flight(), 0, "the one slot is free again");
    }
    assert_eq!(bulkhead.snapshot().rejected, 0);
}

#[tokio::test]
async fn a_timeout_inside_the_breaker_is_a_failure_and_outside_it_is_ignored() {
    use tripwire::timeout::TokioTimer;
    use tripwire::tower::{TimeoutError, TimeoutLayer};

    let server = Server::start().await;
    server.set(Mode::Hang);
    let timeout = TimeoutLayer::new(Duration::from_millis(20), TokioTimer);

    // breaker → timeout → call: each timed-out call is a failure of the dependency.
    let breaker = breaker_of_five("tower/timeout-inside");
    let mut svc = BreakerLayer::new(breaker.clone()).layer(timeout.layer(client()));
    for _ in 0..5 {
        let err = send(&mut svc, request(&server)).await.unwrap_err();
        assert!(matches!(err, CallError::Inner(TimeoutError::Elapsed(_))), "{err:?}");
        assert_eq!(tripwire::refusal(&err), None, "a timeout is no refusal");
    }
    assert_eq!((breaker.state(), breaker.snapshot().failures), (State::Open, 5));

    // timeout → breaker → call: the breaker's future is dropped, the call ignored.
    let breaker = breaker_of_five("tower/timeout-outside");
    let mut svc = timeout.layer(BreakerLayer::new(breaker.clone()).layer(client()));
    for _ in 0..5 {
        let err = send(&mut svc, request(&server)).await.unwrap_err();
        assert!(matches!(err, TimeoutError::Elapsed(_)), "{err:?}");
    }
    let s = breaker.snapshot();
    assert_eq!((breaker.state(), s.failures, s.ignored), (State::Closed, 0, 5));

    // An answer in time passes through.
    server.set(Mode::Up);
    assert_eq!(send(&mut svc, request(&server)).await.unwrap().status(), 200);
}

#[tokio::test]
async fn the_retry_layer_retries_a_timed_out_attempt() {
    use tripwire::tower::{RetryLayer, TimeoutError, TimeoutLayer};
    use tripwire::{
        retry::{BackoffConfig, RetryError, RetryPolicy},
        timeout::TokioTimer,
    };

    let server = Server::start().await;
    server.set(Mode::Hang);
    let backoff = BackoffConfig::builder().base(Duration::from_millis(1)).cap(Duration::from_millis(2));
    let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff.build().unwrap()).build().unwrap();
    let timeout = TimeoutLayer::new(Duration::from_millis(20), TokioTimer);
    let mut svc = RetryLayer::new(policy, TokioTimer).layer(timeout.layer(client()));
    let got = send(&mut svc, request(&server)).await;
    assert!(
        matches!(got, Err(RetryError::Exhausted { attempts: 3, last: TimeoutError::Elapsed(_) })),
        "{got:?}"
    );
    assert_eq!(server.hits(), 3);
}

/// `attempts` in all, 1–2 ms apart unless a server says otherwise, a
/// server's pause capped at `cap`.
fn quick_retries(attempts: u32, cap: Duration) -> tripwire::retry::RetryPolicy<'static> {
    use tripwire::retry::{BackoffConfig, RetryPolicy};
    let backoff = BackoffConfig::builder().base(Duration::from_millis(1)).cap(Duration::from_millis(2));
    let policy = RetryPolicy::builder().max_attempts(attempts).backoff(backoff.build().unwrap());
    policy.max_retry_after(cap).build().unwrap()
}

fn until(status: u16, retry_after: Option<&str>, last: u64) -> Mode {
    Mode::StatusUntil { status, retry_after: retry_after.map(str::to_owned), last }
}

#[tokio::test]
async fn the_retry_layer_judges_responses_a_503_then_a_200_is_the_200_and_a_400_is_sent_once() {
    use tripwire::timeout::TokioTimer;
    use tripwire::tower::RetryLayer;

    let server = Server::start().await;
    let mut svc = RetryLayer::new(quick_retries(3, Duration::from_secs(1)), TokioTimer).layer(client());
    server.set(until(503, None, 1));
    assert_eq!(send(&mut svc, request(&server)).await.unwrap().status(), 200);
    assert_eq!(server.hits(), 2, "the 503 was retried once");

    server.set(Mode::Status(400));
    assert_eq!(send(&mut svc, request(&server)).await.unwrap().status(), 400);
    assert_eq!(server.hits(), 3, "the caller's fault: never retried");

    // A 429 is the answer at once, never retried (the same rule as the
    // pipeline's and the reqwest middleware's), in either nesting; under
    // a breaker it holds the breaker for its `Retry-After`.
    server.set(until(429, Some("0"), server.hits() + 1));
    assert_eq!(send(&mut svc, request(&server)).await.unwrap().status(), 429);
    assert_eq!(server.hits(), 4, "sent once");
    let breaker = Arc::new(NamedBreaker::new("tower/429-answered", BreakerConfig::default()));
    let mut guarded = RetryLayer::new(quick_retries(3, Duration::from_secs(1)), TokioTimer)
        .layer(BreakerLayer::new(breaker.clone()).layer(client()));
    server.set(until(429, Some("30"), server.hits() + 1));
    assert_eq!(send(&mut guarded, request(&server)).await.unwrap().status(), 429);
    assert_eq!((server.hits(), breaker.state(), breaker.snapshot().failures), (5, State::Open, 0));
    assert!(breaker.hold_left().is_some_and(|d| d > Duration::from_secs(29)), "{:?}", breaker.hold_left());
}

#[tokio::test]
async fn a_servers_pause_is_the_retry_pause_up_to_the_cap_whatever_its_header_says() {
    use tripwire::tower::RetryLayer;
    use tripwire::{
        events::{Events, RetryNotice},
        timeout::TokioTimer,
    };

    let server = Server::start().await;
    let events = Arc::new(Events::new("tower/retry-after"));
    let pauses = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = pauses.clone();
    events.on_retry(move |e| {
        if let RetryNotice::Scheduled { delay, capped_from, .. } = *e {
            seen.lock().unwrap().push((delay, capped_from));
        }
    });
    let cap = Duration::from_millis(300);
    let mut svc = RetryLayer::new(quick_retries(2, cap), TokioTimer).events(events.clone()).layer(client());
    let backoff = Duration::from_millis(2);
    for (status, header, want) in [
        (503, "0", Some(Duration::ZERO)),
        (503, "18446744073709551615", None), // u64::MAX seconds
        (503, "9223372036854775808", None),  // 2^63 seconds
        (503, "99999999999999999999999", None),
        (503, "Fri, 31 Dec 9999 23:59:59 GMT", None),
        (503, "-1", Some(backoff)),
        (503, "soon", Some(backoff)),
        (503, "1e9", Some(backoff)),
    ] {
        server.set(until(status, Some(header), server.hits() + 1));
        let started = std::time::Instant::now();
        let got = tokio::time::timeout(Duration::from_secs(10), send(&mut svc, request(&server))).await;
        assert_eq!(got.expect("never a pause above the cap").unwrap().status(), 200, "{status} {header:?}");
        let (delay, capped_from) = pauses.lock().unwrap().pop().unwrap();
        match want {
            // Capped: the cap, and the event says what was asked.
            None => {
                assert_eq!(delay, cap, "{header:?}");
                assert!(capped_from.is_some_and(|asked| asked > cap), "{header:?}: {capped_from:?}");
                assert!(started.elapsed() >= cap);
            }
            Some(Duration::ZERO) => assert_eq!((delay, capped_from), (Duration::ZERO, None)),
            // Unreadable: the backoff's pause.
            Some(at_most) => assert!(delay <= at_most && capped_from.is_none(), "{header:?}: {delay:?}"),
        }
    }
    assert_eq!(events.counts().retry_pauses_capped, 4);
    assert_eq!(events.counts().retries_scheduled, 8);
}

#[tokio::test]
async fn breaker_outside_the_retries_a_429_holds_everyone_at_once_and_nothing_sleeps_through_it() {
    use tripwire::timeout::TokioTimer;
    use tripwire::tower::RetryLayer;

    let server = Server::start().await;
    server.set(Mode::TooMany("2".into()));
    let breaker = Arc::new(NamedBreaker::new("tower/429-outside", BreakerConfig::default()));
    let svc = BreakerLayer::new(breaker.clone())
        .layer(RetryLayer::new(quick_retries(3, Duration::from_secs(60)), TokioTimer).layer(client()));
    let (mut first, mut second) = (svc.clone(), svc);
    let got = tokio::time::timeout(Duration::from_secs(1), send(&mut first, request(&server))).await;
    let got = got.expect("the 429 is the answer at once, not after its Retry-After");
    assert_eq!(got.unwrap().status(), 429);
    assert_eq!(server.hits(), 1, "sent once");
    let held = breaker.hold_left().expect("the 429 placed the hold");
    assert!(held > Duration::from_millis(1500) && held <= Duration::from_secs(2), "{held:?}");
    // Another caller is refused by the hold, and learns when it ends.
    let Err(CallError::Rejected(r)) = send(&mut second, request(&server)).await else { panic!("admitted") };
    assert!(r.retry_after.is_some_and(|d| d <= Duration::from_secs(2)), "{r:?}");
    assert_eq!(server.hits(), 1, "the held breaker sent nothing more");
}

/// The services' own `ready` and `oneshot` (see the tower module's
/// "Diagnostics") do what tower's do: a ready service takes the call, and
/// the breaker counts each answer.
#[tokio::test]
async fn the_services_own_ready_and_oneshot_call_through_every_layer() {
    let server = Server::start().await;
    let breaker = Arc::new(NamedBreaker::new("tower/ready", BreakerConfig::default()));
    let mut svc = BreakerLayer::new(breaker.clone()).layer(client());

    // `Unpin`, as tower's `Ready` is, so that it can be selected on.
    fn unpin<T: Unpin>(t: T) -> T {
        t
    }
    let ready = unpin(svc.ready()).await.unwrap();
    assert_eq!(ready.call(request(&server)).await.unwrap().status(), 200);
    assert_eq!(svc.oneshot(request(&server)).await.unwrap().status(), 200);
    server.set(Mode::Unavailable);
    assert_eq!(svc.oneshot(request(&server)).await.unwrap().status(), 503);

    assert_eq!(server.hits(), 3);
    let counts = breaker.snapshot();
    assert_eq!((counts.successes, counts.failures), (2, 1));
}

// The rate limit layer: calls past the burst wait for their units, a wait
// longer than allowed sends nothing and is a refusal a breaker outside
// ignores, and a call dropped while it waits is never made.

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
