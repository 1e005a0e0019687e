//! With feature `tracing`, every state change is one event at the
//! `tripwire` target, naming the breaker and both states.
#![cfg(all(feature = "tracing", not(loom)))]

#[path = "support/tracing_log.rs"]
mod tracing_log;

use std::sync::Arc;
use std::time::Duration;

use tracing::Level;
use tracing_log::Log;
use tripwire::{BreakerConfig, ManualClock, NamedBreaker, Outcome};

#[test]
fn each_transition_is_one_event() {
    let events = Log::default();
    let b = NamedBreaker::with_clock(
        "kraken/ws",
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_secs(1)).build().unwrap(),
        ManualClock::new(1),
    );
    tracing::subscriber::with_default(events.clone(), || {
        let t = b.try_acquire().unwrap();
        b.record(t, Outcome::Failure);
        b.clock().advance(Duration::from_secs(1));
        let probe = b.try_acquire().unwrap();
        b.record(probe, Outcome::Success);
    });
    let got = events.0.lock().unwrap().clone();
    assert_eq!(got.len(), 3, "{got:#?}");
    assert_eq!(got[0].0, Level::WARN);
    assert!(got[0].1.contains(r#"breaker="kraken/ws""#) && got[0].1.contains(r#"to="open""#), "{}", got[0].1);
    assert!(got[2].1.contains(r#"from="half_open""#) && got[2].1.contains(r#"to="closed""#), "{}", got[2].1);
    assert_eq!(got[2].0, Level::INFO);
}

#[test]
fn each_bulkhead_refusal_and_retry_is_one_event() {
    use tripwire::{
        Bulkhead, Pipeline,
        events::Events,
        retry::{BackoffConfig, RetryPolicy},
    };

    let events = Log::default();
    let hub = Arc::new(Events::new("kraken/rest"));
    let bulkhead = Arc::new(Bulkhead::new(1));
    let backoff = BackoffConfig::builder().base(Duration::from_nanos(1)).build().unwrap();
    let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff).build().unwrap();
    let full = Pipeline::builder().bulkhead(bulkhead.clone()).events(hub.clone()).build();
    let retrying = Pipeline::builder().retry(policy).events(hub.clone()).build();
    let _busy = bulkhead.try_acquire().unwrap();
    tracing::subscriber::with_default(events.clone(), || {
        assert!(full.call(|| Ok::<_, ()>(1)).is_err());
        assert!(retrying.call(|| Err::<(), _>("503")).is_err());
    });
    let got = events.0.lock().unwrap().clone();
    assert_eq!(got.len(), 4, "{got:#?}");
    assert_eq!(got[0].0, Level::INFO);
    assert!(
        got[0].1.contains(r#"bulkhead="kraken/rest""#) && got[0].1.contains("in_flight=1 max=1"),
        "{}",
        got[0].1
    );
    for (n, (level, fields)) in got[1..3].iter().enumerate() {
        assert_eq!(*level, Level::DEBUG);
        assert!(
            fields.contains(r#"retry="kraken/rest""#) && fields.contains(&format!("attempt={}", n + 1)),
            "{fields}"
        );
    }
    assert_eq!(got[3].0, Level::WARN);
    assert!(got[3].1.contains("retries exhausted") && got[3].1.contains("attempts=3"), "{}", got[3].1);
}
