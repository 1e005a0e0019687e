//! The C ABI called from Rust, as C would call it: every function, every
//! status, NULL arguments and the messages. Runs under miri too.

use core::alloc::Layout;
use core::ffi::CStr;
use core::ptr::{null, null_mut};
use std::alloc::{alloc_zeroed, dealloc};

use tripwire_ffi::*;

fn last_error() -> String {
    // SAFETY:
    // - `tw_last_error_message` returns a NUL-terminated string that stays
    //   valid until the next failing call on this thread; it is copied here.
    unsafe { CStr::from_ptr(tw_last_error_message()) }.to_str().unwrap().to_owned()
}

fn default_config() -> tw_breaker_config {
    let mut c = core::mem::MaybeUninit::<tw_breaker_config>::uninit();
    // SAFETY:
    // - `c` is writable; on `TW_STATUS_OK` it is fully written.
    unsafe {
        assert_eq!(tw_breaker_config_default(c.as_mut_ptr()), tw_status::Ok);
        c.assume_init()
    }
}

/// A heap breaker, freed on drop.
struct Owned(*mut tw_breaker);

impl Owned {
    fn new(config: &tw_breaker_config) -> Self {
        let mut b = null_mut();
        // SAFETY:
        // - Both pointers are valid for the call.
        let status = unsafe { tw_breaker_new(config, &mut b) };
        assert_eq!(status, tw_status::Ok, "{}", last_error());
        Owned(b)
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY:
        // - A handle from `tw_breaker_new`, not used after this.
        unsafe { tw_breaker_free(self.0) }
    }
}

fn acquire_at(b: *const tw_breaker, now: u64) -> Result<tw_ticket, tw_rejection> {
    let mut t = tw_ticket { started_at: 7, generation: 7, flags: 7 };
    let mut r = tw_rejection { state: tw_state::Closed, retry_after_ns: 7 };
    // SAFETY:
    // - `b` is a live handle; `t` and `r` are writable.
    match unsafe { tw_breaker_try_acquire_at(b, now, &mut t, &mut r) } {
        tw_status::Ok => Ok(t),
        tw_status::Rejected => Err(r),
        other => panic!("{other:?}: {}", last_error()),
    }
}

fn record_at(b: *const tw_breaker, now: u64, t: tw_ticket, outcome: tw_outcome) -> tw_transition {
    let mut tr = core::mem::MaybeUninit::uninit();
    // SAFETY:
    // - `b` is a live handle; `tr` is writable and written on OK.
    unsafe {
        assert_eq!(tw_breaker_record_at(b, now, t, outcome as u32, tr.as_mut_ptr()), tw_status::Ok);
        tr.assume_init()
    }
}

fn state(b: *const tw_breaker) -> tw_state {
    let mut s = tw_state::Disabled;
    // SAFETY:
    // - `b` is a live handle; `s` is writable.
    assert_eq!(unsafe { tw_breaker_state(b, &mut s) }, tw_status::Ok);
    s
}

#[test]
fn defaults_match_the_core_and_validate() {
    let c = default_config();
    assert_eq!(
        (c.failure_threshold, c.half_open_max, c.half_open_successes, c.count_successes),
        (5, 1, 1, 1)
    );
    assert_eq!((c.open_timeout_ns, c.open_timeout_max_ns), (30_000_000_000, 0));
    // SAFETY:
    // - `c` is readable.
    assert_eq!(unsafe { tw_breaker_config_validate(&c) }, tw_status::Ok);
}

#[test]
fn bad_configs_name_the_field_its_value_and_the_range() {
    type Breakage = fn(&mut tw_breaker_config);
    // Each message names the C field, with durations in nanoseconds.
    let cases: [(Breakage, &str); 12] = [
        (|c| c.half_open_max = 0, "half_open_max = 0, expected 1 to 10"),
        (
            |c| c.open_timeout_growth = 2.0,
            "open_timeout_growth = 2, expected open_timeout_max_ns to be set as well",
        ),
        (|c| c.failure_threshold = 0, "failure_threshold = 0, expected 1 to 65535"),
        (|c| c.open_timeout_ns = 0, "open_timeout_ns = 0, expected 1000 to 604800000000000"),
        (|c| c.open_timeout_growth = f64::NAN, "open_timeout_growth = NaN, expected 1 to 1000"),
        (|c| c.open_timeout_max_ns = 5, "open_timeout_max_ns = 5, expected 1000 to 604800000000000"),
        (
            |c| c.open_timeout_max_ns = 2_000_000_000,
            "open_timeout_max_ns = 2000000000, expected at least open_timeout_ns (30000000000)",
        ),
        (|c| c.count_successes = 2, "count_successes = 2, expected 0 to 1"),
        (|c| c.window_bucket_ns = 0, "window_bucket_ns = 0, expected 1000000 to 3600000000000"),
        (
            |c| {
                c.slow_call_ns = 0;
                c.slow_rate = 0.5;
            },
            "slow_rate = 0.5, expected slow_call_ns to be set as well",
        ),
        (|c| c.slow_call_ns = 1, "slow_call_ns = 1, expected 1000 to 604800000000000"),
        (
            |c| c.failure_rate = 2.0,
            "failure_rate = 2, expected a rate above 0 and at most 1 (0 turns it off)",
        ),
    ];
    for (break_it, want) in cases {
        let mut c = default_config();
        break_it(&mut c);
        // SAFETY:
        // - `c` is readable.
        assert_eq!(unsafe { tw_breaker_config_validate(&c) }, tw_status::InvalidConfig);
        assert_eq!(last_error(), format!("tw_breaker_config_validate: invalid breaker config: {want}"));
        let mut b = null_mut();
        // SAFETY:
        // - Both pointers are valid for the call.
        assert_eq!(unsafe { tw_breaker_new(&c, &mut b) }, tw_status::InvalidConfig);
        assert!(b.is_null(), "out-parameters are written only on success");
        assert_eq!(last_error(), format!("tw_breaker_new: invalid breaker config: {want}"));
    }
}

#[test]
fn every_pointer_argument_is_checked_for_null() {
    let c = default_config();
    let b = Owned::new(&c);
    let t = tw_ticket { started_at: 0, generation: 0, flags: 0 };
    let mut out_b = null_mut();
    let mut out_cb = null();
    let mut size = 0;
    let mut mem = [0u64; 4];
    let mem = mem.as_mut_ptr().cast::<core::ffi::c_void>();
    let check = |status: tw_status, message: &str| {
        assert_eq!(status, tw_status::NullArgument, "{message}");
        assert_eq!(last_error(), message);
    };
    // SAFETY:
    // - Every non-null pointer below is valid for its use; the NULL ones
    //   are refused before any access.
    unsafe {
        check(tw_breaker_config_default(null_mut()), "tw_breaker_config_init: `out` is NULL");
        check(tw_breaker_config_validate(null()), "tw_breaker_config_validate: `config` is NULL");
        check(tw_breaker_new(null(), &mut out_b), "tw_breaker_new: `config` is NULL");
        check(tw_breaker_new(&c, null_mut()), "tw_breaker_new: `out` is NULL");
        check(tw_breaker_get_config(null(), null_mut()), "tw_breaker_get_config_sized: `breaker` is NULL");
        check(tw_breaker_get_config(b.0, null_mut()), "tw_breaker_get_config_sized: `out` is NULL");
        check(
            tw_breaker_try_acquire(null(), null_mut(), null_mut()),
            "tw_breaker_try_acquire: `breaker` is NULL",
        );
        check(
            tw_breaker_try_acquire(b.0, null_mut(), null_mut()),
            "tw_breaker_try_acquire: `ticket` is NULL",
        );
        check(
            tw_breaker_try_acquire_at(b.0, 0, null_mut(), null_mut()),
            "tw_breaker_try_acquire_at: `ticket` is NULL",
        );
        check(tw_breaker_record(null(), t, 0, null_mut()), "tw_breaker_record: `breaker` is NULL");
        check(tw_breaker_record_at(null(), 0, t, 0, null_mut()), "tw_breaker_record_at: `breaker` is NULL");
        check(tw_ticket_transition(null(), null_mut()), "tw_ticket_transition: `ticket` is NULL");
        check(tw_ticket_transition(&t, null_mut()), "tw_ticket_transition: `out` is NULL");
        check(tw_breaker_state(b.0, null_mut()), "tw_breaker_state: `out` is NULL");
        check(tw_breaker_snapshot(null(), null_mut()), "tw_breaker_snapshot: `breaker` is NULL");
        check(tw_breaker_force_open(null(), null_mut()), "tw_breaker_force_open: `breaker` is NULL");
        check(tw_breaker_disable(null(), null_mut()), "tw_breaker_disable: `breaker` is NULL");
        check(tw_breaker_reset(null(), null_mut()), "tw_breaker_reset: `breaker` is NULL");
        check(tw_breaker_layout(null_mut(), &mut size), "tw_breaker_layout: `size` is NULL");
        check(tw_breaker_layout(&mut size, null_mut()), "tw_breaker_layout: `align` is NULL");
        check(tw_breaker_init_in(null_mut(), 0, &c, &mut out_cb), "tw_breaker_init_in: `mem` is NULL");
        check(tw_breaker_init_in(mem, 0, null(), &mut out_cb), "tw_breaker_init_in: `config` is NULL");
        check(tw_breaker_init_in(mem, 0, &c, null_mut()), "tw_breaker_init_in: `out` is NULL");
        check(tw_breaker_attach(null_mut(), 0, &mut out_cb), "tw_breaker_attach: `mem` is NULL");
        check(tw_breaker_attach(mem, 0, null_mut()), "tw_breaker_attach: `out` is NULL");
        check(tw_breaker_open_in(null_mut(), 0, &c, &mut out_cb), "tw_breaker_open_in: `mem` is NULL");
    }
    // The breaker saw none of it.
    assert_eq!(state(b.0), tw_state::Closed);
    // SAFETY:
    // - NULL is allowed for these.
    unsafe {
        tw_breaker_free(null_mut());
        assert!(!tw_ticket_is_probe(null()));
    }
}

/// The transition a ticket's issue caused, or, when it caused none, the
/// state it was issued in: a plain ticket of a Closed breaker reads
/// Closed, a probe that changed nothing Half-Open.
#[test]
fn a_ticket_that_moved_nothing_repeats_the_state_it_was_issued_in() {
    let transition_of = |t: &tw_ticket| {
        let mut tr = tw_transition { changed: true, from: tw_state::Open, to: tw_state::Open, generation: 0 };
        // SAFETY:
        // - Both pointers are valid.
        assert_eq!(unsafe { tw_ticket_transition(t, &mut tr) }, tw_status::Ok);
        tr
    };
    let mut c = default_config();
    c.failure_threshold = 1;
    c.half_open_max = 2;
    c.open_timeout_ns = 1_000;
    let b = Owned::new(&c);
    let first = acquire_at(b.0, 10).unwrap();
    assert_eq!(
        transition_of(&first),
        tw_transition { changed: false, from: tw_state::Closed, to: tw_state::Closed, generation: 0 }
    );
    record_at(b.0, 10, first, tw_outcome::Failure);
    let p1 = acquire_at(b.0, 1_010).unwrap();
    assert!(transition_of(&p1).changed);
    let p2 = acquire_at(b.0, 1_010).unwrap();
    assert_eq!(
        transition_of(&p2),
        tw_transition { changed: false, from: tw_state::HalfOpen, to: tw_state::HalfOpen, generation: 2 }
    );
}

/// A rate passed as a double is compared exactly: 0.28 over a count
/// window of 25 trips at the 7th failure.
#[test]
fn a_failure_rate_trips_at_its_exact_count() {
    let mut c = default_config();
    c.failure_threshold = 0;
    c.failure_rate = 0.28;
    c.window_kind = tw_window_kind::Count as u32;
    c.count_window = 25;
    c.min_calls = 25;
    let b = Owned::new(&c);
    for _ in 0..18 {
        let t = acquire_at(b.0, 10).unwrap();
        assert!(!record_at(b.0, 10, t, tw_outcome::Success).changed);
    }
    let tripped_at = (1..=7).find(|_| {
        let t = acquire_at(b.0, 10).unwrap();
        record_at(b.0, 10, t, tw_outcome::Failure).changed
    });
    assert_eq!(tripped_at, Some(7));
    assert_eq!(state(b.0), tw_state::Open);
}

#[test]
fn trips_rejects_probes_and_closes_with_caller_timestamps() {
    let mut c = default_config();
    c.failure_threshold = 2;
    c.open_timeout_ns = 1_000;
    let b = Owned::new(&c);
    for _ in 0..2 {
        let t = acquire_at(b.0, 10).unwrap();
        assert!(!unsafe_is_probe(&t));
        let tr = record_at(b.0, 10, t, tw_outcome::Failure);
        assert_eq!(tr.changed, tr.to == tw_state::Open);
    }
    assert_eq!(state(b.0), tw_state::Open);
    let r = acquire_at(b.0, 400).unwrap_err();
    assert_eq!((r.state, r.retry_after_ns), (tw_state::Open, 610));

    let probe = acquire_at(b.0, 1_010).unwrap();
    assert!(unsafe_is_probe(&probe));
    assert_eq!(probe.generation, 2, "the ticket's generation field is the generation");
    let mut tr =
        tw_transition { changed: false, from: tw_state::Closed, to: tw_state::Closed, generation: 0 };
    // SAFETY:
    // - Both pointers are valid.
    assert_eq!(unsafe { tw_ticket_transition(&probe, &mut tr) }, tw_status::Ok);
    assert_eq!(
        tr,
        tw_transition { changed: true, from: tw_state::Open, to: tw_state::HalfOpen, generation: 2 }
    );
    // The only probe slot is taken.
    assert_eq!(acquire_at(b.0, 1_011).unwrap_err().state, tw_state::HalfOpen);
    let closed = record_at(b.0, 1_020, probe, tw_outcome::Success);
    assert_eq!(
        closed,
        tw_transition { changed: true, from: tw_state::HalfOpen, to: tw_state::Closed, generation: 3 }
    );

    let mut snap = core::mem::MaybeUninit::uninit();
    // SAFETY:
    // - `b` is live; `snap` is writable and written on OK.
    let snap: tw_snapshot = unsafe {
        assert_eq!(tw_breaker_snapshot(b.0, snap.as_mut_ptr()), tw_status::Ok);
        snap.assume_init()
    };
    assert_eq!(
        (snap.state, snap.generation, snap.successes, snap.failures, snap.rejected, snap.transitions),
        (tw_state::Closed, 3, 1, 2, 2, 3)
    );
}

fn unsafe_is_probe(t: &tw_ticket) -> bool {
    // SAFETY:
    // - `t` is readable.
    unsafe { tw_ticket_is_probe(t) }
}

#[test]
fn the_monotonic_clock_functions_work_and_unknown_outcomes_are_refused() {
    let b = Owned::new(&default_config());
    let mut t = tw_ticket { started_at: 0, generation: 0, flags: 0 };
    let mut tr = tw_transition { changed: true, from: tw_state::Open, to: tw_state::Open, generation: 9 };
    // SAFETY:
    // - `b` is live; the out-pointers are writable.
    unsafe {
        assert_eq!(tw_breaker_try_acquire(b.0, &mut t, null_mut()), tw_status::Ok);
        assert_eq!(tw_breaker_record(b.0, t, 3, &mut tr), tw_status::InvalidArgument);
        assert_eq!(last_error(), "tw_breaker_record: outcome = 3, expected a tw_outcome (0 to 2)");
        assert_eq!(tr.generation, 9, "not written on failure");
        assert_eq!(tw_breaker_record(b.0, t, tw_outcome::Ignored as u32, &mut tr), tw_status::Ok);
        assert_eq!(
            tr,
            tw_transition { changed: false, from: tw_state::Closed, to: tw_state::Closed, generation: 0 }
        );
        assert_eq!(tw_breaker_record(b.0, t, tw_outcome::Success as u32, null_mut()), tw_status::Ok);
    }
}

#[test]
fn a_ticket_recorded_twice_from_c_frees_one_probe_slot() {
    let mut c = default_config();
    c.failure_threshold = 1;
    c.open_timeout_ns = 1_000;
    c.half_open_max = 1;
    let b = Owned::new(&c);
    let t = acquire_at(b.0, 0).unwrap();
    record_at(b.0, 0, t, tw_outcome::Failure);
    let first = acquire_at(b.0, 1_000).unwrap();
    assert!(unsafe_is_probe(&first));
    record_at(b.0, 1_000, first, tw_outcome::Ignored);
    let second = acquire_at(b.0, 1_000).unwrap();
    // The C caller records the first probe's ticket again.
    let again = record_at(b.0, 1_000, first, tw_outcome::Ignored);
    assert!(!again.changed);
    assert_eq!(
        acquire_at(b.0, 1_000).unwrap_err().state,
        tw_state::HalfOpen,
        "the second probe holds the slot"
    );
    assert!(!record_at(b.0, 1_000, first, tw_outcome::Success).changed, "nor does a success count twice");
    assert!(record_at(b.0, 1_000, second, tw_outcome::Success).changed);
    assert_eq!(state(b.0), tw_state::Closed);
}

#[test]
fn a_timestamp_from_the_future_in_an_at_call_never_wedges_the_breaker() {
    let mut c = default_config();
    c.failure_threshold = 1;
    c.open_timeout_ns = 1_000;
    let b = Owned::new(&c);
    // One bogus timestamp trips the breaker (generation 1)...
    let t = acquire_at(b.0, u64::MAX - 7).unwrap();
    record_at(b.0, u64::MAX - 7, t, tw_outcome::Failure);
    // SAFETY:
    // - `b` is live; NULL transitions are allowed.
    unsafe { assert_eq!(tw_breaker_reset(b.0, null_mut()), tw_status::Ok) };
    // ...and after a reset, an honest trip in generation 3 (the same slot)
    // waits one cool-down from its own time.
    let t = acquire_at(b.0, 50_000).unwrap();
    record_at(b.0, 50_000, t, tw_outcome::Failure);
    let r = acquire_at(b.0, 50_400).unwrap_err();
    assert_eq!((r.state, r.retry_after_ns), (tw_state::Open, 600));
    assert!(unsafe_is_probe(&acquire_at(b.0, 51_000).unwrap()));
    // Without a reset: a trip stamped a day ahead is no wait for callers with the right time.
    let b = Owned::new(&c);
    let t = acquire_at(b.0, 86_400_000_000_000).unwrap();
    record_at(b.0, 86_400_000_000_000, t, tw_outcome::Failure);
    assert!(unsafe_is_probe(&acquire_at(b.0, 2_000).unwrap()));
}

#[test]
fn manual_modes_and_the_forced_open_retry_after() {
    let b = Owned::new(&default_config());
    let mut tr = core::mem::MaybeUninit::<tw_transition>::uninit();
    // SAFETY:
    // - `b` is live; `tr` is writable and written on OK.
    unsafe {
        assert_eq!(tw_breaker_force_open(b.0, tr.as_mut_ptr()), tw_status::Ok);
        assert_eq!(
            tr.assume_init(),
            tw_transition { changed: true, from: tw_state::Closed, to: tw_state::ForcedOpen, generation: 1 }
        );
    }
    let r = acquire_at(b.0, 0).unwrap_err();
    assert_eq!((r.state, r.retry_after_ns), (tw_state::ForcedOpen, u64::MAX));
    // SAFETY:
    // - `b` is live; NULL transitions are allowed.
    unsafe { assert_eq!(tw_breaker_disable(b.0, null_mut()), tw_status::Ok) };
    assert_eq!(state(b.0), tw_state::Disabled);
    for _ in 0..10 {
        let t = acquire_at(b.0, 0).unwrap();
        record_at(b.0, 0, t, tw_outcome::Failure);
    }
    assert_eq!(state(b.0), tw_state::Disabled, "a disabled breaker never trips");
    // SAFETY:
    // - As above.
    unsafe { assert_eq!(tw_breaker_reset(b.0, null_mut()), tw_status::Ok) };
    assert_eq!(state(b.0), tw_state::Closed);
}

#[test]
fn get_config_returns_the_effective_config() {
    let mut c = default_config();
    c.open_timeout_ns = 2_000;
    c.half_open_max = 4;
    c.half_open_successes = 3;
    let b = Owned::new(&c);
    let mut got = default_config();
    // SAFETY:
    // - `b` is live; `got` is writable.
    assert_eq!(unsafe { tw_breaker_get_config(b.0, &mut got) }, tw_status::Ok);
    // The zeros that mean "the default" read back as the defaults in force.
    let (probe_timeout_ns, max_hold_ns) = (60_000_000_000, 3_600_000_000_000);
    assert_eq!(got, tw_breaker_config { open_timeout_max_ns: 2_000, probe_timeout_ns, max_hold_ns, ..c });
}

/// Zeroed memory laid out for a shared region, freed on drop.
struct Region {
    ptr: *mut u8,
    layout: Layout,
}

impl Region {
    fn new() -> Self {
        let (mut size, mut align) = (0, 0);
        // SAFETY:
        // - Both out-pointers are writable.
        assert_eq!(unsafe { tw_breaker_layout(&mut size, &mut align) }, tw_status::Ok);
        assert!(align.is_power_of_two() && size >= 1024, "{size} {align}");
        let layout = Layout::from_size_align(size, align).unwrap();
        // SAFETY:
        // - The size is non-zero.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Region { ptr, layout }
    }

    fn mem(&self) -> *mut core::ffi::c_void {
        self.ptr.cast()
    }

    fn len(&self) -> usize {
        self.layout.size()
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY:
        // - Allocated in `new` with this layout; handles into it are not used after this.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

#[test]
fn shared_breakers_are_seen_through_every_handle_and_never_freed() {
    let region = Region::new();
    let mut c = default_config();
    c.failure_threshold = 1;
    let (mut first, mut second, mut third) = (null(), null(), null());
    // SAFETY:
    // - `region` is valid for `len` bytes and outlives the handles; only
    //   tripwire touches it. Out-pointers are writable.
    unsafe {
        assert_eq!(tw_breaker_attach(region.mem(), region.len(), &mut first), tw_status::RegionUninitialised);
        assert_eq!(tw_breaker_init_in(region.mem(), region.len(), &c, &mut first), tw_status::Ok);
        assert_eq!(
            tw_breaker_init_in(region.mem(), region.len(), &c, &mut second),
            tw_status::RegionAlreadyInitialised
        );
        assert_eq!(
            last_error(),
            "tw_breaker_init_in: shared region already holds a breaker: attach to it instead"
        );
        assert_eq!(tw_breaker_attach(region.mem(), region.len(), &mut second), tw_status::Ok);
        assert_eq!(tw_breaker_open_in(region.mem(), region.len(), &c, &mut third), tw_status::Ok);
        let other = default_config();
        let mut unused = null();
        assert_eq!(
            tw_breaker_open_in(region.mem(), region.len(), &other, &mut unused),
            tw_status::RegionConfigMismatch
        );
        assert!(unused.is_null());
    }
    let t = acquire_at(first, 1).unwrap();
    assert!(record_at(first, 1, t, tw_outcome::Failure).changed);
    assert_eq!(state(second), tw_state::Open);
    assert_eq!(state(third), tw_state::Open);
    // Freeing a shared handle is harmless: the breaker lives on.
    // SAFETY:
    // - A live handle; the shared breaker is not freed by this.
    unsafe { tw_breaker_free(first.cast_mut()) };
    assert_eq!(state(second), tw_state::Open);
}

/// `tw_breaker_init_in` takes only zero-filled memory: a region with a
/// byte set anywhere after the magic is refused with
/// `TW_STATUS_REGION_INVALID`, left as it was, and can be initialised
/// once zeroed.
#[test]
fn init_in_refuses_memory_that_is_not_zero_filled() {
    let region = Region::new();
    let c = default_config();
    let (size, _) = tripwire::shared::SharedRegion::layout();
    for at in [8, 100, tripwire::shared::SharedRegion::BREAKER_OFFSET, size - 1] {
        let mut out = null();
        // SAFETY:
        // - `region` is valid for `len >= size` bytes, and no handle into
        //   it is in use while its bytes are written here. `out` is writable.
        unsafe {
            region.ptr.add(at).write(0x42);
            assert_eq!(
                tw_breaker_init_in(region.mem(), region.len(), &c, &mut out),
                tw_status::RegionInvalid
            );
            assert_eq!(
                last_error(),
                format!(
                    "tw_breaker_init_in: shared region is not zero-filled (byte {at} is 0x42): \
                     init_in takes fresh, zero-filled memory"
                )
            );
            assert!(out.is_null());
            let bytes = core::slice::from_raw_parts(region.ptr, size);
            assert!(
                bytes.iter().enumerate().all(|(i, &b)| b == if i == at { 0x42 } else { 0 }),
                "left as it was"
            );
            assert_eq!(
                tw_breaker_attach(region.mem(), region.len(), &mut out),
                tw_status::RegionUninitialised
            );
            region.ptr.add(at).write(0);
        }
    }
    let mut out = null();
    // SAFETY:
    // - As above; zero-filled again.
    assert_eq!(unsafe { tw_breaker_init_in(region.mem(), region.len(), &c, &mut out) }, tw_status::Ok);
}

#[test]
fn bad_regions_are_refused_with_their_own_status() {
    let region = Region::new();
    let mut out = null();
    let c = default_config();
    // SAFETY:
    // - `region` is valid for `len` bytes; the misaligned and short views
    //   are refused before any access. Out-pointers are writable.
    unsafe {
        let odd = region.ptr.add(8).cast();
        assert_eq!(tw_breaker_init_in(odd, region.len() - 8, &c, &mut out), tw_status::RegionMisaligned);
        assert_eq!(tw_breaker_attach(region.mem(), 64, &mut out), tw_status::RegionTooSmall);
        assert!(last_error().starts_with("tw_breaker_attach: shared region of 64 bytes is too small"));
        region.ptr.write_bytes(0xA5, region.len());
        assert_eq!(tw_breaker_attach(region.mem(), region.len(), &mut out), tw_status::RegionInvalid);
        assert_eq!(tw_breaker_init_in(region.mem(), region.len(), &c, &mut out), tw_status::RegionInvalid);
        region.ptr.write_bytes(0, region.len());
        let mut bad = c;
        bad.half_open_max = 0;
        assert_eq!(tw_breaker_init_in(region.mem(), region.len(), &bad, &mut out), tw_status::InvalidConfig);
        assert_eq!(tw_breaker_init_in(region.mem(), region.len(), &c, &mut out), tw_status::Ok);
        // Another layout version.
        let version = region.ptr.add(8).cast::<u32>().read();
        region.ptr.add(8).cast::<u32>().write(99);
        assert_eq!(tw_breaker_attach(region.mem(), region.len(), &mut out), tw_status::RegionVersionMismatch);
        region.ptr.add(8).cast::<u32>().write(version);
        // A state word whose reserved bit is set.
        let (size, _) = tripwire::shared::SharedRegion::layout();
        assert!(size <= region.len());
        let word = region.ptr.add(tripwire::shared::SharedRegion::BREAKER_OFFSET).cast::<u64>();
        word.write(0b1000);
        assert_eq!(tw_breaker_attach(region.mem(), region.len(), &mut out), tw_status::RegionCorrupt);
        assert_eq!(last_error(), "tw_breaker_attach: shared region holds a state word that does not decode");
    }
}

#[test]
fn names_and_version_are_static_strings() {
    // SAFETY:
    // - Both return static NUL-terminated strings.
    unsafe {
        assert_eq!(
            CStr::from_ptr(tw_status_name(tw_status::RegionCorrupt as u32)).to_str(),
            Ok("TW_STATUS_REGION_CORRUPT")
        );
        assert_eq!(CStr::from_ptr(tw_version()).to_str(), Ok(env!("CARGO_PKG_VERSION")));
    }
}

#[test]
fn a_count_window_is_chosen_and_checked_through_the_c_config() {
    let mut c = default_config();
    assert_eq!((c.window_kind, c.count_window), (tw_window_kind::Time as u32, 0));
    c.failure_threshold = 0;
    c.failure_rate = 0.5;
    c.min_calls = 4;
    c.window_kind = tw_window_kind::Count as u32;
    c.count_window = 4;
    let b = Owned::new(&c);
    let mut got = default_config();
    // SAFETY:
    // - `b.0` is a live handle and `got` is writable.
    assert_eq!(unsafe { tw_breaker_get_config(b.0, &mut got) }, tw_status::Ok);
    assert_eq!((got.window_kind, got.count_window), (tw_window_kind::Count as u32, 4));
    // Hours apart: a count window does not care.
    let outcomes = [tw_outcome::Success, tw_outcome::Failure, tw_outcome::Success, tw_outcome::Failure];
    let mut last = None;
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let now = 1_000 + i as u64 * 3_600_000_000_000;
        let t = acquire_at(b.0, now).unwrap();
        last = Some(record_at(b.0, now, t, outcome));
    }
    let last = last.unwrap();
    assert!(last.changed && last.to == tw_state::Open, "half of the last 4 calls failed: {last:?}");

    type Breakage = fn(&mut tw_breaker_config);
    let cases: [(Breakage, &str); 4] = [
        (|c| c.window_kind = 7, "window_kind = 7, expected a tw_window_kind (0 to 1)"),
        (|c| c.count_window = 5, "count_window = 5, expected 0 with window_kind TW_WINDOW_KIND_TIME"),
        (|c| c.window_kind = tw_window_kind::Count as u32, "count_window = 0, expected 1 to 1000"),
        (
            |c| {
                c.failure_rate = 0.5;
                c.window_kind = tw_window_kind::Count as u32;
                c.count_window = 5;
            },
            "min_calls = 10, expected at most count_window (5)",
        ),
    ];
    for (break_it, want) in cases {
        let mut c = default_config();
        break_it(&mut c);
        // SAFETY:
        // - `c` is readable.
        assert_eq!(unsafe { tw_breaker_config_validate(&c) }, tw_status::InvalidConfig);
        let msg = last_error();
        assert_eq!(msg, format!("tw_breaker_config_validate: invalid breaker config: {want}"));
    }
}

#[test]
fn rolling_window_fields_reach_the_core() {
    let mut c = default_config();
    assert_eq!(
        (c.window_buckets, c.window_bucket_ns, c.min_calls, c.failure_rate, c.slow_call_ns, c.slow_rate),
        (10, 1_000_000_000, 10, 0.0, 0, 0.0)
    );
    c.failure_threshold = 0;
    c.failure_rate = 0.5;
    c.min_calls = 4;
    c.window_buckets = 4;
    let b = Owned::new(&c);
    let outcomes = [tw_outcome::Success, tw_outcome::Failure, tw_outcome::Success, tw_outcome::Failure];
    let mut last = None;
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let now = 1_000 + i as u64;
        let t = acquire_at(b.0, now).unwrap();
        last = Some(record_at(b.0, now, t, outcome));
    }
    let last = last.unwrap();
    assert!(last.changed && last.to == tw_state::Open, "half of 4 calls failed: {last:?}");

    type Breakage = fn(&mut tw_breaker_config);
    let cases: [(Breakage, &str); 3] = [
        (|c| c.window_buckets = 0, "window_buckets = 0, expected 1 to 32"),
        (|c| c.slow_rate = 0.5, "slow_rate = 0.5, expected"),
        (|c| c.failure_rate = 1.5, "failure_rate = 1.5, expected"),
    ];
    for (break_it, want) in cases {
        let mut c = default_config();
        break_it(&mut c);
        // SAFETY:
        // - `c` is readable.
        assert_eq!(unsafe { tw_breaker_config_validate(&c) }, tw_status::InvalidConfig);
        let msg = last_error();
        assert!(
            msg.starts_with(&format!("tw_breaker_config_validate: invalid breaker config: {want}")),
            "{msg}"
        );
    }
}

#[test]
fn probe_timeout_ns_and_max_hold_ns_are_honoured_and_named_in_errors() {
    let mut c = default_config();
    c.failure_threshold = 1;
    c.open_timeout_ns = 1_000;
    c.probe_timeout_ns = 10_000;
    c.max_hold_ns = 50_000;
    let b = Owned::new(&c);
    let t = acquire_at(b.0, 0).unwrap();
    record_at(b.0, 0, t, tw_outcome::Failure);
    let probe = acquire_at(b.0, 1_000).unwrap();
    // Past the cool-down, within the probe timeout: the probe keeps its slot.
    let refused = acquire_at(b.0, 5_000).unwrap_err();
    assert_eq!((refused.state, refused.retry_after_ns), (tw_state::HalfOpen, 6_000));
    let taker = acquire_at(b.0, 11_000).expect("lost after the probe timeout");
    assert_ne!(taker.generation, probe.generation);
    // A hold beyond max_hold_ns is cut to it.
    let mut left = 0;
    // SAFETY:
    // - `b` is live; NULL transitions are allowed; `left` is writable.
    unsafe {
        assert_eq!(tw_breaker_hold_for_at(b.0, 20_000, 1_000_000, null_mut()), tw_status::Ok);
        assert_eq!(tw_breaker_hold_left_at(b.0, 20_000, &mut left), tw_status::Ok);
    }
    assert_eq!(left, 50_000);

    for (field, set) in [
        (
            "probe_timeout_ns",
            (|c: &mut tw_breaker_config| c.probe_timeout_ns = 1) as fn(&mut tw_breaker_config),
        ),
        ("max_hold_ns", |c: &mut tw_breaker_config| c.max_hold_ns = u64::MAX),
    ] {
        let mut c = default_config();
        set(&mut c);
        // SAFETY:
        // - `c` is a readable config of this header's layout.
        assert_eq!(unsafe { tw_breaker_config_validate(&c) }, tw_status::InvalidConfig);
        let msg = last_error();
        assert!(
            msg.contains(&format!("{field} = ")) && msg.ends_with("expected 1000 to 604800000000000"),
            "{msg}"
        );
    }
}
