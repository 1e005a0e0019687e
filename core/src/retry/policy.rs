//! What a retry loop decides, apart from waiting: the [`RetryPolicy`] and
//! the caller's classifier.
//!
//! The decisions are pure functions of the policy, the attempt count and the
//! error, so they are tested without threads or time; the blocking executor
//! ([`retry`](crate::retry::retry()), feature `std`) adds waiting, deadlines,
//! cancellation and the budget.

use core::time::Duration;

use crate::assessment::Assessment;
use crate::breaker::permit::CallError;
use crate::breaker::ticket::Rejected;
use crate::bulkhead::BulkheadFull;
use crate::clock::duration_ns;
use crate::config_error::ConfigError;
use crate::retry::backoff_config::BackoffConfig;
use crate::retry::budget::RetryBudget;
use crate::retry::config::{MAX_NS, Value, check_range};

/// The most attempts a policy allows.
pub const MAX_ATTEMPTS: u32 = 10_000;

/// The longest pause a server's hint imposes between two attempts unless
/// the policy says otherwise ([`RetryPolicyBuilder::max_retry_after`]): one
/// minute. A `Retry-After` longer than that (an hour's maintenance, or
/// `u64::MAX` seconds) waits one minute; a caller that would rather wait
/// the hour sets a longer cap, or stops and reads the hint itself.
pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// What follows a failed attempt, as the retries decide it from the
/// attempt's [`Assessment`]: the composition engine's word, not a user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Verdict {
    /// Worth another attempt after the backoff's delay.
    Retry,
    /// Worth another attempt after exactly this delay (a `Retry-After`
    /// header, a rate-limit reset time).
    RetryAfter(Duration),
    /// Ends the retries: a success, the caller's own fault, backpressure.
    Final,
}

impl Verdict {
    /// The rule of every integration: only a failure of the dependency is
    /// retried, after `after` if its server named a pause; success, the
    /// caller's own fault and backpressure (which the breaker's hold
    /// answers) end the retries.
    pub(crate) fn of(assessment: Assessment, after: Option<Duration>) -> Self {
        match (assessment, after) {
            (Assessment::Failure, Some(d)) => Verdict::RetryAfter(d),
            (Assessment::Failure, None) => Verdict::Retry,
            _ => Verdict::Final,
        }
    }
}

/// The engine's verdict, put to the retry loop as a classifier of its own.
impl<E> Classify<E> for Verdict {
    fn classify(&self, _: &E) -> Assessment {
        if *self == Verdict::Final { Assessment::Ignored } else { Assessment::Failure }
    }

    fn retry_after(&self, _: &E) -> Option<Duration> {
        match *self {
            Verdict::RetryAfter(d) => Some(d),
            _ => None,
        }
    }
}

/// Judges a failed attempt's error with the one [`Assessment`] every layer
/// uses: only [`Assessment::Failure`] is worth another attempt, after the
/// pause [`retry_after`](Self::retry_after) names, else the backoff's.
/// [`Assessment::Ignored`] (the caller's own fault: a bad signature, a
/// 404) and [`Assessment::Backpressure`] (a breaker's hold answers it) end
/// the retries.
///
/// With no breaker around the retries nothing holds for backpressure: a
/// bare [`retry()`](crate::retry::retry()) that should wait out a 429 and
/// try again classes it [`Assessment::Failure`] and names its pause in
/// `retry_after`; classed [`Assessment::Backpressure`], it ends the
/// retries and is the answer.
///
/// Any `Fn(&E) -> Assessment` is one; so is a pair of closures
/// `(assess, retry_after)`, the second naming a server's pause; [`RetryAll`]
/// calls every error a failure.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::{Classify, RetryAll};
/// use tripwire::Assessment;
///
/// let only_timeouts = |e: &std::io::Error| {
///     if e.kind() == std::io::ErrorKind::TimedOut { Assessment::Failure } else { Assessment::Ignored }
/// };
/// let refused = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
/// assert_eq!(only_timeouts.classify(&refused), Assessment::Ignored);
/// assert_eq!(RetryAll.classify(&refused), Assessment::Failure);
///
/// // A 503 that names its pause: retried after it.
/// struct Status { code: u16, retry_after: Option<Duration> }
/// let by_status = (
///     |e: &Status| if e.code >= 500 { Assessment::Failure } else { Assessment::Ignored },
///     |e: &Status| e.retry_after,
/// );
/// let busy = Status { code: 503, retry_after: Some(Duration::from_secs(2)) };
/// assert_eq!(by_status.retry_after(&busy), Some(Duration::from_secs(2)));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot judge an error of type `{E}`",
    label = "the attempts fail with `{E}`",
    note = "a retry judges each error with a closure `|e: &{E}| -> tripwire::Assessment {{ .. }}` (the argument's type written out), or a pair `(assess, |e: &{E}| -> Option<Duration> {{ .. }})` naming a server's pause"
)]
pub trait Classify<E> {
    /// The judgement of one failed attempt.
    fn classify(&self, error: &E) -> Assessment;

    /// The pause the error's server named before another attempt (a 503's
    /// `Retry-After`), if this classifier reads one; `None` by default:
    /// the backoff's pause.
    fn retry_after(&self, error: &E) -> Option<Duration> {
        let _ = error;
        None
    }
}

// Not recommended in diagnostics: a type that cannot judge an error is
// reported with `Classify`'s own note, not as "expected a closure".
#[diagnostic::do_not_recommend]
impl<E, F: Fn(&E) -> Assessment> Classify<E> for F {
    fn classify(&self, error: &E) -> Assessment {
        self(error)
    }
}

impl<E, F, P> Classify<E> for (F, P)
where
    F: Fn(&E) -> Assessment,
    P: Fn(&E) -> Option<Duration>,
{
    fn classify(&self, error: &E) -> Assessment {
        (self.0)(error)
    }

    fn retry_after(&self, error: &E) -> Option<Duration> {
        (self.1)(error)
    }
}

/// The default classifier: every error is worth another attempt (a guard's
/// refusal still is not: see [`Refusal`]).
///
/// # Examples
/// ```
/// use tripwire::retry::{Next, RetryPolicy};
/// let policy = RetryPolicy::builder().build()?; // classifies with `RetryAll`
/// assert_eq!(policy.next(1, &std::io::Error::other("reset")), Next::Retry(None));
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryAll;

impl<E> Classify<E> for RetryAll {
    fn classify(&self, _: &E) -> Assessment {
        Assessment::Failure
    }
}

/// Errors a retry loop must never retry, whatever the classifier says: a
/// breaker's [`Rejected`] and a bulkhead's [`BulkheadFull`], since
/// retrying them only adds load to a dependency that is known to be
/// struggling (the breaker's `retry_after` tells the caller when to come
/// back).
///
/// The retry executor asks every error this first. Implement it for your
/// own error type in one line (`impl Refusal for MyError {}` when it never
/// wraps a refusal), or return `true` for the variants that wrap one.
///
/// # Examples
/// ```
/// use tripwire::retry::Refusal;
/// use tripwire::BulkheadFull;
///
/// enum ApiError { Busy(BulkheadFull), Status(u16) }
/// impl Refusal for ApiError {
///     fn is_refusal(&self) -> bool {
///         matches!(self, ApiError::Busy(_))
///     }
/// }
/// assert!(ApiError::Busy(BulkheadFull { max: 8 }).is_refusal());
/// assert!(!ApiError::Status(503).is_refusal());
/// ```
pub trait Refusal {
    /// Whether this error is a guard's refusal.
    fn is_refusal(&self) -> bool {
        false
    }
}

impl Refusal for Rejected {
    fn is_refusal(&self) -> bool {
        true
    }
}

impl Refusal for BulkheadFull {
    fn is_refusal(&self) -> bool {
        true
    }
}

/// A breaker's rejection, or a refusal the guarded call itself reported
/// (e.g. a bulkhead inside the breaker that was full).
impl<E: Refusal> Refusal for CallError<E> {
    fn is_refusal(&self) -> bool {
        match self {
            CallError::Rejected(_) => true,
            CallError::Inner(e) => e.is_refusal(),
        }
    }
}

impl Refusal for core::convert::Infallible {}

#[cfg(feature = "std")]
impl Refusal for std::io::Error {}

/// How often and for how long to retry, how to wait between attempts, and
/// which errors are worth it.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::{BackoffConfig, RetryPolicy};
/// use tripwire::Assessment;
///
/// #[derive(Debug)]
/// enum HttpError { Status(u16), Unavailable { retry_in: Duration } }
/// impl tripwire::retry::Refusal for HttpError {}
///
/// let policy = RetryPolicy::builder()
///     .max_attempts(4)
///     .max_total(Duration::from_secs(10))
///     .backoff(BackoffConfig::builder().base(Duration::from_millis(50)).build()?)
///     .build()?
///     .classify((
///         |e: &HttpError| match e {
///             HttpError::Status(500..) | HttpError::Unavailable { .. } => Assessment::Failure,
///             HttpError::Status(_) => Assessment::Ignored,
///         },
///         // The pause the server named, in place of the backoff's.
///         |e: &HttpError| match e {
///             HttpError::Unavailable { retry_in } => Some(*retry_in),
///             HttpError::Status(_) => None,
///         },
///     ));
/// assert_eq!(policy.max_attempts(), 4);
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy<'a, K = RetryAll> {
    max_attempts: u32,
    /// 0: no limit.
    max_total_ns: u64,
    max_retry_after_ns: u64,
    backoff: BackoffConfig,
    budget: Option<&'a RetryBudget>,
    classifier: K,
}

/// What comes after a failed attempt, as far as the policy alone decides.
///
/// # Examples
/// ```
/// use tripwire::retry::{Next, RetryPolicy};
/// let policy = RetryPolicy::builder().max_attempts(2).build()?;
/// let e = std::io::Error::other("503");
/// assert_eq!((policy.next(1, &e), policy.next(2, &e)), (Next::Retry(None), Next::Exhausted));
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Retry, after this delay if the classifier named one.
    Retry(Option<Duration>),
    /// The classifier called the error final, or it was a guard's refusal.
    Final,
    /// That was the last attempt the policy allows.
    Exhausted,
}

impl RetryPolicy<'static, RetryAll> {
    /// One attempt and no retry: what a composition without a retry policy
    /// runs.
    #[cfg(feature = "std")]
    pub(crate) const ONCE: Self = RetryPolicy {
        max_attempts: 1,
        max_total_ns: 0,
        max_retry_after_ns: 0,
        backoff: BackoffConfig::DEFAULT,
        budget: None,
        classifier: RetryAll,
    };

    /// A builder: 3 attempts, no total time limit, the default backoff, no
    /// budget, every error but a refusal retried.
    pub fn builder() -> RetryPolicyBuilder {
        RetryPolicyBuilder {
            max_attempts: 3,
            max_total_ns: None,
            max_retry_after_ns: None,
            backoff: BackoffConfig::default(),
        }
    }
}

impl<'a, K> RetryPolicy<'a, K> {
    /// The same policy with another classifier.
    pub fn classify<K2>(self, classifier: K2) -> RetryPolicy<'a, K2> {
        let RetryPolicy { max_attempts, max_total_ns, max_retry_after_ns, backoff, budget, .. } = self;
        RetryPolicy { max_attempts, max_total_ns, max_retry_after_ns, backoff, budget, classifier }
    }

    /// The same policy, drawing every retry from `budget` (each call
    /// deposits once).
    pub fn budget<'b>(self, budget: &'b RetryBudget) -> RetryPolicy<'b, K> {
        let RetryPolicy { max_attempts, max_total_ns, max_retry_after_ns, backoff, classifier, .. } = self;
        RetryPolicy {
            max_attempts,
            max_total_ns,
            max_retry_after_ns,
            backoff,
            budget: Some(budget),
            classifier,
        }
    }

    /// The classifier.
    #[cfg(feature = "std")]
    pub(crate) fn classifier(&self) -> &K {
        &self.classifier
    }

    /// The same limits, backoff and budget, without the classifier (which
    /// an executor applies itself).
    #[cfg(feature = "std")]
    pub(crate) fn limits(&self) -> RetryPolicy<'a, RetryAll> {
        let RetryPolicy { max_attempts, max_total_ns, max_retry_after_ns, backoff, budget, .. } = *self;
        RetryPolicy { max_attempts, max_total_ns, max_retry_after_ns, backoff, budget, classifier: RetryAll }
    }

    /// Attempts in all, the first included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The time limit on all attempts and waits together, if any.
    pub fn max_total(&self) -> Option<Duration> {
        (self.max_total_ns != 0).then(|| Duration::from_nanos(self.max_total_ns))
    }

    /// The longest pause a server's hint ([`Classify::retry_after`]: a
    /// `Retry-After` header, a rate-limit reset) may impose between two
    /// attempts: a longer hint waits this long instead.
    /// [`DEFAULT_MAX_RETRY_AFTER`] (one minute) unless set
    /// ([`RetryPolicyBuilder::max_retry_after`]). A hint is never cut to the
    /// backoff's cap, which bounds the backoff's own delays only.
    pub fn max_retry_after(&self) -> Duration {
        Duration::from_nanos(self.max_retry_after_ns)
    }

    /// The backoff between attempts.
    pub fn backoff_config(&self) -> &BackoffConfig {
        &self.backoff
    }

    /// The retry budget, if any.
    pub fn retry_budget(&self) -> Option<&'a RetryBudget> {
        self.budget
    }

    /// What follows attempt number `attempt` (from 1) failing with `error`.
    ///
    /// # Examples
    /// ```
    /// use tripwire::retry::{Next, RetryPolicy};
    /// use tripwire::BulkheadFull;
    ///
    /// let policy = RetryPolicy::builder().max_attempts(2).build()?;
    /// assert_eq!(policy.next(1, &BulkheadFull { max: 8 }), Next::Final);
    /// # Ok::<(), tripwire::ConfigError>(())
    /// ```
    pub fn next<E>(&self, attempt: u32, error: &E) -> Next
    where
        K: Classify<E>,
        E: Refusal,
    {
        // A guard's refusal? Never retried, whatever the classifier says.
        if error.is_refusal() {
            return Next::Final;
        }
        // A failure of the dependency, the one thing another attempt may mend?
        let after = match Verdict::of(self.classifier.classify(error), self.classifier.retry_after(error)) {
            Verdict::Final => return Next::Final,
            Verdict::Retry => None,
            Verdict::RetryAfter(d) => Some(d),
        };
        // Was that the last attempt allowed?
        if attempt >= self.max_attempts {
            return Next::Exhausted;
        }
        Next::Retry(after)
    }
}

/// Sets the limits of a [`RetryPolicy`]; [`build`](Self::build) validates.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::retry::RetryPolicy;
/// let policy = RetryPolicy::builder().max_attempts(5).max_total(Duration::from_secs(3)).build()?;
/// assert_eq!(policy.max_total(), Some(Duration::from_secs(3)));
/// # Ok::<(), tripwire::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct RetryPolicyBuilder {
    max_attempts: u32,
    max_total_ns: Option<u64>,
    max_retry_after_ns: Option<u64>,
    backoff: BackoffConfig,
}

impl RetryPolicyBuilder {
    /// Attempts in all, the first included (1 to 10 000; default 3).
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }

    /// A limit on all attempts and waits together (1 ns to 7 days; default
    /// none). The executor also takes the caller's own deadline and keeps
    /// the earlier of the two.
    pub fn max_total(mut self, d: Duration) -> Self {
        self.max_total_ns = Some(duration_ns(d));
        self
    }

    /// The longest pause a server's hint may impose between two attempts
    /// (1 ns to 7 days; default [`DEFAULT_MAX_RETRY_AFTER`], one minute): a
    /// `Retry-After` of an hour, or of `u64::MAX` seconds, waits this long
    /// instead (see [`RetryLoop`](crate::retry::RetryLoop)).
    pub fn max_retry_after(mut self, d: Duration) -> Self {
        self.max_retry_after_ns = Some(duration_ns(d));
        self
    }

    /// The backoff between attempts (default [`BackoffConfig::default`]).
    pub fn backoff(mut self, backoff: BackoffConfig) -> Self {
        self.backoff = backoff;
        self
    }

    /// Validates and returns the policy, or the first field that is wrong.
    pub fn build(self) -> Result<RetryPolicy<'static, RetryAll>, ConfigError> {
        const C: &str = "retry policy";
        let n = Value::Int(self.max_attempts.into());
        check_range(C, "max_attempts", n, Value::Int(1), Value::Int(MAX_ATTEMPTS.into()))?;
        // Was a limit set at all?
        if let Some(ns) = self.max_total_ns {
            check_range(C, "max_total", Value::Duration(ns), Value::Duration(1), Value::Duration(MAX_NS))?;
        }
        // Was a cap on hints set at all?
        if let Some(ns) = self.max_retry_after_ns {
            check_range(
                C,
                "max_retry_after",
                Value::Duration(ns),
                Value::Duration(1),
                Value::Duration(MAX_NS),
            )?;
        }
        self.backoff.validate()?;
        Ok(RetryPolicy {
            max_attempts: self.max_attempts,
            max_total_ns: self.max_total_ns.unwrap_or(0),
            max_retry_after_ns: self.max_retry_after_ns.unwrap_or(duration_ns(DEFAULT_MAX_RETRY_AFTER)),
            backoff: self.backoff,
            budget: None,
            classifier: RetryAll,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[derive(Debug, PartialEq)]
    struct Code(u16);
    impl Refusal for Code {}

    fn by_code(e: &Code) -> Assessment {
        match e.0 {
            429 => Assessment::Backpressure(Some(Duration::from_secs(2))),
            500.. => Assessment::Failure,
            _ => Assessment::Ignored,
        }
    }

    /// A 503 names its pause: two seconds.
    fn pause(e: &Code) -> Option<Duration> {
        (e.0 == 503).then_some(Duration::from_secs(2))
    }

    #[test]
    fn the_classifier_decides_until_the_attempts_run_out() {
        let p = RetryPolicy::builder().max_attempts(3).build().unwrap().classify(by_code);
        assert_eq!(p.next(1, &Code(503)), Next::Retry(None));
        // Backpressure ends the retries: the breaker's hold answers it.
        assert_eq!(p.next(1, &Code(429)), Next::Final);
        assert_eq!(p.next(3, &Code(503)), Next::Exhausted);
        assert_eq!(p.next(1, &Code(404)), Next::Final);
        let p = p.classify((by_code, pause));
        assert_eq!(p.next(1, &Code(503)), Next::Retry(Some(Duration::from_secs(2))));
        assert_eq!(p.next(1, &Code(500)), Next::Retry(None));
        // A final error is final even on the last attempt.
        assert_eq!(p.next(3, &Code(400)), Next::Final);
    }

    #[test]
    fn refusals_are_never_retried_whatever_the_classifier_says() {
        let p = RetryPolicy::builder().max_attempts(5).build().unwrap();
        let rejected = Rejected { state: crate::State::Open, retry_after: None };
        assert_eq!(p.next(1, &rejected), Next::Final);
        assert_eq!(p.next(1, &CallError::<Code>::Rejected(rejected)), Next::Final);
        assert_eq!(p.next(1, &CallError::Inner(Code(500))), Next::Retry(None));
        assert_eq!(p.next(1, &BulkheadFull { max: 1 }), Next::Final);
        let p = p.classify(|_: &BulkheadFull| Assessment::Failure);
        assert_eq!(p.next(1, &BulkheadFull { max: 1 }), Next::Final);
    }

    #[test]
    fn bad_limits_are_named() {
        let b = RetryPolicy::builder;
        let cases = [
            (
                b().max_attempts(0).build().unwrap_err(),
                "retry policy config: max_attempts = 0, expected 1 to 10000",
            ),
            (
                b().max_total(Duration::from_secs(8 * 24 * 3600)).build().unwrap_err(),
                "retry policy config: max_total = 691200s, expected 1ns to 604800s",
            ),
            (
                b().backoff(BackoffConfig { factor: 0.0, ..BackoffConfig::default() }).build().unwrap_err(),
                "backoff config: factor = 0, expected 1 to 100",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), std::format!("invalid {want}"));
        }
        assert_eq!(b().build().unwrap().max_total(), None);
        let err = b().max_total(Duration::ZERO).build().unwrap_err();
        assert_eq!(err.to_string(), "invalid retry policy config: max_total = 0ns, expected 1ns to 604800s");
    }
}
