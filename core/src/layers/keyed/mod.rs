//! Keyed breakers: a breaker per key (a host, an endpoint, a symbol, any
//! `Hash + Eq + Display` key), made from one template config the first time
//! the key is used, looked up on every call.
//!
//! - **No lock on the read path.** The map is a [`papaya`] concurrent hash
//!   map: a lookup of a key that exists reads the table under an epoch
//!   guard, allocates nothing and writes nothing shared but, once per sweep
//!   period, the entry's `seen` word. Why papaya: its reads are lock-free
//!   and allocation-free, its removals are safe under readers (memory is
//!   reclaimed when no guard can see it), it can remove a key only if it
//!   still holds a given value ([`remove_if`](papaya::HashMap::remove_if)),
//!   which the eviction protocol needs, and it pulls in two small crates.
//!   A map of our own would have to solve the reclamation it solves.
//!   A thread that makes many calls in a row can take the guard once for
//!   all of them: [`pin`](Breakers::pin).
//! - **Hashing** is `foldhash`'s seeded hasher by default (a few ns for a
//!   short key, seeded per map so that keys chosen by a remote party cannot
//!   be made to collide on purpose); any [`BuildHasher`] can be given.
//!   A `str` or `String` key of up to 16 bytes is compared with the one
//!   the map holds in a few word loads, where `==` would call libc's
//!   `memcmp` (see `probe.rs`); any other key with its own `==`.
//! - **Bounded.** At most `capacity` keys have breakers of their own. A new
//!   key beyond that shares one *overflow* breaker, counted in
//!   [`KeyedCounts::overflow_calls`], until an eviction makes room.
//! - **Idle eviction.** Time is cut into sweep periods of `idle_after`
//!   each; a call marks its key's entry with the current period. A sweep
//!   (run when a new key comes in and a period has passed, or by
//!   [`evict_idle`](Breakers::evict_idle)) starts the next period and evicts
//!   every Closed breaker not used in the whole period before: so a breaker
//!   is evicted after at least `idle_after` unused, and one that is Open or
//!   Half-Open (an outage in progress) is kept until it closes. See
//!   `entry.rs` for why a call and an eviction never both win one entry.
//! - **One metrics family for all keys**, with a cap on label values: see
//!   [`Registry::add_keyed`](crate::registry::Registry::add_keyed).
//!
//! # Examples
//! ```
//! use tripwire::keyed::Breakers;
//! use tripwire::{BreakerConfig, CallError, State};
//!
//! let per_symbol: Breakers<String> = Breakers::new("binance", BreakerConfig::builder().failure_threshold(2).build()?);
//! for _ in 0..2 {
//!     let _ = per_symbol.call("ETHUSDT", || Err::<(), _>("timeout"));
//! }
//! // ETHUSDT's breaker is open; BTCUSDT's is its own, and closed.
//! assert!(matches!(per_symbol.call("ETHUSDT", || Ok::<_, ()>(1)), Err(CallError::Rejected(_))));
//! assert_eq!(per_symbol.call("BTCUSDT", || Ok::<_, ()>(1)).ok(), Some(1));
//! assert_eq!(per_symbol.with("ETHUSDT", |b| (b.name().to_owned(), b.state())), ("binance/ETHUSDT".to_owned(), State::Open));
//! assert_eq!(per_symbol.len(), 2);
//! # Ok::<(), tripwire::ConfigError>(())
//! ```
//!
//! # Storage
//! Every breaker of a map keeps its counts in the storage `W` (see
//! [`Windows`]); the default, [`AnyWindow`], runs any template. A template
//! that trips on consecutive failures alone (no `failure_rate`, no
//! `slow_rate`) runs on [`NoWindow`](crate::breaker::NoWindow), picked with
//! [`storage`](BreakersBuilder::storage), for under a quarter of the heap
//! per key: 10,000 keys hold 12.0 MiB (1,253 bytes a key) where the
//! default holds 51.0 (5,349), on x86-64
//! (`cargo run --release -p tripwire-benches --example keyed_memory`).
//! [`build`](BreakersBuilder::build) refuses a template the storage cannot
//! run, naming the field, so a map never fails later as it makes a key's
//! breaker.
//!
//! ```
//! use tripwire::breaker::NoWindow;
//! use tripwire::keyed::Breakers;
//! use tripwire::{BreakerConfig, CallError};
//!
//! let consecutive = BreakerConfig::builder().failure_threshold(2).build()?;
//! let per_symbol = Breakers::<String>::builder("binance", consecutive).storage::<NoWindow>().build()?;
//! for _ in 0..2 {
//!     let _ = per_symbol.call("ETHUSDT", || Err::<(), _>("timeout"));
//! }
//! assert!(matches!(per_symbol.call("ETHUSDT", || Ok::<_, ()>(1)), Err(CallError::Rejected(_))));
//!
//! // A rate needs a rolling window, which NoWindow does not keep.
//! let rate = BreakerConfig::builder().failure_rate(0.5).build()?;
//! let err = Breakers::<String>::builder("binance", rate).storage::<NoWindow>().build().unwrap_err();
//! assert_eq!(err.field(), "failure_rate");
//! # Ok::<(), tripwire::ConfigError>(())
//! ```
//!
//! The map's type names the storage last:
//! `Breakers<String, MonotonicClock, DefaultHasher, NoWindow>`. The tower
//! and reqwest layers take maps on the default storage.

mod entry;
mod pinned;
mod probe;
mod rows;

use core::borrow::Borrow;
use core::fmt::{self, Display};
use core::hash::{BuildHasher, Hash};
use core::marker::PhantomData;
use core::time::Duration;
use std::borrow::ToOwned;
use std::boxed::Box;
use std::format;
use std::string::String;
use std::sync::Arc;

use papaya::{Guard, HashMap};
use portable_atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::breaker::config::BreakerConfig;
use crate::breaker::permit::CallError;
use crate::breaker::state::State;
use crate::breaker::storage::{AnyWindow, Windows};
use crate::clock::Clock;
use crate::config_error::{ConfigError, Value, check_range};
use crate::layers::clock::MonotonicClock;
use crate::layers::named::NamedBreaker;

pub use pinned::Pinned;
pub(crate) use rows::keyed_families;
pub use rows::{KeyedRow, KeyedRows};

#[cfg(loom)]
#[doc(hidden)]
pub use entry::Seen as LoomSeen;

use entry::Seen;
use probe::Probe;

/// The hasher a map uses unless given another: `foldhash`'s, seeded per map.
pub type DefaultHasher = foldhash::fast::RandomState;

/// One key's breaker, its eviction word and the caller's slot.
struct Entry<C: Clock, W: Windows, X> {
    breaker: Arc<NamedBreaker<C, W>>,
    seen: Seen,
    slot: X,
}

impl<C: Clock, W: Windows, X: Default> Entry<C, W, X> {
    /// An entry for `config`, which the map checked `W` runs when it was
    /// built.
    fn new(name: String, config: BreakerConfig, clock: C, period: u64) -> Self {
        Self {
            breaker: Arc::new(NamedBreaker::accepted(name, config, clock)),
            seen: Seen::new(period),
            slot: X::default(),
        }
    }
}

/// What a map has done since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyedCounts {
    /// Keys with a breaker of their own now.
    pub live: u64,
    /// Breakers made for new keys.
    pub created: u64,
    /// Breakers evicted as idle.
    pub evicted: u64,
    /// Lookups ([`call`](Breakers::call), [`with`](Breakers::with),
    /// [`get`](Breakers::get)) answered with the overflow breaker, by keys
    /// that found the map full.
    pub overflow_calls: u64,
}

/// A breaker per key, made from one template config: see the
/// [module docs](self). Its breakers keep their counts in the storage `W`
/// (see [`BreakersBuilder::storage`]); beside each, the map keeps a value
/// `X` of the caller's (see [`BreakersBuilder::slot`]).
pub struct Breakers<K, C: Clock = MonotonicClock, S = DefaultHasher, W: Windows = AnyWindow, X = ()> {
    name: Box<str>,
    template: BreakerConfig,
    clock: C,
    map: HashMap<K, Entry<C, W, X>, S>,
    /// The breaker of keys that found the map full, and its slot.
    overflow: Arc<NamedBreaker<C, W>>,
    overflow_slot: X,
    capacity: usize,
    /// Keys with an entry, counted by whoever inserts or removes one.
    live: AtomicUsize,
    idle_after: u64,
    label_cap: usize,
    /// The current sweep period (see `entry.rs`), from 1.
    period: AtomicU64,
    /// When the current period began, on `clock`.
    period_began: AtomicU64,
    created: AtomicU64,
    evicted: AtomicU64,
    overflow_calls: AtomicU64,
}

impl<K, C: Clock, S, W: Windows, X> fmt::Debug for Breakers<K, C, S, W, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Breakers")
            .field("name", &self.name)
            .field("live", &self.live.load(Ordering::Relaxed))
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`Breakers`] map beyond its template: from
/// [`Breakers::builder`].
#[derive(Debug)]
#[must_use]
pub struct BreakersBuilder<K, C: Clock = MonotonicClock, S = DefaultHasher, W: Windows = AnyWindow, X = ()> {
    _key: PhantomData<fn() -> K>,
    _storage: PhantomData<fn() -> (W, X)>,
    name: String,
    template: BreakerConfig,
    clock: C,
    hasher: S,
    capacity: usize,
    idle_after: Duration,
    label_cap: usize,
}

/// The most keys a map holds unless told otherwise.
pub const DEFAULT_CAPACITY: usize = 10_000;
/// How long a breaker stays unused before it may be evicted, unless told
/// otherwise.
pub const DEFAULT_IDLE_AFTER: Duration = Duration::from_secs(600);
/// How many keys the metrics export labels one by one, unless told
/// otherwise.
pub const DEFAULT_LABEL_CAP: usize = 100;

impl<K> BreakersBuilder<K> {
    fn new(name: String, template: BreakerConfig) -> Self {
        Self {
            _key: PhantomData,
            _storage: PhantomData,
            name,
            template,
            clock: MonotonicClock,
            hasher: DefaultHasher::default(),
            capacity: DEFAULT_CAPACITY,
            idle_after: DEFAULT_IDLE_AFTER,
            label_cap: DEFAULT_LABEL_CAP,
        }
    }
}

impl<K, C: Clock, S, W: Windows, X> BreakersBuilder<K, C, S, W, X> {
    /// The most keys with a breaker of their own (1 to 2^32; default
    /// 10,000); a new key beyond them shares the overflow breaker.
    pub fn capacity(mut self, keys: usize) -> Self {
        self.capacity = keys;
        self
    }

    /// How long a Closed breaker stays unused before a sweep may evict it
    /// (1 ms to 30 days; default 10 min). It is evicted by the first sweep
    /// after one to two of these periods unused.
    pub fn idle_after(mut self, idle: Duration) -> Self {
        self.idle_after = idle;
        self
    }

    /// How many keys the metrics export names one by one (0 to 10,000;
    /// default 100): those not Closed first. Every key counts in the
    /// per-state totals whatever this is.
    pub fn label_cap(mut self, keys: usize) -> Self {
        self.label_cap = keys;
        self
    }

    /// The clock every breaker of the map reads, and its sweeps.
    pub fn clock<C2: Clock>(self, clock: C2) -> BreakersBuilder<K, C2, S, W, X> {
        self.retyped(|_, hasher| (clock, hasher))
    }

    /// The hasher of the map's keys (default [`DefaultHasher`]).
    pub fn hasher<S2>(self, hasher: S2) -> BreakersBuilder<K, C, S2, W, X> {
        self.retyped(|clock, _| (clock, hasher))
    }

    /// Where every breaker of the map keeps its counts (default
    /// [`AnyWindow`], which runs every config). A template that trips on
    /// consecutive failures alone runs on
    /// [`NoWindow`](crate::breaker::NoWindow), under a third of the heap
    /// per key; [`build`](Self::build) refuses a template the storage cannot
    /// run. See the [module docs](self#storage).
    pub fn storage<W2: Windows>(self) -> BreakersBuilder<K, C, S, W2, X> {
        self.retyped(|clock, hasher| (clock, hasher))
    }

    /// A value of type `X2` kept beside each key's breaker (and the
    /// overflow breaker), made with `X2::default()` with the breaker and
    /// dropped with it, reached through [`with_slot`](Breakers::with_slot):
    /// what a binding keeps per key, such as a handle it would otherwise
    /// make on every lookup (a `OnceLock` filled on first use). Default
    /// `()`, which takes no room.
    pub fn slot<X2: Default>(self) -> BreakersBuilder<K, C, S, W, X2> {
        self.retyped(|clock, hasher| (clock, hasher))
    }

    /// The same settings in a builder of other type parameters, its clock
    /// and hasher passed through `swap`.
    fn retyped<C2: Clock, S2, W2: Windows, X2>(
        self,
        swap: impl FnOnce(C, S) -> (C2, S2),
    ) -> BreakersBuilder<K, C2, S2, W2, X2> {
        let (clock, hasher) = swap(self.clock, self.hasher);
        BreakersBuilder {
            _key: PhantomData,
            _storage: PhantomData,
            name: self.name,
            template: self.template,
            clock,
            hasher,
            capacity: self.capacity,
            idle_after: self.idle_after,
            label_cap: self.label_cap,
        }
    }

    /// The map, or the first setting out of its range, or the template's
    /// field its storage cannot run (as [`Breaker::try_new`] names it): a
    /// map that is built makes every key's breaker without failing.
    ///
    /// [`Breaker::try_new`]: crate::Breaker::try_new
    pub fn build(self) -> Result<Breakers<K, C, S, W, X>, ConfigError>
    where
        C: Clone,
        X: Default,
    {
        const CONFIG: &str = "keyed breakers";
        const DAY_NS: u64 = 86_400_000_000_000;
        let idle_ns = u64::try_from(self.idle_after.as_nanos()).unwrap_or(u64::MAX);
        check_range(
            CONFIG,
            "capacity",
            Value::Int(self.capacity as u64),
            Value::Int(1),
            Value::Int(1 << 32),
        )?;
        check_range(
            CONFIG,
            "idle_after",
            Value::Duration(idle_ns),
            Value::Duration(1_000_000),
            Value::Duration(30 * DAY_NS),
        )?;
        check_range(
            CONFIG,
            "label_cap",
            Value::Int(self.label_cap as u64),
            Value::Int(0),
            Value::Int(10_000),
        )?;
        // The storage's check of the template, once for the whole map.
        let overflow = Arc::new(NamedBreaker::try_with_clock(
            format!("{}/(overflow)", self.name),
            self.template,
            self.clock.clone(),
        )?);
        let began = self.clock.now();
        Ok(Breakers {
            name: self.name.into_boxed_str(),
            template: self.template,
            clock: self.clock,
            map: HashMap::builder().hasher(self.hasher).build(),
            overflow,
            overflow_slot: X::default(),
            capacity: self.capacity,
            live: AtomicUsize::new(0),
            idle_after: idle_ns,
            label_cap: self.label_cap,
            period: AtomicU64::new(1),
            period_began: AtomicU64::new(began),
            created: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            overflow_calls: AtomicU64::new(0),
        })
    }
}

impl<K> Breakers<K> {
    /// A map named `name` (its breakers are `name/key`) whose breakers are
    /// made from `template`, with the default settings.
    pub fn new(name: impl Into<String>, template: BreakerConfig) -> Self {
        Self::builder(name, template).build().unwrap_or_else(|_| unreachable!("the defaults are in range"))
    }

    /// A builder for a map with other settings.
    pub fn builder(name: impl Into<String>, template: BreakerConfig) -> BreakersBuilder<K> {
        BreakersBuilder::new(name.into(), template)
    }
}

impl<K, C: Clock, S, W: Windows, X> Breakers<K, C, S, W, X> {
    /// Keys with a breaker of their own now.
    pub fn len(&self) -> usize {
        // Relaxed: a count read on its own.
        self.live.load(Ordering::Relaxed)
    }

    /// Whether no key has a breaker of its own.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most keys with a breaker of their own.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The map's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The breaker that keys share while the map is full.
    pub fn overflow(&self) -> &Arc<NamedBreaker<C, W>> {
        &self.overflow
    }

    /// The overflow breaker's slot (see [`BreakersBuilder::slot`]).
    pub fn overflow_slot(&self) -> &X {
        &self.overflow_slot
    }

    /// What the map has done so far.
    pub fn counts(&self) -> KeyedCounts {
        // Relaxed: counts read on their own.
        KeyedCounts {
            live: self.live.load(Ordering::Relaxed) as u64,
            created: self.created.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
            overflow_calls: self.overflow_calls.load(Ordering::Relaxed),
        }
    }
}

impl<K, C, S, W, X> Breakers<K, C, S, W, X>
where
    K: Hash + Eq + Display + Send + Sync + 'static,
    C: Clock + Clone + Send + Sync + 'static,
    S: BuildHasher,
    W: Windows,
    X: Default + Send + Sync + 'static,
{
    /// Runs `f` with `key`'s breaker, made first if the key is new. No
    /// lock and, once the key exists, no allocation. The breaker comes as
    /// the `Arc` the map holds: call it through the reference, or clone
    /// the `Arc` (or take a [`permit_owned`](NamedBreaker::permit_owned))
    /// for a call that outlives `f`.
    #[inline]
    pub fn with<Q, R>(&self, key: &Q, f: impl FnOnce(&Arc<NamedBreaker<C, W>>) -> R) -> R
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized + 'static,
    {
        let guard = self.map.guard();
        f(self.entry(key, &guard).0)
    }

    /// [`with`](Self::with), with the slot kept beside the breaker (see
    /// [`BreakersBuilder::slot`]); the overflow breaker has one slot of its
    /// own, which every key that found the map full shares.
    #[inline]
    pub fn with_slot<Q, R>(&self, key: &Q, f: impl FnOnce(&Arc<NamedBreaker<C, W>>, &X) -> R) -> R
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized + 'static,
    {
        let guard = self.map.guard();
        let (breaker, slot) = self.entry(key, &guard);
        f(breaker, slot)
    }

    /// Calls `f` through `key`'s breaker (see [`NamedBreaker::call`]).
    #[inline]
    pub fn call<Q, T, E>(&self, key: &Q, f: impl FnOnce() -> Result<T, E>) -> Result<T, CallError<E>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized + 'static,
    {
        self.with(key, |b| b.call(f))
    }

    /// `key`'s breaker as a handle of its own, for a call that outlives
    /// this borrow (an async call, another thread). It costs an atomic
    /// increment of the breaker's reference count over [`with`](Self::with).
    pub fn get<Q>(&self, key: &Q) -> Arc<NamedBreaker<C, W>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized + 'static,
    {
        let guard = self.map.guard();
        Arc::clone(self.entry(key, &guard).0)
    }

    /// The breaker and slot of `key` (made if new, or the overflow ones
    /// when the map is full), taken in the current period.
    #[inline]
    fn entry<'g, Q>(&'g self, key: &Q, guard: &'g impl Guard) -> (&'g Arc<NamedBreaker<C, W>>, &'g X)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized + 'static,
    {
        loop {
            // Relaxed: any period taken excludes the sweep that retires it
            // (see `entry.rs`); a stale one is only older.
            let period = self.period.load(Ordering::Relaxed);
            let entry = match self.map.get(&Probe(key), guard) {
                Some(entry) => entry,
                None => match self.insert(key, period, guard) {
                    Some(entry) => entry,
                    None => return self.overflowed(),
                },
            };
            if entry.seen.take(period) {
                return (&entry.breaker, &entry.slot);
            }
            // Retired by a sweep: help remove it, then look again.
            self.remove(key, entry, guard);
        }
    }

    #[cold]
    fn overflowed(&self) -> (&Arc<NamedBreaker<C, W>>, &X) {
        // Relaxed: a count of its own.
        self.overflow_calls.fetch_add(1, Ordering::Relaxed);
        (&self.overflow, &self.overflow_slot)
    }

    /// Makes `key`'s entry, or finds the one another caller just made;
    /// `None` when the map is full.
    #[cold]
    #[inline(never)]
    fn insert<'g, Q>(&'g self, key: &Q, period: u64, guard: &'g impl Guard) -> Option<&'g Entry<C, W, X>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized + 'static,
    {
        self.sweep_if_due(guard);
        // Relaxed: a count of keys; a place is reserved before the insert
        // and given back if it fails, so the map never holds more.
        if self.live.fetch_add(1, Ordering::Relaxed) >= self.capacity {
            self.live.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let key = key.to_owned();
        let entry = Entry::new(format!("{}/{key}", self.name), self.template, self.clock.clone(), period);
        match self.map.try_insert(key, entry, guard) {
            Ok(entry) => {
                // Relaxed: a count of its own.
                self.created.fetch_add(1, Ordering::Relaxed);
                Some(entry)
            }
            Err(taken) => {
                self.live.fetch_sub(1, Ordering::Relaxed);
                Some(taken.current)
            }
        }
    }

    /// Removes `key` if it still maps to the retired `entry`.
    fn remove<Q>(&self, key: &Q, entry: &Entry<C, W, X>, guard: &impl Guard)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let removed = self.map.remove_if(key, |_, e| core::ptr::eq(e, entry), guard);
        if matches!(removed, Ok(Some(_))) {
            // Relaxed: counts of their own.
            self.live.fetch_sub(1, Ordering::Relaxed);
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Runs a sweep if a whole period has passed since the last one: the
    /// Closed breakers unused for at least `idle_after` are evicted.
    /// Returns how many this call evicted. New keys run it as they come
    /// in; a map that takes no new keys and should shed idle ones can call
    /// it now and then.
    pub fn evict_idle(&self) -> usize {
        let guard = self.map.guard();
        self.sweep_if_due(&guard)
    }

    fn sweep_if_due(&self, guard: &impl Guard) -> usize {
        let now = self.clock.now();
        // Relaxed: the CAS below elects one sweeper per period; nothing
        // else is ordered by this word.
        let began = self.period_began.load(Ordering::Relaxed);
        if now < began {
            // A clock gone back: the period starts again at this reading,
            // so that eviction waits a whole `idle_after` from here rather
            // than until the clock is back where it was. Relaxed: as above.
            let _ = self.period_began.compare_exchange(began, now, Ordering::Relaxed, Ordering::Relaxed);
            return 0;
        }
        if now - began < self.idle_after
            || self.period_began.compare_exchange(began, now, Ordering::Relaxed, Ordering::Relaxed).is_err()
        {
            return 0;
        }
        // SeqCst: the new period is in place before any entry is judged.
        let period = self.period.fetch_add(1, Ordering::SeqCst) + 1;
        let mut evicted = 0;
        for (key, entry) in self.map.iter(guard) {
            // Not used in the whole period before this one, and no outage
            // in progress.
            if entry.breaker.state() == State::Closed && entry.seen.retire_if_idle(period - 1) {
                self.remove(key, entry, guard);
                evicted += 1;
            }
        }
        evicted
    }

    /// Whether `key` has a breaker of its own now (not the overflow one).
    /// It makes nothing and does not count as a use: asking keeps no key
    /// from being evicted.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let guard = self.map.guard();
        self.map.get(key, &guard).is_some_and(|entry| !entry.seen.is_retired())
    }

    /// Calls `f` with every key and its breaker (not the overflow one), in
    /// no particular order. It sees the map as it is while it runs, and
    /// blocks nobody.
    pub fn for_each(&self, mut f: impl FnMut(&K, &NamedBreaker<C, W>)) {
        self.for_each_slot(|key, breaker, _| {
            if let Some(key) = key {
                f(key, breaker);
            }
        });
    }

    /// [`for_each`](Self::for_each) with each key's slot, then the overflow
    /// breaker's (with no key).
    pub fn for_each_slot(&self, mut f: impl FnMut(Option<&K>, &NamedBreaker<C, W>, &X)) {
        let guard = self.map.guard();
        for (key, entry) in self.map.iter(&guard) {
            if !entry.seen.is_retired() {
                f(Some(key), &entry.breaker, &entry.slot);
            }
        }
        f(None, &self.overflow, &self.overflow_slot);
    }

    /// The last sweep period `key`'s breaker was used in, if it has one.
    #[cfg(test)]
    fn last_used(&self, key: &K) -> Option<u64> {
        let guard = self.map.guard();
        self.map.get(key, &guard).map(|e| e.seen.last())
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
