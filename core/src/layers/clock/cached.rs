//! A clock that costs one load: an upkeep thread reads `CLOCK_MONOTONIC`
//! once a period and publishes the reading into an atomic; [`Clock::now`]
//! loads it.
//!
//! # What a reading is
//! The published value is [`MonotonicClock`]'s reading, absolute
//! `CLOCK_MONOTONIC` nanoseconds, taken at most one period (plus the
//! upkeep thread's scheduling delay) ago. It is the same scale in every
//! process on a host, so a breaker in shared memory may be read through a
//! [`CachedClock`] in one process and a [`MonotonicClock`] in another: the
//! cached reading only lags.
//!
//! # Orderings
//! One atomic, the published nanoseconds, and nothing else travels with it:
//! every access is `Relaxed`, and every write is a `fetch_max`.
//! - Writes are `fetch_max`, so the location's modification order never
//!   decreases: a reading that is (for any reason) older than the one
//!   published loses, and [`UNMAINTAINED`], the largest value, is sticky
//!   once stored.
//! - Read-read coherence then gives monotonic readers with `Relaxed`
//!   loads: a load that happens after another load of the same location
//!   (same thread, or handed over through any synchronisation) never
//!   returns a value earlier in the modification order.
//! - The stop signal is the same location: the upkeep thread's own
//!   `fetch_max` is a read-modify-write, which always reads the latest
//!   value, so it sees [`UNMAINTAINED`] on its first tick after the stop;
//!   the unpark that follows the stop makes that tick come at once.

use core::fmt;
use core::time::Duration;
use std::sync::{Arc, Once, OnceLock};
use std::thread::{self, JoinHandle};

use crossbeam_utils::CachePadded;

use super::fork::{self, Slot};
use super::host::MonotonicClock;
use crate::clock::Clock;
use crate::sync::{AtomicU64, Ordering};

/// The cell's value when no upkeep thread maintains it (never started,
/// stopped, or lost in a `fork`): readers then read `CLOCK_MONOTONIC`
/// themselves. `u64::MAX` ns is 584 years of uptime, never a reading; as the
/// largest value, `fetch_max` keeps it once it is stored.
const UNMAINTAINED: u64 = u64::MAX;

/// The upkeep thread's name, as `top -H` and `/proc/<pid>/task/*/comm` show it.
const THREAD_NAME: &str = "tripwire-clock";

/// `CLOCK_MONOTONIC` as an upkeep thread last published it: [`Clock::now`]
/// is one load (and a compare), for the time-window success path and the
/// rejection path of a breaker.
///
/// Get the process-wide instance with [`CachedClock::global`] (its thread
/// starts on first use and publishes every
/// [`DEFAULT_PERIOD`](CachedClock::DEFAULT_PERIOD)), or one with
/// a period of your own with [`CachedClock::start`], whose [`Upkeep`]
/// stops the thread when dropped.
///
/// # Staleness
/// A reading is older than the true `CLOCK_MONOTONIC` by at most one period
/// plus the upkeep thread's scheduling delay. When that thread is starved
/// (CPU saturated, a cgroup's quota spent, the process stopped), the time
/// readers see stands still for as long, never goes back, and jumps
/// forward at the next tick. A breaker measures a cool-down, a hold or a
/// window bucket between two readings, each of which may lag: it ends
/// early by the first reading's lag or late by the second's, never by
/// more. Durations measured with it have the period's resolution, so a
/// slow-call threshold below a few periods wants [`MonotonicClock`].
/// `cargo run --release -p tripwire-benches --example clock_lag` measures
/// the lag on a given machine.
///
/// Before the first tick a reader gets the reading taken when the clock was
/// made, never 0 (which the core reads as "not measured"). Once no thread
/// maintains the clock (its [`Upkeep`] dropped, the thread could not be
/// spawned, or in the child of a `fork`, which inherits no threads), every
/// [`now`](Clock::now) reads `CLOCK_MONOTONIC` itself: slower, still
/// monotonic, and never frozen.
///
/// # Next to quanta's `Clock::recent`
/// quanta publishes its own scale (the TSC scaled by a calibration each
/// process makes, or the OS clock), with one upkeep thread per process;
/// its readings cannot be mixed with [`MonotonicClock`]'s on one breaker
/// nor compared between processes sharing one. This clock publishes
/// `CLOCK_MONOTONIC` itself, so its readings are [`MonotonicClock`]'s, only
/// older; any number of instances may run, and one that is stopped reads
/// the clock instead of returning its last value.
///
/// # Examples
/// ```
/// use tripwire::clock::CachedClock;
/// use tripwire::{Breaker, BreakerConfig, Clock, NamedBreaker};
/// let clock = CachedClock::global();
/// assert_ne!(clock.now(), 0);
/// let breaker = Breaker::new(BreakerConfig::default());
/// assert!(breaker.try_acquire(clock).is_ok());
/// // A `&'static CachedClock` is a clock for the std layer too.
/// let named = NamedBreaker::with_clock("exchange/orders", BreakerConfig::default(), clock);
/// assert_ne!(named.clock().now(), 0);
/// ```
///
/// # Size and alignment
/// One `AtomicU64` on a cache line of its own (`CachePadded`), so that
/// writes to neighbouring data never evict the readers' copy; the upkeep
/// thread's write, once a period, is the only one that does.
#[derive(Debug)]
pub struct CachedClock {
    nanos: CachePadded<AtomicU64>,
}

impl CachedClock {
    /// The period of [`CachedClock::global`]'s upkeep thread, and a
    /// sensible one for [`CachedClock::start`].
    pub const DEFAULT_PERIOD: Duration = Duration::from_millis(1);
    /// The shortest period [`CachedClock::start`] accepts: below it the
    /// thread would be a busy loop (Linux's default timer slack is 50 µs).
    pub const MIN_PERIOD: Duration = Duration::from_micros(10);
    /// The longest period [`CachedClock::start`] accepts: a clock that lags
    /// by more than a second would move cool-downs and windows by as much.
    pub const MAX_PERIOD: Duration = Duration::from_secs(1);

    /// A clock that reads `ns` until an upkeep thread publishes later.
    fn with_reading(ns: u64) -> Self {
        Self { nanos: CachePadded::new(AtomicU64::new(ns)) }
    }

    /// The process-wide cached clock, publishing every
    /// [`DEFAULT_PERIOD`](Self::DEFAULT_PERIOD); its upkeep thread starts
    /// on the first call and runs until the process ends (it never keeps
    /// the process alive: Rust does not wait for other threads when `main`
    /// returns). Cheap to call again, but keep the reference on hot paths.
    ///
    /// If the thread cannot be spawned, and in the child of a `fork`, the
    /// clock is not maintained and reads `CLOCK_MONOTONIC` on every call
    /// ([`is_maintained`](Self::is_maintained) says which); start a clock
    /// of the child's own with [`CachedClock::start`].
    pub fn global() -> &'static CachedClock {
        static GLOBAL: OnceLock<CachedClock> = OnceLock::new();
        static UPKEEP: Once = Once::new();
        let clock = GLOBAL.get_or_init(|| CachedClock::with_reading(MonotonicClock.now()));
        UPKEEP.call_once(|| {
            // Without the fork handler, a forked child would read a time
            // standing still: then no thread is started at all, and the
            // clock reads CLOCK_MONOTONIC on every call. The global clock
            // is never freed, so its slot is never released.
            let spawned = fork::watch(clock).is_some()
                && thread::Builder::new()
                    .name(THREAD_NAME.into())
                    .spawn(move || upkeep(clock, CachedClock::DEFAULT_PERIOD))
                    .is_ok();
            if !spawned {
                clock.stop();
            }
        });
        clock
    }

    /// A cached clock of its own, published every `period` by a new thread
    /// until the returned [`Upkeep`] is dropped. The clock reads a real
    /// time from the start: the first reading is taken before this returns.
    ///
    /// # Errors
    /// [`UpkeepError::Period`] if `period` is outside
    /// [`MIN_PERIOD`](Self::MIN_PERIOD)`..=`[`MAX_PERIOD`](Self::MAX_PERIOD);
    /// [`UpkeepError::Spawn`] if the OS refuses the thread;
    /// [`UpkeepError::ForkGuard`] if a forked child could not be made to
    /// stop it (more than 64 cached clocks live at once).
    ///
    /// # Examples
    /// ```
    /// use core::time::Duration;
    /// use tripwire::clock::CachedClock;
    /// use tripwire::Clock;
    /// let upkeep = CachedClock::start(Duration::from_millis(2)).unwrap();
    /// let clock = upkeep.clock().clone(); // for other threads, or a breaker
    /// assert!(clock.is_maintained());
    /// let breaker = tripwire::NamedBreaker::with_clock("feed", Default::default(), clock.clone());
    /// assert!(breaker.try_acquire().is_ok());
    /// drop(upkeep);
    /// assert!(!clock.is_maintained()); // reads CLOCK_MONOTONIC from now on
    /// assert_ne!(clock.now(), 0);
    /// ```
    pub fn start(period: Duration) -> Result<Upkeep, UpkeepError> {
        if !(Self::MIN_PERIOD..=Self::MAX_PERIOD).contains(&period) {
            return Err(UpkeepError::Period(period));
        }
        let clock = Arc::new(CachedClock::with_reading(MonotonicClock.now()));
        let slot = fork::watch(&clock).ok_or(UpkeepError::ForkGuard)?;
        let theirs = Arc::clone(&clock);
        match thread::Builder::new().name(THREAD_NAME.into()).spawn(move || upkeep(&theirs, period)) {
            Ok(thread) => {
                Ok(Upkeep { clock, thread: Some(thread), slot: Some(slot), period, forks: fork::forks() })
            }
            Err(e) => {
                slot.release();
                Err(UpkeepError::Spawn(e))
            }
        }
    }

    /// Whether an upkeep thread publishes into this clock; if not, every
    /// [`now`](Clock::now) reads `CLOCK_MONOTONIC` itself.
    pub fn is_maintained(&self) -> bool {
        // Relaxed: a report on this one location, which orders nothing else.
        self.nanos.load(Ordering::Relaxed) != UNMAINTAINED
    }

    /// Publishes `reading` unless a later one is there; `false` once the
    /// clock is stopped, which tells the upkeep thread to end.
    fn publish(&self, reading: u64) -> bool {
        // Relaxed: see the module's "Orderings"; `fetch_max` keeps the
        // published time from going back and the stop sticky.
        self.nanos.fetch_max(reading, Ordering::Relaxed) != UNMAINTAINED
    }

    /// Hands the clock over to `CLOCK_MONOTONIC` for good. Async-signal-safe
    /// (one atomic read-modify-write), for a forked child's handler.
    pub(super) fn stop(&self) {
        // Relaxed: see the module's "Orderings". `fetch_max`, not a store:
        // the largest value, so no later `publish` can take its place.
        self.nanos.fetch_max(UNMAINTAINED, Ordering::Relaxed);
    }
}

impl Clock for CachedClock {
    #[inline]
    fn now(&self) -> u64 {
        // Relaxed: the time carries no other data with it, and a later
        // load never returns an earlier value (module doc, "Orderings").
        let ns = self.nanos.load(Ordering::Relaxed);
        if ns != UNMAINTAINED { ns } else { unmaintained_now() }
    }
}

/// A shared clock of [`CachedClock::start`]'s, for a breaker or pipeline
/// that owns its clock: one more load, of the `Arc`'s pointer.
impl Clock for Arc<CachedClock> {
    #[inline]
    fn now(&self) -> u64 {
        (**self).now()
    }
}

/// A fresh reading for a clock nobody maintains: `CLOCK_MONOTONIC` is later
/// than anything it published before, so readers still never go back.
#[cold]
#[inline(never)]
fn unmaintained_now() -> u64 {
    MonotonicClock.now()
}

/// The upkeep thread: one `CLOCK_MONOTONIC` read and one `fetch_max` a
/// period, until the clock is stopped. Nothing here should panic; if it
/// ever did, the guard still hands the clock to `CLOCK_MONOTONIC`, so that
/// a thread that is gone never leaves a time standing still.
fn upkeep(clock: &CachedClock, period: Duration) {
    struct StopOnExit<'a>(&'a CachedClock);
    impl Drop for StopOnExit<'_> {
        fn drop(&mut self) {
            self.0.stop();
        }
    }
    let _guard = StopOnExit(clock);
    loop {
        // Wakes early on `unpark` (a stop) or spuriously; either way one
        // more reading is harmless.
        thread::park_timeout(period);
        if !clock.publish(MonotonicClock.now()) {
            return;
        }
    }
}

/// The upkeep thread of a [`CachedClock`] made by [`CachedClock::start`]:
/// dropping it stops the thread (and waits for it to end), after which the
/// clock reads `CLOCK_MONOTONIC` on every call. Reads the clock too.
pub struct Upkeep {
    clock: Arc<CachedClock>,
    thread: Option<JoinHandle<()>>,
    /// Released in `drop`, before this `Arc` of the clock goes.
    slot: Option<Slot>,
    period: Duration,
    /// `fork::forks()` when the thread started: if it differs at the drop,
    /// this is a forked child, and the thread stayed in the parent.
    forks: u64,
}

impl Upkeep {
    /// The clock this thread publishes into; clone the `Arc` to read it
    /// from other threads or to keep it past the [`Upkeep`].
    pub fn clock(&self) -> &Arc<CachedClock> {
        &self.clock
    }

    /// The period between two readings.
    pub fn period(&self) -> Duration {
        self.period
    }
}

impl Clock for Upkeep {
    #[inline]
    fn now(&self) -> u64 {
        self.clock.now()
    }
}

impl fmt::Debug for Upkeep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upkeep").field("clock", &self.clock).field("period", &self.period).finish()
    }
}

impl Drop for Upkeep {
    fn drop(&mut self) {
        self.clock.stop();
        if let Some(thread) = self.thread.take() {
            if fork::forks() != self.forks {
                // A forked child: the thread is in the parent, where its own
                // Upkeep stops it. Joining here would wait forever, and
                // detaching would touch a thread this process does not have.
                core::mem::forget(thread);
            } else {
                thread.thread().unpark();
                // The thread cannot panic; an `Err` would be nothing to act on.
                let _ = thread.join();
            }
        }
        // Before the fields drop: `self.clock` may be the last `Arc`.
        if let Some(slot) = self.slot.take() {
            slot.release();
        }
    }
}

/// Why [`CachedClock::start`] made no clock.
#[derive(Debug)]
#[non_exhaustive]
pub enum UpkeepError {
    /// The period is outside `CachedClock::MIN_PERIOD..=CachedClock::MAX_PERIOD`.
    Period(Duration),
    /// The OS refused to spawn the upkeep thread.
    Spawn(std::io::Error),
    /// No way to stop the clock in a forked child: more cached clocks live
    /// at once than the fork handler watches (64, the global one
    /// included), or the OS refused the handler.
    ForkGuard,
}

impl fmt::Display for UpkeepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Period(p) => write!(
                f,
                "cached clock period {p:?} is outside {:?}..={:?}",
                CachedClock::MIN_PERIOD,
                CachedClock::MAX_PERIOD
            ),
            Self::Spawn(e) => write!(f, "cannot spawn the cached clock's upkeep thread: {e}"),
            Self::ForkGuard => write!(
                f,
                "cannot watch the cached clock for a fork: more than {} live at once, or pthread_atfork failed",
                fork::SLOTS
            ),
        }
    }
}

impl core::error::Error for UpkeepError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Self::Period(_) | Self::ForkGuard => None,
            Self::Spawn(e) => Some(e),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn published_time_never_goes_back_and_the_stop_is_sticky() {
        let clock = CachedClock::with_reading(100);
        assert!(clock.publish(50));
        assert_eq!(clock.now(), 100, "an older reading must not replace a newer one");
        assert!(clock.publish(150));
        assert_eq!(clock.now(), 150);
        clock.stop();
        assert!(!clock.publish(200), "the upkeep thread must learn of the stop");
        assert!(!clock.is_maintained(), "a publish after the stop must not revive a frozen clock");
        // Unmaintained: a fresh CLOCK_MONOTONIC reading, later than anything published.
        let (before, got, after) = (MonotonicClock.now(), clock.now(), MonotonicClock.now());
        assert!(before <= got && got <= after, "{before} <= {got} <= {after}");
    }

    #[test]
    fn bad_periods_are_errors() {
        for period in [Duration::ZERO, Duration::from_micros(9), Duration::from_millis(1001), Duration::MAX] {
            let err = CachedClock::start(period).unwrap_err();
            assert!(matches!(err, UpkeepError::Period(p) if p == period), "{err}");
            assert!(err.to_string().contains("outside"), "{err}");
        }
        for period in [CachedClock::MIN_PERIOD, CachedClock::MAX_PERIOD] {
            assert_eq!(CachedClock::start(period).unwrap().period(), period);
        }
    }
}
