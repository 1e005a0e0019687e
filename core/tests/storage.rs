//! A breaker's storage: what each one costs in memory, which configs each
//! refuses and how it says so. That each storage behaves like the default
//! for the configs it runs is checked where the behaviour is: model.rs
//! (consecutive failures, on `NoWindow`) and window.rs (each kind of
//! window on its own storage).

use core::mem::size_of;
use core::time::Duration;

use tripwire::breaker::{AnyWindow, CountOnly, NoWindow, TimeOnly, Windows};
use tripwire::clock::FixedClock;
use tripwire::{Breaker, BreakerConfig, ConfigError, Outcome, State};

fn consecutive() -> BreakerConfig {
    BreakerConfig::builder().failure_threshold(2).build().unwrap()
}

fn time_rate() -> BreakerConfig {
    BreakerConfig::builder().failure_threshold(0).failure_rate(0.5).build().unwrap()
}

fn count_rate() -> BreakerConfig {
    BreakerConfig::builder().failure_threshold(0).failure_rate(0.5).count_window(20).build().unwrap()
}

fn slow_rate() -> BreakerConfig {
    BreakerConfig::builder().slow_call(Duration::from_secs(1)).slow_rate(0.5).build().unwrap()
}

fn refusal<W: Windows>(config: BreakerConfig) -> ConfigError {
    Breaker::<W>::try_new(config).expect_err("a window this storage does not keep")
}

#[test]
fn a_breaker_without_a_window_fits_in_a_kibibyte() {
    assert!(size_of::<Breaker<NoWindow>>() <= 1024, "{}", size_of::<Breaker<NoWindow>>());
    // 10,000 of them, a breaker per endpoint or symbol, in under 16 MiB.
    assert!(10_000 * size_of::<Breaker<NoWindow>>() <= 16 << 20);
}

#[test]
fn a_storage_with_one_kind_of_window_is_smaller_than_the_default() {
    let default = size_of::<Breaker>();
    assert_eq!(default, size_of::<Breaker<AnyWindow>>());
    assert!(size_of::<Breaker<TimeOnly>>() < default);
    assert!(size_of::<Breaker<CountOnly>>() < default);
    assert!(size_of::<Breaker<NoWindow>>() < size_of::<Breaker<CountOnly>>());
}

#[test]
fn a_breaker_without_a_window_refuses_a_rate_condition_by_name() {
    let err = refusal::<NoWindow>(time_rate());
    assert_eq!((err.config(), err.field()), ("breaker", "failure_rate"));
    assert_eq!(
        err.to_string(),
        "invalid breaker config: failure_rate = 0.5, expected 0 (off), as a Breaker<NoWindow> keeps no rolling window"
    );
    assert_eq!(refusal::<NoWindow>(count_rate()).field(), "failure_rate");
    assert_eq!(
        refusal::<NoWindow>(slow_rate()).to_string(),
        "invalid breaker config: slow_rate = 0.5, expected 0 (off), as a Breaker<NoWindow> keeps no rolling window"
    );
}

#[test]
fn a_storage_with_one_kind_refuses_the_other() {
    assert_eq!(
        refusal::<TimeOnly>(count_rate()).to_string(),
        "invalid breaker config: count_window = 20, expected a time window (count_window unset), as a \
         Breaker<TimeOnly> keeps no count window"
    );
    assert_eq!(
        refusal::<CountOnly>(time_rate()).to_string(),
        "invalid breaker config: count_window = 0, expected a count window (count_window set), as a \
         Breaker<CountOnly> keeps no time window"
    );
    assert_eq!(refusal::<CountOnly>(slow_rate()).field(), "count_window");
}

#[test]
fn each_storage_runs_the_configs_it_keeps_a_window_for() {
    for config in [consecutive(), time_rate(), count_rate(), slow_rate()] {
        assert!(Breaker::<AnyWindow>::try_new(config).is_ok(), "{config:?}");
    }
    for config in [consecutive(), time_rate(), slow_rate()] {
        assert!(Breaker::<TimeOnly>::try_new(config).is_ok(), "{config:?}");
    }
    for config in [consecutive(), count_rate()] {
        assert!(Breaker::<CountOnly>::try_new(config).is_ok(), "{config:?}");
    }
    assert!(Breaker::<NoWindow>::try_new(consecutive()).is_ok());
    // A count window set but no rate asks for no window at all.
    let unused = BreakerConfig::builder().count_window(20).build().unwrap();
    assert!(Breaker::<NoWindow>::try_new(unused).is_ok());
    assert!(Breaker::<TimeOnly>::try_new(unused).is_ok());
}

#[test]
fn a_breaker_without_a_window_trips_counts_and_recovers_through_a_permit() {
    let breaker: Breaker<NoWindow> = Breaker::try_new(consecutive()).unwrap();
    let clock = FixedClock(5);
    breaker.permit(&clock).unwrap().success();
    for _ in 0..2 {
        breaker.permit(&clock).unwrap().failure();
    }
    assert_eq!(breaker.state(), State::Open);
    assert!(breaker.try_acquire(&clock).is_err());
    breaker.reset();
    let ticket = breaker.try_acquire(&clock).unwrap();
    breaker.record(ticket, Outcome::Ignored, &clock);
    let s = breaker.snapshot();
    assert_eq!((s.successes, s.failures, s.ignored, s.rejected, s.transitions), (1, 2, 1, 1, 2));
}
