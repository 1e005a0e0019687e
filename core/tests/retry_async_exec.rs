//! The async retry executor: its hook hears each retry before its pause,
//! as the blocking one does, and an attempt still running at the deadline
//! is cut short.
#![cfg(all(feature = "tokio", not(loom)))]

use core::time::Duration;
use std::time::Instant;

use tripwire::{
    retry::{
        BackoffConfig, Jitter, Refusal, RetryError, RetryEvent, RetryPolicy, retry_async, retry_async_notify,
    },
    timeout::TokioTimer,
};

#[derive(Debug, PartialEq)]
struct Http(u16);
impl Refusal for Http {}

#[tokio::test]
async fn the_async_hook_hears_each_retry_before_its_pause() {
    let backoff =
        BackoffConfig::builder().base(Duration::from_millis(1)).jitter(Jitter::None).build().unwrap();
    let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff).build().unwrap();
    let mut heard = Vec::new();
    let r = retry_async_notify(
        &policy,
        &TokioTimer,
        None,
        |e: RetryEvent<'_, Http>| heard.push((e.attempt, e.delay, e.error.0)),
        |n| async move { if n < 3 { Err(Http(500 + n as u16)) } else { Ok(n) } },
    )
    .await;
    assert_eq!(r, Ok::<u32, RetryError<Http>>(3));
    assert_eq!(heard, [(1, Duration::from_millis(1), 501), (2, Duration::from_millis(2), 502)]);
}

#[tokio::test]
async fn an_attempt_still_running_at_the_deadline_is_cut_short_with_the_error_before_it() {
    let backoff =
        BackoffConfig::builder().base(Duration::from_millis(1)).jitter(Jitter::None).build().unwrap();
    let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff).build().unwrap();
    let deadline = Instant::now() + Duration::from_millis(150);
    // The first attempt fails at once; the second hangs far past the deadline.
    let run = retry_async(&policy, &TokioTimer, Some(deadline), |n| async move {
        if n == 2 {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        Err::<u32, _>(Http(500 + n as u16))
    });
    // A bound for the test itself, far above the deadline: a run that
    // ignored its deadline would hang here for an hour.
    let r = tokio::time::timeout(Duration::from_secs(30), run).await.expect("cut short at the deadline");
    assert_eq!(r, Err(RetryError::Deadline { attempts: 2, last: Some(Http(501)) }));
}
