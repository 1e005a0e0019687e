//! The decisions of one retry loop, one step at a time: [`RetryLoop`].
//!
//! The composition engine runs on it, and with it every executor here:
//! the blocking [`retry`](crate::retry::retry()),
//! [`retry_async`](crate::retry::retry_async()), the pipeline (sync and async),
//! the tower retry layer and the reqwest middleware; so does the Python
//! binding's `retry`. The caller runs the attempts and sleeps itself (so
//! async futures stay `Send`, and Python sleeps on its own event loop);
//! what to do after each attempt is decided here, once.

use core::time::Duration;

use crate::clock::{Clock, duration_ns};
use crate::retry::backoff::Backoff;
use crate::retry::budget::RetryBudget;
use crate::retry::error::RetryError;
use crate::retry::policy::{Classify, Next, Refusal, RetryPolicy};

/// One retry loop's state, for a caller that runs the attempts and the
/// waits itself: the deadline, the backoff, the attempts made and the last
/// error.
///
/// The steps are [`start`](Self::start) before each attempt and
/// [`failed`](Self::failed) after each failed one, which returns the wait
/// before the next attempt or the [`RetryError`] that ends the loop:
///
/// - a guard's [`Refusal`] (a breaker's rejection, a full bulkhead) or an
///   error the classifier does not call a failure ends it at once;
/// - a failure's pause its server named ([`Classify::retry_after`]: a
///   `Retry-After`) is the wait, not jittered, up to the
///   policy's [`max_retry_after`](RetryPolicy::max_retry_after) (one
///   minute unless set): a longer hint, up to `u64::MAX` seconds,
///   waits that long instead, and [`capped_hint`](Self::capped_hint) says
///   what it asked for; otherwise the backoff's next delay is the wait;
/// - a wait that would end past the deadline is not begun;
/// - each retry takes a token from the policy's budget, if it has one,
///   and the loop deposits one call in it when it starts.
///
/// Time is the caller's [`Clock`], read only when a deadline is set (the
/// budget reads it too). The loop borrows nothing: pass the policy it was
/// started with to every [`failed`](Self::failed), so that a binding can
/// keep the loop in an object of its own between steps. The backoff is
/// made at the first failure, so a call that succeeds at once pays nothing
/// for it.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::{BackoffConfig, Jitter, RetryError, RetryLoop, RetryPolicy};
/// use tripwire::{Assessment, ManualClock};
///
/// #[derive(Debug)]
/// enum Error { Unavailable, UnavailableFor(Duration) }
/// impl tripwire::retry::Refusal for Error {}
///
/// let backoff = BackoffConfig::builder().base(Duration::from_millis(100)).jitter(Jitter::None).build()?;
/// let policy = RetryPolicy::builder().max_attempts(3).backoff(backoff).build()?.classify((
///     |_: &Error| Assessment::Failure,
///     |e: &Error| match e {
///         Error::Unavailable => None,
///         Error::UnavailableFor(after) => Some(*after),
///     },
/// ));
/// let clock = ManualClock::new(0);
/// let mut run = RetryLoop::new(&policy, &clock, None);
///
/// assert_eq!(run.start(&clock).unwrap(), 1);
/// // The first attempt fails: wait the backoff's first delay.
/// assert_eq!(run.failed(&policy, &clock, Error::Unavailable).unwrap(), Duration::from_millis(100));
/// clock.advance(Duration::from_millis(100));
/// assert_eq!(run.start(&clock).unwrap(), 2);
/// // The server says when to come back: that is the wait, up to the
/// // policy's `max_retry_after` (a minute by default).
/// let wait = run.failed(&policy, &clock, Error::UnavailableFor(Duration::from_secs(2))).unwrap();
/// assert_eq!((wait, run.capped_hint()), (Duration::from_secs(2), None));
/// clock.advance(wait);
/// assert_eq!(run.start(&clock).unwrap(), 3);
/// // The last attempt the policy allows.
/// let end = run.failed(&policy, &clock, Error::Unavailable).unwrap_err();
/// assert!(matches!(end, RetryError::Exhausted { attempts: 3, last: Error::Unavailable }));
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct RetryLoop<E> {
    /// A reading of the caller's clock: no attempt starts at or after it,
    /// no wait ends after it.
    deadline: Option<u64>,
    backoff: Option<Backoff>,
    /// The seed of the backoff, when the caller fixed it.
    seed: Option<u64>,
    attempts: u32,
    last: Option<E>,
    /// The hint the last `failed` cut to the policy's cap, as asked for.
    capped: Option<Duration>,
}

impl<E> RetryLoop<E> {
    /// A loop under `policy` that stops at `deadline` (a reading of
    /// `clock`) or at the policy's [`max_total`](RetryPolicy::max_total)
    /// from now, whichever comes first; deposits one call in the policy's
    /// budget.
    pub fn new<K>(policy: &RetryPolicy<'_, K>, clock: &impl Clock, deadline: Option<u64>) -> Self {
        Self::starting(policy.max_total(), policy.retry_budget(), clock, deadline)
    }

    /// [`new`](Self::new) from a policy's total time and the budget to
    /// deposit in, for an executor that keeps its budget apart.
    #[inline]
    pub(crate) fn starting(
        max_total: Option<Duration>,
        budget: Option<&RetryBudget>,
        clock: &impl Clock,
        deadline: Option<u64>,
    ) -> Self {
        // A total too long to represent is no limit.
        let total = max_total.and_then(|t| clock.now().checked_add(duration_ns(t)));
        let deadline = match (deadline, total) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(budget) = budget {
            budget.deposit(clock);
        }
        Self { deadline, backoff: None, seed: None, attempts: 0, last: None, capped: None }
    }

    /// The same loop with its backoff's random sequence fixed by `seed`
    /// (see [`Backoff::seeded`]), for tests and replays.
    #[must_use]
    pub fn seeded(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Stops the loop by `end` (a reading of its clock) too.
    #[cfg(feature = "std")]
    pub(crate) fn stop_by(&mut self, end: u64) {
        self.deadline = Some(self.deadline.map_or(end, |d| d.min(end)));
    }

    /// The loop's deadline, a reading of its clock, if it has one.
    pub fn deadline(&self) -> Option<u64> {
        self.deadline
    }

    /// Attempts started so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The error of the last failed attempt, while a retry is pending
    /// (after [`failed`](Self::failed) returned a delay, until the next
    /// [`start`](Self::start) ends the loop or the error is handed back).
    pub fn last_error(&self) -> Option<&E> {
        self.last.as_ref()
    }

    /// Hands back the error of the last failed attempt (see
    /// [`last_error`](Self::last_error)), for an executor whose next
    /// attempt ended the loop without an answer of its own (the pipeline's).
    #[cfg(feature = "std")]
    pub(crate) fn take_last(&mut self) -> Option<E> {
        self.last.take()
    }

    /// Replaces the error of the last failed attempt with what `keep`
    /// makes of it, for an executor that keeps less of it across a pause.
    #[cfg(feature = "std")]
    pub(crate) fn keep_last(&mut self, keep: impl FnOnce(E) -> E) {
        self.last = self.last.take().map(keep);
    }

    /// The pause a server asked for at the last [`failed`](Self::failed),
    /// when it was longer than the policy's
    /// [`max_retry_after`](RetryPolicy::max_retry_after) and the wait was
    /// cut to that; `None` when the wait was the backoff's or the hint as
    /// given.
    pub fn capped_hint(&self) -> Option<Duration> {
        self.capped
    }

    /// The error for a caller who gave up: the attempts made, the last
    /// error.
    pub fn cancelled(&mut self) -> RetryError<E> {
        RetryError::Cancelled { attempts: self.attempts, last: self.last.take() }
    }

    /// Before an attempt: its number (from 1), or
    /// [`RetryError::Deadline`] if the deadline has passed.
    pub fn start(&mut self, clock: &impl Clock) -> Result<u32, RetryError<E>> {
        // Has the deadline passed?
        if self.deadline.is_some_and(|d| clock.now() >= d) {
            return Err(RetryError::Deadline { attempts: self.attempts, last: self.last.take() });
        }
        self.attempts = self.attempts.saturating_add(1);
        Ok(self.attempts)
    }

    /// After a failed attempt: how long to wait before the next, or why to
    /// stop. `policy` is the one the loop was started with.
    pub fn failed<K>(
        &mut self,
        policy: &RetryPolicy<'_, K>,
        clock: &impl Clock,
        error: E,
    ) -> Result<Duration, RetryError<E>>
    where
        K: Classify<E>,
        E: Refusal,
    {
        let attempts = self.attempts;
        self.capped = None;
        let after = match policy.next(attempts, &error) {
            Next::Final => return Err(RetryError::Final { attempts, error }),
            Next::Exhausted => return Err(RetryError::Exhausted { attempts, last: error }),
            Next::Retry(after) => after,
        };
        let (config, seed) = (*policy.backoff_config(), self.seed);
        let backoff = self.backoff.get_or_insert_with(|| match seed {
            Some(s) => Backoff::seeded(config, s),
            None => Backoff::new(config),
        });
        if let Some(after) = after {
            // A server may ask for any pause; the policy says how long is sane.
            let cap = policy.max_retry_after();
            if after > cap {
                self.capped = Some(after);
            }
            backoff.override_next(after.min(cap));
        }
        let delay = backoff.next_delay();
        // Would the wait end past the deadline?
        if self.deadline.is_some_and(|d| clock.now().checked_add(duration_ns(delay)).is_none_or(|w| w > d)) {
            return Err(RetryError::Deadline { attempts, last: Some(error) });
        }
        // Is there a token left for this retry?
        if policy.retry_budget().is_some_and(|b| !b.try_withdraw(clock)) {
            return Err(RetryError::BudgetExhausted { attempts, last: error });
        }
        self.last = Some(error);
        Ok(delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        Assessment, BulkheadFull, ManualClock,
        retry::{BackoffConfig, Jitter, MAX_ATTEMPTS, RetryBudget, RetryBudgetConfig},
    };

    #[derive(Debug, PartialEq)]
    enum Error {
        Busy,
        Down,
        After(Duration),
    }
    impl Refusal for Error {
        fn is_refusal(&self) -> bool {
            matches!(self, Error::Busy)
        }
    }

    /// Every error a failure; `After` names its pause.
    type Judge = (fn(&Error) -> Assessment, fn(&Error) -> Option<Duration>);
    const JUDGE: Judge = (
        |_| Assessment::Failure,
        |e| match e {
            Error::After(d) => Some(*d),
            _ => None,
        },
    );

    fn policy(attempts: u32) -> RetryPolicy<'static, Judge> {
        let backoff = BackoffConfig::builder()
            .base(Duration::from_secs(1))
            .cap(Duration::from_secs(4))
            .jitter(Jitter::None)
            .build()
            .unwrap();
        let p = RetryPolicy::builder().max_attempts(attempts).backoff(backoff).build().unwrap();
        p.classify(JUDGE)
    }

    #[test]
    fn a_refusal_ends_the_loop_whatever_the_classifier_says() {
        let (p, clock) = (policy(5), ManualClock::new(0));
        let mut run = RetryLoop::new(&p, &clock, None);
        run.start(&clock).unwrap();
        assert_eq!(
            run.failed(&p, &clock, Error::Busy),
            Err(RetryError::Final { attempts: 1, error: Error::Busy })
        );
        let p = RetryPolicy::builder().build().unwrap();
        let mut run = RetryLoop::new(&p, &clock, None);
        run.start(&clock).unwrap();
        let full = BulkheadFull { max: 1 };
        assert_eq!(run.failed(&p, &clock, full), Err(RetryError::Final { attempts: 1, error: full }));
    }

    #[test]
    fn a_hint_is_the_wait_shorter_or_longer_than_the_backoff_up_to_the_cap() {
        let (p, clock) = (policy(5), ManualClock::new(0));
        let mut run = RetryLoop::new(&p, &clock, None);
        run.start(&clock).unwrap();
        let short = Duration::from_millis(200);
        assert_eq!(run.failed(&p, &clock, Error::After(short)), Ok(short));
        run.start(&clock).unwrap();
        // The curve went on under the hint: 2 s now.
        assert_eq!(run.failed(&p, &clock, Error::Down), Ok(Duration::from_secs(2)));
        run.start(&clock).unwrap();
        // Longer than the backoff's cap (4 s): not cut to it.
        let longer = Duration::from_secs(30);
        assert_eq!(run.failed(&p, &clock, Error::After(longer)), Ok(longer));
        assert_eq!(run.capped_hint(), None);
        run.start(&clock).unwrap();
        // Longer than the policy's cap on hints (a minute): capped there, and said so.
        let long = Duration::from_secs(3600);
        assert_eq!(run.failed(&p, &clock, Error::After(long)), Ok(crate::retry::DEFAULT_MAX_RETRY_AFTER));
        assert_eq!(run.capped_hint(), Some(long));
    }

    #[test]
    fn the_deadline_is_read_on_the_callers_clock() {
        let p = policy(10);
        let clock = ManualClock::new(u64::MAX - 5_000_000_000);
        let deadline = clock.now() + 2_500_000_000;
        let mut run = RetryLoop::new(&p, &clock, Some(deadline));
        assert_eq!(run.start(&clock), Ok(1));
        // 1 s ends before the deadline.
        assert_eq!(run.failed(&p, &clock, Error::Down), Ok(Duration::from_secs(1)));
        clock.advance(Duration::from_secs(1));
        assert_eq!(run.start(&clock), Ok(2));
        // 2 s would end past it: not begun.
        assert_eq!(
            run.failed(&p, &clock, Error::Down),
            Err(RetryError::Deadline { attempts: 2, last: Some(Error::Down) })
        );
        // A wait past the end of the clock is past any deadline (hints
        // allowed up to 7 days, past the clock's end from here).
        let backoff = *p.backoff_config();
        let long = RetryPolicy::builder()
            .max_attempts(10)
            .backoff(backoff)
            .max_retry_after(crate::retry::MAX_RETRY_DURATION);
        let long = long.build().unwrap().classify(JUDGE);
        let mut run = RetryLoop::new(&long, &clock, Some(u64::MAX));
        run.start(&clock).unwrap();
        let err = run.failed(&long, &clock, Error::After(Duration::MAX)).unwrap_err();
        assert!(matches!(err, RetryError::Deadline { .. }), "{err:?}");
        // A deadline already passed stops the loop before its first attempt.
        let mut run = RetryLoop::<Error>::new(&p, &clock, Some(clock.now()));
        assert_eq!(run.start(&clock), Err(RetryError::Deadline { attempts: 0, last: None }));
    }

    #[test]
    fn absurd_hints_wait_the_cap_never_more_and_never_panic() {
        let clock = ManualClock::new(0);
        let cap = Duration::from_secs(5);
        let p = RetryPolicy::builder().max_attempts(MAX_ATTEMPTS).max_retry_after(cap).build().unwrap();
        let p = p.classify(JUDGE);
        assert_eq!(p.max_retry_after(), cap);
        let mut run = RetryLoop::new(&p, &clock, None);
        for hint in [
            Duration::MAX,
            Duration::from_secs(u64::MAX),
            Duration::from_secs(1 << 63),
            Duration::from_nanos(u64::MAX),
            Duration::from_secs(3600),
            cap + Duration::from_nanos(1),
        ] {
            run.start(&clock).unwrap();
            assert_eq!(run.failed(&p, &clock, Error::After(hint)), Ok(cap), "{hint:?}");
            assert_eq!(run.capped_hint(), Some(hint));
        }
        // At or under the cap: the hint as given, nothing capped.
        for hint in [cap, Duration::ZERO, Duration::from_millis(1)] {
            run.start(&clock).unwrap();
            assert_eq!(run.failed(&p, &clock, Error::After(hint)), Ok(hint));
            assert_eq!(run.capped_hint(), None);
        }
        // Unset, the cap is a minute.
        let d = RetryPolicy::builder().build().unwrap();
        assert_eq!(d.max_retry_after(), Duration::from_secs(60));
        // Out of range is an error, not a panic.
        let err = RetryPolicy::builder().max_retry_after(Duration::ZERO).build().unwrap_err();
        assert_eq!(err.field(), "max_retry_after");
        assert!(RetryPolicy::builder().max_retry_after(Duration::MAX).build().is_err());
    }

    #[test]
    fn max_total_and_the_callers_deadline_the_earlier_wins() {
        let clock = ManualClock::new(1_000);
        let p = RetryPolicy::builder().max_total(Duration::from_nanos(500)).build().unwrap();
        assert_eq!(RetryLoop::<Error>::new(&p, &clock, None).deadline(), Some(1_500));
        assert_eq!(RetryLoop::<Error>::new(&p, &clock, Some(1_200)).deadline(), Some(1_200));
        assert_eq!(RetryLoop::<Error>::new(&p, &clock, Some(9_000)).deadline(), Some(1_500));
        // A total past the end of the clock is no limit.
        let far = ManualClock::new(u64::MAX);
        let p = RetryPolicy::builder().max_total(Duration::from_secs(1)).build().unwrap();
        assert_eq!(RetryLoop::<Error>::new(&p, &far, None).deadline(), None);
    }

    #[test]
    fn the_budget_is_read_on_the_callers_clock() {
        let clock = ManualClock::new(1);
        // A reserve of one token (0.1/s over 10 s); calls deposit nothing.
        let config = RetryBudgetConfig::builder()
            .ratio(0.0)
            .ttl(Duration::from_secs(10))
            .min_retries_per_sec(0.1)
            .build()
            .unwrap();
        let budget = RetryBudget::new(config);
        let p = policy(10).budget(&budget);
        let mut run = RetryLoop::new(&p, &clock, None);
        run.start(&clock).unwrap();
        assert!(run.failed(&p, &clock, Error::Down).is_ok(), "the reserve's token");
        run.start(&clock).unwrap();
        assert_eq!(
            run.failed(&p, &clock, Error::Down),
            Err(RetryError::BudgetExhausted { attempts: 2, last: Error::Down })
        );
        assert_eq!(run.attempts(), 2);
        // Idle on the caller's clock (256 ticks of ttl / 8 forget the
        // distance to the reserve), the budget refills to its reserve.
        clock.advance(Duration::from_secs(400));
        let mut run = RetryLoop::new(&p, &clock, None);
        run.start(&clock).unwrap();
        assert!(run.failed(&p, &clock, Error::Down).is_ok(), "refilled while the caller's clock moved");
    }

    #[test]
    fn a_seeded_loop_replays_its_delays() {
        let backoff = BackoffConfig::builder().jitter(Jitter::Full).build().unwrap();
        let p = RetryPolicy::builder().max_attempts(20).backoff(backoff).build().unwrap().classify(JUDGE);
        let clock = ManualClock::new(0);
        let delays = |seed| {
            let mut run = RetryLoop::new(&p, &clock, None).seeded(seed);
            (0..10)
                .map(|_| {
                    run.start(&clock).unwrap();
                    run.failed(&p, &clock, Error::Down).unwrap()
                })
                .collect::<std::vec::Vec<_>>()
        };
        assert_eq!(delays(7), delays(7));
        assert_ne!(delays(7), delays(8));
    }

    #[test]
    fn cancelling_hands_back_the_last_error() {
        let (p, clock) = (policy(3), ManualClock::new(0));
        let mut run = RetryLoop::new(&p, &clock, None);
        assert_eq!(run.cancelled(), RetryError::Cancelled { attempts: 0, last: None });
        run.start(&clock).unwrap();
        run.failed(&p, &clock, Error::Down).unwrap();
        assert_eq!(run.cancelled(), RetryError::Cancelled { attempts: 1, last: Some(Error::Down) });
    }
}
