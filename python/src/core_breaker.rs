//! The core breaker a Python `Breaker` wraps, wherever it lives: shared by
//! the `Breaker` object and the registry, which holds it weakly for the
//! Prometheus export (a keyed map's breakers are exported by the map).

use std::sync::Arc;

use tripwire::NamedBreaker;

use crate::clock::ClockSource;
use crate::shared::Mapping;

/// The core breaker, in this process's memory or in a shared mapping.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "one per breaker, behind an Arc; boxing the breaker would add a pointer chase to every call"
)]
pub(crate) enum CoreBreaker {
    /// `Breaker(...)`: this process's own.
    Owned(tripwire::Breaker),
    /// `Breaker.shared(path, ...)`: in a file every process maps.
    Mapped(Mapping),
    /// `Breakers[key]`: one key's breaker, owned by the keyed map.
    Keyed(Arc<NamedBreaker<ClockSource>>),
}

impl CoreBreaker {
    #[inline]
    pub(crate) fn breaker(&self) -> &tripwire::Breaker {
        match self {
            CoreBreaker::Owned(b) => b,
            CoreBreaker::Mapped(m) => m.breaker(),
            CoreBreaker::Keyed(k) => k.breaker(),
        }
    }
}
