//! loom models of the rate limiter: racing takes never admit more than a
//! limit holds, and a request that one limit refuses keeps nothing of the
//! others, however the takes interleave. Run with `RUSTFLAGS="--cfg loom"
//! LOOM_MAX_PREEMPTIONS=2 cargo test -p tripwire-breaker --release
//! --target-dir target/loom --test loom_limiter`.
//!
//! Every model races for real (see `loom_support`) and fails when the
//! check it names under "Guards" is weakened; `tests/mutants/run.sh`
//! makes each of those weakenings and shows it.
#![cfg(loom)]

mod loom_support;

use core::time::Duration;

use loom::sync::Arc;
use loom::thread;
use loom_support::model;
use tripwire::clock::FixedClock;
use tripwire::limiter::{LimitConfig, RateLimiter};

const NOW: FixedClock = FixedClock(1_000_000_000);

/// `units` per second, with a burst of half of them.
fn limit(units: u32) -> LimitConfig {
    LimitConfig::builder(units, Duration::from_secs(1)).burst(units / 2).build().unwrap()
}

/// Guards: the CAS in `Cell::take` (as a plain store, two takers that
/// both saw the burst free both take it).
#[test]
fn racing_takes_never_admit_more_than_the_burst() {
    model(["this thread went", "the spawned thread went"], |sides| {
        let limiter = Arc::new(RateLimiter::new([limit(4)]));
        let other = {
            let l = limiter.clone();
            thread::spawn(move || l.try_acquire([2], &NOW).is_ok())
        };
        let mine = limiter.try_acquire([2], &NOW).is_ok();
        let theirs = other.join().unwrap();
        assert!(mine != theirs, "the burst holds 2 units: exactly one of two costs of 2 goes");
        sides.saw(usize::from(theirs));
        assert_eq!(limiter.in_use(&NOW), [2], "what went is counted, once");
    });
}

/// A request on two limits races one on the second only, whose burst is
/// one unit: whichever loses keeps nothing.
///
/// Guards: the give-back in `RateLimiter::acquire` when a later limit is
/// lost to a racer after the look (without it, the loser keeps the unit
/// it took from the first limit).
#[test]
fn a_request_refused_by_one_limit_keeps_nothing_of_the_others() {
    model(["both limits' request went", "the second limit's request went"], |sides| {
        let limiter = Arc::new(RateLimiter::new([limit(4), limit(2)]));
        let other = {
            let l = limiter.clone();
            thread::spawn(move || l.try_acquire([0, 1], &NOW).is_ok())
        };
        let mine = limiter.try_acquire([1, 1], &NOW).is_ok();
        let theirs = other.join().unwrap();
        assert!(mine != theirs, "one unit of burst on the second limit");
        sides.saw(usize::from(theirs));
        assert_eq!(limiter.in_use(&NOW), [u64::from(mine), 1], "the refused request took nothing");
    });
}
