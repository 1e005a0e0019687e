//! A guarded call that panics records its call as ignored: a Half-Open
//! probe slot is freed, never leaked.
#![cfg(feature = "std")]

use core::time::Duration;
use std::panic::{AssertUnwindSafe, catch_unwind};

use tripwire::{Breaker, BreakerConfig, CallError, ManualClock, Outcome, State};

#[test]
fn a_panicking_probe_frees_its_slot() {
    let clock = ManualClock::new(1_000);
    let breaker = Breaker::new(
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_millis(1)).build().unwrap(),
    );
    let _ = breaker.call(&clock, || Err::<(), _>("503"));
    clock.advance(Duration::from_millis(1));
    let panicked =
        catch_unwind(AssertUnwindSafe(|| breaker.call(&clock, || -> Result<(), &str> { panic!("bug") })));
    assert!(panicked.is_err());
    assert_eq!(breaker.state(), State::HalfOpen);
    assert_eq!(breaker.snapshot().ignored, 1, "the panicking probe counts as ignored");
    // Its slot is free again: the next call is the probe, and closes the breaker.
    assert_eq!(breaker.call(&clock, || Ok::<_, &str>(7)), Ok(7));
    assert_eq!(breaker.state(), State::Closed);
    assert!(matches!(breaker.call(&clock, || Err::<(), _>("503")), Err(CallError::Inner("503"))));
}

#[test]
fn a_panicking_classifier_frees_the_probe_slot() {
    let clock = ManualClock::new(1_000);
    let breaker = Breaker::new(
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_millis(1)).build().unwrap(),
    );
    let _ = breaker.call(&clock, || Err::<(), _>("503"));
    clock.advance(Duration::from_millis(1));
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        breaker.call_with(&clock, |_: &Result<u32, &str>| -> Outcome { panic!("classifier bug") }, || Ok(1))
    }));
    assert!(panicked.is_err());
    assert_eq!(breaker.snapshot().ignored, 1, "the probe whose classifier panicked counts as ignored");
    // Its slot is free again: the next call is the probe, and closes the breaker.
    assert_eq!(breaker.call(&clock, || Ok::<_, &str>(7)), Ok(7));
    assert_eq!(breaker.state(), State::Closed);
}

#[cfg(not(loom))]
#[test]
fn a_panicking_classifier_on_a_named_breaker_frees_the_probe_slot() {
    let breaker = tripwire::NamedBreaker::with_clock(
        "unwind",
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_millis(1)).build().unwrap(),
        ManualClock::new(1_000),
    );
    let _ = breaker.call(|| Err::<(), _>("503"));
    breaker.clock().advance(Duration::from_millis(1));
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        breaker.call_with(|_: &Result<u32, &str>| -> Outcome { panic!("classifier bug") }, || Ok(1))
    }));
    assert!(panicked.is_err());
    assert_eq!(breaker.call(|| Ok::<_, &str>(7)), Ok(7));
    assert_eq!(breaker.state(), State::Closed);
}
