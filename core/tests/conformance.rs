//! The conformance matrix: one table of scenarios, each run through every
//! Rust integration against a real HTTP server on 127.0.0.1, each cell
//! producing a trace (requests that reached the server, what the caller
//! got, the breaker's counts and hold, and what a second caller got).
//!
//! Integrations of one nesting must produce the same trace; where the two
//! nestings differ, the difference is the documented consequence of the
//! nesting. The whole table is `tests/conformance.md`, which this test
//! writes and compares: a change of behaviour in any cell shows there
//! (`TRIPWIRE_BLESS=1` rewrites it).
#![cfg(all(feature = "tower", feature = "reqwest", feature = "tokio", not(loom), not(miri)))]

mod support;

use std::future::poll_fn;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use support::{Mode, Server, client};
use tower_layer::Layer;
use tower_service::Service;
use tripwire::tower::{BreakerLayer, BulkheadLayer, RetryLayer, TimeoutLayer};
use tripwire::{
    BackoffConfig, BreakerConfig, Bulkhead, NamedBreaker, Nesting, Pipeline, PipelineError, RefusedBy,
    RetryPolicy, State, TokioTimer, http, refusal,
};

/// Each attempt's bound, in every integration.
const ATTEMPT: Duration = Duration::from_millis(200);
const ATTEMPTS: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Door {
    SyncPipeline(Nesting),
    AsyncPipeline(Nesting),
    Tower(Nesting),
    ReqwestMiddleware,
}

impl Door {
    const ALL: [Door; 7] = [
        Door::SyncPipeline(Nesting::RetryOutsideBreaker),
        Door::AsyncPipeline(Nesting::RetryOutsideBreaker),
        Door::Tower(Nesting::RetryOutsideBreaker),
        Door::ReqwestMiddleware,
        Door::SyncPipeline(Nesting::BreakerOutsideRetry),
        Door::AsyncPipeline(Nesting::BreakerOutsideRetry),
        Door::Tower(Nesting::BreakerOutsideRetry),
    ];

    fn nesting(self) -> Nesting {
        match self {
            Door::SyncPipeline(n) | Door::AsyncPipeline(n) | Door::Tower(n) => n,
            Door::ReqwestMiddleware => Nesting::RetryOutsideBreaker,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Door::SyncPipeline(_) => "sync pipeline",
            Door::AsyncPipeline(_) => "async pipeline",
            Door::Tower(_) => "tower",
            Door::ReqwestMiddleware => "reqwest middleware",
        }
    }
}

/// What a caller got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Got {
    /// A response with this status.
    Status(u16),
    /// Refused by the breaker: nothing sent.
    Refused,
    /// Refused by a full bulkhead: nothing sent.
    Full,
    /// Every attempt ran out of time.
    TimedOut,
}

/// One cell of the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Trace {
    hits: u64,
    got: Got,
    failures: u64,
    ignored: u64,
    /// The hold left, in whole seconds rounded up, if one was placed.
    hold_s: Option<u64>,
    capped_holds: u64,
    /// A second caller, right after.
    then: Got,
    hits_after: u64,
}

struct Scenario {
    name: &'static str,
    mode: fn(&Server) -> Mode,
    setup: Setup,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// A healthy breaker, a free bulkhead; the second caller comes after.
    Plain,
    /// The bulkhead's one slot is held by someone else throughout.
    FullBulkhead,
    /// The breaker tripped and cooled down: the first request is its probe,
    /// which outlives the cool-down; the second caller comes meanwhile.
    SlowProbe,
}

/// The cool-down of every breaker here, and the time the server takes to
/// answer a [`Setup::SlowProbe`] probe.
const COOL_DOWN: Duration = Duration::from_millis(20);
const SLOW: Duration = Duration::from_millis(150);

const SCENARIOS: [Scenario; 9] = [
    Scenario { name: "503 burst", mode: |_| Mode::Unavailable, setup: Setup::Plain },
    Scenario { name: "503, then 200", mode: |s| Mode::UnavailableUntil(s.hits() + 1), setup: Setup::Plain },
    Scenario { name: "429, Retry-After: 30", mode: |_| Mode::TooMany("30".into()), setup: Setup::Plain },
    Scenario {
        name: "429, Retry-After above max_hold",
        mode: |_| Mode::TooMany("86400".into()),
        setup: Setup::Plain,
    },
    Scenario { name: "401", mode: |_| Mode::Status(401), setup: Setup::Plain },
    Scenario { name: "404", mode: |_| Mode::Status(404), setup: Setup::Plain },
    Scenario { name: "hang", mode: |_| Mode::Hang, setup: Setup::Plain },
    Scenario { name: "full bulkhead", mode: |_| Mode::Up, setup: Setup::FullBulkhead },
    Scenario {
        name: "a probe running past the cool-down",
        mode: |_| Mode::Slow(SLOW),
        setup: Setup::SlowProbe,
    },
];

fn policy() -> RetryPolicy<'static> {
    let backoff = BackoffConfig::builder().base(Duration::from_millis(1)).cap(Duration::from_millis(2));
    RetryPolicy::builder().max_attempts(ATTEMPTS).backoff(backoff.build().unwrap()).build().unwrap()
}

fn breaker() -> Arc<NamedBreaker> {
    // Above the attempts of one request: one request never trips it.
    let config = BreakerConfig::builder().failure_threshold(2 * ATTEMPTS).open_timeout(COOL_DOWN);
    Arc::new(NamedBreaker::new("conformance", config.build().unwrap()))
}

/// A GET over a plain blocking socket, as a sync caller's own client makes
/// it, timed out by that client.
fn blocking_get(addr: SocketAddr) -> std::io::Result<::http::Response<()>> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(ATTEMPT))?;
    stream
        .write_all(format!("GET /book HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())?;
    let mut raw = Vec::new();
    let mut chunk = [0u8; 1024];
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk)? {
            0 => break,
            n => raw.extend_from_slice(&chunk[..n]),
        }
    }
    let text = String::from_utf8_lossy(&raw);
    let mut lines = text.split("\r\n");
    let status: u16 = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).unwrap();
    let mut response = ::http::Response::builder().status(status);
    for line in lines.take_while(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').unwrap();
        response = response.header(name.trim(), value.trim());
    }
    Ok(response.body(()).unwrap())
}

fn pipeline_got<T, E: std::fmt::Debug>(result: Result<::http::Response<T>, PipelineError<E>>) -> Got {
    match result {
        Ok(response) => Got::Status(response.status().as_u16()),
        Err(PipelineError::Open(_)) => Got::Refused,
        Err(PipelineError::Full(_)) => Got::Full,
        Err(e) => {
            let text = format!("{e:?}");
            assert!(
                text.contains("Timeout") || text.contains("TimedOut") || text.contains("WouldBlock"),
                "{text}"
            );
            Got::TimedOut
        }
    }
}

fn refusal_or_timeout(err: &(dyn std::error::Error + 'static)) -> Got {
    match refusal(err) {
        Some(RefusedBy::Breaker(_)) => Got::Refused,
        Some(RefusedBy::Bulkhead(_)) => Got::Full,
        Some(other) => panic!("refused by {other:?}"),
        None => {
            let mut e: Option<&(dyn std::error::Error + 'static)> = Some(err);
            while let Some(inner) = e {
                if inner.is::<tripwire::Elapsed>()
                    || inner.is::<tripwire::tower::TimeoutError<hyper_util::client::legacy::Error>>()
                {
                    return Got::TimedOut;
                }
                e = inner.source();
            }
            panic!("neither a refusal nor a timeout: {err:?}")
        }
    }
}

/// Sends one request through `door`, guarded by `breaker` and, inside it,
/// `bulkhead`.
async fn send(door: Door, breaker: &Arc<NamedBreaker>, bulkhead: &Arc<Bulkhead>, server: &Server) -> Got {
    let outside = door.nesting() == Nesting::BreakerOutsideRetry;
    match door {
        Door::SyncPipeline(_) | Door::AsyncPipeline(_) => {
            let mut builder =
                Pipeline::builder().breaker(breaker.clone()).bulkhead(bulkhead.clone()).retry(policy());
            if outside {
                builder = builder.breaker_outside_retry();
            }
            if let Door::SyncPipeline(_) = door {
                let (pipeline, addr) = (builder.build(), server.addr);
                let result = tokio::task::spawn_blocking(move || {
                    pipeline.call_with(http::assess_result, || blocking_get(addr))
                });
                pipeline_got(result.await.unwrap())
            } else {
                let pipeline = builder.timeout(ATTEMPT).timer(TokioTimer).build();
                let (client, uri) = (client(), server.url("/book"));
                pipeline_got(pipeline.call_async_with(http::assess_result, || client.get(uri.clone())).await)
            }
        }
        Door::Tower(_) => {
            let request = || ::http::Request::get(server.url("/book")).body(Empty::<Bytes>::new()).unwrap();
            let timed = BulkheadLayer::new(bulkhead.clone())
                .layer(TimeoutLayer::new(ATTEMPT, TokioTimer).layer(client()));
            let retry = RetryLayer::new(policy(), TokioTimer);
            let breaker = BreakerLayer::new(breaker.clone());
            if outside {
                let mut svc = breaker.layer(retry.layer(timed));
                poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
                match svc.call(request()).await {
                    Ok(response) => Got::Status(response.status().as_u16()),
                    Err(e) => refusal_or_timeout(&e),
                }
            } else {
                let mut svc = retry.layer(breaker.layer(timed));
                poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
                match svc.call(request()).await {
                    Ok(response) => Got::Status(response.status().as_u16()),
                    Err(e) => refusal_or_timeout(&e),
                }
            }
        }
        Door::ReqwestMiddleware => {
            let guard = tripwire::reqwest::GuardMiddleware::new(breaker.clone())
                .bulkhead(bulkhead.clone())
                .retry(policy())
                .timeout(ATTEMPT);
            let inner = reqwest::Client::builder().no_proxy().build().unwrap();
            let client = reqwest_middleware::ClientBuilder::new(inner).with(guard).build();
            match client.get(format!("http://{}/book", server.addr)).send().await {
                Ok(response) => Got::Status(response.status().as_u16()),
                Err(reqwest_middleware::Error::Middleware(e)) if e.is::<tripwire::Elapsed>() => Got::TimedOut,
                Err(e) => refusal_or_timeout(&e),
            }
        }
    }
}

async fn run(door: Door, scenario: &Scenario) -> Trace {
    let server = Server::start().await;
    server.set((scenario.mode)(&server));
    let (breaker, bulkhead) = (breaker(), Arc::new(Bulkhead::new(1)));
    if scenario.setup == Setup::FullBulkhead {
        assert!(bulkhead.try_acquire_raw(), "the one slot, held by someone else");
    }
    if scenario.setup == Setup::SlowProbe {
        while breaker.state() != State::Open {
            breaker.permit().unwrap().settle(tripwire::Assessment::Failure);
        }
        tokio::time::sleep(2 * COOL_DOWN).await;
    }
    let (got, hits, snapshot, hold_s, then) = if scenario.setup == Setup::SlowProbe {
        // The second caller asks once the probe is out and the cool-down
        // has passed again, while the server still works on the probe.
        let second = async {
            while breaker.state() != State::HalfOpen {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            tokio::time::sleep(2 * COOL_DOWN).await;
            send(door, &breaker, &bulkhead, &server).await
        };
        let (got, then) = tokio::join!(send(door, &breaker, &bulkhead, &server), second);
        assert_eq!(breaker.state(), State::Closed, "{door:?}: the probe's success closed the breaker");
        let mut snapshot = breaker.snapshot();
        // The trip's own failures, made here, are no part of the trace.
        snapshot.failures -= u64::from(2 * ATTEMPTS);
        (got, server.hits(), snapshot, None, then)
    } else {
        let got = send(door, &breaker, &bulkhead, &server).await;
        let (hits, snapshot) = (server.hits(), breaker.snapshot());
        let hold_s = breaker.hold_left().map(|d| d.as_secs() + u64::from(d.subsec_nanos() > 0));
        (got, hits, snapshot, hold_s, send(door, &breaker, &bulkhead, &server).await)
    };
    Trace {
        hits,
        got,
        failures: snapshot.failures,
        ignored: snapshot.ignored,
        hold_s,
        capped_holds: snapshot.capped_holds,
        then,
        hits_after: server.hits(),
    }
}

fn cell(t: &Trace) -> String {
    let got = |g: Got| match g {
        Got::Status(s) => s.to_string(),
        Got::Refused => "refused".into(),
        Got::Full => "bulkhead full".into(),
        Got::TimedOut => "timed out".into(),
    };
    let hold = t.hold_s.map_or("none".into(), |s| format!("{s} s"));
    format!(
        "{} sent, got {}; failures {}, ignored {}; hold {hold}{}; next caller: {} ({} sent)",
        t.hits,
        got(t.got),
        t.failures,
        t.ignored,
        if t.capped_holds > 0 { " (capped)" } else { "" },
        got(t.then),
        t.hits_after - t.hits,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_integration_gives_the_same_answer_for_its_nesting() {
    let mut table = String::from(
        "<!-- Written by core/tests/conformance.rs (TRIPWIRE_BLESS=1 cargo test -p tripwire --all-features \
         --test conformance); do not edit. -->\n\n\
         | scenario | retry → breaker (sync pipeline, async pipeline, tower, reqwest middleware) | breaker → retry (sync pipeline, async pipeline, tower) |\n\
         | --- | --- | --- |\n",
    );
    for scenario in &SCENARIOS {
        let mut by_nesting: [Option<(Door, Trace)>; 2] = [None, None];
        for door in Door::ALL {
            let trace = run(door, scenario).await;
            let slot = &mut by_nesting[usize::from(door.nesting() == Nesting::BreakerOutsideRetry)];
            match slot {
                None => *slot = Some((door, trace)),
                Some((first, want)) => assert_eq!(
                    &trace,
                    want,
                    "{}: the {} differs from the {} in the same nesting ({:?})",
                    scenario.name,
                    door.name(),
                    first.name(),
                    door.nesting()
                ),
            }
        }
        let [Some((_, inside)), Some((_, outside))] = &by_nesting else { unreachable!() };
        table.push_str(&format!("| {} | {} | {} |\n", scenario.name, cell(inside), cell(outside)));
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance.md");
    if std::env::var_os("TRIPWIRE_BLESS").is_some() {
        std::fs::write(path, &table).unwrap();
    }
    let written = std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(
        written, table,
        "tests/conformance.md is not what the matrix gives: TRIPWIRE_BLESS=1 rewrites it"
    );
}
