//! Why a retry loop gave up: [`RetryError`].

use core::fmt;

use crate::refusal::DeadlinePassed;

/// Why a retry loop stopped without a value. Every variant says how many
/// attempts were made and carries the last error, if an attempt was made.
///
/// # Examples
/// ```
/// use tripwire::retry::RetryError;
/// let e = RetryError::BudgetExhausted { attempts: 2, last: "503" };
/// assert_eq!(e.attempts(), 2);
/// assert_eq!(e.to_string(), "retry budget exhausted after 2 attempts; last error: 503");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryError<E> {
    /// Every attempt the policy allows failed.
    Exhausted {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: E,
    },
    /// The error was final (the classifier said so, or it was a guard's
    /// [`Refusal`](crate::retry::Refusal)).
    Final {
        /// Attempts made.
        attempts: u32,
        /// The final error.
        error: E,
    },
    /// The deadline passed, or waiting for the next attempt would have
    /// passed it.
    Deadline {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error; `None` if none was made.
        last: Option<E>,
    },
    /// The caller cancelled.
    Cancelled {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error; `None` if none was made.
        last: Option<E>,
    },
    /// The retry budget had no token left for another attempt.
    BudgetExhausted {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: E,
    },
}

impl<E> RetryError<E> {
    /// Attempts made.
    pub fn attempts(&self) -> u32 {
        match *self {
            RetryError::Exhausted { attempts, .. }
            | RetryError::Final { attempts, .. }
            | RetryError::Deadline { attempts, .. }
            | RetryError::Cancelled { attempts, .. }
            | RetryError::BudgetExhausted { attempts, .. } => attempts,
        }
    }

    /// The last attempt's error, if an attempt was made.
    pub fn last_error(&self) -> Option<&E> {
        match self {
            RetryError::Exhausted { last, .. }
            | RetryError::Final { error: last, .. }
            | RetryError::BudgetExhausted { last, .. } => Some(last),
            RetryError::Deadline { last, .. } | RetryError::Cancelled { last, .. } => last.as_ref(),
        }
    }

    /// The last attempt's error, by value.
    pub fn into_last_error(self) -> Option<E> {
        match self {
            RetryError::Exhausted { last, .. }
            | RetryError::Final { error: last, .. }
            | RetryError::BudgetExhausted { last, .. } => Some(last),
            RetryError::Deadline { last, .. } | RetryError::Cancelled { last, .. } => last,
        }
    }
}

impl<E> RetryError<E> {
    /// Why the loop stopped and after how many attempts, without the last
    /// error's message: for a binding that attaches the error its own way
    /// (Python's `__cause__`).
    ///
    /// # Examples
    /// ```
    /// use tripwire::retry::RetryError;
    /// let e = RetryError::BudgetExhausted { attempts: 1, last: "503" };
    /// assert_eq!(e.summary().to_string(), "retry budget exhausted after 1 attempt");
    /// ```
    pub fn summary(&self) -> impl fmt::Display + '_ {
        Summary(self)
    }
}

/// [`RetryError::summary`].
struct Summary<'a, E>(&'a RetryError<E>);

impl<E> fmt::Display for Summary<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.attempts();
        let s = if n == 1 { "" } else { "s" };
        match self.0 {
            RetryError::Exhausted { .. } => write!(f, "gave up after {n} attempt{s}"),
            RetryError::Final { .. } => write!(f, "not retried after {n} attempt{s}: the error is final"),
            RetryError::Deadline { .. } => write!(f, "deadline reached after {n} attempt{s}"),
            RetryError::Cancelled { .. } => write!(f, "cancelled after {n} attempt{s}"),
            RetryError::BudgetExhausted { .. } => write!(f, "retry budget exhausted after {n} attempt{s}"),
        }
    }
}

impl<E: fmt::Display> fmt::Display for RetryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.summary())?;
        match self.last_error() {
            Some(e) => write!(f, "; last error: {e}"),
            None => Ok(()),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for RetryError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            // No attempt was made: nothing reached the dependency.
            RetryError::Deadline { attempts: 0, last: None } => Some(&DeadlinePassed),
            _ => self.last_error().map(|e| e as _),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn errors_say_why_and_how_many() {
        let e = RetryError::Exhausted { attempts: 3, last: "503" };
        assert_eq!(e.to_string(), "gave up after 3 attempts; last error: 503");
        let e: RetryError<&str> = RetryError::Cancelled { attempts: 0, last: None };
        assert_eq!(e.to_string(), "cancelled after 0 attempts");
        assert_eq!(e.into_last_error(), None);
        let e = RetryError::Final { attempts: 1, error: "404" };
        assert_eq!((e.attempts(), e.last_error()), (1, Some(&"404")));
        assert_eq!(e.to_string(), "not retried after 1 attempt: the error is final; last error: 404");
    }
}
