//! The Rust half of `benches/c/timing.sh`: one try-acquire + record in
//! Rust, and the same through the C ABI's functions called from Rust.
//! Informal: best of 5 runs of a tight loop; criterion benches live in
//! `benches/`.

use core::hint::black_box;
use core::ptr::null_mut;
use std::time::Instant;

use tripwire::{Breaker, BreakerConfig, MonotonicClock, Outcome, clock::FixedClock};
use tripwire_ffi::*;

const CALLS: u32 = 5_000_000;

fn best_of_5(mut f: impl FnMut(u32)) -> f64 {
    (0..5)
        .map(|_| {
            let start = Instant::now();
            for i in 0..CALLS {
                f(black_box(i));
            }
            start.elapsed().as_nanos() as f64 / f64::from(CALLS)
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let counter = core::sync::atomic::AtomicU64::new(0);
    let yardstick = best_of_5(|_| {
        counter.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    });
    println!("Rust,         one uncontended fetch_add (yardstick):             {yardstick:6.2} ns");
    let counting = Breaker::new(BreakerConfig::default());
    let quiet = Breaker::new(BreakerConfig::builder().count_successes(false).build().unwrap());
    let rust = |b: &Breaker| {
        best_of_5(|_| {
            if let Ok(t) = b.try_acquire(&MonotonicClock) {
                b.record(t, Outcome::Success, &MonotonicClock);
            }
        })
    };
    println!("Rust,         closed, try_acquire + record success (counted):     {:6.2} ns", rust(&counting));
    println!("Rust,         closed, try_acquire + record success (not counted): {:6.2} ns", rust(&quiet));
    let rust_at = best_of_5(|i| {
        let clock = FixedClock(u64::from(i));
        if let Ok(t) = quiet.try_acquire(&clock) {
            quiet.record(t, Outcome::Success, &clock);
        }
    });
    println!("Rust,         closed, FixedClock (not counted):                   {rust_at:6.2} ns");

    let mut config = core::mem::MaybeUninit::uninit();
    let mut b = null_mut();
    // SAFETY:
    // - Every pointer is valid for its call; `b` is freed once, at the end.
    unsafe {
        tw_breaker_config_default(config.as_mut_ptr());
        let mut config = config.assume_init();
        config.count_successes = 0;
        assert_eq!(tw_breaker_new(&config, &mut b), tw_status::Ok);
        let abi = best_of_5(|_| {
            let mut t = tw_ticket { started_at: 0, generation: 0, flags: 0 };
            if tw_breaker_try_acquire(b, &mut t, null_mut()) == tw_status::Ok {
                tw_breaker_record(b, t, tw_outcome::Success as u32, null_mut());
            }
        });
        println!("Rust -> C ABI, closed, try_acquire + record success (not counted): {abi:6.2} ns");
        tw_breaker_free(b);
    }
}
