//! The fork handler watches a bounded number of cached clocks: one clock
//! too many is an error, not a clock that a forked child would freeze, and
//! a dropped clock gives its slot back. Alone in its binary, so that no
//! other test takes slots meanwhile.

use tripwire::clock::{CachedClock, UpkeepError};

#[test]
#[cfg_attr(miri, ignore = "64 upkeep threads are too slow under miri")]
fn one_clock_too_many_is_an_error_and_a_dropped_one_frees_its_slot() {
    let mut live = Vec::new();
    let err = loop {
        match CachedClock::start(CachedClock::MAX_PERIOD) {
            Ok(upkeep) => live.push(upkeep),
            Err(e) => break e,
        }
        assert!(live.len() <= 64, "more clocks than the fork handler watches");
    };
    assert!(matches!(err, UpkeepError::ForkGuard), "{err}");
    assert!(err.to_string().contains("more than 64"), "{err}");
    assert_eq!(live.len(), 64);
    live.pop();
    let again = CachedClock::start(CachedClock::MAX_PERIOD).expect("a dropped clock's slot is free again");
    assert!(again.clock().is_maintained());
}
