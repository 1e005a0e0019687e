//! The rate limiters' families: per limiter and limit, its units, the
//! units it counts now, and what it counted (`RateLimiter::counting`).

use core::fmt;
use std::format;
use std::vec::Vec;

use crate::layers::clock::MonotonicClock;
use crate::limiter::{Counting, LimitCounts, RateLimiter, Words};

use super::source::{Kind, Sink};

/// One limit of a rate limiter, as the export shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitRow {
    /// Units allowed per period.
    pub units: u32,
    /// Units counted now.
    pub in_use: u64,
    /// What the limiter counted.
    pub counts: LimitCounts,
}

/// A rate limiter whose limits an export can read: one that counts
/// ([`RateLimiter::counting`]). Added to a
/// [`Registry`](crate::registry::Registry) with
/// [`add_rate_limiter`](crate::registry::Registry::add_rate_limiter).
pub trait RateLimitRows: fmt::Debug + Send + Sync {
    /// Each limit's row, in order.
    fn limit_rows(&self) -> Vec<LimitRow>;
}

impl<const N: usize, W: Words<N> + fmt::Debug + Send + Sync> RateLimitRows
    for RateLimiter<N, W, Counting<N>>
{
    fn limit_rows(&self) -> Vec<LimitRow> {
        let (configs, in_use, counts) = (self.configs(), self.in_use(&MonotonicClock), self.counts());
        (0..N).map(|i| LimitRow { units: configs[i].units(), in_use: in_use[i], counts: counts[i] }).collect()
    }
}

/// A rate limiter's rows: its name and its limits.
pub type RateLimitRow<'a> = (&'a str, Vec<LimitRow>);

/// The families, each labelled `limiter="<name>"` and `limit="<index>"`;
/// nothing when there is no rate limiter.
pub(crate) fn rate_families(sink: &mut impl Sink, rows: &[RateLimitRow<'_>]) -> fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    type Get = fn(&LimitRow) -> u64;
    let families: [(&str, Kind, &str, Get); 6] = [
        (
            "tripwire_rate_limit_units",
            Kind::Gauge,
            "Units a limit allows in any stretch of one period.",
            |r| r.units.into(),
        ),
        ("tripwire_rate_limit_in_use", Kind::Gauge, "Units a limit counts now.", |r| r.in_use),
        ("tripwire_rate_limit_spent_total", Kind::Counter, "Units taken from a limit.", |r| r.counts.spent),
        ("tripwire_rate_limit_waits_total", Kind::Counter, "Takes that waited for their units.", |r| {
            r.counts.waits
        }),
        ("tripwire_rate_limit_refusals_total", Kind::Counter, "Requests a limit refused.", |r| {
            r.counts.refusals
        }),
        (
            "tripwire_rate_limit_corrections_total",
            Kind::Counter,
            "Server counts that raised a limit's.",
            |r| r.counts.corrections,
        ),
    ];
    for (name, kind, help, get) in families {
        sink.family(name, kind, help)?;
        for (limiter, limits) in rows {
            for (i, row) in limits.iter().enumerate() {
                let index = format!("{i}");
                sink.sample(&[("limiter", limiter), ("limit", &index)], get(row))?;
            }
        }
    }
    Ok(())
}
