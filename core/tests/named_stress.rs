//! Threads tripping, probing and holding one named breaker at once: every
//! transition reaches the listeners exactly once, and a hold ends once.
#![cfg(all(feature = "std", not(loom)))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use tripwire::{BreakerConfig, ManualClock, NamedBreaker, Outcome, State};

const THREADS: usize = 3;
const ROUNDS: usize = if cfg!(miri) { 30 } else { 20_000 };

#[test]
fn listeners_hear_every_transition_exactly_once() {
    let config = BreakerConfig::builder()
        .failure_threshold(3)
        .open_timeout(Duration::from_micros(5))
        .half_open_max(2)
        .half_open_successes(2)
        .build()
        .unwrap();
    let b = Arc::new(NamedBreaker::with_clock("stress", config, ManualClock::new(1)));
    let heard = Arc::new(AtomicU64::new(0));
    let h = heard.clone();
    b.on_state_change(move |_| {
        h.fetch_add(1, Ordering::Relaxed);
    });
    let start = Arc::new(Barrier::new(THREADS + 1));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (b, start) = (b.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                for i in 0..ROUNDS {
                    b.clock().advance(Duration::from_nanos(700));
                    if let Ok(ticket) = b.try_acquire() {
                        let fail = (i + t) % 8 < 5;
                        b.record(ticket, if fail { Outcome::Failure } else { Outcome::Success });
                    }
                }
            })
        })
        .collect();
    start.wait();
    for i in 0..ROUNDS / 100 {
        b.open_for(Duration::from_micros(2 + (i % 5) as u64));
        thread::yield_now();
    }
    for w in workers {
        w.join().unwrap();
    }
    // End any hold still on, then count.
    b.clock().advance(Duration::from_secs(1));
    let _ = b.try_acquire();
    assert_ne!(b.state(), State::ForcedOpen, "holds never force a breaker open");
    assert_eq!(heard.load(Ordering::Relaxed), b.snapshot().transitions);
    assert!(b.snapshot().transitions > 10, "{:?}", b.snapshot());
}

#[test]
fn an_expired_hold_is_ended_by_exactly_one_probe() {
    for _ in 0..if cfg!(miri) { 5 } else { 200 } {
        let b = Arc::new(NamedBreaker::with_clock("hold", BreakerConfig::default(), ManualClock::new(1)));
        let ends = Arc::new(AtomicU64::new(0));
        let e = ends.clone();
        b.on_state_change(move |c| {
            if (c.from, c.to) == (State::Open, State::HalfOpen) {
                e.fetch_add(1, Ordering::Relaxed);
            }
        });
        b.open_for(Duration::from_millis(1));
        b.clock().advance(Duration::from_millis(1));
        let start = Arc::new(Barrier::new(THREADS));
        let callers: Vec<_> = (0..THREADS)
            .map(|_| {
                let (b, start) = (b.clone(), start.clone());
                thread::spawn(move || {
                    start.wait();
                    b.try_acquire()
                })
            })
            .collect();
        let got: Vec<_> = callers.into_iter().map(|c| c.join().unwrap()).collect();
        let probes: Vec<_> = got.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(probes.len(), 1, "one probe goes first: {got:?}");
        for r in got.iter().filter_map(|r| r.as_ref().err()) {
            assert_eq!(r.state, State::HalfOpen);
            assert!(r.retry_after.is_some(), "{r:?}");
        }
        assert_eq!(ends.load(Ordering::Relaxed), 1);
        b.record(*probes[0], Outcome::Success);
        assert_eq!(b.state(), State::Closed);
    }
}

#[test]
fn every_refusal_of_a_held_breaker_says_when_the_hold_ends() {
    // Holds end and start again while callers are refused: no operator
    // forces this breaker open, so every refusal names the time left.
    for _ in 0..if cfg!(miri) { 1 } else { 10 } {
        holds_racing_refusals();
    }
}

fn holds_racing_refusals() {
    let config = BreakerConfig::builder().half_open_max(THREADS as u32).build().unwrap();
    let b = Arc::new(NamedBreaker::with_clock("holds", config, ManualClock::new(1)));
    let start = Arc::new(Barrier::new(THREADS + 1));
    let callers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (b, start) = (b.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                for _ in 0..ROUNDS {
                    b.clock().advance(Duration::from_nanos(300));
                    match b.try_acquire() {
                        Ok(ticket) => {
                            b.record(ticket, Outcome::Success);
                        }
                        Err(r) => assert!(r.retry_after.is_some(), "{r:?}"),
                    }
                }
            })
        })
        .collect();
    start.wait();
    for _ in 0..ROUNDS {
        b.open_for(Duration::from_nanos(500));
    }
    for c in callers {
        c.join().unwrap();
    }
}
