//! Runs one hot path a fixed number of times, for instruction counting
//! under `valgrind --tool=callgrind` (stable on noisy machines, unlike time):
//! `cargo run --release -p tripwire-benches --example hot_path -- <path> [iterations]`.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tripwire::{Breaker, BreakerConfig, CoarseClock, FixedClock, MonotonicClock, Outcome};
use tripwire_benches::{failing, guarded};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "consecutive".into());
    let n: u64 = args.next().map(|s| s.parse().expect("iterations: a number")).unwrap_or(1_000_000);
    let consecutive = Breaker::new(BreakerConfig::default());
    let windowed = Breaker::new(
        BreakerConfig::builder().failure_threshold(0).failure_rate(0.5).build().expect("valid config"),
    );
    let open = Breaker::new(
        BreakerConfig::builder()
            .failure_threshold(1)
            .open_timeout(Duration::from_secs(3600))
            .build()
            .unwrap(),
    );
    let _ = open.call(&MonotonicClock, || failing(0));
    let counter = AtomicU64::new(0);
    let clock = FixedClock(1);
    let repeat = |f: &mut dyn FnMut()| (0..n).for_each(|_| f());
    match path.as_str() {
        "bare" => repeat(&mut || _ = black_box(guarded(black_box(1)))),
        "fetch_add" => repeat(&mut || _ = black_box(counter.fetch_add(1, Ordering::AcqRel))),
        "consecutive" => repeat(&mut || {
            let t = consecutive.try_acquire(&clock).unwrap();
            let r = guarded(black_box(1));
            black_box(consecutive.record(t, Outcome::Success, &clock));
            _ = black_box(r);
        }),
        "window" => repeat(&mut || _ = black_box(windowed.call(&clock, || guarded(black_box(1))))),
        "reject_monotonic" => repeat(&mut || _ = black_box(open.try_acquire(&MonotonicClock))),
        "reject_coarse" => repeat(&mut || _ = black_box(open.try_acquire(&CoarseClock))),
        other => panic!(
            "unknown path {other:?}: bare, fetch_add, consecutive, window, reject_monotonic, reject_coarse"
        ),
    }
}
