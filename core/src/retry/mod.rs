//! Retry decisions (`no_std`): the policy and its classifier, exponential
//! backoff and its config, the retry budget, the step-by-step retry loop
//! that every executor runs on, and the errors they report. Waiting lives
//! in the std layers (`layers::retry`).

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
