//! The reqwest middleware around a real reqwest client, against a real
//! HTTP server on 127.0.0.1. Every check counts what reached the server
//! and what the breaker recorded; none measures time.
#![cfg(all(feature = "reqwest", not(loom)))]

mod support;

use std::sync::Arc;
use std::time::Duration;

use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use support::{Mode, Server};
use tripwire::http::UsageKind;
use tripwire::limiter::{LimitConfig, RateLimiter};
use tripwire::reqwest::{GuardMiddleware, Refused};
use tripwire::{
    BreakerConfig, Bulkhead, BulkheadFull, ManualClock, NamedBreaker, RefusedBy, State, refusal,
    retry::{BackoffConfig, RetryBudget, RetryBudgetConfig, RetryPolicy},
};

fn client(guards: impl IntoIterator<Item = GuardMiddleware<ManualClock>>) -> ClientWithMiddleware {
    let inner = reqwest::Client::builder().no_proxy().build().unwrap();
    guards.into_iter().fold(ClientBuilder::new(inner), ClientBuilder::with).build()
}

/// A breaker on a clock that moves only when told.
fn breaker(name: &str, failures: u32) -> Arc<NamedBreaker<ManualClock>> {
    let config = BreakerConfig::builder().failure_threshold(failures).build().unwrap();
    Arc::new(NamedBreaker::with_clock(name, config, ManualClock::new(1)))
}

/// `attempts` in all, 1–2 ms apart.
fn retries(attempts: u32) -> RetryPolicy<'static> {
    let backoff = BackoffConfig::builder().base(Duration::from_millis(1)).cap(Duration::from_millis(2));
    RetryPolicy::builder().max_attempts(attempts).backoff(backoff.build().unwrap()).build().unwrap()
}

async fn get(
    client: &ClientWithMiddleware,
    server: &Server,
) -> reqwest_middleware::Result<reqwest::Response> {
    client.get(format!("http://{}/book", server.addr)).send().await
}

/// The status of a response that came back.
async fn status(client: &ClientWithMiddleware, server: &Server) -> u16 {
    get(client, server).await.unwrap().status().as_u16()
}

/// The guard's refusal of a request that was not sent.
async fn refused(client: &ClientWithMiddleware, server: &Server) -> RefusedBy {
    let err = get(client, server).await.unwrap_err();
    let reqwest_middleware::Error::Middleware(ref e) = err else { panic!("not the middleware's: {err:?}") };
    assert!(e.downcast_ref::<Refused>().is_some(), "{e:?}");
    refusal(&err).unwrap_or_else(|| panic!("no refusal in {err:?}"))
}

#[tokio::test]
async fn five_hundreds_trip_the_breaker_and_then_nothing_reaches_the_server() {
    let server = Server::start().await;
    let breaker = breaker("reqwest/503", 2);
    let client = client([GuardMiddleware::new(breaker.clone())]);

    assert_eq!(status(&client, &server).await, 200);
    server.set(Mode::Unavailable);
    for _ in 0..2 {
        assert_eq!(status(&client, &server).await, 503, "a 5xx is the answer, not an error");
    }
    assert_eq!((breaker.state(), breaker.snapshot().failures), (State::Open, 2));
    assert_eq!(server.hits(), 3);

    server.set(Mode::Up);
    let open_timeout = breaker.breaker().config().open_timeout();
    for _ in 0..5 {
        let RefusedBy::Breaker(r) = refused(&client, &server).await else { panic!("not the breaker") };
        assert_eq!((r.state, r.retry_after), (State::Open, Some(open_timeout)));
    }
    assert_eq!(server.hits(), 3, "a refused request never reaches the server");
    assert_eq!(breaker.snapshot().failures, 2, "a refusal is no failure of the dependency");

    // After the cool-down, a probe that succeeds closes the breaker.
    breaker.clock().advance(open_timeout);
    assert_eq!(status(&client, &server).await, 200);
    assert_eq!((breaker.state(), server.hits()), (State::Closed, 4));
}

#[tokio::test]
async fn a_429_holds_the_breaker_for_its_retry_after_and_the_refusal_says_how_long() {
    let server = Server::start().await;
    let breaker = breaker("reqwest/429", 5);
    // With retries: a 429 is not retried (the hold would refuse them anyway).
    let client = client([GuardMiddleware::new(breaker.clone()).retry(retries(3))]);

    server.set(Mode::TooMany("7".into()));
    assert_eq!(status(&client, &server).await, 429);
    assert_eq!(server.hits(), 1);
    let s = breaker.snapshot();
    assert_eq!((breaker.hold_left(), s.failures), (Some(Duration::from_secs(7)), 0));

    server.set(Mode::Up);
    let RefusedBy::Breaker(r) = refused(&client, &server).await else { panic!("not the breaker") };
    assert_eq!(r.retry_after, Some(Duration::from_secs(7)));
    breaker.clock().advance(Duration::from_secs(5));
    let held = refused(&client, &server).await;
    assert_eq!(held.retry_after(), Some(Duration::from_secs(2)), "the time left of the hold");
    assert_eq!(server.hits(), 1);

    breaker.clock().advance(Duration::from_secs(2));
    assert_eq!(status(&client, &server).await, 200);
    assert_eq!((breaker.state(), server.hits()), (State::Closed, 2));

    // A 418 without a Retry-After holds for the breaker's open_timeout.
    server.set(Mode::Status(418));
    assert_eq!(status(&client, &server).await, 418);
    assert_eq!(breaker.hold_left(), Some(breaker.breaker().config().open_timeout()));
    assert_eq!((server.hits(), breaker.snapshot().failures), (3, 0));
}

#[tokio::test]
async fn a_4xx_is_ignored_and_not_retried() {
    let server = Server::start().await;
    let breaker = breaker("reqwest/404", 2);
    let client = client([GuardMiddleware::new(breaker.clone()).retry(retries(3))]);
    server.set(Mode::Status(404));
    for _ in 0..10 {
        assert_eq!(status(&client, &server).await, 404);
    }
    let s = breaker.snapshot();
    assert_eq!((breaker.state(), s.failures, s.ignored), (State::Closed, 0, 10));
    assert_eq!(server.hits(), 10, "the caller's fault: sent once each");
}

#[tokio::test]
async fn five_hundreds_are_retried_until_one_succeeds_or_the_attempts_run_out() {
    let server = Server::start().await;
    let breaker = breaker("reqwest/retry", 100);
    let client = client([GuardMiddleware::new(breaker.clone()).retry(retries(3))]);

    // Two 503s, then a 200: the 200 is the answer.
    server.set(Mode::UnavailableUntil(2));
    assert_eq!(status(&client, &server).await, 200);
    assert_eq!(server.hits(), 3);
    let s = breaker.snapshot();
    assert_eq!((s.failures, s.successes), (2, 1), "each attempt is one outcome");

    // Only 503s: the last one is the answer once the attempts run out.
    server.set(Mode::Unavailable);
    assert_eq!(status(&client, &server).await, 503);
    assert_eq!((server.hits(), breaker.snapshot().failures), (6, 5));

    // A connection error is a failure, and retried too.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let err = client.get(format!("http://{closed}/")).send().await.unwrap_err();
    assert!(matches!(err, reqwest_middleware::Error::Reqwest(_)), "{err:?}");
    assert_eq!(refusal(&err), None, "the dependency's own failure");
    assert_eq!(breaker.snapshot().failures, 8);
}

#[tokio::test]
async fn retries_stop_at_the_budget_and_at_the_breaker() {
    let server = Server::start().await;
    server.set(Mode::Unavailable);

    // A reserve of 2 retries that refills by one only after ~45 s, and no
    // deposit per request.
    let budget = RetryBudgetConfig::builder()
        .ratio(0.0)
        .ttl(Duration::from_secs(60))
        .min_retries_per_sec(2.0 / 60.0)
        .build()
        .unwrap();
    let budget = Arc::new(RetryBudget::new(budget));
    let breaker = breaker("reqwest/budget", 100);
    let client = client([GuardMiddleware::new(breaker.clone()).retry(retries(10)).budget(budget)]);
    assert_eq!(status(&client, &server).await, 503);
    assert_eq!(server.hits(), 3, "the first attempt and the 2 retries the budget holds");
    assert_eq!(status(&client, &server).await, 503);
    assert_eq!(server.hits(), 4, "an empty budget: no retry");

    // A breaker that opens mid-retries ends them with its refusal.
    let breaker = self::breaker("reqwest/retry-into-open", 2);
    let client = self::client([GuardMiddleware::new(breaker.clone()).retry(retries(5))]);
    let RefusedBy::Breaker(r) = refused(&client, &server).await else { panic!("not the breaker") };
    assert_eq!(r.state, State::Open);
    assert_eq!((server.hits(), breaker.snapshot().failures), (6, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_bulkhead_is_no_failure_and_is_not_retried() {
    let server = Server::start().await;
    let breaker = breaker("reqwest/bulkhead", 2);
    let bulkhead = Arc::new(Bulkhead::new(1));
    let client = client([GuardMiddleware::new(breaker.clone()).bulkhead(bulkhead.clone()).retry(retries(3))]);

    server.set(Mode::Hang);
    let hung = tokio::spawn({
        let (client, url) = (client.clone(), format!("http://{}/book", server.addr));
        async move { client.get(url).send().await }
    });
    while server.hits() < 1 {
        tokio::task::yield_now().await;
    }
    assert_eq!(bulkhead.in_flight(), 1);
    for _ in 0..5 {
        assert_eq!(refused(&client, &server).await, RefusedBy::Bulkhead(BulkheadFull { max: 1 }));
    }
    let s = breaker.snapshot();
    assert_eq!((breaker.state(), s.failures, s.ignored), (State::Closed, 0, 5));
    assert_eq!(server.hits(), 1, "refused before sending, and never retried");

    // The caller gives up on the hung request: its slot is freed, its
    // permit given back as ignored.
    hung.abort();
    assert!(hung.await.unwrap_err().is_cancelled());
    assert_eq!((bulkhead.in_flight(), breaker.snapshot().ignored), (0, 6));
    server.set(Mode::Up);
    assert_eq!(status(&client, &server).await, 200);
    assert_eq!(bulkhead.in_flight(), 0, "the slot is held for one attempt only");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_wait_a_request_takes_the_slot_once_it_is_freed() {
    let server = Server::start().await;
    let breaker = breaker("reqwest/bulkhead-wait", 2);
    let bulkhead = Arc::new(Bulkhead::new(1));
    let client = client([GuardMiddleware::new(breaker.clone())
        .bulkhead(bulkhead.clone())
        .bulkhead_wait(Duration::from_secs(60))]);

    server.set(Mode::Slow(Duration::from_millis(200)));
    let first = tokio::spawn({
        let (client, url) = (client.clone(), format!("http://{}/book", server.addr));
        async move { client.get(url).send().await.map(|r| r.status().as_u16()) }
    });
    while server.hits() < 1 {
        tokio::task::yield_now().await;
    }
    // Waits for the first to finish, then goes through.
    assert_eq!(status(&client, &server).await, 200);
    assert_eq!(first.await.unwrap().unwrap(), 200);
    let s = breaker.snapshot();
    assert_eq!((server.hits(), s.successes, s.ignored, bulkhead.in_flight()), (2, 2, 0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retry_policys_total_time_cuts_the_wait_for_a_slot() {
    let server = Server::start().await;
    let breaker = breaker("reqwest/bulkhead-total", 2);
    let bulkhead = Arc::new(Bulkhead::new(1));
    let total = Duration::from_millis(50);
    let policy = RetryPolicy::builder().max_attempts(3).max_total(total).build().unwrap();
    let client = client([GuardMiddleware::new(breaker.clone())
        .bulkhead(bulkhead.clone())
        .bulkhead_wait(Duration::from_secs(2))
        .retry(policy)]);
    // The slot comes back after the policy's total time, before the wait ends.
    assert!(bulkhead.try_acquire_raw());
    let holder = tokio::spawn({
        let bulkhead = bulkhead.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            assert!(bulkhead.release_raw());
        }
    });
    let started = std::time::Instant::now();
    let by = refused(&client, &server).await;
    let waited = started.elapsed();
    assert!(matches!(by, RefusedBy::Deadline(_)), "{by:?}");
    assert_eq!(server.hits(), 0, "sent after the policy's total time ({waited:?})");
    assert!(waited < Duration::from_millis(400), "waited {waited:?} for a slot, past a total of {total:?}");
    holder.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_up_while_a_retry_waits_for_a_slot_answers_with_the_last_response() {
    use tripwire::events::Events;

    let server = Server::start().await;
    let breaker = breaker("reqwest/bulkhead-total-retry", 10);
    let bulkhead = Arc::new(Bulkhead::new(1));
    let backoff = BackoffConfig::builder().base(Duration::from_millis(1)).cap(Duration::from_millis(2));
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .max_total(Duration::from_millis(100))
        .backoff(backoff.build().unwrap())
        .build()
        .unwrap();
    // Before the pause after the first 503, someone else takes the only slot.
    let events = Arc::new(Events::new("reqwest/bulkhead-total-retry"));
    events.on_retry({
        let bulkhead = bulkhead.clone();
        move |_| assert!(bulkhead.try_acquire_raw())
    });
    let client = client([GuardMiddleware::new(breaker.clone())
        .bulkhead(bulkhead.clone())
        .bulkhead_wait(Duration::from_secs(2))
        .retry(policy)
        .events(events)]);
    server.set(Mode::Unavailable);
    let started = std::time::Instant::now();
    let got = get(&client, &server).await;
    let waited = started.elapsed();
    // The 503 the retries ended on, as when the time runs out before an attempt.
    assert_eq!(got.map(|r| r.status().as_u16()).map_err(|e| e.to_string()), Ok(503));
    assert_eq!(server.hits(), 1);
    assert!(waited < Duration::from_secs(1), "waited {waited:?}");
    assert!(bulkhead.release_raw());
}

#[tokio::test]
async fn a_body_that_cannot_be_cloned_is_sent_once() {
    let server = Server::start().await;
    server.set(Mode::Unavailable);
    let breaker = breaker("reqwest/stream", 100);
    let client = client([GuardMiddleware::new(breaker.clone()).retry(retries(3))]);
    let url = format!("http://{}/orders", server.addr);

    let streamed = reqwest::Body::wrap(http_body_util::Full::new(bytes::Bytes::from_static(b"{\"qty\":1}")));
    let response = client.post(&url).body(streamed).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!((server.hits(), breaker.snapshot().failures), (1, 1), "a streamed body: one attempt");

    // The same body in bytes can be sent again.
    let response = client.post(&url).body("{\"qty\":1}").send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!((server.hits(), breaker.snapshot().failures), (4, 4));
}

#[tokio::test]
async fn an_inner_guards_refusal_is_no_failure_for_an_outer_one() {
    let server = Server::start().await;
    // One breaker per endpoint, over one for the whole exchange.
    let endpoint = breaker("reqwest/endpoint", 2);
    let exchange = breaker("reqwest/exchange", 2);
    let client = client([
        GuardMiddleware::new(endpoint.clone()).retry(retries(3)),
        GuardMiddleware::new(exchange.clone()),
    ]);
    exchange.force_open();
    for _ in 0..5 {
        let by = refused(&client, &server).await;
        assert!(matches!(by, RefusedBy::Breaker(r) if r.state == State::ForcedOpen), "{by:?}");
    }
    let s = endpoint.snapshot();
    assert_eq!((endpoint.state(), s.failures, s.ignored), (State::Closed, 0, 5));
    assert_eq!(server.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_and_bulkhead_refusals_are_each_heard_once() {
    use std::sync::Mutex;
    use tripwire::events::{BulkheadEvent, Events, RetryNotice};

    let server = Server::start().await;
    let events = Arc::new(Events::new("reqwest/events"));
    let log = Arc::new(Mutex::new(Vec::new()));
    let (b, r) = (log.clone(), log.clone());
    events.on_bulkhead(move |e| {
        if let BulkheadEvent::Refused { in_flight, max, .. } = *e {
            b.lock().unwrap().push(format!("refused {in_flight}/{max}"));
        }
    });
    events.on_retry(move |e| {
        r.lock().unwrap().push(match *e {
            RetryNotice::Scheduled { attempt, cause, .. } => format!("retry {attempt}: {cause}"),
            RetryNotice::Exhausted { attempts, .. } => format!("exhausted after {attempts}"),
            RetryNotice::BudgetRefused { attempts, .. } => format!("budget refused after {attempts}"),
            _ => unreachable!("no other kind yet"),
        });
    });
    let take = || std::mem::take(&mut *log.lock().unwrap());
    let bulkhead = Arc::new(Bulkhead::new(1));
    let client = client([GuardMiddleware::new(breaker("reqwest/events", 100))
        .bulkhead(bulkhead.clone())
        .retry(retries(3))
        .events(events.clone())]);

    server.set(Mode::Unavailable);
    assert_eq!(status(&client, &server).await, 503);
    assert_eq!(take(), ["retry 1: HTTP 503", "retry 2: HTTP 503", "exhausted after 3"]);
    server.set(Mode::UnavailableUntil(server.hits() + 1));
    assert_eq!(status(&client, &server).await, 200);
    assert_eq!(take(), ["retry 1: HTTP 503"], "a retry that succeeded: no end to report");

    let _busy = bulkhead.try_acquire().unwrap();
    for _ in 0..2 {
        assert_eq!(refused(&client, &server).await, RefusedBy::Bulkhead(BulkheadFull { max: 1 }));
    }
    assert_eq!(take(), ["refused 1/1", "refused 1/1"]);
    let c = events.counts();
    assert_eq!((c.retries_scheduled, c.retries_exhausted, c.bulkhead_refused), (3, 1, 2));
}

#[tokio::test]
async fn a_503s_retry_after_is_the_pause_up_to_the_cap_whatever_the_header_says() {
    use std::sync::Mutex;
    use tripwire::events::{Events, RetryNotice};

    let server = Server::start().await;
    let events = Arc::new(Events::new("reqwest/retry-after"));
    let pauses = Arc::new(Mutex::new(Vec::new()));
    let seen = pauses.clone();
    events.on_retry(move |e| {
        if let RetryNotice::Scheduled { delay, capped_from, .. } = *e {
            seen.lock().unwrap().push((delay, capped_from));
        }
    });
    let cap = Duration::from_millis(300);
    let backoff = BackoffConfig::builder().base(Duration::from_millis(1)).cap(Duration::from_millis(2));
    let policy =
        RetryPolicy::builder().max_attempts(2).backoff(backoff.build().unwrap()).max_retry_after(cap);
    let breaker = breaker("reqwest/retry-after", 100);
    let client =
        client([GuardMiddleware::new(breaker.clone()).retry(policy.build().unwrap()).events(events.clone())]);
    for (header, capped) in [
        ("0", false),
        ("18446744073709551615", true), // u64::MAX seconds
        ("9223372036854775808", true),  // 2^63 seconds
        ("99999999999999999999999", true),
        ("-1", false),
        ("garbage", false),
        ("1.5", false),
    ] {
        server.set(Mode::StatusUntil {
            status: 503,
            retry_after: Some(header.into()),
            last: server.hits() + 1,
        });
        let started = std::time::Instant::now();
        let got = tokio::time::timeout(Duration::from_secs(10), get(&client, &server)).await;
        assert_eq!(got.expect("never a pause above the cap").unwrap().status(), 200, "{header:?}");
        let (delay, capped_from) = pauses.lock().unwrap().pop().unwrap();
        if capped {
            assert_eq!(delay, cap, "{header:?}");
            assert!(capped_from.is_some_and(|asked| asked > cap), "{header:?}: {capped_from:?}");
            assert!(started.elapsed() >= cap);
        } else {
            assert!(delay <= Duration::from_millis(2) && capped_from.is_none(), "{header:?}: {delay:?}");
        }
    }
    // Within the cap, the 503's own pause, not the backoff's 1-2 ms.
    server.set(Mode::StatusUntil { status: 503, retry_after: Some("0".into()), last: server.hits() + 1 });
    let slow =
        RetryPolicy::builder().max_attempts(2).max_retry_after(Duration::from_secs(5)).build().unwrap();
    let patient = client_with(GuardMiddleware::new(breaker.clone()).retry(slow).events(events.clone()));
    server.set(Mode::StatusUntil { status: 503, retry_after: Some("1".into()), last: server.hits() + 1 });
    let started = std::time::Instant::now();
    assert_eq!(get(&patient, &server).await.unwrap().status(), 200);
    assert_eq!(pauses.lock().unwrap().pop(), Some((Duration::from_secs(1), None)));
    assert!(started.elapsed() >= Duration::from_secs(1));
    let c = events.counts();
    assert_eq!((c.retries_scheduled, c.retry_pauses_capped), (8, 3));
}

fn client_with(guard: GuardMiddleware<ManualClock>) -> ClientWithMiddleware {
    client([guard])
}

#[tokio::test]
async fn a_hung_exchange_is_an_attempt_timeout_counted_and_retried_never_a_caller_held_forever() {
    let server = Server::start().await;
    server.set(Mode::Hang);
    let breaker = breaker("reqwest/hang", 5);
    let guard = GuardMiddleware::new(breaker.clone()).retry(retries(2)).timeout(Duration::from_millis(100));
    // The client has no timeout of its own: only the middleware bounds it.
    let client = client([guard]);
    let got = tokio::time::timeout(Duration::from_secs(10), get(&client, &server)).await;
    let err = got.expect("each attempt is bounded").unwrap_err();
    let reqwest_middleware::Error::Middleware(ref e) = err else { panic!("not the middleware's: {err:?}") };
    let elapsed = e.downcast_ref::<tripwire::timeout::Elapsed>().unwrap_or_else(|| panic!("{e:?}"));
    assert_eq!(elapsed.after, Duration::from_millis(100));
    assert!(refusal(&err).is_none(), "a timeout is no refusal: the request was sent");
    assert_eq!(server.hits(), 2, "timed out, then retried once");
    assert_eq!(breaker.snapshot().failures, 2, "each timed-out attempt is a failure");
    let default = format!("{:?}", GuardMiddleware::new(breaker.clone()));
    assert!(default.contains("timeout: 30s"), "{default}");
}

#[tokio::test]
async fn an_attempt_cut_short_by_the_policys_total_time_is_no_failure_of_the_dependency() {
    let server = Server::start().await;
    server.set(Mode::Slow(Duration::from_millis(500)));
    let breaker = breaker("reqwest/total-cut", 1);
    let policy =
        RetryPolicy::builder().max_attempts(3).max_total(Duration::from_millis(100)).build().unwrap();
    let client = client([GuardMiddleware::new(breaker.clone()).retry(policy)]);
    let err = get(&client, &server).await.unwrap_err();
    let reqwest_middleware::Error::Middleware(ref e) = err else { panic!("not the middleware's: {err:?}") };
    assert!(e.is::<tripwire::timeout::Elapsed>(), "{e:?}");
    let s = breaker.snapshot();
    assert_eq!((s.failures, s.ignored, breaker.state()), (0, 1, State::Closed), "the caller ran out of time");
    assert_eq!(server.hits(), 1, "not retried past the total time");
}

/// `GuardMiddleware::client` is the client `ClientBuilder::with` makes: the
/// breaker admits and counts each request.
#[tokio::test]
async fn a_client_made_by_the_middleware_is_guarded_by_it() {
    let server = Server::start().await;
    let breaker = breaker("reqwest/client", 1);
    let client =
        GuardMiddleware::new(breaker.clone()).client(reqwest::Client::builder().no_proxy().build().unwrap());
    assert_eq!(status(&client, &server).await, 200);
    server.set(Mode::Unavailable);
    assert_eq!(status(&client, &server).await, 503);
    assert!(matches!(refused(&client, &server).await, RefusedBy::Breaker(_)));
    assert_eq!(server.hits(), 2);
}

/// 10 a second, 2 at once: a unit stays counted 125 ms.
fn ten_a_second() -> Arc<RateLimiter<1>> {
    Arc::new(RateLimiter::new([LimitConfig::builder(10, Duration::from_secs(1)).burst(2).build().unwrap()]))
}

#[tokio::test]
async fn the_rate_limiter_paces_the_requests_and_a_refused_wait_sends_nothing() {
    let server = Server::start().await;
    let limiter = ten_a_second();
    let paced =
        client_with(GuardMiddleware::new(breaker("reqwest/paced", 5)).rate_limit(limiter.clone(), |_| [1]));
    for _ in 0..3 {
        assert_eq!(status(&paced, &server).await, 200);
    }
    // The third went past the burst of 2: it waited for its unit (the
    // engine's wait, timed in pipeline_rate.rs), and all three count: the
    // next one would wait too.
    assert!(limiter.wait_for([1], &tripwire::MonotonicClock).unwrap() > Duration::ZERO);
    let breaker = breaker("reqwest/no-wait", 5);
    let impatient = client_with(
        GuardMiddleware::new(breaker.clone())
            .rate_limit(ten_a_second(), |_| [2])
            .rate_limit_wait(Duration::ZERO),
    );
    assert_eq!(status(&impatient, &server).await, 200);
    let hits = server.hits();
    let err = get(&impatient, &server).await.unwrap_err();
    assert!(matches!(refusal(&err), Some(tripwire::RefusedBy::RateLimited(_))), "{err:?}");
    assert_eq!(server.hits(), hits, "the refused request was not sent");
    let s = breaker.snapshot();
    assert_eq!((s.failures, s.successes), (0, 1), "a refusal is no failure");
}

#[tokio::test]
async fn a_429_despite_the_limiter_spends_its_first_limit_and_the_server_s_count_raises_it() {
    let server = Server::start().await;
    let limiter =
        Arc::new(RateLimiter::new([LimitConfig::builder(10, Duration::from_secs(600)).build().unwrap()]));
    let client = client_with(
        GuardMiddleware::new(breaker("reqwest/sync", 5))
            .rate_limit(limiter.clone(), |_| [1])
            .rate_limit_sync(UsageKind::Quota, None, 0),
    );
    // One left of the server's 10: others on the same IP spent 9 (a count
    // without a window's end counts whole).
    server.set(Mode::UpWith("x-ratelimit-remaining", "1".into()));
    assert_eq!(status(&client, &server).await, 200);
    assert_eq!(limiter.in_use(&tripwire::MonotonicClock), [9]);
    let fresh =
        Arc::new(RateLimiter::new([LimitConfig::builder(1_200, Duration::from_secs(60)).build().unwrap()]));
    let client =
        client_with(GuardMiddleware::new(breaker("reqwest/429", 5)).rate_limit(fresh.clone(), |_| [1]));
    server.set(Mode::TooMany("5".into()));
    assert_eq!(status(&client, &server).await, 429);
    assert_eq!(fresh.in_use(&tripwire::MonotonicClock), [1_200], "the whole limit counts as spent");
}
