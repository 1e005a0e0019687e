//! The hot paths of `hot_path` on breakers whose storage holds only what
//! their config needs, for instruction counting under callgrind
//! (`benches/callgrind.sh`): `cargo run --release -p tripwire-benches
//! --example hot_path_storage -- <path> [iterations]`. A program of its
//! own, so that `hot_path`'s code, and its counts, stay as they were.
//! Prints the loop's time per iteration too.

use std::hint::black_box;
use std::time::Duration;

use tripwire::breaker::{CountOnly, NoWindow, TimeOnly};
use tripwire::{Breaker, BreakerConfig, MonotonicClock, Outcome, clock::FixedClock};
use tripwire_benches::{failing, guarded};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "consecutive_no_window".into());
    let n: u64 = args.next().map(|s| s.parse().expect("iterations: a number")).unwrap_or(1_000_000);
    let clock = FixedClock(1);
    let repeat = |f: &mut dyn FnMut()| {
        let start = std::time::Instant::now();
        (0..n).for_each(|_| f());
        println!("{:.3} ns per iteration", start.elapsed().as_nanos() as f64 / n as f64);
    };
    // The configs of hot_path's consecutive, window, count_window and
    // reject_monotonic paths.
    let rate = BreakerConfig::builder().failure_threshold(0).failure_rate(0.5);
    match path.as_str() {
        "bare" => repeat(&mut || _ = black_box(guarded(black_box(1)))),
        "consecutive_no_window" => {
            let b: Breaker<NoWindow> = Breaker::try_new(BreakerConfig::default()).unwrap();
            repeat(&mut || {
                let t = b.try_acquire(&clock).unwrap();
                let r = guarded(black_box(1));
                black_box(b.record(t, Outcome::Success, &clock));
                _ = black_box(r);
            })
        }
        "window_time_only" => {
            let b: Breaker<TimeOnly> = Breaker::try_new(rate.build().unwrap()).unwrap();
            repeat(&mut || _ = black_box(b.call(&clock, || guarded(black_box(1)))))
        }
        "count_window_only" => {
            let b: Breaker<CountOnly> = Breaker::try_new(rate.count_window(100).build().unwrap()).unwrap();
            repeat(&mut || _ = black_box(b.call(&clock, || guarded(black_box(1)))))
        }
        "reject_no_window" => {
            let config =
                BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_secs(3600)).build();
            let b: Breaker<NoWindow> = Breaker::try_new(config.unwrap()).unwrap();
            let _ = b.call(&MonotonicClock, || failing(0));
            repeat(&mut || {
                _ = black_box(b.try_acquire(&MonotonicClock));
                _ = black_box(guarded(black_box(1)));
            })
        }
        other => panic!(
            "unknown path {other:?}: bare, consecutive_no_window, window_time_only, count_window_only, \
             reject_no_window"
        ),
    }
}
