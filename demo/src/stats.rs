//! What each client saw, counted with atomics while the run goes on and
//! summed up at the end. Everything is allocated before the run starts, so
//! recording allocates nothing (and charges no client's heap).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tripwire::State;

// Relaxed everywhere in this file: these are tallies, read for display
// while the run goes on and summed after every task has stopped; no other
// data is published through them.

/// A failure answered faster than this (on the scenario's clock) never
/// waited for the exchange.
pub const FAST: Duration = Duration::from_millis(10);

/// One slice of the timeline, for the chart.
#[derive(Debug, Default)]
pub struct Bucket {
    /// Requests that reached the exchange (counted by the exchange).
    pub hits: AtomicU64,
    /// Caller requests answered.
    pub answered: AtomicU64,
    /// The slowest answer, ns on the scenario's clock.
    pub max_latency: AtomicU64,
    /// All answers' times added up, ns on the scenario's clock.
    pub sum_latency: AtomicU64,
}

/// What one client saw.
#[derive(Debug)]
pub struct ClientStats {
    /// Requests that reached the exchange (counted by the exchange).
    pub hits: AtomicU64,
    /// Of those, requests that arrived while it was down.
    pub hits_down: AtomicU64,
    /// Caller requests started.
    pub started: AtomicU64,
    /// Caller requests waiting for an answer now.
    pub waiting: AtomicU64,
    /// The most caller requests waiting at once.
    pub peak_waiting: AtomicU64,
    /// HTTP requests to the exchange outstanding now.
    pub in_flight: AtomicU64,
    /// The most HTTP requests outstanding at once.
    pub peak_in_flight: AtomicU64,
    /// Fresh answers from the exchange.
    pub fresh: AtomicU64,
    /// Order books answered from the stale cache.
    pub stale: AtomicU64,
    /// The oldest stale order book served, ns on the scenario's clock.
    pub stale_max_age: AtomicU64,
    /// Balances answered from a cache (must stay 0).
    pub stale_balances: AtomicU64,
    /// Errors answered faster than [`FAST`].
    pub fast_failures: AtomicU64,
    /// Errors answered slower.
    pub slow_failures: AtomicU64,
    /// Balance requests answered with an error.
    pub balance_errors: AtomicU64,
    /// Calls refused by a full bulkhead.
    pub bulkhead_full: AtomicU64,
    /// The first fresh answer after the exchange recovered, ns of the
    /// scenario's clock after the recovery (`u64::MAX`: none).
    pub first_success_after_recovery: AtomicU64,
    latencies: Vec<AtomicU64>,
    next_latency: AtomicU64,
    /// The timeline in slices.
    pub buckets: Vec<Bucket>,
    /// The breaker's transitions: scenario time and state entered.
    pub transitions: Mutex<Vec<(Duration, State)>>,
}

impl ClientStats {
    /// Room for `requests` latencies and `buckets` slices.
    pub fn new(requests: usize, buckets: usize) -> ClientStats {
        ClientStats {
            hits: AtomicU64::new(0),
            hits_down: AtomicU64::new(0),
            started: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            peak_waiting: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            peak_in_flight: AtomicU64::new(0),
            fresh: AtomicU64::new(0),
            stale: AtomicU64::new(0),
            stale_max_age: AtomicU64::new(0),
            stale_balances: AtomicU64::new(0),
            fast_failures: AtomicU64::new(0),
            slow_failures: AtomicU64::new(0),
            balance_errors: AtomicU64::new(0),
            bulkhead_full: AtomicU64::new(0),
            first_success_after_recovery: AtomicU64::new(u64::MAX),
            latencies: (0..requests).map(|_| AtomicU64::new(0)).collect(),
            next_latency: AtomicU64::new(0),
            buckets: (0..buckets).map(|_| Bucket::default()).collect(),
            transitions: Mutex::new(Vec::with_capacity(4096)),
        }
    }

    /// The slice holding `at` (a fraction of the timeline in `[0, 1]`).
    pub fn bucket(&self, at: f64) -> &Bucket {
        let last = self.buckets.len() - 1;
        &self.buckets[((at * self.buckets.len() as f64) as usize).min(last)]
    }

    /// A request reached the exchange.
    pub fn hit(&self, at: f64, down: bool) {
        self.hits.fetch_add(1, Ordering::Relaxed);
        if down {
            self.hits_down.fetch_add(1, Ordering::Relaxed);
        }
        self.bucket(at).hits.fetch_add(1, Ordering::Relaxed);
    }

    /// A caller request starts; returns its guard.
    pub fn start(&self) -> Waiting<'_> {
        self.started.fetch_add(1, Ordering::Relaxed);
        raise(&self.waiting, &self.peak_waiting);
        Waiting(&self.waiting)
    }

    /// An HTTP request to the exchange starts; returns its guard.
    pub fn send(&self) -> Waiting<'_> {
        raise(&self.in_flight, &self.peak_in_flight);
        Waiting(&self.in_flight)
    }

    /// A caller request was answered after `latency` (scenario clock) at
    /// `at` (fraction of the timeline).
    pub fn answered(&self, at: f64, latency: Duration) {
        let ns = tripwire::clock::duration_ns(latency);
        let i = self.next_latency.fetch_add(1, Ordering::Relaxed) as usize;
        if let Some(slot) = self.latencies.get(i) {
            slot.store(ns, Ordering::Relaxed);
        }
        let b = self.bucket(at);
        b.answered.fetch_add(1, Ordering::Relaxed);
        b.max_latency.fetch_max(ns, Ordering::Relaxed);
        b.sum_latency.fetch_add(ns, Ordering::Relaxed);
    }

    /// A caller request failed after `latency` (scenario clock).
    pub fn failed(&self, latency: Duration) {
        let counter = if latency < FAST { &self.fast_failures } else { &self.slow_failures };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The latencies recorded, sorted, ns on the scenario's clock.
    pub fn sorted_latencies(&self) -> Vec<u64> {
        let n = (self.next_latency.load(Ordering::Relaxed) as usize).min(self.latencies.len());
        let mut v: Vec<u64> = self.latencies[..n].iter().map(|l| l.load(Ordering::Relaxed)).collect();
        v.sort_unstable();
        v
    }
}

fn raise(now: &AtomicU64, peak: &AtomicU64) {
    let n = now.fetch_add(1, Ordering::Relaxed) + 1;
    peak.fetch_max(n, Ordering::Relaxed);
}

/// Counts one request as outstanding until dropped.
#[derive(Debug)]
pub struct Waiting<'a>(&'a AtomicU64);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The `q` quantile of sorted values (0 when empty).
pub fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_guards() {
        assert_eq!(quantile(&[], 0.5), 0);
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!((quantile(&v, 0.5), quantile(&v, 0.99), quantile(&v, 1.0)), (51, 99, 100));
        let s = ClientStats::new(4, 2);
        {
            let _a = s.send();
            let _b = s.send();
        }
        let _c = s.send();
        assert_eq!((s.in_flight.load(Ordering::Relaxed), s.peak_in_flight.load(Ordering::Relaxed)), (1, 2));
        s.answered(0.9, Duration::from_millis(3));
        s.failed(Duration::from_millis(3));
        s.failed(Duration::from_secs(2));
        assert_eq!(s.sorted_latencies(), [3_000_000]);
        assert_eq!(s.buckets[1].answered.load(Ordering::Relaxed), 1);
        assert_eq!(
            (s.fast_failures.load(Ordering::Relaxed), s.slow_failures.load(Ordering::Relaxed)),
            (1, 1)
        );
    }
}
