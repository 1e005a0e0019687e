//! Regions of memory shared between processes (`no_std`): the header every
//! kind of region starts with and the one protocol that creates and checks
//! it ([`header`], which holds all of the crate's `unsafe` access to shared
//! memory), the kinds of region ([`RegionKind`]) and the one error type for
//! all of them ([`RegionError`]). The kinds' own layouts live with them:
//! `breaker/shared.rs`, `shared_bulkhead/region.rs`.

pub(crate) mod error;
pub(crate) mod header;
pub(crate) mod kind;

pub use error::RegionError;
pub use kind::RegionKind;
