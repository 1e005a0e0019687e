//! The async retry executor's hook: it hears each retry before its pause,
//! as the blocking one does.
#![cfg(all(feature = "tokio", not(loom)))]

use core::time::Duration;

use tripwire::{
    BackoffConfig, Jitter, Refusal, RetryError, RetryEvent, RetryPolicy, TokioTimer, retry_async_notify,
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
