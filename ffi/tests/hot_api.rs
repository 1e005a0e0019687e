//! What the header's inline fast path relies on, called from Rust: the hot
//! line a breaker starts with (`tw_breaker_hot`, stamped and filled in by
//! the library), `tw_breaker_record_healthy_success`, and the success path
//! that `tw_breaker_record` takes before building a core ticket. Runs
//! under miri too. The inline C itself is tested in `tests/c/test_fast_path.c`.

use core::ptr::null_mut;

use tripwire_ffi::*;

fn config(edit: impl FnOnce(&mut tw_breaker_config)) -> tw_breaker_config {
    let mut c = core::mem::MaybeUninit::<tw_breaker_config>::uninit();
    // SAFETY:
    // - `c` is writable; on `TW_STATUS_OK` it is fully written.
    let mut c = unsafe {
        assert_eq!(tw_breaker_config_default(c.as_mut_ptr()), tw_status::Ok);
        c.assume_init()
    };
    edit(&mut c);
    c
}

/// A heap breaker, freed on drop.
struct Owned(*mut tw_breaker);

impl Owned {
    fn new(config: &tw_breaker_config) -> Self {
        let mut b = null_mut();
        // SAFETY:
        // - Both pointers are valid for the call.
        assert_eq!(unsafe { tw_breaker_new(config, &mut b) }, tw_status::Ok);
        Owned(b)
    }

    /// The hot line, as the header's inline path reads it.
    fn hot(&self) -> (u32, u32) {
        let hot = self.0.cast::<tw_breaker_hot>();
        // SAFETY:
        // - A live handle points to its breaker's hot line (the layout
        //   `tw_breaker_hot` describes); the stamp and flags are plain data
        //   written once before the handle was handed out.
        unsafe { ((*hot).stamp, (*hot).flags) }
    }

    fn acquire(&self) -> tw_ticket {
        let mut t = tw_ticket { started_at: 7, generation: 7, flags: 7 };
        // SAFETY:
        // - A live handle; `t` is writable; the rejection may be NULL.
        assert_eq!(unsafe { tw_breaker_try_acquire_at(self.0, 5, &mut t, null_mut()) }, tw_status::Ok);
        t
    }

    fn record(&self, t: tw_ticket, outcome: tw_outcome) -> tw_transition {
        let mut x = tw_transition { changed: true, from: tw_state::Open, to: tw_state::Open, generation: 99 };
        // SAFETY:
        // - A live handle; `x` is writable.
        assert_eq!(unsafe { tw_breaker_record_at(self.0, 5, t, outcome as u32, &mut x) }, tw_status::Ok);
        x
    }

    fn healthy_success(&self, generation: u32) -> bool {
        // SAFETY:
        // - A live handle.
        unsafe { tw_breaker_record_healthy_success(self.0, generation) }
    }

    fn snapshot(&self) -> tw_snapshot {
        let mut s = core::mem::MaybeUninit::uninit();
        // SAFETY:
        // - A live handle; `s` is writable and fully written on success.
        unsafe {
            assert_eq!(tw_breaker_snapshot(self.0, s.as_mut_ptr()), tw_status::Ok);
            s.assume_init()
        }
    }

    fn reset(&self) {
        // SAFETY:
        // - A live handle; the transition may be NULL.
        assert_eq!(unsafe { tw_breaker_reset(self.0, null_mut()) }, tw_status::Ok);
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY:
        // - A handle from `tw_breaker_new`, not used after this.
        unsafe { tw_breaker_free(self.0) }
    }
}

#[test]
fn every_breaker_is_stamped_with_the_headers_layout_and_its_config_flags() {
    let counted = Owned::new(&config(|_| {}));
    assert_eq!(counted.hot(), (TW_HOT_STAMP, TW_HOT_COUNT_SUCCESSES));
    let quiet = Owned::new(&config(|c| c.count_successes = 0));
    assert_eq!(quiet.hot(), (TW_HOT_STAMP, 0));
    let timed = Owned::new(&config(|c| {
        c.count_successes = 0;
        c.slow_call_ns = 1_000_000;
    }));
    let (stamp, flags) = timed.hot();
    assert_eq!(stamp, TW_HOT_STAMP);
    assert_ne!(flags & TW_HOT_ADMIT_FLAGS, 0, "timed: admission is the library's");
    assert_ne!(flags & TW_HOT_RECORD_FLAGS, 0, "timed: a success is the library's");
    let windowed = Owned::new(&config(|c| {
        c.count_successes = 0;
        c.failure_rate = 0.5;
    }));
    let (_, flags) = windowed.hot();
    assert_eq!(flags & TW_HOT_ADMIT_FLAGS, 0, "a window alone leaves admission inline");
    assert_ne!(flags & TW_HOT_RECORD_FLAGS, 0, "a window takes every outcome");
}

#[test]
fn a_healthy_success_is_counted_and_nothing_else_is_done() {
    let b = Owned::new(&config(|_| {}));
    let t = b.acquire();
    assert!(b.healthy_success(t.generation));
    assert_eq!(b.snapshot().successes, 1);
    // A ticket of another generation, a failure to forget: nothing done.
    assert!(!b.healthy_success(t.generation.wrapping_add(1)));
    b.record(t, tw_outcome::Failure);
    assert!(!b.healthy_success(t.generation));
    let s = b.snapshot();
    assert_eq!((s.successes, s.failures), (1, 1));
    // SAFETY:
    // - NULL is allowed.
    assert!(!unsafe { tw_breaker_record_healthy_success(core::ptr::null(), 0) });
    // A breaker that times calls or keeps a window: always the library's record.
    for edit in [
        |c: &mut tw_breaker_config| c.slow_call_ns = 1_000_000,
        |c: &mut tw_breaker_config| c.failure_rate = 0.5,
    ] {
        let b = Owned::new(&config(edit));
        let t = b.acquire();
        assert!(!b.healthy_success(t.generation));
        assert_eq!(b.snapshot().successes, 0);
    }
}

#[test]
fn recording_a_healthy_success_reports_the_current_generation_unchanged() {
    let b = Owned::new(&config(|c| c.count_successes = 0));
    b.reset();
    b.reset();
    let t = b.acquire();
    assert_eq!(t.generation, 2);
    let x = b.record(t, tw_outcome::Success);
    assert_eq!((x.changed, x.from, x.to, x.generation), (false, tw_state::Closed, tw_state::Closed, 2));
    // After a failure the success is the library's slow path: it forgets the failure.
    b.record(t, tw_outcome::Failure);
    let x = b.record(t, tw_outcome::Success);
    assert_eq!((x.changed, x.from, x.to, x.generation), (false, tw_state::Closed, tw_state::Closed, 2));
    assert!(b.healthy_success(2), "the failure was forgotten");
}
