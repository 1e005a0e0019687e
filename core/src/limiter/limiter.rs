//! Several limits on one limiter, taken all or nothing.

use core::fmt;
use core::time::Duration;

use crate::clock::{Clock, duration_ns};
use crate::limiter::cell::{Cell, LimitWords, plan};
use crate::limiter::config::LimitConfig;
use crate::limiter::stats::{Counting, LimitCounts, NoStats, Stats};

/// A rate limiter of `N` limits (say, request weight per minute and
/// orders per 10 s), each counting its own cost of every request. A request
/// goes only if every limit lets it: one that a limit refuses takes
/// nothing from the others.
///
/// Lock-free and allocation-free: each limit is one `AtomicU64` moved by
/// compare-and-swap (see the [module docs](super)).
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::ManualClock;
/// use tripwire::limiter::{LimitConfig, RateLimiter, Throttled};
///
/// let weight = LimitConfig::builder(1_200, Duration::from_secs(60)).build()?;
/// let orders = LimitConfig::builder(10, Duration::from_secs(10)).burst(2).build()?;
/// let limiter = RateLimiter::new([weight, orders]);
/// let clock = ManualClock::new(0);
///
/// // An order book (weight 5, no order) and two orders (weight 1 each).
/// assert!(limiter.try_acquire([5, 0], &clock).is_ok());
/// assert!(limiter.try_acquire([1, 1], &clock).is_ok());
/// assert!(limiter.try_acquire([1, 1], &clock).is_ok());
/// // A third order at once is one too many for the orders' burst; the
/// // weight it would have taken is left alone.
/// let Err(Throttled::Wait { limit: 1, wait }) = limiter.try_acquire([1, 1], &clock) else { panic!() };
/// assert_eq!(wait, Duration::from_millis(1_250), "10 s over the 8 paced orders");
/// assert_eq!(limiter.in_use(&clock), [7, 2]);
/// clock.advance(wait);
/// assert!(limiter.try_acquire([1, 1], &clock).is_ok());
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
///
/// Its words live in the limiter (`W`, by default), or in memory several
/// processes share: a [`SharedRateLimiter`] is this type over a shared
/// region's words ([`SharedRateLimiterRegion`](crate::shared::SharedRateLimiterRegion)).
///
/// It counts nothing unless made to ([`counting`](Self::counting)): see
/// [`Stats`].
#[derive(Debug)]
pub struct RateLimiter<const N: usize, W: Words<N> = [LimitWords; N], S: Stats<N> = NoStats> {
    configs: [LimitConfig; N],
    words: W,
    stats: S,
}

/// A [`RateLimiter`] whose limits live in a shared region, so that every
/// process that maps it spends one budget.
pub type SharedRateLimiter<'a, const N: usize> = RateLimiter<N, &'a [LimitWords; N]>;

/// Where a [`RateLimiter`]'s words live: in the limiter, or in a shared
/// region. Implemented for `[LimitWords; N]` and `&[LimitWords; N]` only.
pub trait Words<const N: usize>: sealed::Sealed {
    /// The words of every limit.
    fn words(&self) -> &[LimitWords; N];
}

impl<const N: usize> Words<N> for [LimitWords; N] {
    #[inline(always)]
    fn words(&self) -> &[LimitWords; N] {
        self
    }
}

impl<const N: usize> Words<N> for &[LimitWords; N] {
    #[inline(always)]
    fn words(&self) -> &[LimitWords; N] {
        self
    }
}

mod sealed {
    pub trait Sealed {}
    impl<const N: usize> Sealed for [super::LimitWords; N] {}
    impl<const N: usize> Sealed for &[super::LimitWords; N] {}
}

/// Units taken from every limit of a [`RateLimiter`]: send after
/// [`ready_in`](Self::ready_in), or give them back with
/// [`RateLimiter::refund`] if the request is never sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "send after ready_in, or refund the units"]
pub struct Grant<const N: usize> {
    costs: [u32; N],
    ready_in: Duration,
}

impl<const N: usize> Grant<N> {
    /// How long to wait before sending: zero when the units were there, up
    /// to the `max_wait` asked for when they were reserved ahead.
    pub fn ready_in(&self) -> Duration {
        self.ready_in
    }

    /// The cost taken from each limit.
    pub fn costs(&self) -> [u32; N] {
        self.costs
    }
}

/// Why a [`RateLimiter`] took nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttled {
    /// Limit number `limit` (the one that waits longest) lets this cost go
    /// at once after `wait`, if nothing else is taken meanwhile.
    Wait {
        /// The index of the limit.
        limit: usize,
        /// The wait, exact to the nanosecond of the limiter's clock.
        wait: Duration,
    },
    /// The cost is above limit number `limit`'s burst: it never goes.
    TooCostly {
        /// The index of the limit.
        limit: usize,
        /// The cost asked for.
        cost: u32,
        /// The most that limit lets go at once.
        burst: u32,
    },
}

impl fmt::Display for Throttled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Throttled::Wait { limit, wait } => write!(f, "rate limit {limit}: wait {wait:?}"),
            Throttled::TooCostly { limit, cost, burst } => {
                write!(f, "rate limit {limit}: a cost of {cost} is above its burst of {burst}")
            }
        }
    }
}

impl core::error::Error for Throttled {}

impl<const N: usize> RateLimiter<N> {
    /// A limiter of the limits `configs`, none of their units in use.
    pub fn new(configs: [LimitConfig; N]) -> Self {
        RateLimiter { configs, words: core::array::from_fn(|_| LimitWords::default()), stats: NoStats }
    }
}

impl<const N: usize, W: Words<N>> RateLimiter<N, W, NoStats> {
    /// The same limiter, counting every limit's units taken, waits,
    /// refusals and corrections ([`counts`](RateLimiter::counts)): one
    /// relaxed `fetch_add` more per limit a take spends on.
    pub fn counting(self) -> RateLimiter<N, W, Counting<N>> {
        RateLimiter { configs: self.configs, words: self.words, stats: Counting::default() }
    }
}

impl<const N: usize, W: Words<N>> RateLimiter<N, W, Counting<N>> {
    /// Every limit's counts now.
    pub fn counts(&self) -> [LimitCounts; N] {
        self.stats.counts()
    }
}

#[cfg(not(loom))]
impl<'a, const N: usize> RateLimiter<N, &'a [LimitWords; N]> {
    /// A limiter of `configs` over words that live elsewhere (a shared
    /// region, checked by its caller).
    pub(crate) fn over(configs: [LimitConfig; N], words: &'a [LimitWords; N]) -> Self {
        RateLimiter { configs, words, stats: NoStats }
    }
}

impl<const N: usize, W: Words<N>, S: Stats<N>> RateLimiter<N, W, S> {
    /// Limit `i`.
    #[inline(always)]
    fn cell(&self, i: usize) -> Cell<'_> {
        Cell::new(&self.configs[i], &self.words.words()[i])
    }

    /// Every limit, in order.
    #[inline(always)]
    fn cells(&self) -> impl Iterator<Item = Cell<'_>> {
        self.configs.iter().zip(self.words.words()).map(|(c, w)| Cell::new(c, w))
    }

    /// The config of each limit.
    pub fn configs(&self) -> [LimitConfig; N] {
        self.configs
    }

    /// Takes `costs` (one per limit; 0 leaves a limit alone) if every limit
    /// lets them go now; else takes nothing and says how long to wait.
    #[inline]
    pub fn try_acquire(&self, costs: [u32; N], clock: &impl Clock) -> Result<Grant<N>, Throttled> {
        self.acquire(costs, Duration::ZERO, clock)
    }

    /// Takes `costs` if every limit lets them go within `max_wait` (cut to
    /// each limit's [`max_wait`](LimitConfig::max_wait)), reserving them
    /// ahead: the grant says how long to wait before sending. Else takes
    /// nothing, and [`Throttled::Wait`] says when they would go at once.
    ///
    /// Reserving ahead keeps the order callers came in, and nobody polls:
    /// each waits its own time.
    pub fn acquire(
        &self,
        costs: [u32; N],
        max_wait: Duration,
        clock: &impl Clock,
    ) -> Result<Grant<N>, Throttled> {
        let taken = self.take_costs(costs, max_wait, clock);
        match &taken {
            Ok(grant) => self.stats.took(&grant.costs, !grant.ready_in.is_zero()),
            Err(Throttled::Wait { limit, .. } | Throttled::TooCostly { limit, .. }) => {
                self.stats.refused(*limit)
            }
        }
        taken
    }

    /// [`acquire`](Self::acquire) but its counts.
    #[inline(always)]
    fn take_costs(
        &self,
        costs: [u32; N],
        max_wait: Duration,
        clock: &impl Clock,
    ) -> Result<Grant<N>, Throttled> {
        self.affordable(&costs)?;
        let now = clock.now();
        let max_wait = duration_ns(max_wait);
        if N == 1 {
            // One limit: its own take decides.
            let cell = self.cell(0);
            return match cell.take(costs[0], now, 0, max_wait.min(cell.config.max_wait_ns)) {
                Ok(wait) => Ok(Grant { costs, ready_in: Duration::from_nanos(wait) }),
                Err(wait) => Err(Throttled::Wait { limit: 0, wait: Duration::from_nanos(wait) }),
            };
        }
        'attempt: loop {
            // A look first, which writes nothing: when the slowest limit
            // lets the request go. Every limit then counts it from then.
            let send_in = self.send_in(&costs, now, max_wait)?;
            for (i, (cell, &cost)) in self.cells().zip(&costs).enumerate() {
                if cost == 0 {
                    continue;
                }
                match cell.take(cost, now, send_in, send_in) {
                    Ok(_) => {}
                    Err(_) => {
                        // Another caller took units since the look: put
                        // back what this one took, and look again.
                        for (cell, &cost) in self.cells().take(i).zip(&costs) {
                            if cost > 0 {
                                cell.refund(cost, now);
                            }
                        }
                        continue 'attempt;
                    }
                }
            }
            return Ok(Grant { costs, ready_in: Duration::from_nanos(send_in) });
        }
    }

    /// Gives back the units of a request that was never sent, on each
    /// limit where that is safe; the limits that took them back.
    ///
    /// A limit takes back what of them it still counts if no request it
    /// counts is waiting for its send time (its units reach no further than
    /// the burst). Otherwise that request's place in the count rests on
    /// them, and they stay counted until they run out: a refund never lets
    /// more through than the limit, and never takes back what a server
    /// reported ([`observe_used`](Self::observe_used)).
    pub fn refund(&self, grant: Grant<N>, clock: &impl Clock) -> [bool; N] {
        self.refund_costs(grant.costs, clock)
    }

    /// [`refund`](Self::refund) by the costs a grant took, for a binding
    /// that keeps the costs rather than the grant.
    pub fn refund_costs(&self, costs: [u32; N], clock: &impl Clock) -> [bool; N] {
        let now = clock.now();
        core::array::from_fn(|i| costs[i] > 0 && self.cell(i).refund(costs[i], now))
    }

    /// Counts at least `used` units on limit `limit` from now on: what the
    /// server reports having seen in its window (other clients on the same
    /// IP, a restart), when that is more than this limiter counts. Never
    /// lowers the count; a `used` above the limit's units counts as its
    /// units. Whether it raised the count; `false` too for a `limit` out
    /// of range.
    ///
    /// Without the window's end, the count is taken as if the window had
    /// just begun: the next period leaves room for `units − used` only.
    /// A server whose windows are fixed and reset (Binance's minute) counts
    /// this limiter's own paced requests too, and its count grows through
    /// its window: give its end to [`observe_used_in`](Self::observe_used_in),
    /// or the limiter takes a full window's count for a fresh one and
    /// slows down for nothing.
    pub fn observe_used(&self, limit: usize, used: u64, clock: &impl Clock) -> bool {
        self.corrected(limit, limit < N && self.cell(limit).raise(used, u64::MAX, clock.now()))
    }

    /// [`observe_used`](Self::observe_used) for a server whose window, as
    /// long as the limit's period, ends `window_left` from now: only what
    /// the count holds beyond what this
    /// limiter's pace lets through in the part of the window that has
    /// passed is counted, so that the rest of the window has room for
    /// `units − used` at most, and a limiter alone at its pace never slows
    /// down for its own requests.
    ///
    /// # Examples
    /// ```
    /// use core::time::Duration;
    /// use tripwire::ManualClock;
    /// use tripwire::limiter::{LimitConfig, RateLimiter};
    ///
    /// let limiter = RateLimiter::new([LimitConfig::builder(1_200, Duration::from_secs(60)).build()?]);
    /// let clock = ManualClock::new(0);
    /// // 40 s into the server's minute, 700 used: less than this pace sends
    /// // in 40 s (1,140 a minute), so nothing to learn.
    /// assert!(!limiter.observe_used_in(0, 700, Duration::from_secs(20), &clock));
    /// // 1,100 used: others on the same IP spent some 340 more.
    /// assert!(limiter.observe_used_in(0, 1_100, Duration::from_secs(20), &clock));
    /// assert_eq!(limiter.in_use(&clock), [341]);
    /// # Ok::<(), tripwire::ConfigError>(())
    /// ```
    pub fn observe_used_in(
        &self,
        limit: usize,
        used: u64,
        window_left: Duration,
        clock: &impl Clock,
    ) -> bool {
        self.corrected(
            limit,
            limit < N && self.cell(limit).raise(used, duration_ns(window_left), clock.now()),
        )
    }

    /// Counts a correction of limit `limit` if `raised`; says `raised`.
    fn corrected(&self, limit: usize, raised: bool) -> bool {
        if raised {
            self.stats.corrected(limit);
        }
        raised
    }

    /// The units each limit counts now, rounded up.
    pub fn in_use(&self, clock: &impl Clock) -> [u64; N] {
        let now = clock.now();
        core::array::from_fn(|i| self.cell(i).in_use(now))
    }

    /// How long `costs` would wait to go at once, now (zero: they would go);
    /// takes nothing.
    pub fn wait_for(&self, costs: [u32; N], clock: &impl Clock) -> Result<Duration, Throttled> {
        self.affordable(&costs)?;
        match self.send_in(&costs, clock.now(), u64::MAX) {
            Ok(wait) => Ok(Duration::from_nanos(wait)),
            // Longer than a limit reserves: still the wait.
            Err(Throttled::Wait { wait, .. }) => Ok(wait),
            Err(e) => Err(e),
        }
    }

    /// Refuses a cost above its limit's burst, which would never go.
    fn affordable(&self, costs: &[u32; N]) -> Result<(), Throttled> {
        for (limit, (cell, &cost)) in self.cells().zip(costs).enumerate() {
            if cost > cell.config.burst {
                return Err(Throttled::TooCostly { limit, cost, burst: cell.config.burst });
            }
        }
        Ok(())
    }

    /// When the slowest limit lets `costs` go, from `now` (ns): the wait of
    /// every limit it has a cost on, or, if the longest of them is above
    /// `max_wait` or above what one of them reserves, the refusal; reads
    /// only.
    fn send_in(&self, costs: &[u32; N], now: u64, max_wait: u64) -> Result<u64, Throttled> {
        let (mut cap, mut worst) = (max_wait, None::<(usize, u64)>);
        for (limit, (cell, &cost)) in self.cells().zip(costs).enumerate() {
            if cost == 0 {
                continue;
            }
            cap = cap.min(cell.config.max_wait_ns);
            let wait = match plan(cell.counted(cell.load(), now), now, cell.config, cost, 0, u64::MAX) {
                Ok((_, wait)) | Err(wait) => wait,
            };
            if worst.is_none_or(|(_, w)| wait > w) {
                worst = Some((limit, wait));
            }
        }
        match worst {
            Some((limit, wait)) if wait > cap => {
                Err(Throttled::Wait { limit, wait: Duration::from_nanos(wait) })
            }
            Some((_, wait)) => Ok(wait),
            None => Ok(0),
        }
    }
}
