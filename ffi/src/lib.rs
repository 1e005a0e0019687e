//! The C ABI of tripwire: `include/tripwire.h` is generated from this
//! crate by cbindgen (`ffi/cbindgen.toml`) and includes
//! `include/tripwire_inline.h`, its `static inline` functions written in C;
//! `include/tripwire.hpp` wraps it for C++.
//!
//! # Conventions
//! - Everything is prefixed `tw_` (types, functions) or `TW_` (constants);
//!   functions are named `tw_<type>_<verb>`, with `_new` / `_free` pairs.
//! - Every fallible function returns a [`tw_status`] whose values never
//!   change; outputs go through out-parameters, written only on success;
//!   every pointer is checked for NULL; [`tw_last_error_message`] explains
//!   the last failure on the calling thread.
//! - Every exported body runs inside one boundary macro (`ffi_body!`) that
//!   catches panics: none ever unwinds into C.
//! - Every config struct passed by pointer starts with `uint32_t
//!   struct_size`, set by its `_default()`; the library reads that many
//!   bytes and no more, so a program built against an older header keeps
//!   working (`struct_size.rs` has the rules).
//! - Handle ownership lives in one file (`handle.rs`: `box_into_out`,
//!   `free_box`, `handle!`); the plain C value types and their conversions
//!   in another (`values.rs`).
//!
//! # Items
//! - Status and errors: [`tw_status`], [`tw_last_error_message`],
//!   [`tw_status_name`].
//! - Version: [`tw_version`] (the library's), [`TW_VERSION_MAJOR`],
//!   [`TW_VERSION_MINOR`], [`TW_VERSION_PATCH`] (the header's).
//! - Config: [`tw_breaker_config`], [`tw_breaker_config_default`] (a
//!   `static inline` in the header over [`tw_breaker_config_init`]),
//!   [`tw_breaker_config_validate`], [`tw_breaker_get_config`] (over
//!   [`tw_breaker_get_config_sized`]); the layouts
//!   [`TW_BREAKER_CONFIG_SIZE_V1`] to [`TW_BREAKER_CONFIG_SIZE_V4`].
//! - Breaker: [`tw_breaker_new`], [`tw_breaker_free`];
//!   [`tw_breaker_try_acquire`] / [`tw_breaker_try_acquire_at`] →
//!   [`tw_ticket`] or [`tw_rejection`]; [`tw_breaker_record`] /
//!   [`tw_breaker_record_at`] with a [`tw_outcome`] → [`tw_transition`];
//!   [`tw_ticket_is_probe`], [`tw_ticket_transition`];
//!   [`tw_breaker_state`], [`tw_breaker_snapshot`] → [`tw_snapshot`];
//!   [`tw_breaker_force_open`], [`tw_breaker_disable`], [`tw_breaker_reset`];
//!   [`tw_breaker_record_healthy_success`].
//! - Holds and HTTP answers: [`tw_breaker_hold_for`] /
//!   [`tw_breaker_hold_for_at`], [`tw_breaker_hold_left`] /
//!   [`tw_breaker_hold_left_at`]; [`tw_breaker_settle`] /
//!   [`tw_breaker_settle_at`] (an outcome, and a hold for backpressure);
//!   [`tw_http_assess`] → [`tw_assessment`] (a status and its rate-limit
//!   headers judged as every binding judges them).
//! - Fleet (breakers shared across hosts through Redis): [`tw_fleet_options`],
//!   `tw_fleet_options_default` (a `static inline` in the header over
//!   [`tw_fleet_options_init`]), [`tw_fleet_new`], [`tw_fleet_join`],
//!   [`tw_fleet_snapshot`] → [`tw_fleet_stats`], [`tw_fleet_last_error`],
//!   [`tw_fleet_connect_failures`], [`tw_fleet_free`].
//! - The header's inline fast path (`tw_breaker_try_acquire_fast`,
//!   `tw_breaker_record_fast` and their `_at` forms, C in
//!   `include/tripwire_inline.h`) and what it reads: [`tw_breaker_hot`],
//!   [`TW_HOT_STAMP`] and the other `TW_HOT_` constants, copies of the
//!   core's [`tripwire::breaker::HotLine`].
//! - Shared between processes: [`tw_breaker_layout`],
//!   [`tw_breaker_init_in`], [`tw_breaker_attach`], [`tw_breaker_open_in`].
//! - Prometheus export: [`tw_registry_new`], [`tw_registry_add_breaker`],
//!   [`tw_registry_prometheus`], [`tw_registry_free`].
//! - Bulkhead: [`tw_bulkhead_new`], [`tw_bulkhead_free`],
//!   [`tw_bulkhead_try_acquire`], [`tw_bulkhead_release`],
//!   [`tw_bulkhead_snapshot`] → [`tw_bulkhead_stats`].
//! - Bulkhead shared between processes: [`tw_shared_bulkhead_size`],
//!   [`tw_shared_bulkhead_init_in`], [`tw_shared_bulkhead_attach`],
//!   [`tw_shared_bulkhead_open_in`] → [`tw_shared_bulkhead`];
//!   [`tw_shared_bulkhead_try_acquire`] → [`tw_shared_slot`],
//!   [`tw_shared_bulkhead_release`], [`tw_shared_bulkhead_available`],
//!   [`tw_shared_bulkhead_reclaim`], [`tw_shared_bulkhead_snapshot`] →
//!   [`tw_shared_bulkhead_stats`].
//! - Rate limiter shared between processes (one request-weight budget
//!   for a host): [`tw_rate_limiter_size`], [`tw_rate_limiter_open_in`],
//!   [`tw_rate_limiter_attach`] → [`tw_rate_limiter`];
//!   [`tw_rate_limiter_acquire`] (or [`tw_throttled`]),
//!   [`tw_rate_limiter_refund`], [`tw_rate_limiter_observe_used`],
//!   [`tw_rate_limiter_observe_header`], [`tw_rate_limiter_in_use`];
//!   [`TW_RATE_LIMITER_MAX_LIMITS`].
//! - Backoff: [`tw_backoff_config`], [`tw_backoff_config_default`],
//!   [`tw_backoff_new`], [`tw_backoff_free`], [`tw_backoff_next_delay`],
//!   [`tw_backoff_reset`], [`tw_jitter`].
//! - Retry budget: [`tw_retry_budget_config`],
//!   [`tw_retry_budget_config_default`], [`tw_retry_budget_new`],
//!   [`tw_retry_budget_free`], [`tw_retry_budget_deposit`] /
//!   [`tw_retry_budget_deposit_at`], [`tw_retry_budget_try_withdraw`] /
//!   [`tw_retry_budget_try_withdraw_at`], [`tw_retry_budget_available_at`].
//!
//! # Clocks
//! Functions without `_at` read `CLOCK_MONOTONIC` (absolute nanoseconds:
//! the same in every process on a host, as shared breakers need), and only
//! when a decision needs the time. The `_at` variants take the caller's
//! own timestamp (e.g. a calibrated TSC); one breaker must see one clock.
#![warn(missing_docs)]
// The C names (`tw_breaker`, `tw_status`) are the API: cbindgen copies them
// into the header as they are.
#![allow(non_camel_case_types, reason = "C type names, copied into the header")]

mod breaker;
mod bulkhead;
mod config;
mod fleet;
mod handle;
mod hold;
mod hot;
mod rate_limiter;
mod registry;
mod retry;
mod shared;
mod shared_bulkhead;
mod status;
mod struct_size;
mod values;
mod version;

pub use breaker::{
    tw_breaker, tw_breaker_disable, tw_breaker_force_open, tw_breaker_free, tw_breaker_new,
    tw_breaker_record, tw_breaker_record_at, tw_breaker_record_healthy_success, tw_breaker_reset,
    tw_breaker_snapshot, tw_breaker_state, tw_breaker_try_acquire, tw_breaker_try_acquire_at, tw_snapshot,
    tw_ticket_is_probe, tw_ticket_transition,
};
pub use bulkhead::{
    tw_bulkhead, tw_bulkhead_free, tw_bulkhead_new, tw_bulkhead_release, tw_bulkhead_snapshot,
    tw_bulkhead_stats, tw_bulkhead_try_acquire,
};
pub use config::{
    TW_BREAKER_CONFIG_SIZE_V1, TW_BREAKER_CONFIG_SIZE_V2, TW_BREAKER_CONFIG_SIZE_V3,
    TW_BREAKER_CONFIG_SIZE_V4, tw_breaker_config, tw_breaker_config_default, tw_breaker_config_init,
    tw_breaker_config_validate, tw_breaker_get_config, tw_breaker_get_config_sized, tw_window_kind,
};
pub use fleet::{
    tw_fleet, tw_fleet_connect_failures, tw_fleet_free, tw_fleet_join, tw_fleet_last_error, tw_fleet_new,
    tw_fleet_options, tw_fleet_options_default, tw_fleet_options_init, tw_fleet_snapshot, tw_fleet_stats,
};
pub use hold::{
    TW_HOLD_UNSPECIFIED, tw_assessment, tw_breaker_hold_for, tw_breaker_hold_for_at, tw_breaker_hold_left,
    tw_breaker_hold_left_at, tw_breaker_settle, tw_breaker_settle_at, tw_http_assess,
};
pub use hot::{
    TW_HOT_ADMIT_FLAGS, TW_HOT_ADMIT_MASK, TW_HOT_ADMIT_VALUE, TW_HOT_COUNT_SUCCESSES,
    TW_HOT_GENERATION_SHIFT, TW_HOT_RECORD_FLAGS, TW_HOT_STAMP, tw_breaker_hot,
};
pub use rate_limiter::{
    TW_RATE_LIMITER_MAX_LIMITS, tw_rate_limiter, tw_rate_limiter_acquire, tw_rate_limiter_attach,
    tw_rate_limiter_in_use, tw_rate_limiter_observe_header, tw_rate_limiter_observe_used,
    tw_rate_limiter_open_in, tw_rate_limiter_refund, tw_rate_limiter_size, tw_throttled,
};
pub use registry::{
    tw_registry, tw_registry_add_breaker, tw_registry_free, tw_registry_new, tw_registry_prometheus,
};
pub use retry::{
    tw_backoff, tw_backoff_config, tw_backoff_config_default, tw_backoff_config_init, tw_backoff_free,
    tw_backoff_new, tw_backoff_next_delay, tw_backoff_reset, tw_jitter, tw_retry_budget,
    tw_retry_budget_available_at, tw_retry_budget_config, tw_retry_budget_config_default,
    tw_retry_budget_config_init, tw_retry_budget_deposit, tw_retry_budget_deposit_at, tw_retry_budget_free,
    tw_retry_budget_new, tw_retry_budget_try_withdraw, tw_retry_budget_try_withdraw_at,
};
pub use shared::{tw_breaker_attach, tw_breaker_init_in, tw_breaker_layout, tw_breaker_open_in};
pub use shared_bulkhead::{
    tw_shared_bulkhead, tw_shared_bulkhead_attach, tw_shared_bulkhead_available, tw_shared_bulkhead_init_in,
    tw_shared_bulkhead_open_in, tw_shared_bulkhead_reclaim, tw_shared_bulkhead_release,
    tw_shared_bulkhead_size, tw_shared_bulkhead_snapshot, tw_shared_bulkhead_stats,
    tw_shared_bulkhead_try_acquire, tw_shared_slot,
};
pub use status::{tw_last_error_message, tw_status, tw_status_name};
pub use values::{tw_outcome, tw_rejection, tw_state, tw_ticket, tw_transition};
pub use version::{TW_VERSION_MAJOR, TW_VERSION_MINOR, TW_VERSION_PATCH, tw_version};
