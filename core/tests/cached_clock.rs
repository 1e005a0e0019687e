//! The cached clock as its readers see it: a real time from the first
//! read, forward-only across threads and across its stop, moving while
//! maintained, not frozen once stopped, and its thread gone when the
//! `Upkeep` is dropped. No test asserts on how long anything took: waits
//! poll with deadlines far beyond any scheduling delay.

use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use tripwire::{Clock, MonotonicClock, clock::CachedClock};

/// Long enough for a starved thread on a loaded 2-core machine to run.
const PATIENCE: Duration = Duration::from_secs(20);

/// Polls `done` until it holds or `PATIENCE` runs out; says which.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        thread::sleep(Duration::from_micros(200));
    }
    done()
}

#[test]
fn the_first_reading_is_a_real_time_not_zero() {
    let before = MonotonicClock.now();
    // The longest period: the thread will not have ticked when we read.
    let upkeep = CachedClock::start(CachedClock::MAX_PERIOD).unwrap();
    let reading = upkeep.now();
    let after = MonotonicClock.now();
    assert_ne!(reading, 0, "0 is 'not measured' to the core");
    assert!(before <= reading && reading <= after, "{before} <= {reading} <= {after}");
}

// Under miri: the global thread outlives the test, which miri reports as a
// leak; and miri has no `pthread_atfork` or `fork`.
#[test]
#[cfg_attr(miri, ignore = "the global upkeep thread outlives main")]
fn the_global_clock_reads_a_real_time_and_advances() {
    let global = CachedClock::global().now();
    assert_ne!(global, 0);
    assert!(global <= MonotonicClock.now(), "a cached reading is CLOCK_MONOTONIC's, only older");
    let global = CachedClock::global();
    assert!(global.is_maintained(), "the global upkeep thread did not start");
    assert!(advances(global), "the global upkeep thread never published");
}

/// Waits for `clock` to publish a reading later than the one it has now.
fn advances(clock: &CachedClock) -> bool {
    let first = clock.now();
    eventually(|| clock.now() > first)
}

#[test]
fn a_maintained_clock_advances() {
    let upkeep = CachedClock::start(CachedClock::DEFAULT_PERIOD).unwrap();
    assert!(upkeep.clock().is_maintained());
    assert!(advances(upkeep.clock()), "the upkeep thread never published");
}

#[test]
fn readings_never_go_back_across_threads_and_across_the_stop() {
    const N: usize = if cfg!(miri) { 50 } else { 20_000 };
    // The shortest period: as many publishes as possible between reads.
    let upkeep = CachedClock::start(CachedClock::MIN_PERIOD).unwrap();
    let clock = Arc::clone(upkeep.clock());
    let (tx, rx) = mpsc::sync_channel::<u64>(64);
    let producer = {
        let clock = Arc::clone(&clock);
        thread::spawn(move || {
            let mut upkeep = Some(upkeep);
            let mut last = 0;
            for i in 0..N {
                // Halfway, stop the thread: readers move to CLOCK_MONOTONIC.
                if i == N / 2 {
                    drop(upkeep.take());
                }
                let t = clock.now();
                assert!(t >= last, "went back on one thread: {last} then {t}");
                last = t;
                // The channel orders this read before the consumer's next.
                tx.send(t).unwrap();
            }
        })
    };
    let mut last = 0;
    for seen in rx {
        let t = clock.now();
        assert!(t >= seen, "a reading handed over was later than the receiver's own: {seen} then {t}");
        assert!(t >= last, "went back on the receiving thread: {last} then {t}");
        last = t;
    }
    producer.join().unwrap();
    assert!(!clock.is_maintained());
}

#[test]
fn dropping_the_upkeep_ends_its_thread_and_the_clock_reads_fresh_time() {
    let upkeep = CachedClock::start(CachedClock::MAX_PERIOD).unwrap();
    let clock = Arc::clone(upkeep.clock());
    assert_eq!(Arc::strong_count(&clock), 3, "ours, the Upkeep's and the thread's");
    let last = clock.now();
    drop(upkeep);
    // The drop waits for the thread to end, which drops its `Arc`.
    assert_eq!(Arc::strong_count(&clock), 1, "the upkeep thread outlived its Upkeep");
    assert!(!clock.is_maintained());
    // Not frozen at its last reading: it reads CLOCK_MONOTONIC now.
    assert!(eventually(|| MonotonicClock.now() > last));
    let (fresh, got, after) = (MonotonicClock.now(), clock.now(), MonotonicClock.now());
    assert!(fresh <= got, "a stopped clock stood still at {got}");
    assert!(got <= after, "a stopped clock read {got}, after CLOCK_MONOTONIC's {after}");
}

#[test]
fn bad_periods_are_errors_not_panics() {
    for period in [Duration::ZERO, Duration::from_nanos(1), Duration::from_secs(2), Duration::MAX] {
        let err = CachedClock::start(period).unwrap_err();
        assert!(err.to_string().contains(&format!("{period:?}")), "{err}");
    }
}

#[cfg(unix)]
#[test]
#[cfg_attr(miri, ignore = "miri has no fork")]
fn a_forked_child_reads_fresh_time_not_its_parents_last_tick() {
    let clock = CachedClock::global();
    assert!(clock.is_maintained());
    let own = CachedClock::start(CachedClock::MAX_PERIOD).unwrap();
    // SAFETY:
    // - The child runs only async-signal-safe code, as a child of a
    //   multi-threaded process must: atomic loads (`global`'s fast path,
    //   `is_maintained`), `clock_gettime`, the `Upkeep`'s drop (atomics
    //   and a decrement of an `Arc` the parent's thread still counts) and
    //   `_exit`.
    // - `fork` has no other preconditions.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // The child: no upkeep thread came along; the fork handler must
        // have handed the clock to CLOCK_MONOTONIC.
        let fresh_in = |clock: &CachedClock| {
            let (fresh, got, after) = (MonotonicClock.now(), clock.now(), MonotonicClock.now());
            !clock.is_maintained() && fresh <= got && got <= after
        };
        let ok = fresh_in(CachedClock::global()) && fresh_in(own.clock());
        // Its thread stayed in the parent: the drop must not wait for it.
        drop(own);
        // SAFETY: `_exit` ends the child at once, running no destructors
        // or atexit handlers that belong to the parent.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    let ended = eventually(|| {
        // SAFETY: `pid` is our own child, `status` a valid out-pointer.
        let waited = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(waited == 0 || waited == pid, "waitpid: {}", std::io::Error::last_os_error());
        waited == pid
    });
    if !ended {
        // SAFETY: `pid` is our own child, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("the forked child hung (dropping its Upkeep?)");
    }
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child status {status:#x}");
    assert!(clock.is_maintained(), "the parent keeps its upkeep threads");
    assert!(own.clock().is_maintained());
}
