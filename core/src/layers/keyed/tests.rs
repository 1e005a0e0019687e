use std::string::{String, ToString};
use std::sync::Arc;
use std::thread;
use std::vec::Vec;

use super::*;
use crate::breaker::{NoWindow, Windows};
use crate::clock::ManualClock;

type Clk = &'static ManualClock;

/// A clock the test and the map share.
fn clock(at: u64) -> Clk {
    std::boxed::Box::leak(std::boxed::Box::new(ManualClock::new(at)))
}

fn trips_on_one() -> BreakerConfig {
    BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_secs(30)).build().unwrap()
}

fn map(capacity: usize, idle: Duration) -> Breakers<String, Clk> {
    Breakers::<String>::builder("m", trips_on_one())
        .capacity(capacity)
        .idle_after(idle)
        .clock(clock(0))
        .build()
        .unwrap()
}

fn fail(m: &Breakers<String, Clk>, key: &str) {
    let _ = m.call(key, || Err::<(), _>("down"));
}

fn state(m: &Breakers<String, Clk>, key: &str) -> State {
    m.with(key, |b| b.state())
}

#[test]
fn each_key_has_its_own_breaker_named_after_it() {
    let m = map(10, Duration::from_secs(60));
    fail(&m, "a");
    assert_eq!(state(&m, "a"), State::Open);
    assert_eq!(state(&m, "b"), State::Closed);
    assert_eq!(m.with("a", |b| b.name().to_string()), "m/a");
    assert_eq!(m.len(), 2);
    assert!(Arc::ptr_eq(&m.get("a"), &m.get("a")), "one breaker per key");
    assert_eq!(m.counts(), KeyedCounts { live: 2, created: 2, evicted: 0, overflow_calls: 0 });
}

#[test]
fn a_full_map_sends_new_keys_to_the_overflow_breaker() {
    let m = map(2, Duration::from_secs(60));
    fail(&m, "a");
    let _ = m.call("b", || Ok::<_, ()>(()));
    // "c" and "d" share the overflow breaker: one failure opens it for both.
    fail(&m, "c");
    assert_eq!(state(&m, "d"), State::Open);
    assert_eq!(m.with("d", |b| b.name().to_string()), "m/(overflow)");
    assert_eq!(m.len(), 2);
    // Every lookup counts: the failure, and the two looks at "d".
    assert_eq!(m.counts().overflow_calls, 3);
    // The keys that have breakers keep theirs.
    assert_eq!(state(&m, "a"), State::Open);
    assert_eq!(state(&m, "b"), State::Closed);
    assert!(m.contains_key("a") && m.contains_key("b"));
    assert!(!m.contains_key("d"), "an overflowed key has no breaker of its own");
}

#[test]
fn asking_for_a_key_makes_nothing_and_keeps_nothing_alive() {
    let idle = Duration::from_millis(1);
    let m = map(4, idle);
    assert!(!m.contains_key("a"));
    assert_eq!((m.len(), m.counts().created), (0, 0), "asking made no breaker");
    let _ = m.call("a", || Ok::<_, ()>(()));
    assert!(m.contains_key("a"));
    // Asked every period, "a" is still evicted once it idles.
    for _ in 0..2 {
        m.clock.advance(idle);
        assert!(m.contains_key("a"));
        m.evict_idle();
    }
    assert!(!m.contains_key("a"), "evicted: {:?}", m.counts());
    assert_eq!(m.counts().evicted, 1);
}

#[test]
fn a_breaker_unused_for_a_whole_period_is_evicted_and_a_used_one_is_not() {
    let idle = Duration::from_secs(60);
    let m = map(10, idle);
    let _ = m.call("idle", || Ok::<_, ()>(()));
    let _ = m.call("busy", || Ok::<_, ()>(()));
    // Period 1 ends: nothing is evicted yet (both were used in it).
    m.clock.advance(idle);
    assert_eq!(m.evict_idle(), 0);
    let _ = m.call("busy", || Ok::<_, ()>(()));
    assert_eq!(m.last_used(&"busy".to_string()), Some(2));
    // Period 2 ends: "idle" was not used in it.
    m.clock.advance(idle);
    assert_eq!(m.evict_idle(), 1);
    assert_eq!(m.len(), 1);
    assert_eq!(m.last_used(&"idle".to_string()), None);
    assert_eq!(m.counts().evicted, 1);
    // Before a whole period has passed, no sweep runs.
    m.clock.advance(idle - Duration::from_nanos(1));
    assert_eq!(m.evict_idle(), 0);
    // A key evicted comes back with a new, Closed breaker.
    let _ = m.call("idle", || Ok::<_, ()>(()));
    assert_eq!(m.len(), 2);
    assert_eq!(m.counts().created, 3);
}

#[test]
fn an_open_breaker_is_kept_however_long_it_idles() {
    let idle = Duration::from_secs(60);
    let m = map(10, idle);
    fail(&m, "down");
    for _ in 0..5 {
        m.clock.advance(idle);
        assert_eq!(m.evict_idle(), 0);
    }
    assert_eq!(state(&m, "down"), State::Open, "the outage is remembered");
}

#[test]
fn a_new_key_runs_the_sweep_that_is_due_and_takes_the_room_it_makes() {
    let idle = Duration::from_secs(60);
    let m = map(1, idle);
    let _ = m.call("old", || Ok::<_, ()>(()));
    m.clock.advance(2 * idle);
    // The sweep due by then evicts "old" (unused for a whole period)...
    // (the first sweep only ends period 1, in which "old" was used)
    let _ = m.call("new", || Ok::<_, ()>(()));
    assert_eq!(
        m.with("new", |b| b.name().to_string()),
        "m/(overflow)",
        "one sweep: old was used in period 1"
    );
    m.clock.advance(idle);
    let _ = m.call("new", || Ok::<_, ()>(()));
    assert_eq!(m.with("new", |b| b.name().to_string()), "m/new");
    assert_eq!(m.len(), 1);
}

/// A clock that breaks `Clock`'s rule and jumps back when told to, as a
/// hostile or broken one would (`ManualClock` only goes forward).
#[derive(Clone, Copy)]
struct Jumpy(&'static core::sync::atomic::AtomicU64);

impl Jumpy {
    fn at(ns: u64) -> Self {
        Jumpy(std::boxed::Box::leak(std::boxed::Box::new(core::sync::atomic::AtomicU64::new(ns))))
    }

    fn set(&self, ns: u64) {
        self.0.store(ns, core::sync::atomic::Ordering::Relaxed);
    }
}

impl Clock for Jumpy {
    fn now(&self) -> u64 {
        self.0.load(core::sync::atomic::Ordering::Relaxed)
    }
}

/// A map on a jumping clock near `u64::MAX`, its key "a" used once.
fn used_near_the_clock_s_end(idle: Duration) -> Breakers<String, Jumpy> {
    let m = Breakers::<String>::builder("m", trips_on_one())
        .idle_after(idle)
        .clock(Jumpy::at(u64::MAX - 10))
        .build()
        .unwrap();
    let _ = m.call("a", || Ok::<_, ()>(()));
    m
}

#[test]
fn a_clock_that_goes_back_or_jumps_never_panics_or_evicts_early() {
    let idle = Duration::from_secs(60);
    let m = used_near_the_clock_s_end(idle);
    m.clock.set(0);
    assert_eq!(m.evict_idle(), 0, "a clock gone back is no time passed");
    m.clock.set(u64::MAX);
    assert_eq!(m.evict_idle(), 0, "back where it was: not a whole period since it went back");
    assert_eq!(m.len(), 1);
}

#[test]
fn a_clock_gone_back_for_good_still_evicts_once_idle_after_passes_again() {
    let idle = Duration::from_secs(60);
    let ns = |d: Duration| d.as_nanos() as u64;
    let m = used_near_the_clock_s_end(idle);
    // Back to 0, and running on from there.
    m.clock.set(0);
    assert_eq!(m.evict_idle(), 0, "a clock gone back is no time passed");
    m.clock.set(ns(idle) - 1);
    assert_eq!(m.evict_idle(), 0, "not yet a whole period since the clock went back");
    m.clock.set(ns(idle));
    assert_eq!(m.evict_idle(), 0, "used in the period before: kept");
    m.clock.set(2 * ns(idle));
    assert_eq!(m.evict_idle(), 1, "unused for a whole period as the clock runs now");
    assert_eq!(m.len(), 0);
}

#[test]
fn settings_out_of_range_are_refused_naming_the_field() {
    let b = || Breakers::<String>::builder("m", BreakerConfig::default());
    let e = b().capacity(0).build().unwrap_err();
    assert_eq!((e.config(), e.field()), ("keyed breakers", "capacity"));
    let e = b().idle_after(Duration::ZERO).build().unwrap_err();
    assert_eq!(e.field(), "idle_after");
    assert!(e.to_string().contains("idle_after"), "{e}");
    let e = b().label_cap(10_001).build().unwrap_err();
    assert_eq!(e.field(), "label_cap");
}

#[test]
fn threads_making_one_key_at_once_share_one_breaker() {
    let m: Arc<Breakers<String>> = Arc::new(Breakers::new("m", trips_on_one()));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            thread::spawn(move || {
                (0..200).map(|i| Arc::as_ptr(&m.get(&(i % 50).to_string())) as usize).collect::<Vec<_>>()
            })
        })
        .collect();
    let seen: Vec<Vec<usize>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for i in 0..200 {
        assert!(seen.iter().all(|s| s[i] == seen[0][i]), "key {} had two breakers", i % 50);
    }
    assert_eq!(m.len(), 50);
    assert_eq!(m.counts().created, 50);
}

#[test]
fn the_export_names_at_most_the_cap_of_keys_open_ones_first() {
    let m: Breakers<String, Clk> =
        Breakers::<String>::builder("m", trips_on_one()).label_cap(2).clock(clock(0)).build().unwrap();
    for k in ["a", "b", "c", "d"] {
        let _ = m.call(k, || Ok::<_, ()>(()));
    }
    fail(&m, "c");
    let row = m.keyed_row();
    assert_eq!(row.named.len(), 2);
    assert_eq!(row.named[0], (String::from("c"), State::Open));
    assert_eq!(row.in_state[State::Closed as usize], 3);
    assert_eq!(row.in_state[State::Open as usize], 1);
    let mut text = String::new();
    keyed_families(&mut crate::layers::prometheus::Text::new(&mut text), &[("m", row)]).unwrap();
    assert!(text.contains("tripwire_keyed_unnamed_breakers{breakers=\"m\"} 2\n"), "{text}");
    assert_eq!(text.matches("tripwire_keyed_breaker_state{").count(), 2 * State::ALL.len());
}

/// What a map on storage `W` does with one run of calls: a failure, a
/// success, a call while Open, a key sent to the overflow breaker, a
/// cool-down and its probe, two idle periods. Returns what each call and
/// look saw, the counts and the export's row before the sweeps, and how
/// many each sweep evicted.
fn run<W: Windows>(
    m: &Breakers<String, Clk, DefaultHasher, W>,
) -> (Vec<bool>, Vec<State>, KeyedRow, [usize; 2]) {
    let call = |key: &str, ok: bool| m.call(key, || if ok { Ok(()) } else { Err("down") }).is_ok();
    let look = |states: &mut Vec<State>| states.extend(["a", "b", "c"].map(|k| m.with(k, |b| b.state())));
    let (mut calls, mut states) = (Vec::new(), Vec::new());
    calls.extend([call("a", false), call("b", true), call("a", true), call("c", false)]);
    look(&mut states);
    m.clock.advance(Duration::from_secs(30));
    calls.push(call("a", true));
    look(&mut states);
    // The keys named in no particular order: sorted, to compare.
    let mut row = m.keyed_row();
    row.named.sort_by(|a, b| a.0.cmp(&b.0));
    let idle = Duration::from_nanos(m.idle_after);
    m.clock.advance(idle);
    let first = m.evict_idle();
    m.clock.advance(idle);
    (calls, states, row, [first, m.evict_idle()])
}

#[test]
fn a_windowless_map_trips_recovers_and_evicts_as_the_default_one_does() {
    let idle = Duration::from_secs(60);
    let windowless: Breakers<String, Clk, DefaultHasher, NoWindow> =
        Breakers::<String>::builder("m", trips_on_one())
            .capacity(2)
            .idle_after(idle)
            .clock(clock(0))
            .storage::<NoWindow>()
            .build()
            .unwrap();
    let default = map(2, idle);
    let seen = run(&windowless);
    assert_eq!(seen, run(&default));
    assert_eq!(windowless.counts(), default.counts());
    // "a" failed and opened, "b" passed, "a" was refused while Open, "c"
    // found the map full and failed on the overflow breaker; after the
    // cool-down, "a"'s probe passed and closed it.
    let (calls, states, row, evicted) = seen;
    assert_eq!(calls, [false, true, false, false, true]);
    use State::{Closed, Open};
    assert_eq!(states, [Open, Closed, Open, Closed, Closed, Open]);
    // "c"'s call and its two looks went to the overflow breaker.
    assert_eq!(row.counts.overflow_calls, 3);
    assert_eq!(row.in_state[Closed as usize], 2);
    // Unused for the whole second period, both keys are evicted.
    assert_eq!(evicted, [0, 2]);
    assert_eq!(windowless.len(), 0);
}

#[test]
fn a_windowless_map_refuses_a_windowed_template_naming_the_field() {
    let windowless = |template| Breakers::<String>::builder("m", template).storage::<NoWindow>().build();
    let rate =
        BreakerConfig::builder().failure_threshold(0).failure_rate(0.5).count_window(20).build().unwrap();
    let e = windowless(rate).unwrap_err();
    assert_eq!((e.config(), e.field()), ("breaker", "failure_rate"));
    assert!(e.to_string().contains("NoWindow"), "{e}");
    let slow = BreakerConfig::builder().slow_call(Duration::from_secs(1)).slow_rate(0.5).build().unwrap();
    assert_eq!(windowless(slow).unwrap_err().field(), "slow_rate");
    // The settings are checked first; the default storage takes any template.
    let e = Breakers::<String>::builder("m", rate).capacity(0).storage::<NoWindow>().build().unwrap_err();
    assert_eq!(e.field(), "capacity");
    assert!(Breakers::<String>::builder("m", rate).build().is_ok());
    assert!(windowless(trips_on_one()).is_ok());
}

/// A slot that counts the slots made and dropped.
#[derive(Debug)]
struct Counted {
    filled: std::sync::OnceLock<u32>,
    drops: Arc<AtomicUsize>,
}

static SLOT_DROPS: std::sync::OnceLock<Arc<AtomicUsize>> = std::sync::OnceLock::new();

impl Default for Counted {
    fn default() -> Self {
        Self {
            filled: std::sync::OnceLock::new(),
            drops: Arc::clone(SLOT_DROPS.get_or_init(Default::default)),
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_slot_lives_beside_its_key_breaker_from_creation_to_eviction() {
    let idle = Duration::from_secs(60);
    let m: Breakers<String, Clk, DefaultHasher, AnyWindow, Counted> =
        Breakers::<String>::builder("m", trips_on_one())
            .capacity(2)
            .idle_after(idle)
            .clock(clock(0))
            .slot::<Counted>()
            .build()
            .unwrap();
    // Filled on the first lookup, found again by the next.
    let fill = |key: &str, v: u32| m.with_slot(key, |_, slot| *slot.filled.get_or_init(|| v));
    assert_eq!(fill("a", 1), 1);
    assert_eq!(fill("a", 2), 1, "one slot per key");
    assert_eq!(fill("b", 3), 3);
    // The map is full: "c" and "d" share the overflow breaker's slot.
    assert_eq!(fill("c", 4), 4);
    assert_eq!(fill("d", 5), 4);
    m.with_slot("d", |b, _| assert_eq!(b.name(), "m/(overflow)"));
    let mut seen = Vec::new();
    m.for_each_slot(|key, _, slot| seen.push((key.cloned(), slot.filled.get().copied())));
    seen.sort();
    assert_eq!(seen, [(None, Some(4)), (Some("a".to_string()), Some(1)), (Some("b".to_string()), Some(3))]);
    // "a" idles two periods and is evicted; it comes back with a new slot.
    m.clock.advance(idle);
    assert_eq!(m.evict_idle(), 0);
    let _ = fill("b", 0);
    m.clock.advance(idle);
    assert_eq!(m.evict_idle(), 1);
    assert_eq!(fill("a", 6), 6, "an evicted key's slot goes with its breaker");
    // Every slot made is dropped once: a, b, the overflow's and the new a.
    drop(m);
    assert_eq!(SLOT_DROPS.get().unwrap().load(Ordering::Relaxed), 4);
}

#[test]
fn a_pinned_map_calls_the_same_breakers_and_evicts_as_the_map_does() {
    let idle = Duration::from_secs(60);
    let m = map(2, idle);
    let mut pin = m.pin();
    // A failure through the handle opens the map's breaker for "a".
    let _ = pin.call("a", || Err::<(), _>("down"));
    assert_eq!(state(&m, "a"), State::Open);
    assert!(Arc::ptr_eq(&pin.get("a"), &m.get("a")), "one breaker per key, pinned or not");
    pin.with_slot("b", |b, ()| assert_eq!(b.name(), "m/b"));
    // Full: a third key shares the overflow breaker, counted as through the map.
    assert_eq!(pin.with("c", |b| b.name().to_string()), "m/(overflow)");
    assert_eq!(m.counts().overflow_calls, 1);
    // "b" idles for two periods under the held guard and is evicted; the
    // handle's next call makes it again, as the map's would.
    let old_b = pin.get("b");
    m.clock.advance(idle);
    assert_eq!(m.evict_idle(), 0);
    m.clock.advance(idle);
    assert_eq!(m.evict_idle(), 1, "a held guard does not stop an eviction");
    assert!(!m.contains_key("b"));
    let new_b = pin.get("b");
    assert!(!Arc::ptr_eq(&old_b, &new_b), "an evicted key comes back with a new breaker");
    pin.refresh();
    assert!(Arc::ptr_eq(&pin.get("b"), &m.get("b")));
    assert_eq!(pin.map().counts(), KeyedCounts { live: 2, created: 3, evicted: 1, overflow_calls: 1 });
}

#[test]
fn a_pinned_handle_holds_back_the_freeing_of_evicted_breakers_until_refreshed() {
    let idle = Duration::from_secs(60);
    let m = map(2, idle);
    // Evicts "a" (the caller keeps a handle to its breaker), hands the
    // eviction's retired entry to the collector, and tells whether the
    // entry let go of its breaker.
    let evict_and_flush = |old: &Arc<NamedBreaker<Clk, AnyWindow>>| {
        m.clock.advance(idle);
        assert_eq!(m.evict_idle(), 0, "used in the period that just ended");
        m.clock.advance(idle);
        assert_eq!(m.evict_idle(), 1);
        m.map.guard().flush();
        Arc::strong_count(old) == 1
    };
    // Unpinned: the entry is freed as soon as no guard can see it.
    let old = m.get("a");
    assert!(evict_and_flush(&old), "freed with no guard held");
    // Pinned: freed only once the handle lets go.
    let old = m.get("a");
    let mut pin = m.pin();
    assert!(!evict_and_flush(&old), "a held guard keeps the evicted entry");
    pin.refresh();
    assert_eq!(Arc::strong_count(&old), 1, "a refresh lets it go");
    // Two handles on one thread: a refresh of one lets nothing go while
    // the other holds its guard.
    let old = m.get("a");
    let second = m.pin();
    assert!(!evict_and_flush(&old));
    pin.refresh();
    assert_eq!(Arc::strong_count(&old), 2, "the second handle still holds it");
    drop(second);
    pin.refresh();
    assert_eq!(Arc::strong_count(&old), 1, "the last guard's refresh lets it go");
    drop(pin);
}

#[test]
fn a_removal_that_finds_the_entry_gone_or_replaced_counts_nothing() {
    // A sweep and a call that found the entry retired both remove it; only
    // the removal that takes it out of the map counts.
    let idle = Duration::from_millis(1);
    let m = map(4, idle);
    let _ = m.call("a", || Ok::<_, ()>(()));
    let guard = m.map.guard();
    let old = m.map.get("a", &guard).unwrap();
    m.clock.advance(idle);
    assert_eq!(m.evict_idle(), 0, "used in the period that just ended");
    m.clock.advance(idle);
    assert_eq!(m.evict_idle(), 1);
    m.remove("a", old, &guard);
    let c = m.counts();
    assert_eq!((c.live, c.created, c.evicted), (0, 1, 1), "already gone: {c:?}");
    let _ = m.call("a", || Ok::<_, ()>(()));
    m.remove("a", old, &guard);
    let c = m.counts();
    assert_eq!((c.live, c.created, c.evicted), (1, 2, 1), "made again: {c:?}");
    let mut held = 0;
    m.for_each(|_, _| held += 1);
    assert_eq!(held, 1, "the new entry stays");
}

#[test]
fn calls_racing_sweeps_that_evict_and_make_keys_again_keep_the_map_whole() {
    race_calls_and_sweeps(false);
}

#[test]
fn pinned_calls_racing_sweeps_keep_the_map_whole_as_unpinned_ones_do() {
    race_calls_and_sweeps(true);
}

/// Two threads call while a third sweeps; with `pinned`, each caller holds
/// one [`Pinned`] handle and refreshes it every 50 calls, so entries are
/// evicted and made again under held guards.
fn race_calls_and_sweeps(pinned: bool) {
    use core::sync::atomic::AtomicUsize;
    // Twelve keys for eight places, a sweep every period. The callers make
    // five calls in six to a window of six keys that moves one key every
    // three sweeps: a key left behind idles until a sweep evicts it, and is
    // made again when the window comes back to it. The sixth call goes to
    // any key, and can find one a sweep has just retired, which the call
    // and the sweep then both remove (the test above holds that case on
    // its own, as this race is rare). Between two sweeps the
    // callers make 12 to 24 calls, however the threads are run.
    let idle = Duration::from_millis(1);
    let m = Arc::new(map(8, idle));
    let (swept, calls, called) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let callers: Vec<_> = (0..2)
        .map(|t| {
            let (m, swept, calls, called) = (m.clone(), swept.clone(), calls.clone(), called.clone());
            thread::spawn(move || {
                let mut pin = pinned.then(|| m.pin());
                let mut i = 0usize;
                loop {
                    let s = swept.load(Ordering::Relaxed);
                    if i >= 2_000 && s >= 200 {
                        break;
                    }
                    if calls.load(Ordering::Relaxed) >= (s + 1) * 24 {
                        thread::yield_now();
                        continue;
                    }
                    let key = if i % 6 == 5 { (i * 7 + t) % 12 } else { (s / 3 + (i * 5 + t) % 6) % 12 };
                    let key = key.to_string();
                    let out = match &mut pin {
                        Some(pin) if i % 50 == 49 => {
                            pin.refresh();
                            pin.call(&key, || Ok::<_, ()>(i))
                        }
                        Some(pin) => pin.call(&key, || Ok::<_, ()>(i)),
                        None => m.call(&key, || Ok::<_, ()>(i)),
                    };
                    assert_eq!(out.ok(), Some(i));
                    calls.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
                called.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect();
    let mut seen = 0;
    while called.load(Ordering::Relaxed) < 2 {
        if calls.load(Ordering::Relaxed) < seen + 12 {
            thread::yield_now();
            continue;
        }
        seen = calls.load(Ordering::Relaxed);
        m.clock.advance(idle);
        m.evict_idle();
        swept.fetch_add(1, Ordering::Relaxed);
    }
    for c in callers {
        c.join().unwrap();
    }
    let c = m.counts();
    assert!(c.evicted > 0 && c.created > 12, "keys were evicted and made again: {c:?}");
    // Every breaker made is live or evicted, once; the map holds exactly
    // the live ones, none retired, never more than its capacity.
    assert_eq!(c.created - c.evicted, c.live, "{c:?}");
    let mut held = 0;
    m.for_each(|_, _| held += 1);
    assert_eq!(held as u64, c.live);
    assert!(c.live <= 8, "{c:?}");
}
