//! An exchange outage, replayed and measured.
//!
//! A simulated exchange ([`exchange`]) runs on 127.0.0.1 and follows a
//! scripted [`timeline`]: healthy, maintenance answering 503, accepting
//! connections but never answering, healthy again, with random 503s and a
//! 429 along the way. Two [`clients`] poll it side by side at the same
//! rate: a naive one with a timeout only, and one behind tripwire. The
//! scenario's minutes are replayed compressed by a time scale; every
//! duration the clients and the exchange use (timeouts, cool-downs,
//! latencies, `Retry-After`) is scaled the same way, and every time
//! reported is on the scenario's clock.
//!
//! [`run`] returns a [`Report`]: a [`table`] and a [`chart`] of it.
//!
//! - the script: [`timeline::Timeline`], [`timeline::Pattern`], [`timeline::Phase`]
//! - the exchange: [`exchange::Exchange`]
//! - the clients: [`clients::Kind`], [`clients::Guard`] (tripwire's layers)
//! - what they saw: [`stats::ClientStats`], [`Summary`], [`memory::CountingAlloc`]
//! - the output: [`table::render`], [`chart::render`], [`progress::show`]
//! - several client processes on one fleet over Redis: [`fleet`] (`--bin fleet`)
//!
//! # Examples
//! ```no_run
//! use std::time::Duration;
//! use tripwire_demo::{Config, run, table};
//!
//! // A 3-minute outage replayed in about 3 seconds.
//! let config = Config { outage: Duration::from_secs(180), scale: 100.0, out: None, ..Config::default() };
//! let report = run(config)?;
//! assert!(report.tripwire.hits_down < report.naive.hits_down / 10);
//! println!("{}", table::render(&report));
//! # Ok::<(), std::io::Error>(())
//! ```

pub mod args;
pub mod chart;
pub mod clients;
pub mod exchange;
pub mod fleet;
pub mod memory;
pub mod progress;
pub mod stats;
pub mod table;
pub mod timeline;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clients::{Guard, Kind};
use exchange::Exchange;
use stats::{ClientStats, quantile};
use timeline::{Pattern, Timeline};
use tripwire::State;

/// What to replay, on the scenario's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Requests per second, per client.
    pub rate: f64,
    /// How long the exchange is down.
    pub outage: Duration,
    /// How many times faster than real life the scenario is replayed.
    pub scale: f64,
    /// How the exchange fails.
    pub pattern: Pattern,
    /// Where the chart and the table go (`None`: nowhere).
    pub out: Option<PathBuf>,
    /// Seed of the random 503s and the backoff jitter.
    pub seed: u64,
    /// Each request's timeout (both clients).
    pub timeout: Duration,
    /// The breaker's cool-down.
    pub cool_down: Duration,
    /// Consecutive failures that trip the breaker.
    pub failure_threshold: u32,
    /// The bulkhead's slots.
    pub bulkhead: u32,
    /// The oldest order book served stale.
    pub stale_max: Duration,
    /// The live display while it runs.
    pub live: progress::Live,
}

impl Default for Config {
    /// The story: 10 requests per second through a 30-minute outage,
    /// replayed in about 30 seconds.
    fn default() -> Self {
        Config {
            rate: 10.0,
            outage: Duration::from_secs(30 * 60),
            scale: 72.0,
            pattern: Pattern::Mixed,
            out: Some(PathBuf::from("target/outage")),
            seed: 7,
            timeout: Duration::from_secs(2),
            cool_down: Duration::from_secs(30),
            failure_threshold: 5,
            bulkhead: 8,
            stale_max: Duration::from_secs(5 * 60),
            live: progress::Live::Auto,
        }
    }
}

/// The scenario's clock: real time since the start, times the scale.
#[derive(Debug)]
pub struct Scenario {
    /// The real start.
    pub t0: Instant,
    /// The compression factor.
    pub scale: f64,
    /// The exchange's script.
    pub timeline: Timeline,
}

impl Scenario {
    /// Now, on the scenario's clock.
    pub fn now(&self) -> Duration {
        self.scenario(self.t0.elapsed())
    }

    /// A scenario duration in real time.
    pub fn real(&self, d: Duration) -> Duration {
        d.div_f64(self.scale)
    }

    /// A real duration on the scenario's clock.
    pub fn scenario(&self, d: Duration) -> Duration {
        d.mul_f64(self.scale)
    }

    /// `t` as a fraction of the timeline, in `[0, 1]`.
    pub fn fraction(&self, t: Duration) -> f64 {
        (t.as_secs_f64() / self.timeline.total().as_secs_f64()).clamp(0.0, 1.0)
    }
}

/// What the clients, the exchange and the display share.
#[derive(Debug)]
pub struct Shared {
    /// The clock and the script.
    pub scenario: Scenario,
    /// The settings.
    pub config: Config,
    /// The naive client's counts.
    pub naive: ClientStats,
    /// The protected client's counts.
    pub tripwire: ClientStats,
}

impl Shared {
    /// The counts of `kind`.
    pub fn client(&self, kind: Kind) -> &ClientStats {
        match kind {
            Kind::Naive => &self.naive,
            Kind::Tripwire => &self.tripwire,
        }
    }
}

/// Slices of the timeline in the chart.
pub const BUCKETS: usize = 240;

/// One client's results, times on the scenario's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Caller requests made.
    pub requests: u64,
    /// Requests that reached the exchange.
    pub hits: u64,
    /// Of those, while it was down.
    pub hits_down: u64,
    /// Fresh answers.
    pub fresh: u64,
    /// Errors answered in under [`stats::FAST`].
    pub fast_failures: u64,
    /// Errors answered slower.
    pub slow_failures: u64,
    /// The most HTTP requests outstanding at once.
    pub peak_in_flight: u64,
    /// The most caller requests waiting at once.
    pub peak_waiting: u64,
    /// The most heap bytes its runtime held at once above its start, if
    /// measured.
    pub peak_heap: Option<u64>,
    /// Latency seen by the caller: median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Slowest.
    pub max: Duration,
    /// Order books served stale.
    pub stale: u64,
    /// The oldest of those.
    pub stale_max_age: Duration,
    /// Balances served stale (never, by policy).
    pub stale_balances: u64,
    /// Balance requests answered with an error.
    pub balance_errors: u64,
    /// Calls refused by a full bulkhead.
    pub bulkhead_full: u64,
    /// From the exchange's recovery to the first fresh answer.
    pub recovery: Option<Duration>,
}

impl Summary {
    fn of(stats: &ClientStats, heap: Option<u64>) -> Summary {
        let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let lat = stats.sorted_latencies();
        let ns = Duration::from_nanos;
        let first = n(&stats.first_success_after_recovery);
        Summary {
            requests: n(&stats.started),
            hits: n(&stats.hits),
            hits_down: n(&stats.hits_down),
            fresh: n(&stats.fresh),
            fast_failures: n(&stats.fast_failures),
            slow_failures: n(&stats.slow_failures),
            peak_in_flight: n(&stats.peak_in_flight),
            peak_waiting: n(&stats.peak_waiting),
            peak_heap: heap,
            p50: ns(quantile(&lat, 0.5)),
            p99: ns(quantile(&lat, 0.99)),
            max: ns(lat.last().copied().unwrap_or(0)),
            stale: n(&stats.stale),
            stale_max_age: ns(n(&stats.stale_max_age)),
            stale_balances: n(&stats.stale_balances),
            balance_errors: n(&stats.balance_errors),
            bulkhead_full: n(&stats.bulkhead_full),
            recovery: (first != u64::MAX).then(|| ns(first)),
        }
    }
}

/// The outcome of a run.
#[derive(Debug)]
pub struct Report {
    /// The settings it ran with.
    pub config: Config,
    /// The exchange's script.
    pub timeline: Timeline,
    /// The naive client.
    pub naive: Summary,
    /// The client behind tripwire.
    pub tripwire: Summary,
    /// Everything counted, for the chart.
    pub shared: Arc<Shared>,
    /// Real time the run took.
    pub wall: Duration,
}

impl Report {
    /// The breaker's transitions: scenario time and state entered.
    pub fn transitions(&self) -> Vec<(Duration, State)> {
        self.shared.tripwire.transitions.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

/// Replays the scenario: starts the exchange, drives both clients side by
/// side, shows progress, and returns what they saw.
pub fn run(config: Config) -> std::io::Result<Report> {
    let timeline = Timeline::new(config.outage, config.pattern);
    let total = timeline.total();
    // Room for every request of the run, with margin for timer catch-up.
    let requests = (config.rate * total.as_secs_f64() * 1.2) as usize + 64;
    let wall = Instant::now();
    let shared = Arc::new(Shared {
        scenario: Scenario { t0: Instant::now(), scale: config.scale, timeline: timeline.clone() },
        config: config.clone(),
        naive: ClientStats::new(requests, BUCKETS),
        tripwire: ClientStats::new(requests, BUCKETS),
    });
    let guard = Arc::new(Guard::new(&config, &shared.scenario));
    let log = shared.clone();
    guard.breaker.on_state_change(move |c| {
        if let Ok(mut t) = log.tripwire.transitions.lock() {
            t.push((log.scenario.now(), c.to));
        }
    });
    let exchange = Exchange::start(shared.clone(), config.seed)?;
    let base = format!("http://{}", exchange.addr());

    let mut threads = Vec::new();
    for (kind, guard) in [(Kind::Naive, None), (Kind::Tripwire, Some(guard.clone()))] {
        let (shared, base) = (shared.clone(), base.clone());
        threads.push(
            std::thread::Builder::new()
                .name(kind.name().into())
                .spawn(move || clients::run(kind, &shared, guard, &base))?,
        );
    }
    progress::show(&shared, &guard.breaker, &threads);
    for t in threads {
        t.join().map_err(|_| std::io::Error::other("a client thread panicked"))?;
    }
    drop(exchange);
    let heap = |kind: Kind| memory::measured().then(|| memory::peak(kind.tag()).max(0) as u64);
    Ok(Report {
        naive: Summary::of(&shared.naive, heap(Kind::Naive)),
        tripwire: Summary::of(&shared.tripwire, heap(Kind::Tripwire)),
        config,
        timeline,
        shared,
        wall: wall.elapsed(),
    })
}
