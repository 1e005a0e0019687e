//! A stale read through the pipeline against a real HTTP server on
//! 127.0.0.1: with a value at hand, `StaleCache::serve_async_by` answers
//! after one attempt, never after the retries' backoff; with none, the
//! retries run in full.
#![cfg(all(feature = "tokio", feature = "http", not(loom)))]

mod support;

use std::time::{Duration, Instant};

use support::{Mode, Server, client, get_ok};
use tripwire::{
    Assessment, Pipeline,
    pipeline::PipelineError,
    retry::{BackoffConfig, Jitter, RetryPolicy},
    stale::{Served, StaleCache, StalePolicy},
    timeout::TokioTimer,
};

const TIMEOUT: Duration = Duration::from_millis(500);
/// Far longer than a local request, so that a read that waited for it
/// shows plainly on a loaded machine.
const BACKOFF: Duration = Duration::from_secs(1);
const BOOKS: StalePolicy = StalePolicy::UpTo(Duration::from_secs(60));

fn pipeline() -> Pipeline<tripwire::MonotonicClock, TokioTimer> {
    let backoff = BackoffConfig::builder().base(BACKOFF).cap(BACKOFF).jitter(Jitter::None).build().unwrap();
    let retry = RetryPolicy::builder().max_attempts(3).backoff(backoff).build().unwrap();
    Pipeline::builder().retry(retry).timeout(TIMEOUT).timer(TokioTimer).build()
}

fn failure_if_err(r: &Result<String, String>) -> Assessment {
    if r.is_ok() { Assessment::Success } else { Assessment::Failure }
}

#[tokio::test]
async fn a_stale_read_during_an_outage_takes_one_request_and_no_backoff() {
    let server = Server::start().await;
    let client = client();
    let pipeline = pipeline();
    let books: StaleCache<&str, String> = StaleCache::new();
    let read = |key: &'static str| {
        let (client, server, pipeline) = (&client, &server, &pipeline);
        books.serve_async_by(key, BOOKS, TIMEOUT, move |deadline| async move {
            let fetch = || get_ok(client, server.url("/book"));
            match deadline {
                Some(d) => pipeline.call_async_before(d, failure_if_err, fetch).await,
                None => pipeline.call_async(fetch).await,
            }
        })
    };
    let fresh = read("BTC").await.unwrap();
    assert!(matches!(fresh, Served::Fresh(_)), "{fresh:?}");

    server.set(Mode::Unavailable);
    assert!(books.has_stale("BTC", BOOKS) && !books.has_stale("BTC", StalePolicy::Never));
    let hits = server.hits();
    let started = Instant::now();
    let got = read("BTC").await.unwrap();
    let took = started.elapsed();
    assert!(got.is_stale(), "{got:?}");
    assert_eq!(server.hits(), hits + 1, "one attempt");
    assert!(
        took < BACKOFF * 3 / 4,
        "{took:?}: the stale book after one attempt, not after a {BACKOFF:?} backoff"
    );

    // Nothing at hand for ETH: the plain call, retries and backoffs included.
    assert!(!books.has_stale("ETH", BOOKS));
    let started = Instant::now();
    let err = read("ETH").await.unwrap_err();
    assert!(matches!(err, PipelineError::RetriesExhausted { attempts: 3, .. }), "{err:?}");
    assert_eq!(server.hits(), hits + 4);
    assert!(started.elapsed() >= BACKOFF * 2, "the two backoffs were waited");
}
