//! The two clients, each on a thread and a single-threaded runtime of its
//! own (so the counting allocator can charge it its heap): a naive one
//! with a timeout only, and one behind tripwire's pipeline. Both start a
//! request every `1 / rate` seconds, whether earlier ones have been
//! answered or not.
//!
//! Every counter is touched with `Relaxed`: they are tallies (see
//! [`stats`](crate::stats)).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tripwire::{
    Assessment, BreakerConfig, Bulkhead, NamedBreaker, Pipeline,
    pipeline::PipelineError,
    retry::{BackoffConfig, Jitter, RetryBudget, RetryBudgetConfig, RetryPolicy},
    stale::{Served, StaleCache, StalePolicy},
    timeout::TokioTimer,
};

use crate::exchange::CLIENT_HEADER;
use crate::stats::ClientStats;
use crate::{Config, Scenario, Shared, memory};

/// Which client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A timeout and nothing else.
    Naive,
    /// timeout, bulkhead, breaker, retry with a budget, stale order books.
    Tripwire,
}

impl Kind {
    /// Its name, also sent to the exchange in [`CLIENT_HEADER`].
    pub fn name(self) -> &'static str {
        match self {
            Kind::Naive => "naive",
            Kind::Tripwire => "tripwire",
        }
    }

    /// The allocator tag of its thread.
    pub fn tag(self) -> usize {
        match self {
            Kind::Naive => 1,
            Kind::Tripwire => 2,
        }
    }
}

/// Why a request to the exchange failed.
#[derive(Debug, Clone)]
pub enum Failure {
    /// The exchange answered with an error status.
    Status(u16, Assessment),
    /// No answer: connection refused or reset.
    Network(String),
}

/// How the pipeline judges an attempt: by status and headers (5xx is a
/// failure, 429 with `Retry-After` holds the breaker open); a network
/// error is a failure.
fn assess(r: &Result<Bytes, Failure>) -> Assessment {
    match r {
        Ok(_) => Assessment::Success,
        Err(Failure::Status(_, a)) => *a,
        Err(Failure::Network(_)) => Assessment::Failure,
    }
}

type Client = HyperClient<HttpConnector, Empty<Bytes>>;

/// The protected client's layers, shared with the display.
#[derive(Debug)]
pub struct Guard {
    /// Its breaker.
    pub breaker: Arc<NamedBreaker>,
    pipeline: Pipeline<tripwire::MonotonicClock, TokioTimer>,
    books: StaleCache<&'static str, Bytes>,
    balances: StaleCache<&'static str, Bytes>,
    stale_max: Duration,
}

impl Guard {
    /// The layers, with every duration of `config` moved to real time.
    pub fn new(config: &Config, scenario: &Scenario) -> Guard {
        let real = |d| scenario.real(d);
        let breaker = Arc::new(NamedBreaker::new(
            "exchange/rest",
            BreakerConfig::builder()
                .failure_threshold(config.failure_threshold)
                .open_timeout(real(config.cool_down))
                .build()
                .expect("a valid breaker config"),
        ));
        let backoff = BackoffConfig::builder()
            .base(real(Duration::from_millis(100)))
            .cap(real(Duration::from_secs(1)))
            .jitter(Jitter::Decorrelated)
            .seed(config.seed)
            .build()
            .expect("a valid backoff");
        let budget = RetryBudgetConfig::builder()
            .ratio(0.1)
            .ttl(real(Duration::from_secs(10)))
            .min_retries_per_sec(1.0 * scenario.scale)
            .build()
            .expect("a valid retry budget");
        let pipeline = Pipeline::builder()
            .retry(RetryPolicy::builder().max_attempts(3).backoff(backoff).build().expect("a valid policy"))
            .retry_budget(Arc::new(RetryBudget::new(budget)))
            .breaker(breaker.clone())
            .bulkhead(Arc::new(Bulkhead::new(config.bulkhead)))
            .timeout(real(config.timeout))
            .timer(TokioTimer)
            .build();
        Guard {
            breaker,
            pipeline,
            books: StaleCache::new(),
            balances: StaleCache::new(),
            stale_max: real(config.stale_max),
        }
    }
}

/// Runs one client until the timeline ends and its requests are answered
/// (or have waited two timeouts more).
pub fn run(kind: Kind, shared: &Arc<Shared>, guard: Option<Arc<Guard>>, base: &str) {
    memory::tag_thread(kind.tag());
    memory::restart_peak(kind.tag());
    let tag = kind.tag();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_start(move || memory::tag_thread(tag))
        .build()
        .expect("a tokio runtime");
    rt.block_on(drive(kind, shared.clone(), guard, base));
    drop(rt);
    memory::tag_thread(0);
}

async fn drive(kind: Kind, shared: Arc<Shared>, guard: Option<Arc<Guard>>, base: &str) {
    let s = &shared.scenario;
    let stats = shared.client(kind);
    let client: Client = HyperClient::builder(TokioExecutor::new()).build_http();
    let book: Arc<str> = format!("{base}/api/v3/depth?symbol=BTCUSDT").into();
    let account: Arc<str> = format!("{base}/api/v3/account").into();
    let period = Duration::from_secs_f64(1.0 / (shared.config.rate * s.scale));
    let mut next = Instant::now();
    let end = s.t0 + s.real(s.timeline.total());
    let mut i = 0u64;
    while next < end {
        if next > Instant::now() {
            tokio::time::sleep_until(next.into()).await;
        }
        // One balance for every three order books.
        let balance = i % 4 == 3;
        let uri = if balance { account.clone() } else { book.clone() };
        let (shared, client, guard) = (shared.clone(), client.clone(), guard.clone());
        tokio::spawn(async move {
            let request = Call { kind, shared: &shared, client: &client, uri: &uri, balance };
            match &guard {
                None => request.naive().await,
                Some(g) => request.guarded(g).await,
            }
        });
        i += 1;
        next += period;
    }
    // Let the last requests finish, for at most two timeouts.
    let drain = Instant::now() + s.real(shared.config.timeout * 2);
    while stats.waiting.load(Ordering::Relaxed) > 0 && Instant::now() < drain {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

struct Call<'a> {
    kind: Kind,
    shared: &'a Shared,
    client: &'a Client,
    uri: &'a str,
    balance: bool,
}

impl Call<'_> {
    fn stats(&self) -> &ClientStats {
        self.shared.client(self.kind)
    }

    /// One GET; any status but 2xx is an error.
    async fn fetch(&self) -> Result<Bytes, Failure> {
        let _in_flight = self.stats().send();
        let request = Request::get(self.uri)
            .header(CLIENT_HEADER, self.kind.name())
            .body(Empty::new())
            .map_err(|e| Failure::Network(e.to_string()))?;
        let response = self.client.request(request).await.map_err(|e| Failure::Network(e.to_string()))?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map_err(|e| Failure::Network(e.to_string()))?.to_bytes();
        if parts.status.is_success() {
            Ok(body)
        } else {
            Err(Failure::Status(parts.status.as_u16(), tripwire::http::assess(parts.status, &parts.headers)))
        }
    }

    async fn naive(self) {
        let s = &self.shared.scenario;
        let started = Instant::now();
        let _waiting = self.stats().start();
        let got = tokio::time::timeout(s.real(self.shared.config.timeout), self.fetch()).await;
        let served = match got {
            Ok(Ok(_)) => Ok(Served::Fresh(())),
            Ok(Err(_)) | Err(_) => Err(()),
        };
        self.settle(started, served);
    }

    async fn guarded(self, guard: &Guard) {
        let started = Instant::now();
        let _waiting = self.stats().start();
        let fetch = async {
            let got = guard.pipeline.call_async_with(assess, || self.fetch()).await;
            if matches!(got, Err(PipelineError::Full(_))) {
                self.stats().bulkhead_full.fetch_add(1, Ordering::Relaxed);
            }
            got
        };
        let served = if self.balance {
            guard.balances.serve_async("USDT", StalePolicy::Never, fetch).await
        } else {
            guard.books.serve_async("BTCUSDT", StalePolicy::UpTo(guard.stale_max), fetch).await
        };
        let served = match served {
            Ok(Served::Fresh(_)) => Ok(Served::Fresh(())),
            Ok(Served::Stale { age, .. }) => Ok(Served::Stale { value: (), age }),
            Err(_) => Err(()),
        };
        self.settle(started, served);
    }

    fn settle(&self, started: Instant, served: Result<Served<()>, ()>) {
        let s = &self.shared.scenario;
        let stats = self.stats();
        let now = s.now();
        let latency = s.scenario(started.elapsed());
        stats.answered(s.fraction(now), latency);
        match served {
            Ok(Served::Fresh(())) => {
                stats.fresh.fetch_add(1, Ordering::Relaxed);
                if let Some(after) = now.checked_sub(s.timeline.recovered_at()) {
                    let ns = tripwire::clock::duration_ns(after);
                    stats.first_success_after_recovery.fetch_min(ns, Ordering::Relaxed);
                }
            }
            Ok(Served::Stale { age, .. }) => {
                let counter = if self.balance { &stats.stale_balances } else { &stats.stale };
                counter.fetch_add(1, Ordering::Relaxed);
                let age = tripwire::clock::duration_ns(s.scenario(age));
                stats.stale_max_age.fetch_max(age, Ordering::Relaxed);
            }
            Err(()) => {
                stats.failed(latency);
                if self.balance {
                    stats.balance_errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}
