//! The error every retry-side config reports (backoff, retry budget, retry
//! policy), naming the config, the field, its value and what is accepted,
//! in the style of [`ConfigError`](crate::ConfigError).

use core::fmt;

pub(crate) use crate::breaker::config::Value;
use core::time::Duration;

/// The longest delay, window or total time a retry-side config accepts.
pub const MAX_RETRY_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// A retry-side config field that was out of range, with its value and what
/// is accepted.
///
/// # Examples
/// ```
/// use tripwire::BackoffConfig;
/// let err = BackoffConfig::builder().factor(0.5).build().unwrap_err();
/// assert_eq!(err.field(), "factor");
/// assert_eq!(err.to_string(), "invalid backoff config: factor = 0.5, expected 1 to 100");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryConfigError {
    config: &'static str,
    field: &'static str,
    value: Value,
    rule: Rule,
}

impl RetryConfigError {
    /// The config the field belongs to: `"backoff"`, `"retry budget"` or
    /// `"retry policy"`.
    pub fn config(&self) -> &'static str {
        self.config
    }

    /// The name of the offending field, as the builder method is named.
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// The same error under another field name: for a binding whose
    /// argument is named otherwise than the builder method, so that its
    /// message names what the caller wrote.
    ///
    /// # Examples
    /// ```
    /// use tripwire::RetryPolicy;
    /// let err = RetryPolicy::builder().max_attempts(0).build().unwrap_err().with_field("attempts");
    /// assert_eq!(err.to_string(), "invalid retry policy config: attempts = 0, expected 1 to 10000");
    /// ```
    #[must_use]
    pub fn with_field(self, field: &'static str) -> Self {
        Self { field, ..self }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Rule {
    Range { min: Value, max: Value },
    AtLeast { field: &'static str, value: Value },
}

impl fmt::Display for RetryConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} config: {} = {}, expected ", self.config, self.field, self.value)?;
        match self.rule {
            Rule::Range { min, max } => write!(f, "{min} to {max}"),
            Rule::AtLeast { field, value } => write!(f, "at least {field} ({value})"),
        }
    }
}

impl core::error::Error for RetryConfigError {}

/// Checks `min <= v <= max` (inclusive; NaN is rejected).
pub(crate) fn check_range(
    config: &'static str,
    field: &'static str,
    v: Value,
    min: Value,
    max: Value,
) -> Result<(), RetryConfigError> {
    let ok = match (v, min, max) {
        (Value::Int(v), Value::Int(lo), Value::Int(hi))
        | (Value::Duration(v), Value::Duration(lo), Value::Duration(hi)) => (lo..=hi).contains(&v),
        // NaN fails both comparisons.
        (Value::Float(v), Value::Float(lo), Value::Float(hi)) => v >= lo && v <= hi,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(RetryConfigError { config, field, value: v, rule: Rule::Range { min, max } })
    }
}

/// Checks that `field` is at least `other` (both durations in ns).
pub(crate) fn check_at_least(
    config: &'static str,
    field: (&'static str, u64),
    other: (&'static str, u64),
) -> Result<(), RetryConfigError> {
    if field.1 >= other.1 {
        return Ok(());
    }
    Err(RetryConfigError {
        config,
        field: field.0,
        value: Value::Duration(field.1),
        rule: Rule::AtLeast { field: other.0, value: Value::Duration(other.1) },
    })
}

/// [`MAX_RETRY_DURATION`] in nanoseconds.
pub(crate) const MAX_NS: u64 = crate::clock::duration_ns(MAX_RETRY_DURATION);
