//! A rate limiter whose limits live in Redis: one budget for every host
//! (per-account limits such as order counts, or many hosts behind one NAT
//! IP), checked by one Lua script per call: one round trip.
//!
//! The script is the core's algorithm (`tripwire::limiter`: a weighted
//! cell rate per limit, all or nothing, the request counted from when the
//! slowest limit lets it go) on Redis's own clock (`TIME`, in
//! microseconds: every host reads the same time), so hosts whose clocks
//! disagree still share one budget. Each limit is one key, which expires
//! two periods after its last use.
//!
//! When Redis cannot be reached, [`OnRedisLoss`] says what a check does:
//! take its units from this process's own limiter ([`OnRedisLoss::Local`]:
//! the process stays under the limit on its own, not the fleet), or be
//! refused ([`OnRedisLoss::Refuse`]: nothing is sent without the fleet's
//! word). A lost connection is tried again after the config's
//! `reconnect` minimum; checks meanwhile do not wait for it.

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use std::string::{String, ToString};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;
use std::vec::Vec;

use redis::Connection;
use tripwire::MonotonicClock;
use tripwire::limiter::{LimitConfig, RateLimiter, Throttled};

use crate::clock::FleetClock;
use crate::config::{FleetConfig, FleetError, check_name};
use crate::connect::{Link, link, open};

/// What a [`FleetRateLimiter`] does when Redis cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRedisLoss {
    /// Take the units from this process's own limiter of the same limits:
    /// the process stays under each limit by itself (fail open to a
    /// local limit).
    Local,
    /// Refuse the check ([`FleetThrottled::Unavailable`]): nothing goes
    /// without the fleet's count (fail closed).
    Refuse,
}

/// Why a [`FleetRateLimiter`] took nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetThrottled {
    /// A limit would not let the costs go in time (or ever, for a cost
    /// above its burst): as the local limiter says it.
    Throttled(Throttled),
    /// Redis could not be reached, and [`OnRedisLoss::Refuse`] says to
    /// refuse: why.
    Unavailable(String),
}

impl fmt::Display for FleetThrottled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetThrottled::Throttled(t) => t.fmt(f),
            FleetThrottled::Unavailable(why) => write!(f, "fleet rate limiter: Redis unavailable: {why}"),
        }
    }
}

impl core::error::Error for FleetThrottled {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            FleetThrottled::Throttled(t) => Some(t),
            FleetThrottled::Unavailable(_) => None,
        }
    }
}

/// One check on every limit: `KEYS` the limits' keys; `ARGV[1]` the
/// longest wait (µs), then per limit its cost, emission interval (µs),
/// tolerance (µs) and time to live (ms). Answers `{1, 0, wait}` when the
/// costs were taken (send after `wait` µs), `{0, limit, wait}` when limit
/// `limit` (from 0) refuses them (they go at once after `wait`).
const CHECK: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local max_wait = tonumber(ARGV[1])
local counted = {}
local send_in, worst = 0, 0
for i = 1, #KEYS do
  local a = 1 + (i - 1) * 4
  local cost, e, tol = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0') or 0
  counted[i] = math.max(tat - now, 0)
  if cost > 0 then
    local ready = math.max(counted[i] + cost * e - tol, 0)
    if ready > send_in then send_in, worst = ready, i - 1 end
  end
end
if send_in > max_wait then return {0, worst, send_in} end
for i = 1, #KEYS do
  local a = 1 + (i - 1) * 4
  local cost, e, ttl = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 4])
  if cost > 0 then
    redis.call('SET', KEYS[i], string.format('%d', now + math.max(counted[i], send_in) + cost * e), 'PX', ttl)
  end
end
return {1, 0, send_in}
";

/// A rate limiter of `N` limits kept in Redis, shared by every host that
/// makes one with the same namespace, name and limits.
///
/// # Examples
/// ```no_run
/// use std::time::Duration;
/// use tripwire::limiter::LimitConfig;
/// use tripwire_fleet::{FleetConfig, FleetRateLimiter, OnRedisLoss};
///
/// let config = FleetConfig::builder("redis://10.0.0.5:6379", "prod", *b"0123456789abcdef0123456789abcdef").build()?;
/// // Binance: 50 orders per 10 s per account, whichever host places them.
/// let orders = LimitConfig::builder(50, Duration::from_secs(10)).build()?;
/// let limiter = FleetRateLimiter::new(&config, "binance/orders", [orders], OnRedisLoss::Local)?;
/// match limiter.acquire([1], Duration::from_secs(1)) {
///     Ok(wait) => std::thread::sleep(wait), // then place the order
///     Err(refused) => eprintln!("not now: {refused}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FleetRateLimiter<const N: usize> {
    config: FleetConfig,
    link: Link,
    clock: FleetClock,
    keys: [String; N],
    local: RateLimiter<N>,
    on_loss: OnRedisLoss,
    conn: Mutex<Conn>,
    round_trips: AtomicU64,
}

/// The connection, or when to try again after losing it.
struct Conn {
    conn: Option<Connection>,
    retry_at: Option<Instant>,
}

impl<const N: usize> fmt::Debug for FleetRateLimiter<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetRateLimiter")
            .field("keys", &self.keys)
            .field("on_loss", &self.on_loss)
            .finish_non_exhaustive()
    }
}

impl<const N: usize> FleetRateLimiter<N> {
    /// A limiter of `limits` named `name` (the fleet's name rules: what
    /// every host calls it) in `config`'s Redis and namespace. Connects on
    /// the first check.
    ///
    /// # Errors
    /// [`FleetError::Join`] for a bad name, [`FleetError::Redis`] for a
    /// URL or TLS settings that do not parse.
    pub fn new(
        config: &FleetConfig,
        name: &str,
        limits: [LimitConfig; N],
        on_loss: OnRedisLoss,
    ) -> Result<Self, FleetError> {
        check_name(name)?;
        let keys = core::array::from_fn(|i| std::format!("tw:{}:rate:{name}:{i}", config.namespace()));
        Ok(Self {
            link: link(config)?,
            config: config.clone(),
            clock: FleetClock::default(),
            keys,
            local: RateLimiter::new(limits),
            on_loss,
            conn: Mutex::new(Conn { conn: None, retry_at: None }),
            round_trips: AtomicU64::new(0),
        })
    }

    /// Takes `costs` (one per limit) from the fleet's budget if every
    /// limit lets them go within `max_wait` (cut to one period's units),
    /// and returns how long to wait before sending; else takes nothing.
    /// One round trip to Redis; when it cannot be made, as
    /// [`OnRedisLoss`] says.
    ///
    /// # Errors
    /// [`FleetThrottled::Throttled`] when a limit refuses (its wait on
    /// Redis's clock), or a cost is above its limit's burst;
    /// [`FleetThrottled::Unavailable`] when Redis is lost and the limiter
    /// refuses then.
    pub fn acquire(&self, costs: [u32; N], max_wait: Duration) -> Result<Duration, FleetThrottled> {
        // A cost that never goes is refused here, without a round trip.
        self.local.wait_for(costs, &MonotonicClock).map_err(FleetThrottled::Throttled)?;
        match self.check(costs, max_wait) {
            Ok(answer) => answer,
            Err(why) => match self.on_loss {
                OnRedisLoss::Local => self
                    .local
                    .acquire(costs, max_wait, &MonotonicClock)
                    .map(|g| g.ready_in())
                    .map_err(FleetThrottled::Throttled),
                OnRedisLoss::Refuse => Err(FleetThrottled::Unavailable(why)),
            },
        }
    }

    /// Round trips made to Redis so far (one per check that reached it).
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// The limits.
    pub fn limits(&self) -> [LimitConfig; N] {
        self.local.configs()
    }

    /// The check on Redis, or why it could not be made.
    fn check(&self, costs: [u32; N], max_wait: Duration) -> Result<Result<Duration, FleetThrottled>, String> {
        let configs = self.local.configs();
        let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let cap = configs.iter().zip(&costs).filter(|(_, c)| **c > 0).map(|(l, _)| us(l.max_wait())).min();
        let max_wait_us = us(max_wait).min(cap.unwrap_or(0));
        // EVAL with the script's text: one round trip either way, and no
        // script cache to lose on a failover.
        let mut invocation = redis::cmd("EVAL");
        invocation.arg(CHECK).arg(N);
        for key in &self.keys {
            invocation.arg(key);
        }
        invocation.arg(max_wait_us);
        for (limit, cost) in configs.iter().zip(costs) {
            let e = us(limit.emission_interval()).max(1);
            let ttl_ms = (2 * us(limit.max_wait())).div_ceil(1000) + 1000;
            invocation.arg(cost).arg(e).arg(e * u64::from(limit.burst())).arg(ttl_ms);
        }
        let mut guard = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.conn.is_none() {
            if guard.retry_at.is_some_and(|at| Instant::now() < at) {
                return Err("lost; trying again soon".to_string());
            }
            match open(&self.link, &self.config, &self.clock) {
                Ok((conn, _)) => guard.conn = Some(conn),
                Err(why) => {
                    guard.retry_at = Some(Instant::now() + self.config.reconnect_min);
                    return Err(why);
                }
            }
        }
        let conn = guard.conn.as_mut().expect("connected above");
        let reply: Result<Vec<u64>, _> = invocation.query(conn);
        match reply {
            Ok(v) if v.len() == 3 => {
                self.round_trips.fetch_add(1, Ordering::Relaxed);
                let wait = Duration::from_micros(v[2]);
                Ok(if v[0] == 1 {
                    Ok(wait)
                } else {
                    let limit = usize::try_from(v[1]).unwrap_or(0).min(N.saturating_sub(1));
                    Err(FleetThrottled::Throttled(Throttled::Wait { limit, wait }))
                })
            }
            Ok(v) => Err(std::format!("the check answered {v:?}")),
            Err(e) => {
                guard.conn = None;
                guard.retry_at = Some(Instant::now() + self.config.reconnect_min);
                Err(e.to_string())
            }
        }
    }
}
