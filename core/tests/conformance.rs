//! The conformance matrix: one table of scenarios, each run through every
//! Rust integration against a real HTTP server on 127.0.0.1, each cell
//! producing a trace (requests that reached the server, what the caller
//! got, the breaker's counts and hold, and what a second caller got).
//!
//! Integrations of one nesting must produce the same trace; where the two
//! nestings differ, the difference is the documented consequence of the
//! nesting. Within a nesting, the only differences allowed are those of
//! [`DIFFERENCES`], each naming the one part of the trace that differs and
//! the rule that says so: the check fails if any other part differs, or if
//! the documented difference is gone. A row that does not apply to an
//! integration (a blocking call cannot be cancelled) says so in its cell,
//! with the reason. The whole table is `src/layers/conformance.md` (shown in
//! `Assessment`'s docs), which this
//! test writes and compares: a change of behaviour in any cell shows there
//! (`TRIPWIRE_BLESS=1` rewrites it).
#![cfg(all(feature = "tower", feature = "reqwest", feature = "tokio", not(loom), not(miri)))]

#[path = "support/matrix/cancel.rs"]
mod cancel;
#[path = "support/matrix/cell.rs"]
mod cell;
#[path = "support/matrix/stale.rs"]
mod stale;
mod support;

use std::future::poll_fn;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cancel::Cancel;
use cell::{Answer, Cell, Difference};
use http_body_util::Empty;
use stale::Stale;
use support::{Mode, Server, client};
use tower_layer::Layer;
use tower_service::Service;
use tripwire::tower::{BreakerLayer, BulkheadLayer, RetryLayer, TimeoutLayer};
use tripwire::{
    BreakerConfig, Bulkhead, NamedBreaker, Pipeline, RefusedBy, State,
    events::Events,
    http::HttpClassifier,
    pipeline::{Nesting, PipelineBuilder, PipelineError},
    refusal,
    retry::{BackoffConfig, RetryPolicy},
    timeout::TokioTimer,
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
    /// The pause between the first two requests, as the server saw it,
    /// where the scenario shows it.
    pause: Option<Pause>,
    /// A second caller, right after.
    then: Got,
    hits_after: u64,
}

/// A pause between two requests, in coarse buckets: the backoff of every
/// integration here is a few milliseconds, a `Retry-After` a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pause {
    UnderASecond,
    ASecondOrMore,
}

struct Scenario {
    name: &'static str,
    mode: fn(&Server) -> Mode,
    setup: Setup,
    /// Whether the trace shows the pause before the first retry.
    shows_pause: bool,
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

const fn scenario(name: &'static str, mode: fn(&Server) -> Mode, setup: Setup) -> Scenario {
    Scenario { name, mode, setup, shows_pause: false }
}

const SCENARIOS: [Scenario; 10] = [
    scenario("503 burst", |_| Mode::Unavailable, Setup::Plain),
    scenario("503, then 200", |s| Mode::UnavailableUntil(s.hits() + 1), Setup::Plain),
    scenario("429, Retry-After: 30", |_| Mode::TooMany("30".into()), Setup::Plain),
    scenario("429, Retry-After above max_hold", |_| Mode::TooMany("86400".into()), Setup::Plain),
    scenario("401", |_| Mode::Status(401), Setup::Plain),
    scenario("404", |_| Mode::Status(404), Setup::Plain),
    scenario("hang", |_| Mode::Hang, Setup::Plain),
    scenario("full bulkhead", |_| Mode::Up, Setup::FullBulkhead),
    scenario("a probe running past the cool-down", |_| Mode::Slow(SLOW), Setup::SlowProbe),
    Scenario {
        name: RETRY_AFTER_503,
        mode: |s| Mode::StatusUntil { status: 503, retry_after: Some("1".into()), last: s.hits() + 1 },
        setup: Setup::Plain,
        shows_pause: true,
    },
];

const RETRY_AFTER_503: &str = "503 with Retry-After: 1";

/// The documented differences between integrations of one nesting: none,
/// every integration of a nesting gives the same trace in every row.
const DIFFERENCES: [Difference; 0] = [];

/// A row of the matrix.
#[derive(Clone, Copy)]
enum Row {
    Plain(&'static Scenario),
    Cancel(Cancel),
    Stale(Stale),
}

impl Row {
    fn all() -> Vec<Row> {
        let mut rows: Vec<Row> = SCENARIOS.iter().map(Row::Plain).collect();
        rows.extend([Cancel::Call, Cancel::Backoff, Cancel::Probe].map(Row::Cancel));
        rows.extend([Stale::Outage, Stale::Hold].map(Row::Stale));
        rows
    }

    fn name(self) -> &'static str {
        match self {
            Row::Plain(s) => s.name,
            Row::Cancel(c) => c.name(),
            Row::Stale(s) => s.name(),
        }
    }

    async fn run(self, door: Door) -> Answer {
        match self {
            Row::Plain(s) => Answer::Cell(run(door, s).await.cell()),
            Row::Cancel(c) => cancel::run(door, c).await,
            Row::Stale(s) => stale::run(door, s).await,
        }
    }
}

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
                if inner.is::<tripwire::timeout::Elapsed>()
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

/// How one request is sent, beyond its guards.
struct Call {
    policy: RetryPolicy<'static>,
    /// Hears the retries (every integration but the sync pipeline reports them).
    events: Option<Arc<Events>>,
    /// The pipeline's `call_before` / `call_async_before` deadline; the
    /// other integrations take none.
    deadline: Option<Instant>,
}

impl Call {
    fn plain() -> Call {
        Call { policy: policy(), events: None, deadline: None }
    }
}

/// Sends one request through `door`, guarded by `breaker` and, inside it,
/// `bulkhead`.
async fn send(door: Door, breaker: &Arc<NamedBreaker>, bulkhead: &Arc<Bulkhead>, server: &Server) -> Got {
    send_with(door, breaker, bulkhead, server, Call::plain()).await
}

/// A pipeline with these guards and `call`'s policy and events.
fn pipeline(
    nesting: Nesting,
    breaker: &Arc<NamedBreaker>,
    bulkhead: &Arc<Bulkhead>,
    call: &Call,
) -> PipelineBuilder {
    let mut builder =
        Pipeline::builder().breaker(breaker.clone()).bulkhead(bulkhead.clone()).retry(call.policy);
    if let Some(events) = &call.events {
        builder = builder.events(events.clone());
    }
    if nesting == Nesting::BreakerOutsideRetry {
        builder = builder.breaker_outside_retry();
    }
    builder
}

/// One request through the sync pipeline, on the calling thread.
fn sync_call(
    nesting: Nesting,
    breaker: &Arc<NamedBreaker>,
    bulkhead: &Arc<Bulkhead>,
    addr: SocketAddr,
    call: Call,
) -> Got {
    let pipeline = pipeline(nesting, breaker, bulkhead, &call).build();
    pipeline_got(match call.deadline {
        None => pipeline.call_with(HttpClassifier, || blocking_get(addr)),
        Some(deadline) => pipeline.call_before(deadline, HttpClassifier, || blocking_get(addr)),
    })
}

/// [`send`] as `call` says.
async fn send_with(
    door: Door,
    breaker: &Arc<NamedBreaker>,
    bulkhead: &Arc<Bulkhead>,
    server: &Server,
    call: Call,
) -> Got {
    let outside = door.nesting() == Nesting::BreakerOutsideRetry;
    match door {
        Door::SyncPipeline(nesting) => {
            let (breaker, bulkhead, addr) = (breaker.clone(), bulkhead.clone(), server.addr);
            let got =
                tokio::task::spawn_blocking(move || sync_call(nesting, &breaker, &bulkhead, addr, call));
            got.await.unwrap()
        }
        Door::AsyncPipeline(nesting) => {
            let pipeline =
                pipeline(nesting, breaker, bulkhead, &call).timeout(ATTEMPT).timer(TokioTimer).build();
            let (client, uri) = (client(), server.url("/book"));
            let get = || client.get(uri.clone());
            pipeline_got(match call.deadline {
                None => pipeline.call_async_with(HttpClassifier, get).await,
                Some(deadline) => pipeline.call_async_before(deadline, HttpClassifier, get).await,
            })
        }
        Door::Tower(_) => {
            let request = || ::http::Request::get(server.url("/book")).body(Empty::<Bytes>::new()).unwrap();
            let timed = BulkheadLayer::new(bulkhead.clone())
                .layer(TimeoutLayer::new(ATTEMPT, TokioTimer).layer(client()));
            let mut retry = RetryLayer::new(call.policy, TokioTimer);
            if let Some(events) = call.events {
                retry = retry.events(events);
            }
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
            let mut guard = tripwire::reqwest::GuardMiddleware::new(breaker.clone())
                .bulkhead(bulkhead.clone())
                .retry(call.policy)
                .timeout(ATTEMPT);
            if let Some(events) = call.events {
                guard = guard.events(events);
            }
            let inner = reqwest::Client::builder().no_proxy().build().unwrap();
            let client = reqwest_middleware::ClientBuilder::new(inner).with(guard).build();
            match client.get(format!("http://{}/book", server.addr)).send().await {
                Ok(response) => Got::Status(response.status().as_u16()),
                Err(reqwest_middleware::Error::Middleware(e)) if e.is::<tripwire::timeout::Elapsed>() => {
                    Got::TimedOut
                }
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
    let pause = scenario.shows_pause.then(|| {
        let gap = server.gap(1, 2).expect("the scenario retries once");
        if gap < Duration::from_secs(1) { Pause::UnderASecond } else { Pause::ASecondOrMore }
    });
    Trace {
        hits,
        got,
        failures: snapshot.failures,
        ignored: snapshot.ignored,
        hold_s,
        capped_holds: snapshot.capped_holds,
        pause,
        then,
        hits_after: server.hits(),
    }
}

/// What a caller got, in a word or two.
fn got_text(g: Got) -> String {
    match g {
        Got::Status(s) => s.to_string(),
        Got::Refused => "refused".into(),
        Got::Full => "bulkhead full".into(),
        Got::TimedOut => "timed out".into(),
    }
}

impl Trace {
    fn cell(&self) -> Cell {
        let hold = self.hold_s.map_or("none".into(), |s| format!("{s} s"));
        let mut parts = vec![
            ("sent", format!("{} sent, got {}", self.hits, got_text(self.got))),
            ("counts", format!("failures {}, ignored {}", self.failures, self.ignored)),
            ("hold", format!("hold {hold}{}", if self.capped_holds > 0 { " (capped)" } else { "" })),
        ];
        if let Some(pause) = self.pause {
            let pause = match pause {
                Pause::UnderASecond => "pause < 1 s",
                Pause::ASecondOrMore => "pause ≥ 1 s",
            };
            parts.push(("pause", pause.into()));
        }
        parts.push((
            "next",
            format!("next caller: {} ({} sent)", got_text(self.then), self.hits_after - self.hits),
        ));
        Cell(parts)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_integration_gives_the_same_answer_for_its_nesting() {
    let mut table = String::from(
        "<!-- Written by core/tests/conformance.rs (TRIPWIRE_BLESS=1 cargo test -p tripwire-breaker --all-features \
         --test conformance); do not edit. -->\n\n\
         | scenario | retry → breaker (sync pipeline, async pipeline, tower, reqwest middleware) | breaker → retry (sync pipeline, async pipeline, tower) |\n\
         | --- | --- | --- |\n",
    );
    let mut differences_seen = 0;
    for row in Row::all() {
        let mut by_nesting: [Vec<(Door, Answer)>; 2] = [Vec::new(), Vec::new()];
        for door in Door::ALL {
            let answer = row.run(door).await;
            by_nesting[usize::from(door.nesting() == Nesting::BreakerOutsideRetry)].push((door, answer));
        }
        let [inside, outside] = by_nesting.map(|answers| cell::column(row.name(), &answers, &DIFFERENCES));
        differences_seen += inside.1 + outside.1;
        table.push_str(&format!("| {} | {} | {} |\n", row.name(), inside.0, outside.0));
    }
    assert_eq!(differences_seen, DIFFERENCES.len(), "every documented difference names a row and door run");
    table.push_str(stale::NOTE);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/layers/conformance.md");
    if std::env::var_os("TRIPWIRE_BLESS").is_some() {
        std::fs::write(path, &table).unwrap();
    }
    let written = std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(
        written, table,
        "src/layers/conformance.md is not what the matrix gives: TRIPWIRE_BLESS=1 rewrites it"
    );
}
