//! A request admitted as a Half-Open probe ends by the breaker's
//! `probe_timeout`, whatever its retries, backoff and timeout would allow:
//! its probe is never taken over while it runs, and it counts as failed.
//! Each test watches the breaker from another thread for the whole
//! request: a second admission would be a takeover.
#![cfg(all(feature = "tokio", not(loom)))]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::Duration;

use tripwire::{
    Assessment, BreakerConfig, NamedBreaker, Pipeline, State,
    pipeline::PipelineError,
    retry::{BackoffConfig, Jitter, RetryPolicy},
    timeout::TokioTimer,
};

// Longer than a retry's pause: an attempt after a failed probe meets an
// open breaker.
const COOL_DOWN: Duration = Duration::from_millis(100);
const PROBE_TIMEOUT: Duration = Duration::from_millis(250);

/// Tripped by one failure, its cool-down over: the next call is a probe.
fn tripped() -> Arc<NamedBreaker> {
    let config = BreakerConfig::builder()
        .failure_threshold(1)
        .open_timeout(COOL_DOWN)
        .probe_timeout(PROBE_TIMEOUT)
        .half_open_max(1)
        .build()
        .unwrap();
    let breaker = Arc::new(NamedBreaker::new("books", config));
    breaker.permit().unwrap().settle(Assessment::Failure);
    thread::sleep(COOL_DOWN * 2);
    breaker
}

/// Retries far beyond the probe timeout: 40 attempts, 30 ms apart.
fn many_retries() -> RetryPolicy<'static, tripwire::retry::RetryAll> {
    let backoff = BackoffConfig::builder().base(Duration::from_millis(30)).factor(1.0).jitter(Jitter::None);
    RetryPolicy::builder().max_attempts(40).backoff(backoff.build().unwrap()).build().unwrap()
}

/// Tries to take a permit every 10 ms until `done`; the admissions seen
/// while the probe ran. One taken after the probe's failure was recorded
/// (the breaker reopened, and its cool-down passed before `done` was set,
/// as on a loaded machine) is the next probe, no takeover.
fn watch(breaker: &Arc<NamedBreaker>, done: &Arc<AtomicBool>) -> thread::JoinHandle<u32> {
    let (breaker, done) = (breaker.clone(), done.clone());
    let failures_before = breaker.snapshot().failures;
    thread::spawn(move || {
        let mut admitted = 0;
        while !done.load(Ordering::Acquire) {
            if let Ok(p) = breaker.permit() {
                if breaker.snapshot().failures == failures_before {
                    admitted += 1;
                }
                p.settle(Assessment::Ignored);
            }
            thread::sleep(Duration::from_millis(10));
        }
        admitted
    })
}

fn failed<T>(r: &Result<T, ()>) -> Assessment {
    if r.is_ok() { Assessment::Success } else { Assessment::Failure }
}

#[test]
fn a_probe_s_retries_stop_by_the_probe_timeout_and_the_probe_fails() {
    let breaker = tripped();
    let pipeline =
        Pipeline::builder().breaker(breaker.clone()).retry(many_retries()).breaker_outside_retry().build();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = watch(&breaker, &done);
    let calls = AtomicU32::new(0);
    let got = pipeline.call_with(failed, || {
        calls.fetch_add(1, Ordering::Relaxed);
        Err::<(), ()>(())
    });
    done.store(true, Ordering::Release);
    assert_eq!(watcher.join().unwrap(), 0, "another call was admitted while the probe ran");
    let calls = calls.load(Ordering::Relaxed);
    // 250 ms of 30 ms pauses: about 9 attempts, never the 40 allowed.
    assert!((2..40).contains(&calls), "{calls} attempts");
    assert!(
        matches!(&got, Err(PipelineError::Deadline { attempts, last: Some(_) }) if *attempts == calls),
        "{got:?}"
    );
    assert_eq!(breaker.state(), State::Open, "the probe failed: open again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_s_hung_call_is_cut_at_the_probe_timeout_as_a_failure() {
    for outside in [true, false] {
        let breaker = tripped();
        let build = Pipeline::builder()
            .breaker(breaker.clone())
            .retry(many_retries())
            .timeout(Duration::from_secs(10))
            .timer(TokioTimer);
        let pipeline = if outside { build.breaker_outside_retry().build() } else { build.build() };
        let done = Arc::new(AtomicBool::new(false));
        let watcher = watch(&breaker, &done);
        let got = pipeline
            .call_async_with(failed, || async {
                // Hung: far past the probe timeout, within the call's own.
                tokio::time::sleep(Duration::from_secs(3)).await;
                Ok::<(), ()>(())
            })
            .await;
        done.store(true, Ordering::Release);
        assert_eq!(watcher.join().unwrap(), 0, "outside {outside}: a takeover while the probe ran");
        assert_eq!(breaker.state(), State::Open, "outside {outside}: the cut probe failed");
        let timed_out = |e: &PipelineError<()>| matches!(e, PipelineError::Timeout(d) if *d <= PROBE_TIMEOUT);
        match &got {
            // Outside the retries: the probe's time is the request's.
            Err(PipelineError::Deadline { attempts: 1, last: Some(last) }) if outside => {
                assert!(timed_out(last), "{got:?}")
            }
            // Inside: the next attempt meets the breaker it reopened.
            Err(PipelineError::Open(_)) if !outside => {}
            _ => panic!("outside {outside}: {got:?}"),
        }
    }
}
