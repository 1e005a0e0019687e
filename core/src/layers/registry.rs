//! Named breakers, bulkheads and fallback counters of one process (feature
//! `std`), found by name and exported together.
//!
//! The maps are behind `RwLock`s: get-or-create runs when a client is set
//! up, not per call (keep the `Arc` it returns), and an export holds the
//! read lock only to clone the list of handles.
//!
//! The exports live with their formats: [`Registry::prometheus`] in
//! `prometheus.rs`, `Registry::publish_metrics` in `metrics_export.rs`.

use std::collections::BTreeMap;
use std::string::String;
use std::sync::{Arc, PoisonError, RwLock};
use std::vec::Vec;

use crate::breaker::config::BreakerConfig;
use crate::bulkhead::Bulkhead;
use crate::layers::fallback::StaleStats;
#[cfg(feature = "keyed")]
use crate::layers::keyed::KeyedRows;
use crate::layers::named::NamedBreaker;
use crate::layers::prometheus::RateLimitRows;

/// The named breakers, bulkheads and stale-cache counters of a process.
///
/// # Examples
/// ```
/// use tripwire::registry::Registry;
/// use tripwire::BreakerConfig;
///
/// let registry = Registry::new();
/// let books = registry.breaker("binance/orderbook", BreakerConfig::default);
/// let again = registry.breaker("binance/orderbook", || unreachable!("made once"));
/// assert!(std::sync::Arc::ptr_eq(&books, &again));
/// assert!(registry.prometheus().contains(r#"tripwire_breaker_state{breaker="binance/orderbook",state="closed"} 1"#));
/// ```
#[derive(Debug, Default)]
pub struct Registry {
    breakers: RwLock<BTreeMap<String, Arc<NamedBreaker>>>,
    bulkheads: RwLock<BTreeMap<String, Arc<Bulkhead>>>,
    stale: RwLock<BTreeMap<String, Arc<StaleStats>>>,
    rate_limiters: RwLock<BTreeMap<String, Arc<dyn RateLimitRows>>>,
    #[cfg(feature = "keyed")]
    keyed: RwLock<BTreeMap<String, Arc<dyn KeyedRows>>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The breaker named `name`, made with `config()` if there is none yet.
    pub fn breaker(&self, name: &str, config: impl FnOnce() -> BreakerConfig) -> Arc<NamedBreaker> {
        if let Some(b) = self.breakers.read().unwrap_or_else(PoisonError::into_inner).get(name) {
            return b.clone();
        }
        let mut map = self.breakers.write().unwrap_or_else(PoisonError::into_inner);
        map.entry(String::from(name)).or_insert_with(|| Arc::new(NamedBreaker::new(name, config()))).clone()
    }

    /// The breaker named `name`, if there is one.
    pub fn get_breaker(&self, name: &str) -> Option<Arc<NamedBreaker>> {
        self.breakers.read().unwrap_or_else(PoisonError::into_inner).get(name).cloned()
    }

    /// Adds a breaker made elsewhere; returns the one already registered
    /// under its name instead, if there is one.
    pub fn add_breaker(&self, breaker: Arc<NamedBreaker>) -> Arc<NamedBreaker> {
        let mut map = self.breakers.write().unwrap_or_else(PoisonError::into_inner);
        map.entry(String::from(breaker.name())).or_insert(breaker).clone()
    }

    /// The bulkhead named `name`, made with room for `max` calls in flight
    /// if there is none yet.
    pub fn bulkhead(&self, name: &str, max: u32) -> Arc<Bulkhead> {
        if let Some(b) = self.bulkheads.read().unwrap_or_else(PoisonError::into_inner).get(name) {
            return b.clone();
        }
        let mut map = self.bulkheads.write().unwrap_or_else(PoisonError::into_inner);
        map.entry(String::from(name)).or_insert_with(|| Arc::new(Bulkhead::new(max))).clone()
    }

    /// The bulkhead named `name`, if there is one.
    pub fn get_bulkhead(&self, name: &str) -> Option<Arc<Bulkhead>> {
        self.bulkheads.read().unwrap_or_else(PoisonError::into_inner).get(name).cloned()
    }

    /// Every bulkhead with its name, by name.
    pub fn bulkheads(&self) -> Vec<(String, Arc<Bulkhead>)> {
        let map = self.bulkheads.read().unwrap_or_else(PoisonError::into_inner);
        map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// Exports a stale cache's counters under `name` (e.g.
    /// `binance/orderbook`): pass [`StaleCache::stats`](crate::stale::StaleCache::stats).
    pub fn add_stale(&self, name: &str, stats: Arc<StaleStats>) {
        self.stale.write().unwrap_or_else(PoisonError::into_inner).insert(String::from(name), stats);
    }

    /// Every breaker, by name.
    pub fn breakers(&self) -> Vec<Arc<NamedBreaker>> {
        self.breakers.read().unwrap_or_else(PoisonError::into_inner).values().cloned().collect()
    }

    /// Every stale cache's counters, by name.
    pub fn stale_caches(&self) -> Vec<(String, Arc<StaleStats>)> {
        let map = self.stale.read().unwrap_or_else(PoisonError::into_inner);
        map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// Exports `limiter`'s limits under `name` (one that counts:
    /// [`RateLimiter::counting`](crate::limiter::RateLimiter::counting)),
    /// replacing any of that name.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use tripwire::MonotonicClock;
    /// use tripwire::limiter::{LimitConfig, RateLimiter};
    /// use tripwire::registry::Registry;
    ///
    /// let limiter = Arc::new(RateLimiter::new([LimitConfig::builder(1_200, Duration::from_secs(60)).build()?]).counting());
    /// let registry = Registry::new();
    /// registry.add_rate_limiter("binance", limiter.clone());
    /// limiter.try_acquire([5], &MonotonicClock).unwrap();
    /// let text = registry.prometheus();
    /// assert!(text.contains("tripwire_rate_limit_spent_total{limiter=\"binance\",limit=\"0\"} 5"), "{text}");
    /// # Ok::<(), tripwire::ConfigError>(())
    /// ```
    pub fn add_rate_limiter(&self, name: &str, limiter: Arc<dyn RateLimitRows>) {
        self.rate_limiters
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(String::from(name), limiter);
    }

    /// Exports a map of keyed breakers (feature `keyed`) under its name,
    /// replacing one of the same name: one family for all its keys (keys
    /// per state, created, evicted, overflow calls), and each key's state
    /// for at most the map's label cap of keys, those not Closed first.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use tripwire::keyed::Breakers;
    /// use tripwire::registry::Registry;
    /// use tripwire::BreakerConfig;
    ///
    /// let hosts: Arc<Breakers<String>> = Arc::new(Breakers::new("hosts", BreakerConfig::default()));
    /// let registry = Registry::new();
    /// registry.add_keyed(hosts.clone());
    /// hosts.call("api.binance.com", || Ok::<_, ()>(()))?;
    /// let text = registry.prometheus();
    /// assert!(text.contains(r#"tripwire_keyed_breakers_in_state{breakers="hosts",state="closed"} 1"#), "{text}");
    /// assert!(text.contains(r#"tripwire_keyed_breaker_state{breakers="hosts",key="api.binance.com",state="closed"} 1"#));
    /// # Ok::<(), tripwire::CallError<()>>(())
    /// ```
    #[cfg(feature = "keyed")]
    pub fn add_keyed(&self, map: Arc<dyn KeyedRows>) {
        let name = String::from(map.keyed_name());
        self.keyed.write().unwrap_or_else(PoisonError::into_inner).insert(name, map);
    }

    /// Every keyed map (feature `keyed`), by name.
    #[cfg(feature = "keyed")]
    pub fn keyed(&self) -> Vec<Arc<dyn KeyedRows>> {
        self.keyed.read().unwrap_or_else(PoisonError::into_inner).values().cloned().collect()
    }

    /// Every rate limiter, by name.
    pub fn rate_limiters(&self) -> Vec<(String, Arc<dyn RateLimitRows>)> {
        let map = self.rate_limiters.read().unwrap_or_else(PoisonError::into_inner);
        map.iter().map(|(n, l)| (n.clone(), l.clone())).collect()
    }
}
