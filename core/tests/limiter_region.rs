//! A rate limiter in a shared region: two views of one region spend one
//! budget, and attaching refuses every garbage, truncated or foreign
//! region with an error naming the field, never undefined behaviour or a
//! panic; garbage words only ever delay calls, by at most two periods.
//! Runs under miri, which checks the "never undefined behaviour".

use core::time::Duration;

use region::Mem;
use tripwire::ManualClock;
use tripwire::limiter::{LimitConfig, SharedRateLimiter};
use tripwire::shared::{
    RegionError as E, RegionKind, SharedBulkheadRegion, SharedRateLimiterRegion as Region,
};

mod region;

/// The rate limiter region's functions on test memory.
trait Limiters {
    fn open<const N: usize>(&self, configs: [LimitConfig; N]) -> Result<SharedRateLimiter<'_, N>, E>;
    fn attach<const N: usize>(&self) -> Result<SharedRateLimiter<'_, N>, E>;
}

impl Limiters for Mem {
    fn open<const N: usize>(&self, configs: [LimitConfig; N]) -> Result<SharedRateLimiter<'_, N>, E> {
        // SAFETY:
        // - `ptr` is valid for `len` bytes for as long as `self`, which the
        //   limiter borrows; only the region's functions touch it.
        unsafe { Region::open_in(self.ptr, self.len(), configs) }
    }

    fn attach<const N: usize>(&self) -> Result<SharedRateLimiter<'_, N>, E> {
        // SAFETY:
        // - As in `open`.
        unsafe { Region::attach::<N>(self.ptr, self.len()) }
    }
}

fn weight() -> LimitConfig {
    LimitConfig::builder(1_200, Duration::from_secs(60)).build().unwrap()
}

fn orders() -> LimitConfig {
    LimitConfig::builder(50, Duration::from_secs(10)).build().unwrap()
}

/// A region of two limits, initialised.
fn two() -> Mem {
    let mem = Mem::new(Region::size_for(2).unwrap());
    mem.open([weight(), orders()]).unwrap();
    mem
}

#[test]
fn two_views_of_one_region_spend_one_budget_all_or_nothing() {
    let mem = Mem::new(Region::size_for(2).unwrap());
    let (a, b) = (mem.open([weight(), orders()]).unwrap(), mem.open([weight(), orders()]).unwrap());
    let clock = ManualClock::new(5);
    // The orders' burst of 2, spent from both views.
    assert!(a.try_acquire([1, 1], &clock).is_ok());
    assert!(b.try_acquire([1, 1], &clock).is_ok());
    assert!(a.try_acquire([1, 1], &clock).is_err());
    assert_eq!(b.in_use(&clock), [2, 2], "the refused request took no weight");
    assert!(b.observe_used(0, 1_000, &clock));
    assert_eq!(a.in_use(&clock), [1_000, 2]);
    assert_eq!(a.configs(), [weight(), orders()]);
}

#[test]
fn open_in_refuses_other_limits_and_another_number_of_them() {
    let mem = two();
    assert_eq!(mem.open([weight(), weight()]).unwrap_err(), E::LimitMismatch { index: 1 });
    let err = mem.attach::<1>().unwrap_err();
    assert_eq!(err, E::LimitCount { found: 2, wanted: 1 });
    assert_eq!(err.to_string(), "shared rate limiter region holds `limits` = 2, not the 1 asked for");
    let none = Mem::new(64);
    let err = none.open::<0>([]).unwrap_err();
    assert_eq!(err.to_string(), "shared rate limiter region: 0 limits asked for, expected 1 to 16");
}

#[test]
fn a_region_of_another_kind_or_too_short_is_refused() {
    let mem = two();
    // SAFETY:
    // - As in `Mem::open`: the region's functions alone touch the memory.
    let err = unsafe { SharedBulkheadRegion::attach(mem.ptr, mem.len()) }.unwrap_err();
    assert_eq!(err, E::WrongKind { kind: RegionKind::Bulkhead, found: RegionKind::RateLimiter });
    let short = Mem::new(Region::size_for(1).unwrap());
    assert!(matches!(short.open([weight(), orders()]), Err(E::TooSmall { .. })));
    // Too short for two limits, but holding one: that is the error.
    short.open([weight()]).unwrap();
    assert_eq!(short.open([weight(), orders()]).unwrap_err(), E::LimitCount { found: 1, wanted: 2 });
    let fresh = Mem::new(Region::size_for(1).unwrap());
    assert!(matches!(fresh.attach::<1>(), Err(E::Uninitialised { kind: RegionKind::RateLimiter })));
}

#[test]
fn a_garbage_header_or_config_names_its_field() {
    let mut mem = two();
    mem.poke(24, &7u64.to_ne_bytes());
    assert_eq!(
        mem.attach::<2>().unwrap_err().to_string(),
        "shared rate limiter region `reserved` = 7, expected 0"
    );
    mem.poke(24, &0u64.to_ne_bytes());
    mem.poke(16, &1u64.to_ne_bytes());
    assert!(matches!(mem.attach::<2>(), Err(E::LimiterSize { size: 1, needed: 96 })));
    mem.poke(16, &96u64.to_ne_bytes());
    // Limit 1's units: 1, which no limit may have.
    mem.poke(32 + 16, &1u32.to_ne_bytes());
    let err = mem.attach::<2>().unwrap_err();
    assert!(matches!(err, E::BadLimit { index: 1, .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "shared rate limiter region `limit[1]`: invalid rate limit config: units = 1, expected 2 to 1000000000"
    );
    mem.poke(32 + 16, &50u32.to_ne_bytes());
    assert!(mem.attach::<2>().is_ok());
}

#[test]
fn garbage_words_only_delay_and_never_past_two_periods() {
    let patterns: [u64; 6] = [0, 1, u64::MAX, 1 << 63, (1 << 63) | 12345, 0x5555_5555_5555_5555];
    let pairs = patterns.iter().flat_map(|&tat| patterns.map(move |floor| (tat, floor)));
    // Under miri, 12 of the 36 pairs: each pattern in each word, with two
    // patterns in the other.
    for (_, (tat, floor)) in pairs.enumerate().filter(|(i, _)| !cfg!(miri) || (i / 6 + i % 6) % 3 == 0) {
        let mut mem = two();
        // Limit 0's words.
        mem.poke(32 + 32, &tat.to_ne_bytes());
        mem.poke(32 + 40, &floor.to_ne_bytes());
        let limiter = mem.attach::<2>().unwrap();
        let clock = ManualClock::new(1_000_000_000);
        let limit = limiter.configs()[0];
        let wait = limiter.wait_for([1, 0], &clock).unwrap();
        assert!(wait <= 2 * limit.max_wait() + limit.emission_interval(), "{tat:#x}/{floor:#x}: {wait:?}");
        // Never more than the burst at once.
        let burst = limit.burst();
        let taken = (0..=burst).filter(|_| limiter.try_acquire([1, 0], &clock).is_ok()).count();
        assert!(taken <= burst as usize, "{tat:#x}/{floor:#x}: {taken}");
    }
}
