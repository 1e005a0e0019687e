//! Retries: the [`RetryPolicy`] and its [`Classify`], exponential
//! [`Backoff`] and its config, the [`RetryBudget`], the step-by-step
//! [`RetryLoop`] every executor runs on (`no_std`), and the executors
//! that wait (feature `std`: [`retry()`], [`retry_notify`]; feature
//! `async`: `retry_async`, `retry_async_notify`) with the errors they end
//! with.

pub(crate) mod backoff;
pub(crate) mod backoff_config;
pub(crate) mod budget;
pub(crate) mod config;
pub(crate) mod error;
pub(crate) mod policy;
pub(crate) mod step;

pub use backoff::Backoff;
pub use backoff_config::{BackoffConfig, BackoffConfigBuilder, Jitter, MAX_BACKOFF_FACTOR, ParseJitterError};
pub use budget::{
    MAX_RATIO, MAX_RESERVE_TOKENS, MIN_BUDGET_TTL, RetryBudget, RetryBudgetConfig, RetryBudgetConfigBuilder,
};
pub use config::MAX_RETRY_DURATION;
pub use error::RetryError;
pub use policy::{
    Classify, DEFAULT_MAX_RETRY_AFTER, MAX_ATTEMPTS, Next, Refusal, RetryAll, RetryPolicy, RetryPolicyBuilder,
};
pub use step::RetryLoop;

#[cfg(feature = "std")]
pub use crate::layers::retry::{CANCEL_CHECK, RetryEvent, Stop, retry, retry_notify};
#[cfg(feature = "async")]
pub use crate::layers::retry::{retry_async, retry_async_notify};
