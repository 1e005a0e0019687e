//! A pipeline's deadline (the caller's, or the retry policy's total time)
//! bounds its wait for a bulkhead slot: no wait is begun that would end
//! past it, and no call starts after it, however long the bulkhead wait
//! configured. A deadline that cuts a retry short ends with the error of
//! the attempt before it, and counts only the attempts that made a call.
#![cfg(all(feature = "tokio", not(loom)))]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use tripwire::{
    Assessment, Bulkhead, Pipeline, pipeline::PipelineError, retry::RetryPolicy, timeout::TokioTimer,
};

/// The bulkhead wait configured: far longer than the deadline.
const WAIT: Duration = Duration::from_secs(2);
/// The caller's deadline, from the start of the call.
const DEADLINE: Duration = Duration::from_millis(50);
/// When the slot's holder lets go: after the deadline, before the wait ends.
const FREED_AFTER: Duration = Duration::from_millis(400);

fn pipelines(
    bulkhead: &Arc<Bulkhead>,
) -> [(&'static str, Pipeline<tripwire::MonotonicClock, TokioTimer>); 2] {
    let build = || Pipeline::builder().bulkhead(bulkhead.clone()).bulkhead_wait(WAIT).timer(TokioTimer);
    let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    [("without retries", build().build()), ("with retries", build().retry(policy).build())]
}

fn ok_is_success<T, E>(r: &Result<T, E>) -> Assessment {
    if r.is_ok() { Assessment::Success } else { Assessment::Failure }
}

/// Holds the bulkhead's only slot until [`FREED_AFTER`].
fn hold_slot(bulkhead: &Arc<Bulkhead>) -> thread::JoinHandle<()> {
    assert!(bulkhead.try_acquire_raw());
    let b = bulkhead.clone();
    thread::spawn(move || {
        thread::sleep(FREED_AFTER);
        assert!(b.release_raw());
    })
}

fn check<T: std::fmt::Debug>(what: &str, got: Result<T, PipelineError<()>>, elapsed: Duration, calls: u32) {
    assert_eq!(calls, 0, "{what}: the call ran after its deadline ({elapsed:?})");
    assert!(matches!(got, Err(PipelineError::Deadline { last: None, .. })), "{what}: {got:?}");
    assert_eq!(got.unwrap_err().attempts(), 0, "{what}: no call reached the dependency");
    assert!(elapsed < FREED_AFTER, "{what}: waited {elapsed:?} for a slot, past a deadline of {DEADLINE:?}");
}

#[test]
fn a_sync_call_waits_for_a_slot_no_longer_than_its_deadline() {
    let bulkhead = Arc::new(Bulkhead::new(1));
    for (what, pipeline) in pipelines(&bulkhead) {
        let holder = hold_slot(&bulkhead);
        let calls = AtomicU32::new(0);
        let start = Instant::now();
        let got = pipeline.call_before(start + DEADLINE, ok_is_success, || {
            calls.fetch_add(1, Ordering::Relaxed);
            Ok::<_, ()>(())
        });
        check(what, got, start.elapsed(), calls.load(Ordering::Relaxed));
        holder.join().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_call_waits_for_a_slot_no_longer_than_its_deadline() {
    let bulkhead = Arc::new(Bulkhead::new(1));
    for (what, pipeline) in pipelines(&bulkhead) {
        let holder = hold_slot(&bulkhead);
        let calls = AtomicU32::new(0);
        let start = Instant::now();
        let got = pipeline
            .call_async_before(start + DEADLINE, ok_is_success, || {
                calls.fetch_add(1, Ordering::Relaxed);
                async { Ok::<_, ()>(()) }
            })
            .await;
        check(what, got, start.elapsed(), calls.load(Ordering::Relaxed));
        tokio::task::spawn_blocking(move || holder.join().unwrap()).await.unwrap();
    }
}

#[test]
fn a_wait_shorter_than_the_time_left_still_ends_with_the_bulkhead_refusal() {
    let bulkhead = Arc::new(Bulkhead::new(1));
    let pipeline = Pipeline::builder()
        .bulkhead(bulkhead.clone())
        .bulkhead_wait(Duration::from_millis(20))
        .timer(TokioTimer)
        .build();
    let _held = bulkhead.try_acquire().unwrap();
    let got = pipeline.call_before(Instant::now() + WAIT, ok_is_success, || Ok::<_, ()>(()));
    assert_eq!(got, Err(PipelineError::Full(tripwire::BulkheadFull { max: 1 })));
}

#[test]
fn the_retry_policys_total_time_cuts_the_wait_for_a_slot_too() {
    let bulkhead = Arc::new(Bulkhead::new(1));
    let policy = RetryPolicy::builder().max_attempts(3).max_total(DEADLINE).build().unwrap();
    let pipeline = Pipeline::builder()
        .bulkhead(bulkhead.clone())
        .bulkhead_wait(WAIT)
        .retry(policy)
        .timer(TokioTimer)
        .build();
    let holder = hold_slot(&bulkhead);
    let calls = AtomicU32::new(0);
    let start = Instant::now();
    let got = pipeline.call_with(ok_is_success, || {
        calls.fetch_add(1, Ordering::Relaxed);
        Ok::<_, ()>(())
    });
    check("with a total time", got, start.elapsed(), calls.load(Ordering::Relaxed));
    holder.join().unwrap();
}

/// A pipeline whose retries' second attempt finds the bulkhead full: the
/// slot is taken by someone else before the pause that follows the first
/// failure.
fn second_attempt_finds_no_slot(
    deadline: Duration,
) -> (Arc<Bulkhead>, Pipeline<tripwire::MonotonicClock, TokioTimer>) {
    let bulkhead = Arc::new(Bulkhead::new(1));
    let events = Arc::new(tripwire::events::Events::new("deadline"));
    events.on_retry({
        let bulkhead = bulkhead.clone();
        move |_| assert!(bulkhead.try_acquire_raw())
    });
    let backoff = tripwire::retry::BackoffConfig::builder()
        .base(Duration::from_millis(1))
        .cap(Duration::from_millis(2));
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .max_total(deadline)
        .backoff(backoff.build().unwrap())
        .build()
        .unwrap();
    let pipeline = Pipeline::builder()
        .bulkhead(bulkhead.clone())
        .bulkhead_wait(WAIT)
        .retry(policy)
        .events(events)
        .timer(TokioTimer)
        .build();
    (bulkhead, pipeline)
}

fn check_last_attempt(what: &str, got: Result<(), PipelineError<&str>>) {
    let want = PipelineError::Deadline { attempts: 1, last: Some(Box::new(PipelineError::Call("503"))) };
    assert_eq!(got, Err(want), "{what}: the one attempt made, and its error");
}

#[test]
fn time_up_while_a_sync_retry_waits_for_a_slot_reports_the_attempt_made() {
    let (bulkhead, pipeline) = second_attempt_finds_no_slot(DEADLINE);
    let got = pipeline.call(|| Err::<(), _>("503"));
    check_last_attempt("sync", got);
    assert!(bulkhead.release_raw());
}

#[tokio::test]
async fn time_up_while_an_async_retry_waits_for_a_slot_reports_the_attempt_made() {
    let (bulkhead, pipeline) = second_attempt_finds_no_slot(DEADLINE);
    let got = pipeline.call_async(|| async { Err::<(), _>("503") }).await;
    check_last_attempt("async", got);
    assert!(bulkhead.release_raw());
}

#[tokio::test]
async fn a_deadline_that_cuts_a_retry_short_keeps_the_error_before() {
    let backoff = tripwire::retry::BackoffConfig::builder()
        .base(Duration::from_millis(1))
        .cap(Duration::from_millis(2));
    let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff.build().unwrap()).build().unwrap();
    let pipeline = Pipeline::builder().retry(policy).timeout(WAIT).timer(TokioTimer).build();
    let calls = AtomicU32::new(0);
    let got = pipeline
        .call_async_before(Instant::now() + DEADLINE, ok_is_success, || {
            let first = calls.fetch_add(1, Ordering::Relaxed) == 0;
            async move {
                if first {
                    return Err("503");
                }
                std::future::pending::<()>().await;
                Ok(())
            }
        })
        .await;
    // The second attempt was made (its call began) and cut short by the deadline.
    let want = PipelineError::Deadline { attempts: 2, last: Some(Box::new(PipelineError::Call("503"))) };
    assert_eq!(got, Err(want));
}
