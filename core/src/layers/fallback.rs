//! Stale fallback (feature `std`): the last good value per key, served with
//! its age when a call fails and the endpoint's policy accepts stale data.
//!
//! An order book or a price a few seconds old is better than nothing while
//! an exchange is down; a balance is not: the caller must see the error.
//! The cache sits outside every other layer, so it answers even when the
//! breaker refuses a call.
//!
//! A caller with stale data at hand gets it as soon as a fresh value is
//! not: [`StaleCache::serve_by`] and [`serve_async_by`](StaleCache::serve_async_by)
//! give the call a deadline one attempt away when there is a value to fall
//! back on (for the pipeline's `call_before` / `call_async_before`, which
//! then begin no backoff and no wait past it), and none when there is not,
//! so that the retries run their full time only for a caller who has
//! nothing else. The deadline bounds time, not requests: failures faster
//! than their backoff may still be retried within that one attempt's time.
//! [`serve`](StaleCache::serve) around a retrying call waits for its
//! retries before it can answer.
//!
//! The map is behind a `RwLock`: it is off the breaker's hot path, and each
//! critical section is one map lookup or insert (and a clone of the value:
//! keep large values behind an `Arc`). No lock is held across the call.
//!
//! # Orderings
//! The counters are `Relaxed`: statistics that order nothing.

use core::borrow::Borrow;
use core::fmt;
use core::hash::Hash;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use crate::clock::Clock;
use crate::layers::clock::MonotonicClock;

/// Whether an endpoint accepts stale data when a call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StalePolicy {
    /// Never: the caller gets the error (balances, open orders).
    Never,
    /// Data at most this old is served (order books, prices).
    UpTo(Duration),
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Served<V> {
    /// The call succeeded just now.
    Fresh(V),
    /// The call failed; this is the last good value, this old.
    Stale {
        /// The last good value.
        value: V,
        /// How long ago it was stored.
        age: Duration,
    },
}

impl<V> Served<V> {
    /// The value, fresh or stale.
    pub fn into_value(self) -> V {
        match self {
            Served::Fresh(v) | Served::Stale { value: v, .. } => v,
        }
    }

    /// The value's age if it is stale, `None` if fresh.
    pub fn age(&self) -> Option<Duration> {
        match self {
            Served::Fresh(_) => None,
            Served::Stale { age, .. } => Some(*age),
        }
    }

    /// Whether it is stale.
    pub fn is_stale(&self) -> bool {
        matches!(self, Served::Stale { .. })
    }
}

/// What a cache has served, counted since it was made.
#[derive(Debug, Default)]
pub struct StaleStats {
    fresh: AtomicU64,
    stale: AtomicU64,
    refused: AtomicU64,
}

/// [`StaleStats`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StaleSnapshot {
    /// Calls that succeeded (their values were stored).
    pub fresh: u64,
    /// Failed calls answered with stale data.
    pub stale: u64,
    /// Failed calls whose error went to the caller: the policy refuses
    /// stale data, or there was none young enough.
    pub refused: u64,
}

impl StaleStats {
    /// The counters at this moment.
    pub fn snapshot(&self) -> StaleSnapshot {
        // Relaxed: see the module's Orderings.
        StaleSnapshot {
            fresh: self.fresh.load(Ordering::Relaxed),
            stale: self.stale.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    fn add(counter: &AtomicU64) {
        // Relaxed: see the module's Orderings.
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The last good value per key, with the time it was stored.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::stale::{Served, StaleCache, StalePolicy};
/// use tripwire::ManualClock;
///
/// let books = StaleCache::with_clock(ManualClock::new(0));
/// let prices = StalePolicy::UpTo(Duration::from_secs(30));
/// let fresh = books.serve("BTC-USDT", prices, || Ok::<_, &str>(97_000));
/// assert_eq!(fresh, Ok(Served::Fresh(97_000)));
///
/// books.clock().advance(Duration::from_secs(5));
/// let stale = books.serve("BTC-USDT", prices, || Err("503"));
/// assert_eq!(stale, Ok(Served::Stale { value: 97_000, age: Duration::from_secs(5) }));
///
/// // A balance is never served stale: the caller gets the error.
/// assert_eq!(books.serve("BTC-USDT", StalePolicy::Never, || Err("503")), Err("503"));
/// assert_eq!((books.stats().snapshot().stale, books.stats().snapshot().refused), (1, 1));
/// ```
pub struct StaleCache<K, V, C: Clock = MonotonicClock> {
    map: RwLock<HashMap<K, (u64, V)>>,
    clock: C,
    stats: Arc<StaleStats>,
}

impl<K, V, C: Clock> fmt::Debug for StaleCache<K, V, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.map.read().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("StaleCache").field("len", &len).field("stats", &self.stats).finish_non_exhaustive()
    }
}

impl<K: Eq + Hash, V: Clone> Default for StaleCache<K, V, MonotonicClock> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Eq + Hash, V: Clone> StaleCache<K, V, MonotonicClock> {
    /// An empty cache reading [`MonotonicClock`].
    pub fn new() -> Self {
        Self::with_clock(MonotonicClock)
    }
}

impl<K: Eq + Hash, V: Clone, C: Clock> StaleCache<K, V, C> {
    /// An empty cache reading `clock`.
    pub fn with_clock(clock: C) -> Self {
        Self { map: RwLock::new(HashMap::new()), clock, stats: Arc::new(StaleStats::default()) }
    }

    /// The clock it reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Its counters; share them with a [`Registry`](crate::registry::Registry) to
    /// export them.
    pub fn stats(&self) -> &Arc<StaleStats> {
        &self.stats
    }

    /// Stores `value` as the last good one for `key`.
    pub fn put(&self, key: K, value: V) {
        let now = self.clock.now();
        self.map.write().unwrap_or_else(PoisonError::into_inner).insert(key, (now, value));
    }

    /// Forgets the value for `key` (a delisted symbol, a closed account).
    pub fn remove<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        self.map.write().unwrap_or_else(PoisonError::into_inner).remove(key);
    }

    /// The last good value for `key` and its age.
    pub fn get<Q>(&self, key: &Q) -> Option<(V, Duration)>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        let (at, value) = self.map.read().unwrap_or_else(PoisonError::into_inner).get(key)?.clone();
        Some((value, Duration::from_nanos(self.clock.now().saturating_sub(at))))
    }

    /// Whether a call for `key` that failed now would be answered with
    /// stale data: `policy` accepts it and a value young enough is stored.
    pub fn has_stale<Q>(&self, key: &Q, policy: StalePolicy) -> bool
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        self.deadline_for(key, policy, Duration::ZERO).is_some()
    }

    /// The deadline to give a call for `key`: one `attempt` from now when
    /// stale data is at hand, none when it is not.
    fn deadline_for<Q>(&self, key: &Q, policy: StalePolicy, attempt: Duration) -> Option<Instant>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        let StalePolicy::UpTo(max) = policy else { return None };
        let (_, age) = self.get(key)?;
        // `checked_add`: an attempt too long to add is no limit at all.
        (age <= max).then(Instant::now).and_then(|now| now.checked_add(attempt))
    }

    /// [`serve`](Self::serve) for a call that takes a deadline, as the
    /// pipeline's `call_before` does: with stale data at hand `fetch` gets
    /// `Some(now + attempt)`, so that the stale value comes back after at
    /// most one attempt's time, never after a backoff or a retry's wait;
    /// with none, `None`, and the call's retries run in full.
    ///
    /// # Examples
    /// ```
    /// use core::time::Duration;
    /// use tripwire::stale::{Served, StaleCache, StalePolicy};
    /// use tripwire::ManualClock;
    ///
    /// let books = StaleCache::with_clock(ManualClock::new(0));
    /// let policy = StalePolicy::UpTo(Duration::from_secs(30));
    /// let attempt = Duration::from_millis(800);
    /// let first = books.serve_by("BTC-USDT", policy, attempt, |deadline| {
    ///     assert_eq!(deadline, None, "nothing to fall back on: every retry");
    ///     Ok::<_, &str>(97_000)
    /// });
    /// assert_eq!(first, Ok(Served::Fresh(97_000)));
    /// let later = books.serve_by("BTC-USDT", policy, attempt, |deadline| {
    ///     assert!(deadline.is_some(), "a book at hand: one attempt");
    ///     Err("503")
    /// });
    /// assert_eq!(later, Ok(Served::Stale { value: 97_000, age: Duration::ZERO }));
    /// ```
    pub fn serve_by<E>(
        &self,
        key: K,
        policy: StalePolicy,
        attempt: Duration,
        fetch: impl FnOnce(Option<Instant>) -> Result<V, E>,
    ) -> Result<Served<V>, E> {
        let result = fetch(self.deadline_for(&key, policy, attempt));
        self.settle(key, policy, result)
    }

    /// [`serve_by`](Self::serve_by) for a future (the pipeline's
    /// `call_async_before`).
    pub async fn serve_async_by<E, Fut>(
        &self,
        key: K,
        policy: StalePolicy,
        attempt: Duration,
        fetch: impl FnOnce(Option<Instant>) -> Fut,
    ) -> Result<Served<V>, E>
    where
        Fut: Future<Output = Result<V, E>>,
    {
        let result = fetch(self.deadline_for(&key, policy, attempt)).await;
        self.settle(key, policy, result)
    }

    /// Runs `f`: stores and returns its value on success; on failure serves
    /// the last good value if `policy` accepts its age, else returns `f`'s
    /// error.
    pub fn serve<E>(
        &self,
        key: K,
        policy: StalePolicy,
        f: impl FnOnce() -> Result<V, E>,
    ) -> Result<Served<V>, E> {
        let result = f();
        self.settle(key, policy, result)
    }

    /// [`serve`](Self::serve) for a future.
    pub async fn serve_async<E>(
        &self,
        key: K,
        policy: StalePolicy,
        f: impl Future<Output = Result<V, E>>,
    ) -> Result<Served<V>, E> {
        let result = f.await;
        self.settle(key, policy, result)
    }

    fn settle<E>(&self, key: K, policy: StalePolicy, result: Result<V, E>) -> Result<Served<V>, E> {
        let error = match result {
            Ok(value) => {
                StaleStats::add(&self.stats.fresh);
                self.put(key, value.clone());
                return Ok(Served::Fresh(value));
            }
            Err(e) => e,
        };
        // Does the endpoint accept stale data, and is there some young enough?
        let stale = match policy {
            StalePolicy::Never => None,
            StalePolicy::UpTo(max) => self.get(&key).filter(|(_, age)| *age <= max),
        };
        match stale {
            Some((value, age)) => {
                StaleStats::add(&self.stats.stale);
                Ok(Served::Stale { value, age })
            }
            None => {
                StaleStats::add(&self.stats.refused);
                Err(error)
            }
        }
    }
}
