//! The pipeline, its parts and its futures cross threads: a service can
//! share one pipeline and `tokio::spawn` its calls.
#![cfg(all(feature = "tokio", not(loom)))]

use std::sync::Arc;
use std::time::Duration;

use tripwire::{
    BreakerConfig, Bulkhead, MonotonicClock, NamedBreaker, Pipeline,
    registry::Registry,
    retry::{BackoffConfig, RetryBudget, RetryBudgetConfig, RetryPolicy},
    stale::{StaleCache, StalePolicy},
    timeout::TokioTimer,
};

fn send_sync<T: Send + Sync>(_: &T) {}
fn send<T: Send>(t: T) -> T {
    t
}

#[tokio::test]
async fn pipeline_futures_are_send_and_spawnable() {
    let backoff = BackoffConfig::builder().base(Duration::from_millis(1)).build().unwrap();
    let pipeline: Arc<Pipeline<MonotonicClock, TokioTimer>> = Arc::new(
        Pipeline::builder()
            .retry(RetryPolicy::builder().max_attempts(2).backoff(backoff).build().unwrap())
            .retry_budget(Arc::new(RetryBudget::new(RetryBudgetConfig::default())))
            .breaker(Arc::new(NamedBreaker::new("send", BreakerConfig::default())))
            .bulkhead(Arc::new(Bulkhead::new(4)))
            .bulkhead_wait(Duration::from_millis(5))
            .timeout(Duration::from_millis(50))
            .timer(TokioTimer)
            .build(),
    );
    send_sync(&*pipeline);
    send_sync(&Registry::new());
    let cache: Arc<StaleCache<String, u32>> = Arc::new(StaleCache::new());
    send_sync(&*cache);

    let (p, c) = (pipeline.clone(), cache.clone());
    let task = tokio::spawn(send(async move {
        let fetch = p.call_async(|| async { Ok::<u32, std::io::Error>(7) });
        c.serve_async("k".to_owned(), StalePolicy::UpTo(Duration::from_secs(1)), fetch).await
    }));
    assert_eq!(task.await.unwrap().unwrap().into_value(), 7);
    let p = pipeline.clone();
    let sync = tokio::task::spawn_blocking(move || p.call(|| Ok::<u32, ()>(8)));
    assert_eq!(sync.await.unwrap(), Ok(8));
}
