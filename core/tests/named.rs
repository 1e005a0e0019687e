//! Named breakers: listeners, holds and manual modes.
#![cfg(all(feature = "std", not(loom)))]

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tripwire::{BreakerConfig, ManualClock, NamedBreaker, Outcome, State, registry::Registry};

fn named(threshold: u32) -> Arc<NamedBreaker<ManualClock>> {
    let config =
        BreakerConfig::builder().failure_threshold(threshold).open_timeout(Duration::from_secs(1)).build();
    Arc::new(NamedBreaker::with_clock("test", config.unwrap(), ManualClock::new(1)))
}

#[test]
fn a_listener_may_call_back_into_the_breaker_without_deadlock() {
    let b = named(1);
    let weak: Weak<NamedBreaker<ManualClock>> = Arc::downgrade(&b);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    b.on_state_change(move |c| {
        let b = weak.upgrade().unwrap();
        // Reads, registers and even changes state from inside a listener.
        log.lock().unwrap().push((c.name.to_owned(), c.to, b.state()));
        if c.to == State::Open {
            b.on_state_change(|_| {});
        }
    });
    let t = b.try_acquire().unwrap();
    b.record(t, Outcome::Failure);
    b.reset();
    assert_eq!(
        *seen.lock().unwrap(),
        [("test".to_owned(), State::Open, State::Open), ("test".to_owned(), State::Closed, State::Closed)]
    );
}

#[test]
fn holds_keep_the_longer_deadline_and_never_end_an_operators_force_open() {
    let b = named(5);
    b.open_for(Duration::from_secs(10));
    assert_eq!(b.open_for(Duration::from_secs(2)), None, "already held: no new transition");
    assert_eq!(b.hold_left(), Some(Duration::from_secs(10)));
    assert_eq!(b.state(), State::Open);
    b.clock().advance(Duration::from_secs(9));
    assert_eq!(b.try_acquire().unwrap_err().retry_after, Some(Duration::from_secs(1)));

    b.force_open();
    assert_eq!(b.hold_left(), None, "the operator's decision replaces the hold");
    assert_eq!(b.open_for(Duration::from_secs(1)), None);
    b.clock().advance(Duration::from_secs(60));
    let r = b.try_acquire().unwrap_err();
    assert_eq!((r.state, r.retry_after), (State::ForcedOpen, None));
    b.reset();
    assert!(b.try_acquire().is_ok());

    b.disable();
    assert_eq!(b.open_for(Duration::from_secs(1)), None, "a disabled breaker stays disabled");
    assert_eq!(b.state(), State::Disabled);
}

#[test]
fn a_hold_overrides_an_open_breaker_and_reports_its_length() {
    let b = named(1);
    let holds = Arc::new(Mutex::new(Vec::new()));
    let log = holds.clone();
    b.on_state_change(move |c| log.lock().unwrap().push((c.from, c.to, c.hold)));
    let t = b.try_acquire().unwrap();
    b.record(t, Outcome::Failure);
    b.open_for(Duration::from_secs(30));
    assert_eq!(b.try_acquire().unwrap_err().retry_after, Some(Duration::from_secs(30)));
    assert_eq!(
        holds.lock().unwrap()[1],
        (State::Open, State::Open, Some(Duration::from_secs(30))),
        "listeners see a new Open generation and the hold's length"
    );
}

#[test]
fn the_registry_hands_out_one_breaker_per_name() {
    let r = Registry::new();
    let a = r.breaker("binance/orderbook", BreakerConfig::default);
    assert!(Arc::ptr_eq(&a, &r.get_breaker("binance/orderbook").unwrap()));
    assert!(r.get_breaker("binance/balances").is_none());
    let other = Arc::new(NamedBreaker::new("binance/orderbook", BreakerConfig::default()));
    assert!(Arc::ptr_eq(&a, &r.add_breaker(other)), "the first one stays");
    assert_eq!(r.breakers().len(), 1);
}

#[test]
fn a_server_hold_is_capped_and_counted() {
    // Retry-After: 99999999999 (about 3169 years).
    let b = named(5);
    b.open_for(Duration::from_secs(99_999_999_999));
    let cap = b.breaker().config().max_hold();
    assert_eq!(b.hold_left(), Some(cap));
    assert_eq!(b.try_acquire().unwrap_err().retry_after, Some(cap));
    assert_eq!(b.snapshot().capped_holds, 1);
    b.clock().advance(cap);
    assert!(b.try_acquire().unwrap().is_probe(), "the capped hold ends when the cap says");
}

#[test]
fn a_windowless_named_breaker_trips_holds_and_tells_its_listeners_as_the_default_does() {
    use tripwire::breaker::{NoWindow, Windows};

    // One run: two failures through permits (one owned), a probe after the
    // cool-down, a hold; the transitions heard and the states seen.
    fn run<W: Windows>(b: Arc<NamedBreaker<ManualClock, W>>) -> (Vec<(State, State)>, Vec<State>) {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = heard.clone();
        b.on_state_change(move |c| log.lock().unwrap().push((c.from, c.to)));
        let mut states = Vec::new();
        b.permit().unwrap().record(Outcome::Failure);
        states.push(b.state());
        b.permit_owned().unwrap().record(Outcome::Failure);
        states.push(b.state());
        assert!(b.try_acquire().is_err());
        b.clock().advance(Duration::from_secs(1));
        let probe = b.permit_owned().unwrap();
        states.push(b.state());
        probe.record(Outcome::Success);
        states.push(b.state());
        b.open_for(Duration::from_millis(500));
        states.push(b.state());
        let heard = heard.lock().unwrap().clone();
        (heard, states)
    }

    let config =
        BreakerConfig::builder().failure_threshold(2).open_timeout(Duration::from_secs(1)).build().unwrap();
    let windowless: NamedBreaker<ManualClock, NoWindow> =
        NamedBreaker::try_with_clock("test", config, ManualClock::new(1)).unwrap();
    let (heard, states) = run(Arc::new(windowless));
    assert_eq!((heard.clone(), states.clone()), run(named(2)));
    use State::{Closed, HalfOpen, Open};
    assert_eq!(heard, [(Closed, Open), (Open, HalfOpen), (HalfOpen, Closed), (Closed, Open)]);
    assert_eq!(states, [Closed, Open, HalfOpen, Closed, Open]);

    let rate = BreakerConfig::builder().slow_call(Duration::from_secs(1)).slow_rate(0.5).build().unwrap();
    let err =
        NamedBreaker::<ManualClock, NoWindow>::try_with_clock("test", rate, ManualClock::new(1)).unwrap_err();
    assert_eq!(err.field(), "slow_rate");
}
