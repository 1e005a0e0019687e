//! Real threads hammering one breaker, with the invariants checked:
//! - every transition is reported to exactly one caller: the reported
//!   generations are 1, 2, 3… with no gap or repeat, and each starts in the
//!   state the previous one entered;
//! - never more than `half_open_max` probes of one generation in flight.

use core::time::Duration;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::thread;

use tripwire::{Breaker, BreakerConfig, ManualClock, Outcome, State, Transition};

const THREADS: usize = 4;
const CALLS: usize = if cfg!(miri) { 60 } else { 200_000 };
const HALF_OPEN_MAX: u32 = 3;

#[test]
fn transitions_are_reported_once_and_probes_stay_bounded() {
    let breaker = Arc::new(Breaker::new(
        BreakerConfig::builder()
            .failure_threshold(3)
            .open_timeout(Duration::from_micros(5))
            .half_open_max(HALF_OPEN_MAX)
            .half_open_successes(2)
            .build()
            .unwrap(),
    ));
    let clock = Arc::new(ManualClock::new(0));
    // Probes in flight per generation (mod 4096): incremented after a probe
    // is admitted, decremented before its outcome is recorded.
    let in_flight: Arc<Vec<AtomicU32>> = Arc::new((0..4096).map(|_| AtomicU32::new(0)).collect());
    let worst = Arc::new(AtomicU32::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|id| {
            let (b, clock, in_flight, worst) =
                (breaker.clone(), clock.clone(), in_flight.clone(), worst.clone());
            thread::spawn(move || {
                let mut seen: Vec<Transition> = Vec::new();
                let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ id as u64;
                for _ in 0..CALLS {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let Ok(ticket) = b.try_acquire(&*clock) else {
                        // Time moves only while the breaker refuses calls.
                        clock.advance(Duration::from_micros(1));
                        continue;
                    };
                    seen.extend(ticket.transition());
                    let slot = &in_flight[(ticket.generation() % 4096) as usize];
                    if ticket.is_probe() {
                        let n = slot.fetch_add(1, Ordering::SeqCst) + 1;
                        worst.fetch_max(n, Ordering::Relaxed);
                    }
                    let outcome = match rng % 10 {
                        0..=5 => Outcome::Success,
                        6..=8 => Outcome::Failure,
                        _ => Outcome::Ignored,
                    };
                    if ticket.is_probe() {
                        slot.fetch_sub(1, Ordering::SeqCst);
                    }
                    seen.extend(b.record(ticket, outcome, &*clock));
                }
                seen
            })
        })
        .collect();
    let mut all: Vec<Transition> = workers.into_iter().flat_map(|w| w.join().unwrap()).collect();

    all.sort_by_key(|t| t.generation);
    assert!(all.len() > if cfg!(miri) { 0 } else { 1_000 }, "{} transitions: too few", all.len());
    for (i, t) in all.iter().enumerate() {
        assert_eq!(t.generation, i as u32 + 1, "generations reported once each, in order");
        let before = if i == 0 { State::Closed } else { all[i - 1].to };
        assert_eq!(t.from, before, "transition {t:?} starts where the previous one ended");
    }
    assert_eq!(breaker.generation(), all.len() as u32);
    assert_eq!(breaker.snapshot().transitions, all.len() as u64);
    assert!(worst.load(Ordering::Relaxed) <= HALF_OPEN_MAX, "probes in flight {worst:?}");
}

#[test]
fn counters_lose_nothing_under_contention() {
    let breaker = Arc::new(Breaker::new(BreakerConfig::builder().build().unwrap()));
    let calls = AtomicU64::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                let clock = tripwire::clock::FixedClock(0);
                for _ in 0..CALLS {
                    let t = breaker.try_acquire(&clock).unwrap();
                    breaker.record(t, Outcome::Success, &clock);
                    calls.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(breaker.snapshot().successes, calls.load(Ordering::Relaxed));
    assert_eq!(breaker.snapshot().successes, (THREADS * CALLS) as u64);
}
