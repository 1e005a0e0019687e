//! The bounds every retry-side config shares (backoff, retry budget, retry
//! policy); their errors are the crate's one [`ConfigError`](crate::ConfigError).

use core::time::Duration;

pub(crate) use crate::config_error::{Value, check_at_least, check_range};

/// The longest delay, window or total time a retry-side config accepts.
pub const MAX_RETRY_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// [`MAX_RETRY_DURATION`] in nanoseconds.
pub(crate) const MAX_NS: u64 = crate::clock::duration_ns(MAX_RETRY_DURATION);
