//! A breaker in memory shared between processes loses no count, though
//! each process numbers its own threads, so that threads of two processes
//! count in one stripe (see `breaker/counters.rs`). One test in its own
//! binary: its threads are then the first the process numbers.

use std::thread;

use tripwire::{Breaker, BreakerConfig, Outcome, clock::FixedClock, shared::SharedRegion};

/// Two processes whose first threads count on one breaker in a shared
/// mapping, each in the same stripe.
#[test]
#[cfg_attr(miri, ignore = "miri has no fork or mmap")]
fn the_first_threads_of_two_processes_lose_no_count_in_a_shared_region() {
    const PER_PROCESS: u64 = 2_000_000;
    let (size, _) = SharedRegion::layout();
    // SAFETY:
    // - An anonymous shared mapping: no file, no address hint; checked below.
    let mem = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(mem, libc::MAP_FAILED);
    let config = BreakerConfig::builder().failure_threshold(u16::MAX.into()).build().unwrap();
    // SAFETY:
    // - `mem` is a fresh, zero-filled mapping of `size` bytes, page-aligned
    //   (beyond the breaker's alignment), unmapped only at the end.
    // - Only the breakers below touch it, in this process and its child.
    let breaker = unsafe { SharedRegion::init_in(mem.cast(), size, config) }.unwrap();
    let count = |b: &Breaker| {
        for _ in 0..PER_PROCESS {
            let t = b.try_acquire(&FixedClock(1)).unwrap();
            b.record(t, Outcome::Success, &FixedClock(1));
        }
    };
    // SAFETY:
    // - The test process has no other threads that hold locks the child
    //   needs: the child only counts on the breaker and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        count(breaker);
        // SAFETY:
        // - `_exit` skips the parent's exit handlers, as a forked child should.
        unsafe { libc::_exit(0) };
    }
    // The child numbered its thread from this process's count at the fork,
    // and this process numbers the thread below from the same count: both
    // count in one stripe.
    let this = thread::scope(|s| s.spawn(|| count(breaker)).join());
    this.unwrap();
    let mut status = 0;
    // SAFETY:
    // - `pid` is this process's child; `status` is a valid out pointer.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    assert_eq!(breaker.snapshot().successes, 2 * PER_PROCESS);
    // SAFETY:
    // - The mapping made above; no breaker from it is used after this.
    assert_eq!(unsafe { libc::munmap(mem, size) }, 0);
}
