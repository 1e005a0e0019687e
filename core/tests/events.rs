//! Bulkhead and retry events: each event is heard exactly once by every
//! listener and counted once, from the pipeline (sync and async), the
//! tower layers and (in `reqwest_middleware.rs`) the reqwest middleware.
#![cfg(not(loom))]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tripwire::{
    Bulkhead, Pipeline,
    events::{BulkheadEvent, EventCounts, Events, RetryCause, RetryNotice},
    pipeline::PipelineError,
    retry::{BackoffConfig, RetryBudget, RetryBudgetConfig, RetryPolicy},
};

/// Every event `events` hears, written as a line.
fn heard(events: &Events) -> Arc<Mutex<Vec<String>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (b, r) = (log.clone(), log.clone());
    events.on_bulkhead(move |e| {
        b.lock().unwrap().push(match *e {
            BulkheadEvent::Refused { name, in_flight, max } => format!("{name} refused {in_flight}/{max}"),
            BulkheadEvent::Waited { name, .. } => format!("{name} waited"),
            BulkheadEvent::TimedOut { name, max, .. } => format!("{name} timed out {max}"),
            _ => unreachable!("no other kind yet"),
        });
    });
    events.on_retry(move |e| {
        r.lock().unwrap().push(match *e {
            RetryNotice::Scheduled { name, attempt, cause, .. } => format!("{name} retry {attempt}: {cause}"),
            RetryNotice::BudgetRefused { name, attempts } => {
                format!("{name} budget refused after {attempts}")
            }
            RetryNotice::Exhausted { name, attempts } => format!("{name} exhausted after {attempts}"),
            _ => unreachable!("no other kind yet"),
        });
    });
    log
}

fn take(log: &Mutex<Vec<String>>) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

/// `attempts` in all, 1 ns apart.
fn retries(attempts: u32) -> RetryPolicy<'static> {
    let backoff = BackoffConfig::builder().base(Duration::from_nanos(1)).build().unwrap();
    RetryPolicy::builder().max_attempts(attempts).backoff(backoff).build().unwrap()
}

fn empty_budget() -> Arc<RetryBudget> {
    let config = RetryBudgetConfig::builder().ratio(0.0).min_retries_per_sec(0.0).build().unwrap();
    Arc::new(RetryBudget::new(config))
}

#[test]
fn a_full_bulkhead_is_one_refusal_per_call() {
    let events = Arc::new(Events::new("pipe/bulkhead"));
    let log = heard(&events);
    let bulkhead = Arc::new(Bulkhead::new(1));
    let pipeline =
        Pipeline::builder().bulkhead(bulkhead.clone()).retry(retries(3)).events(events.clone()).build();
    let busy = bulkhead.try_acquire().unwrap();
    for _ in 0..3 {
        assert!(matches!(pipeline.call(|| Ok::<_, ()>(1)), Err(PipelineError::Full(_))));
    }
    assert_eq!(take(&log), ["pipe/bulkhead refused 1/1"; 3], "one per call, and a refusal is not retried");
    drop(busy);
    assert_eq!(pipeline.call(|| Ok::<_, ()>(1)), Ok(1));
    assert!(take(&log).is_empty(), "a free slot is no event");
    assert_eq!(events.counts(), EventCounts { bulkhead_refused: 3, ..EventCounts::default() });
}

#[test]
fn a_waiting_bulkhead_reports_the_wait_or_its_timeout_never_a_refusal_too() {
    let events = Arc::new(Events::new("pipe/wait"));
    let log = heard(&events);
    let bulkhead = Arc::new(Bulkhead::new(1));
    let pipeline = Pipeline::builder()
        .bulkhead(bulkhead.clone())
        .bulkhead_wait(Duration::from_millis(20))
        .events(events.clone())
        .build();
    let busy = bulkhead.try_acquire().unwrap();
    assert!(matches!(pipeline.call(|| Ok::<_, ()>(1)), Err(PipelineError::Full(_))));
    assert_eq!(take(&log), ["pipe/wait timed out 1"]);
    assert_eq!(bulkhead.snapshot().rejected, 1, "the refusal counted once in the bulkhead too");

    let long = Pipeline::builder()
        .bulkhead(bulkhead.clone())
        .bulkhead_wait(Duration::from_secs(60))
        .events(events.clone())
        .build();
    drop(busy);
    // Nothing public tells that the waiter has found the bulkhead full and
    // parked: give it time, and try again should it have found the slot
    // free (which is no event at all).
    let mut waited = 0;
    for _ in 0..5 {
        let busy = bulkhead.try_acquire().unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| long.call(|| Ok::<_, ()>(7)));
            std::thread::sleep(Duration::from_millis(100));
            drop(busy);
            assert_eq!(waiter.join().unwrap(), Ok(7));
        });
        let got = take(&log);
        if got.is_empty() {
            continue;
        }
        assert_eq!(got, ["pipe/wait waited"]);
        waited += 1;
        break;
    }
    assert_eq!(waited, 1, "a wait was never heard");
    let c = events.counts();
    assert_eq!((c.bulkhead_refused, c.bulkhead_waited, c.bulkhead_timed_out), (0, 1, 1));
}

#[test]
fn each_retry_is_scheduled_once_and_running_out_is_heard_once() {
    let events = Arc::new(Events::new("pipe/retry"));
    let log = heard(&events);
    let pipeline = Pipeline::builder().retry(retries(3)).events(events.clone()).build();
    assert!(matches!(pipeline.call(|| Err::<(), _>("503")), Err(PipelineError::RetriesExhausted { .. })));
    assert_eq!(
        take(&log),
        [
            "pipe/retry retry 1: the call failed",
            "pipe/retry retry 2: the call failed",
            "pipe/retry exhausted after 3"
        ]
    );
    // Success on the second attempt: one retry, no end to report.
    let mut n = 0;
    assert_eq!(
        pipeline.call(|| {
            if {
                n += 1;
                n
            } < 2
            {
                Err("503")
            } else {
                Ok(n)
            }
        }),
        Ok(2)
    );
    assert_eq!(take(&log), ["pipe/retry retry 1: the call failed"]);

    // An empty budget: no retry, and the refusal heard once.
    let frugal =
        Pipeline::builder().retry(retries(3)).retry_budget(empty_budget()).events(events.clone()).build();
    assert!(matches!(
        frugal.call(|| Err::<(), _>("503")),
        Err(PipelineError::BudgetExhausted { attempts: 1, .. })
    ));
    assert_eq!(take(&log), ["pipe/retry budget refused after 1"]);
    let c = events.counts();
    assert_eq!((c.retries_scheduled, c.retries_exhausted, c.retry_budget_refused), (3, 1, 1));
}

#[test]
fn causes_read_as_their_kind() {
    let e = std::io::Error::other("connection reset");
    assert_eq!(RetryCause::Error(&e).to_string(), "connection reset");
    assert_eq!(RetryCause::Response(Some(503)).to_string(), "HTTP 503");
    assert_eq!(format!("{:?}", RetryCause::Error(&e)), "Error(connection reset)");
}

#[cfg(feature = "tokio")]
#[tokio::test]
async fn async_pipelines_report_timeouts_as_the_cause() {
    use tripwire::timeout::TokioTimer;

    let events = Arc::new(Events::new("pipe/async"));
    let log = heard(&events);
    let pipeline = Pipeline::builder()
        .retry(retries(2))
        .timeout(Duration::from_millis(5))
        .timer(TokioTimer)
        .events(events.clone())
        .build();
    let hung = pipeline.call_async(|| async {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok::<u32, std::io::Error>(1)
    });
    assert!(matches!(hung.await, Err(PipelineError::RetriesExhausted { attempts: 2, .. })));
    assert_eq!(take(&log), ["pipe/async retry 1: timed out after 5ms", "pipe/async exhausted after 2"]);

    let bulkhead = Arc::new(Bulkhead::new(1));
    let waiting = Pipeline::builder()
        .bulkhead(bulkhead.clone())
        .bulkhead_wait(Duration::from_millis(5))
        .timer(TokioTimer)
        .events(events.clone())
        .build();
    let busy = bulkhead.try_acquire().unwrap();
    assert!(matches!(waiting.call_async(|| async { Ok::<_, ()>(1) }).await, Err(PipelineError::Full(_))));
    assert_eq!(take(&log), ["pipe/async timed out 1"]);

    // A wait that ends with a slot (tried again should the waiter have
    // found the slot free: no event at all).
    drop(busy);
    let patient = Arc::new(
        Pipeline::builder()
            .bulkhead(bulkhead.clone())
            .bulkhead_wait(Duration::from_secs(60))
            .timer(TokioTimer)
            .events(events.clone())
            .build(),
    );
    let mut waited = 0;
    for _ in 0..5 {
        let busy = bulkhead.try_acquire().unwrap();
        let p = patient.clone();
        let waiter = tokio::spawn(async move { p.call_async(|| async { Ok::<_, ()>(7) }).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(busy);
        assert_eq!(waiter.await.unwrap(), Ok(7));
        let got = take(&log);
        if got.is_empty() {
            continue;
        }
        assert_eq!(got, ["pipe/async waited"]);
        waited += 1;
        break;
    }
    assert_eq!(waited, 1, "a wait was never heard");
}

#[cfg(all(feature = "tower", feature = "tokio"))]
mod tower {
    use std::future::poll_fn;

    use bytes::Bytes;
    use http_body_util::Empty;
    use tower_layer::Layer;
    use tower_service::Service;
    use tripwire::timeout::TokioTimer;
    use tripwire::tower::{BulkheadError, BulkheadLayer, RetryLayer};

    use super::support::{Mode, Server, client};
    use super::*;

    fn request(server: &Server) -> http::Request<Empty<Bytes>> {
        http::Request::get(server.url("/book")).body(Empty::new()).unwrap()
    }

    async fn send<S: Service<http::Request<Empty<Bytes>>>>(
        svc: &mut S,
        server: &Server,
    ) -> Result<S::Response, S::Error> {
        let req = request(server);
        poll_fn(|cx| svc.poll_ready(cx)).await?;
        svc.call(req).await
    }

    #[tokio::test]
    async fn the_bulkhead_layer_reports_each_refusal_once() {
        let server = Server::start().await;
        server.set(Mode::Hang);
        let events = Arc::new(Events::new("tower/bulkhead"));
        let log = heard(&events);
        let bulkhead = Arc::new(Bulkhead::new(1));
        let layer = BulkheadLayer::new(bulkhead.clone()).events(events.clone());
        let mut hung_svc = layer.layer(client());
        let mut hung = Box::pin(send(&mut hung_svc, &server));
        assert!(tokio::time::timeout(Duration::from_millis(10), hung.as_mut()).await.is_err());
        let mut other = layer.layer(client());
        for _ in 0..2 {
            assert!(matches!(send(&mut other, &server).await, Err(BulkheadError::Full(_))));
        }
        assert_eq!(take(&log), ["tower/bulkhead refused 1/1"; 2]);
        drop(hung);
        server.set(Mode::Up);
        assert_eq!(send(&mut other, &server).await.unwrap().status(), 200);
        assert!(take(&log).is_empty());
        assert_eq!(events.counts().bulkhead_refused, 2);
    }

    #[tokio::test]
    async fn the_retry_layer_reports_each_retry_with_the_status_and_the_end() {
        let server = Server::start().await;
        let events = Arc::new(Events::new("tower/retry"));
        let log = heard(&events);
        let mut svc = RetryLayer::new(retries(3), TokioTimer).events(events.clone()).layer(client());
        server.set(Mode::Unavailable);
        assert_eq!(send(&mut svc, &server).await.unwrap().status(), 503);
        assert_eq!(
            take(&log),
            [
                "tower/retry retry 1: HTTP 503",
                "tower/retry retry 2: HTTP 503",
                "tower/retry exhausted after 3"
            ]
        );

        // A connection error's text is the cause.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let req = http::Request::get(format!("http://{closed}/")).body(Empty::<Bytes>::new()).unwrap();
        poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
        assert!(svc.call(req).await.is_err());
        let got = take(&log);
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].starts_with("tower/retry retry 1: ") && !got[0].contains("HTTP"), "{got:?}");

        let mut frugal = RetryLayer::new(retries(3), TokioTimer)
            .budget(empty_budget())
            .events(events.clone())
            .layer(client());
        assert_eq!(send(&mut frugal, &server).await.unwrap().status(), 503);
        assert_eq!(take(&log), ["tower/retry budget refused after 1"]);
        let c = events.counts();
        assert_eq!((c.retries_scheduled, c.retries_exhausted, c.retry_budget_refused), (4, 2, 1));
    }
}
