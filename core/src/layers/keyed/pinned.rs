//! A map pinned by one thread: many keyed calls under one epoch guard (see
//! [`Pinned`]).

use core::borrow::Borrow;
use core::fmt;
use core::hash::{BuildHasher, Hash};
use std::borrow::ToOwned;
use std::sync::Arc;

use papaya::{Guard, LocalGuard};

use super::{Breakers, DefaultHasher};
use crate::breaker::permit::CallError;
use crate::breaker::storage::{AnyWindow, Windows};
use crate::clock::Clock;
use crate::layers::clock::MonotonicClock;
use crate::layers::named::NamedBreaker;

/// A [`Breakers`] map with this thread's epoch guard held across calls:
/// from [`Breakers::pin`]. It stays on the thread that made it (it is
/// neither `Send` nor `Sync`).
///
/// Every [`Breakers`] lookup reads papaya's table under an epoch guard, and
/// taking one costs about a quarter of the lookup: a thread-local read on
/// entry, and a locked swap on leaving. A thread that makes many calls in a
/// row (a strategy's loop over its symbols, a batch of orders) can take the
/// guard once with [`Breakers::pin`] and make every call through it.
///
/// A call through the handle is the same call as through the map: the same
/// breaker, the same take of the entry in the current period, the same
/// eviction. What the guard holds back is the freeing of memory: an entry
/// evicted while any thread holds a guard is freed once every guard that
/// could see it is gone. So pin for a batch, not for ever: drop the handle,
/// or [`refresh`](Pinned::refresh) it, between batches.
///
/// # Examples
/// ```
/// use tripwire::keyed::Breakers;
/// use tripwire::BreakerConfig;
///
/// let per_symbol: Breakers<String> = Breakers::new("binance", BreakerConfig::default());
/// let mut pinned = per_symbol.pin();
/// for _ in 0..3 {
///     for symbol in ["BTCUSDT", "ETHUSDT", "SOLUSDT"] {
///         assert_eq!(pinned.call(symbol, || Ok::<_, ()>(symbol.len())).ok(), Some(7));
///     }
///     // Between batches: lets the memory of breakers evicted meanwhile go.
///     pinned.refresh();
/// }
/// assert_eq!(per_symbol.len(), 3);
/// ```
///
/// The guard belongs to the thread that took it, so the handle cannot
/// be sent to another:
/// ```compile_fail
/// use tripwire::keyed::Breakers;
/// use tripwire::BreakerConfig;
///
/// let per_symbol: Breakers<String> = Breakers::new("binance", BreakerConfig::default());
/// let pinned = per_symbol.pin();
/// std::thread::scope(|s| {
///     s.spawn(move || pinned.call("BTCUSDT", || Ok::<_, ()>(())));
/// });
/// ```
pub struct Pinned<'m, K, C: Clock = MonotonicClock, S = DefaultHasher, W: Windows = AnyWindow, X = ()> {
    map: &'m Breakers<K, C, S, W, X>,
    guard: LocalGuard<'m>,
}

impl<K, C: Clock, S, W: Windows, X> fmt::Debug for Pinned<'_, K, C, S, W, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pinned").field("map", &self.map).finish_non_exhaustive()
    }
}

impl<K, C, S, W, X> Breakers<K, C, S, W, X>
where
    K: Hash + Eq + fmt::Display + Send + Sync + 'static,
    C: Clock + Clone + Send + Sync + 'static,
    S: BuildHasher,
    W: Windows,
    X: Default + Send + Sync + 'static,
{
    /// This map with the calling thread's epoch guard taken once and held
    /// until the handle is dropped: each call through it skips the guard a
    /// lookup takes and leaves. Evicted breakers are freed only once no
    /// handle that was pinned before their eviction is left (or each has
    /// been refreshed): see [`Pinned`].
    pub fn pin(&self) -> Pinned<'_, K, C, S, W, X> {
        Pinned { map: self, guard: self.map.guard() }
    }
}

impl<'m, K, C, S, W, X> Pinned<'m, K, C, S, W, X>
where
    K: Hash + Eq + fmt::Display + Send + Sync + 'static,
    C: Clock + Clone + Send + Sync + 'static,
    S: BuildHasher,
    W: Windows,
    X: Default + Send + Sync + 'static,
{
    /// [`Breakers::with`] under the held guard.
    #[inline]
    pub fn with<Q, R>(&self, key: &Q, f: impl FnOnce(&Arc<NamedBreaker<C, W>>) -> R) -> R
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized + 'static,
    {
        f(self.map.entry(key, &self.guard).0)
    }

    /// [`Breakers::with_slot`] under the held guard.
    #[inline]
    pub fn with_slot<Q, R>(&self, key: &Q, f: impl FnOnce(&Arc<NamedBreaker<C, W>>, &X) -> R) -> R
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized + 'static,
    {
        let (breaker, slot) = self.map.entry(key, &self.guard);
        f(breaker, slot)
    }

    /// [`Breakers::call`] under the held guard.
    #[inline]
    pub fn call<Q, T, E>(&self, key: &Q, f: impl FnOnce() -> Result<T, E>) -> Result<T, CallError<E>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized + 'static,
    {
        self.with(key, |b| b.call(f))
    }

    /// [`Breakers::get`] under the held guard.
    pub fn get<Q>(&self, key: &Q) -> Arc<NamedBreaker<C, W>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized + 'static,
    {
        Arc::clone(self.map.entry(key, &self.guard).0)
    }

    /// Lets go of what the guard held back (entries evicted since it was
    /// taken) and keeps the handle pinned: as dropping the handle and
    /// pinning again, for less. It takes `&mut self`, so no breaker
    /// borrowed through the handle outlives it. While the thread holds
    /// another guard of the same map (a second handle, or a call through
    /// the map running inside one through this handle), nothing is let go
    /// until the last of them is dropped or refreshed.
    pub fn refresh(&mut self) {
        self.guard.refresh();
    }

    /// The map this handle calls into.
    pub fn map(&self) -> &'m Breakers<K, C, S, W, X> {
        self.map
    }
}
