//! The one error every builder reports (breaker, backoff, retry budget,
//! retry policy, and those of other crates, such as the fleet's): the
//! config, the field, its value and what is accepted, shown under the
//! caller's own names by the bindings.

use core::fmt;
use core::time::Duration;

/// A config field that was out of range, with its value and what is
/// accepted. Every builder returns it: [`BreakerConfig`](crate::BreakerConfig),
/// [`BackoffConfig`](crate::retry::BackoffConfig),
/// [`RetryBudgetConfig`](crate::retry::RetryBudgetConfig),
/// [`RetryPolicy`](crate::retry::RetryPolicy), the limiter's, the keyed
/// map's and, through [`invalid`](Self::invalid), those of other crates
/// (the fleet's).
///
/// # Examples
/// ```
/// use tripwire::retry::BackoffConfig;
/// use tripwire::BreakerConfig;
/// let err = BreakerConfig::builder().failure_threshold(0).build().unwrap_err();
/// assert_eq!((err.config(), err.field()), ("breaker", "failure_threshold"));
/// assert_eq!(err.to_string(), "invalid breaker config: failure_threshold = 0, expected 1 to 65535");
///
/// let err = BackoffConfig::builder().factor(0.5).build().unwrap_err();
/// assert_eq!((err.config(), err.field()), ("backoff", "factor"));
/// assert_eq!(err.to_string(), "invalid backoff config: factor = 0.5, expected 1 to 100");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConfigError {
    pub(crate) config: &'static str,
    pub(crate) field: &'static str,
    pub(crate) value: Value,
    pub(crate) rule: Rule,
}

impl ConfigError {
    /// The config the field belongs to: `"breaker"`, `"backoff"`, `"retry
    /// budget"`, `"retry policy"`, `"keyed breakers"`, or another crate's
    /// (`"fleet"`).
    pub fn config(&self) -> &'static str {
        self.config
    }

    #[inline]
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
    /// use tripwire::retry::RetryPolicy;
    /// let err = RetryPolicy::builder().max_attempts(0).build().unwrap_err().with_field("attempts");
    /// assert_eq!(err.to_string(), "invalid retry policy config: attempts = 0, expected 1 to 10000");
    /// ```
    #[must_use]
    pub fn with_field(self, field: &'static str) -> Self {
        Self { field, ..self }
    }

    /// A field of a builder outside this crate that is not what `expected`
    /// says, its value left out (a text, a secret key): so that every
    /// builder reports this one type. [`with_duration`](Self::with_duration)
    /// adds the value of a duration.
    ///
    /// # Examples
    /// ```
    /// use tripwire::ConfigError;
    /// let err = ConfigError::invalid("fleet", "key", "at least 16 bytes");
    /// assert_eq!((err.config(), err.field()), ("fleet", "key"));
    /// assert_eq!(err.to_string(), "invalid fleet config: key, expected at least 16 bytes");
    /// ```
    pub fn invalid(config: &'static str, field: &'static str, expected: &'static str) -> Self {
        Self { config, field, value: Value::Unshown, rule: Rule::Must(expected) }
    }

    /// The same error showing the field's value, a duration.
    ///
    /// # Examples
    /// ```
    /// use core::time::Duration;
    /// use tripwire::ConfigError;
    /// let err = ConfigError::invalid("fleet", "lease_lead", "from 1 ms to 60 s").with_duration(Duration::ZERO);
    /// assert_eq!(err.to_string(), "invalid fleet config: lease_lead = 0ns, expected from 1 ms to 60 s");
    /// ```
    #[must_use]
    pub fn with_duration(self, value: Duration) -> Self {
        let ns = u64::try_from(value.as_nanos()).unwrap_or(u64::MAX);
        Self { value: Value::Duration(ns), ..self }
    }

    /// What the field must be, as the message's "expected …" says it.
    pub fn expected(&self) -> impl fmt::Display + '_ {
        Expected { err: self, rename: |field| field, nanos: false }
    }

    /// This error as a binding's users read it: every field, the offending
    /// one and any it is compared with, named through `rename` (a builder
    /// method's name to, say, a C struct's field), and durations given in
    /// whole nanoseconds, as a binding whose fields are `*_ns` takes them.
    ///
    /// # Examples
    /// ```
    /// use core::time::Duration;
    /// use tripwire::BreakerConfig;
    ///
    /// let err = BreakerConfig::builder().open_timeout(Duration::ZERO).build().unwrap_err();
    /// let c_name = |field: &'static str| if field == "open_timeout" { "open_timeout_ns" } else { field };
    /// assert_eq!(
    ///     err.renamed(c_name).to_string(),
    ///     "invalid breaker config: open_timeout_ns = 0, expected 1000 to 604800000000000"
    /// );
    /// ```
    pub fn renamed(&self, rename: fn(&'static str) -> &'static str) -> impl fmt::Display + '_ {
        Described { err: self, rename, nanos: true }
    }
}

/// A `ConfigError` shown with field names and duration units of a caller's
/// choosing ([`ConfigError::renamed`]; `Display` uses the builder's).
struct Described<'a> {
    err: &'a ConfigError,
    rename: fn(&'static str) -> &'static str,
    nanos: bool,
}

/// The "expected …" part of a [`Described`] error.
struct Expected<'a> {
    err: &'a ConfigError,
    rename: fn(&'static str) -> &'static str,
    nanos: bool,
}

impl Value {
    fn show(self, f: &mut fmt::Formatter<'_>, nanos: bool) -> fmt::Result {
        match self {
            Value::Duration(ns) if nanos => write!(f, "{ns}"),
            Value::Unshown => Ok(()),
            v => write!(f, "{v}"),
        }
    }
}

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (e, name, nanos) = (self.err, self.rename, self.nanos);
        write!(f, "invalid {} config: {}", e.config, name(e.field))?;
        if e.value != Value::Unshown {
            f.write_str(" = ")?;
            e.value.show(f, nanos)?;
        }
        f.write_str(", expected ")?;
        fmt::Display::fmt(&Expected { err: e, rename: name, nanos }, f)
    }
}

impl fmt::Display for Expected<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (e, name, nanos) = (self.err, self.rename, self.nanos);
        match e.rule {
            Rule::Range { min, max, max_inclusive } => {
                f.write_str(if max_inclusive { "" } else { "at least " })?;
                min.show(f, nanos)?;
                f.write_str(if max_inclusive { " to " } else { " and below " })?;
                max.show(f, nanos)
            }
            Rule::AtMost { field, value } | Rule::AtLeast { field, value } => {
                let bound = if matches!(e.rule, Rule::AtMost { .. }) { "at most" } else { "at least" };
                write!(f, "{bound} {} (", name(field))?;
                value.show(f, nanos)?;
                f.write_str(")")
            }
            Rule::Rate => f.write_str("a rate above 0 and at most 1 (0 turns it off)"),
            Rule::Needs(other) => write!(f, "{} to be set as well", name(other)),
            Rule::Kept { expected, storage, keeps } => {
                write!(f, "{expected}, as a Breaker<{storage}> keeps {keeps}")
            }
            Rule::Must(expected) => f.write_str(expected),
        }
    }
}

/// A config value as an error shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value {
    Int(u64),
    Float(f64),
    /// Nanoseconds.
    Duration(u64),
    /// Not shown (a text, a secret).
    Unshown,
}

/// What a field must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Rule {
    Range {
        min: Value,
        max: Value,
        max_inclusive: bool,
    },
    AtMost {
        field: &'static str,
        value: Value,
    },
    AtLeast {
        field: &'static str,
        value: Value,
    },
    /// A rate: above 0 and at most 1, or 0 for off.
    Rate,
    /// Set, but meaningless without this other field.
    Needs(&'static str),
    /// What a breaker's storage can hold: `expected`, since a
    /// `Breaker<storage>` keeps `keeps` (a window of one kind, or none).
    Kept {
        expected: &'static str,
        storage: &'static str,
        keeps: &'static str,
    },
    /// Said in words, by a builder outside this crate.
    Must(&'static str),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Duration(ns) => write!(f, "{:?}", Duration::from_nanos(ns)),
            Value::Unshown => Ok(()),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Described { err: self, rename: |field| field, nanos: false }, f)
    }
}

impl core::error::Error for ConfigError {}

/// Checks `min <= v <= max` (inclusive; NaN is rejected).
pub(crate) fn check_range(
    config: &'static str,
    field: &'static str,
    v: Value,
    min: Value,
    max: Value,
) -> Result<(), ConfigError> {
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
        Err(ConfigError { config, field, value: v, rule: Rule::Range { min, max, max_inclusive: true } })
    }
}

/// Checks that `field` is at least `other` (both durations in ns).
pub(crate) fn check_at_least(
    config: &'static str,
    field: (&'static str, u64),
    other: (&'static str, u64),
) -> Result<(), ConfigError> {
    if field.1 >= other.1 {
        return Ok(());
    }
    Err(ConfigError {
        config,
        field: field.0,
        value: Value::Duration(field.1),
        rule: Rule::AtLeast { field: other.0, value: Value::Duration(other.1) },
    })
}
