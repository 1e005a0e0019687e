//! The registry's export to a `metrics` recorder: names and labels as in
//! the Prometheus text.
#![cfg(all(feature = "metrics", not(loom)))]

#[path = "support/recorder.rs"]
mod recorder;

use recorder::Values;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tripwire::{
    BreakerConfig, Outcome,
    registry::Registry,
    stale::{StaleCache, StalePolicy},
};

#[test]
fn every_breaker_bulkhead_and_cache_reaches_the_recorder() {
    let registry = Registry::new();
    let b = registry
        .breaker("binance/orderbook", || BreakerConfig::builder().failure_threshold(1).build().unwrap());
    let t = b.try_acquire().unwrap();
    b.record(t, Outcome::Failure);
    let _ = b.try_acquire();
    let orders = registry.bulkhead("binance/orders", 8);
    let _slot = orders.try_acquire().unwrap();
    let cache: StaleCache<&str, u32> = StaleCache::new();
    registry.add_stale("binance/orderbook", cache.stats().clone());
    let _ = cache.serve("BTC", StalePolicy::Never, || Ok::<_, ()>(1));

    let values = Values::default();
    metrics::with_local_recorder(&values, || registry.publish_metrics());
    let got = values.0.lock().unwrap().clone();
    for (key, want) in [
        ("tripwire_breaker_state{breaker=binance/orderbook,state=open}", 1.0),
        ("tripwire_breaker_state{breaker=binance/orderbook,state=closed}", 0.0),
        ("tripwire_breaker_calls_total{breaker=binance/orderbook,outcome=failure}", 1.0),
        ("tripwire_breaker_rejected_total{breaker=binance/orderbook}", 1.0),
        ("tripwire_breaker_transitions_total{breaker=binance/orderbook}", 1.0),
        ("tripwire_bulkhead_in_flight{bulkhead=binance/orders}", 1.0),
        ("tripwire_bulkhead_max{bulkhead=binance/orders}", 8.0),
        ("tripwire_fallback_total{cache=binance/orderbook,result=fresh}", 1.0),
    ] {
        assert_eq!(got.get(key), Some(&want), "{key} in {got:#?}");
    }
}

#[test]
fn bulkhead_and_retry_events_reach_the_recorder_by_kind() {
    use std::time::Duration;
    use tripwire::{
        Bulkhead, Pipeline,
        events::Events,
        retry::{BackoffConfig, RetryBudget, RetryBudgetConfig, RetryPolicy},
    };

    let events = Arc::new(Events::new("kraken/rest"));
    let bulkhead = Arc::new(Bulkhead::new(1));
    let backoff = BackoffConfig::builder().base(Duration::from_nanos(1)).build().unwrap();
    let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff).build().unwrap();
    let full = Pipeline::builder().bulkhead(bulkhead.clone()).events(events.clone()).build();
    let retrying = Pipeline::builder().retry(policy).events(events.clone()).build();
    let empty = RetryBudgetConfig::builder().ratio(0.0).min_retries_per_sec(0.0).build().unwrap();
    let frugal = Pipeline::builder()
        .retry(policy)
        .retry_budget(Arc::new(RetryBudget::new(empty)))
        .events(events.clone())
        .build();
    {
        let _busy = bulkhead.try_acquire().unwrap();
        for _ in 0..2 {
            assert!(full.call(|| Ok::<_, ()>(1)).is_err());
        }
    }
    assert!(retrying.call(|| Err::<(), _>("503")).is_err());
    assert!(frugal.call(|| Err::<(), _>("503")).is_err());

    let values = Values::default();
    metrics::with_local_recorder(&values, || events.publish_metrics());
    let got = values.0.lock().unwrap().clone();
    for (key, want) in [
        ("tripwire_bulkhead_events_total{bulkhead=kraken/rest,event=refused}", 2.0),
        ("tripwire_bulkhead_events_total{bulkhead=kraken/rest,event=waited}", 0.0),
        ("tripwire_bulkhead_events_total{bulkhead=kraken/rest,event=timed_out}", 0.0),
        ("tripwire_retry_events_total{retry=kraken/rest,event=scheduled}", 2.0),
        ("tripwire_retry_events_total{retry=kraken/rest,event=pause_capped}", 0.0),
        ("tripwire_retry_events_total{retry=kraken/rest,event=exhausted}", 1.0),
        ("tripwire_retry_events_total{retry=kraken/rest,event=budget_refused}", 1.0),
    ] {
        assert_eq!(got.get(key), Some(&want), "{key} in {got:#?}");
    }
}

/// The breakers whose rows [`Rejections`] writes, by address.
static REPORTED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Another crate's rows: a gauge and a counter per reported breaker.
struct Rejections;

impl tripwire::prometheus::RowSource for Rejections {
    fn write_rows(
        &self,
        breakers: &[&tripwire::Breaker],
        out: &mut dyn tripwire::prometheus::Sink,
    ) -> std::fmt::Result {
        use tripwire::prometheus::Kind;
        let reported = REPORTED.lock().unwrap().clone();
        let mine: Vec<(String, u64)> = breakers
            .iter()
            .enumerate()
            .filter(|(_, b)| reported.contains(&(std::ptr::from_ref(**b) as usize)))
            .map(|(i, b)| (i.to_string(), b.snapshot().rejected))
            .collect();
        if mine.is_empty() {
            return Ok(());
        }
        out.family("test_source_up", Kind::Gauge, "Up.")?;
        for (i, _) in &mine {
            out.sample(&[("at", i), ("kind", "test")], 1)?;
        }
        out.family("test_source_rejected_total", Kind::Counter, "Refusals.")?;
        for (i, n) in &mine {
            out.sample(&[("at", i)], *n)?;
        }
        Ok(())
    }
}

#[test]
fn an_added_sources_rows_reach_the_recorder_as_in_the_text_export() {
    static SOURCE: Rejections = Rejections;
    tripwire::prometheus::add_source(&SOURCE);
    let registry = Registry::new();
    let b =
        registry.breaker("kraken/book", || BreakerConfig::builder().failure_threshold(1).build().unwrap());
    REPORTED.lock().unwrap().push(std::ptr::from_ref(b.breaker()) as usize);
    let t = b.try_acquire().unwrap();
    b.record(t, Outcome::Failure);
    let _ = b.try_acquire();
    let _ = b.try_acquire();

    let want: BTreeMap<String, f64> = registry
        .prometheus()
        .lines()
        .filter(|l| l.starts_with("test_source_"))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series.replace('"', ""), value.parse().unwrap())
        })
        .collect();
    let values = Values::default();
    metrics::with_local_recorder(&values, || registry.publish_metrics());
    let got: BTreeMap<String, f64> =
        values.0.lock().unwrap().clone().into_iter().filter(|(k, _)| k.starts_with("test_source_")).collect();
    assert_eq!(want.get("test_source_rejected_total{at=0}"), Some(&2.0), "{want:#?}");
    assert_eq!(want.get("test_source_up{at=0,kind=test}"), Some(&1.0), "{want:#?}");
    assert_eq!(got, want);
}
