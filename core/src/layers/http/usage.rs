//! What a response says of the client's use of a rate limit, header by
//! header, for a [`RateLimiter`](crate::limiter::RateLimiter) to learn from
//! ([`RateLimiter::observe_used`](crate::limiter::RateLimiter::observe_used)).
//!
//! | header | reads as |
//! | --- | --- |
//! | `X-MBX-USED-WEIGHT-1M` (Binance; any interval `<n>S/M/H/D`, or none) | weight used in that window |
//! | `X-MBX-ORDER-COUNT-10S`, `-1D` (Binance) | orders placed in that window |
//! | `RateLimit: "name";r=50;t=30` with `RateLimit-Policy: "name";q=100;w=60` (IETF) | 50 of 100 left in a 60 s window |
//! | `RateLimit: limit=100, remaining=50, reset=30` (the IETF's earlier draft) | 50 of 100 left |
//! | `RateLimit-Remaining`/`-Limit`, `X-RateLimit-Remaining`/`-Limit` | left, of the limit when given |
//!
//! No value panics and none is trusted beyond what it can say: numbers are
//! digits only (saturating at `u64::MAX`), a window of zero or one too long
//! to hold is no window, and a line that cannot be read is counted in
//! [`Usages::unreadable`] and otherwise ignored. What a count can do to a
//! limiter is bounded there: a server's count only ever raises the
//! limiter's, and never above the limit's units.

use core::time::Duration;
use std::format;
use std::time::SystemTime;
use std::vec::Vec;

use http::HeaderMap;

/// Which count a header reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UsageKind {
    /// Request weight (Binance's `X-MBX-USED-WEIGHT-*`).
    Weight,
    /// Orders (Binance's `X-MBX-ORDER-COUNT-*`).
    Orders,
    /// A quota of a server's own units, usually requests (the IETF
    /// `RateLimit` headers, `X-RateLimit-*`).
    Quota,
}

/// One count a response reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// What is counted.
    pub kind: UsageKind,
    /// The window the count is over, when the header names one.
    pub window: Option<Duration>,
    /// Units used in the window, when the header says.
    pub used: Option<u64>,
    /// Units left in the window, when the header says.
    pub remaining: Option<u64>,
    /// The server's limit, when the header says.
    pub limit: Option<u64>,
}

impl Usage {
    /// The units used, out of a limit of `units` on this side: `used` as
    /// the server counts it; else the share of the server's limit that is
    /// gone, scaled to `units` and rounded up; else `units − remaining`.
    /// `None` when the header says neither.
    ///
    /// # Examples
    /// ```
    /// use tripwire::http::{Usage, UsageKind};
    ///
    /// let left = Usage { kind: UsageKind::Quota, window: None, used: None, remaining: Some(50), limit: Some(100) };
    /// assert_eq!(left.used_of(1_200), Some(600), "half gone");
    /// let bare = Usage { limit: None, ..left };
    /// assert_eq!(bare.used_of(1_200), Some(1_150));
    /// ```
    pub fn used_of(&self, units: u32) -> Option<u64> {
        if let Some(used) = self.used {
            return Some(used);
        }
        let remaining = self.remaining?;
        let units = u64::from(units);
        Some(match self.limit {
            Some(limit) if limit > 0 => {
                let gone = u128::from(limit.saturating_sub(remaining));
                // ⌈units × gone / limit⌉, at most `units`.
                let scaled = (u128::from(units) * gone).div_ceil(u128::from(limit));
                u64::try_from(scaled).unwrap_or(u64::MAX)
            }
            _ => units.saturating_sub(remaining),
        })
    }
}

impl Usage {
    /// The time left in this count's window at wall-clock time `now`, for
    /// Binance's counts (weight and orders), whose fixed windows start on
    /// multiples of their length since the Unix epoch; `None` for a count
    /// without a window, or of another kind (a quota's window is its
    /// server's own).
    ///
    /// # Examples
    /// ```
    /// use core::time::Duration;
    /// use std::time::SystemTime;
    /// use tripwire::http::{Usage, UsageKind};
    ///
    /// let weight = Usage { kind: UsageKind::Weight, window: Some(Duration::from_secs(60)), used: Some(300), remaining: None, limit: None };
    /// // 45 s into a minute (1,699,999,980 is a multiple of 60).
    /// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_025);
    /// assert_eq!(weight.window_left_at(now), Some(Duration::from_secs(15)));
    /// ```
    pub fn window_left_at(&self, now: SystemTime) -> Option<Duration> {
        let window = self.window.filter(|_| matches!(self.kind, UsageKind::Weight | UsageKind::Orders))?;
        let since = now.duration_since(SystemTime::UNIX_EPOCH).ok()?;
        let window_ns = window.as_nanos();
        let into = since.as_nanos() % window_ns;
        Some(Duration::from_nanos(u64::try_from(window_ns - into).unwrap_or(u64::MAX)))
    }
}

/// Every count a response's headers report, and how many lines of the
/// headers read here could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usages {
    /// The counts, in the order the headers came.
    pub counts: Vec<Usage>,
    /// Lines of these headers that said nothing readable.
    pub unreadable: u32,
}

impl Usages {
    /// The first count of `kind` over `window` (any window when `None`).
    pub fn find(&self, kind: UsageKind, window: Option<Duration>) -> Option<&Usage> {
        self.counts.iter().find(|u| u.kind == kind && (window.is_none() || u.window == window))
    }
}

/// Every rate-limit count in `headers` (see the module's table).
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use http::HeaderMap;
/// use tripwire::http::{usage, UsageKind};
///
/// let mut headers = HeaderMap::new();
/// headers.insert("x-mbx-used-weight-1m", "312".parse()?);
/// headers.insert("x-mbx-order-count-10s", "ten".parse()?);
/// let found = usage(&headers);
/// let weight = found.find(UsageKind::Weight, Some(Duration::from_secs(60))).unwrap();
/// assert_eq!(weight.used, Some(312));
/// assert_eq!(found.unreadable, 1, "an order count that is not a number");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn usage(headers: &HeaderMap) -> Usages {
    let mut found = Usages::default();
    for (name, value) in headers {
        let name = name.as_str();
        let kind = if let Some(rest) = name.strip_prefix("x-mbx-used-weight") {
            Some((UsageKind::Weight, rest))
        } else {
            name.strip_prefix("x-mbx-order-count").map(|rest| (UsageKind::Orders, rest))
        };
        let Some((kind, interval)) = kind else { continue };
        let used = value.to_str().ok().and_then(whole);
        match (used, window_of(interval)) {
            (Some(used), Some(window)) => {
                found.counts.push(Usage { kind, window, used: Some(used), remaining: None, limit: None })
            }
            _ => found.unreadable += 1,
        }
    }
    ietf(headers, &mut found);
    for prefix in ["ratelimit", "x-ratelimit"] {
        remaining_and_limit(headers, prefix, &mut found);
    }
    found
}

/// A Binance interval suffix: `""` (no window), or `-<n><s|m|h|d>`; `None`
/// for anything else, a zero window or one too long to hold.
fn window_of(interval: &str) -> Option<Option<Duration>> {
    if interval.is_empty() {
        return Some(None);
    }
    // Header names are ASCII; splitting elsewhere than a char boundary would panic.
    let spec = interval.strip_prefix('-').filter(|s| s.is_ascii())?;
    let (n, unit) = spec.split_at(spec.len().checked_sub(1)?);
    let unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    let n = whole(n)?;
    match n.checked_mul(unit) {
        Some(secs) if secs > 0 => Some(Some(Duration::from_secs(secs))),
        _ => None,
    }
}

/// The IETF headers: `RateLimit` items, each with the `RateLimit-Policy`
/// item of its name, or the earlier draft's `limit=, remaining=` form.
fn ietf(headers: &HeaderMap, found: &mut Usages) {
    // Policies by name: (quota, window).
    let mut policies: Vec<(&str, Option<u64>, Option<Duration>)> = Vec::new();
    for line in headers.get_all("ratelimit-policy") {
        let Ok(line) = line.to_str() else {
            found.unreadable += 1;
            continue;
        };
        for item in line.split(',') {
            let (name, params) = item_of(item);
            let q = param(params, "q").and_then(whole);
            let w = param(params, "w").and_then(whole).filter(|&w| w > 0).map(Duration::from_secs);
            policies.push((name, q, w));
        }
    }
    for line in headers.get_all("ratelimit") {
        let Ok(line) = line.to_str() else {
            found.unreadable += 1;
            continue;
        };
        // The earlier draft: `limit=100, remaining=50, reset=50`.
        if line.split(',').any(|kv| kv.trim().starts_with("remaining=")) {
            let value = |key: &str| {
                line.split(',').find_map(|kv| kv.trim().strip_prefix(key)?.strip_prefix('=')).and_then(whole)
            };
            match value("remaining") {
                Some(remaining) => found.counts.push(quota(Some(remaining), value("limit"), None)),
                None => found.unreadable += 1,
            }
            continue;
        }
        for item in line.split(',') {
            let (name, params) = item_of(item);
            let Some(remaining) = param(params, "r").and_then(whole) else {
                found.unreadable += 1;
                continue;
            };
            let policy = policies.iter().find(|p| p.0 == name);
            found.counts.push(quota(Some(remaining), policy.and_then(|p| p.1), policy.and_then(|p| p.2)));
        }
    }
}

/// `<prefix>-remaining` with `<prefix>-limit`, when a remaining count can
/// be read.
fn remaining_and_limit(headers: &HeaderMap, prefix: &str, found: &mut Usages) {
    let first = |suffix: &str| {
        let mut lines = headers.get_all(format!("{prefix}-{suffix}")).iter().peekable();
        let any = lines.peek().is_some();
        // A legacy limit may name its window after a `;`: `100;w=60`.
        (any, lines.find_map(|v| whole(v.to_str().ok()?.split([',', ';']).next()?)))
    };
    let (any, remaining) = first("remaining");
    match remaining {
        Some(remaining) => found.counts.push(quota(Some(remaining), first("limit").1, None)),
        None if any => found.unreadable += 1,
        None => {}
    }
}

fn quota(remaining: Option<u64>, limit: Option<u64>, window: Option<Duration>) -> Usage {
    Usage { kind: UsageKind::Quota, window, used: None, remaining, limit }
}

/// A structured-field item: its name (a string or a token) and the rest,
/// its `;`-separated parameters.
fn item_of(item: &str) -> (&str, &str) {
    let item = item.trim();
    let (name, params) = item.split_once(';').unwrap_or((item, ""));
    (name.trim().trim_matches('"'), params)
}

/// Parameter `key` of `params` (`;`-separated `key=value`).
fn param<'a>(params: &'a str, key: &str) -> Option<&'a str> {
    params.split(';').find_map(|kv| kv.trim().strip_prefix(key)?.strip_prefix('='))
}

/// Whole units as HTTP writes them (digits only), saturating at
/// `u64::MAX`.
fn whole(v: &str) -> Option<u64> {
    let v = v.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(v.parse().unwrap_or(u64::MAX))
}
