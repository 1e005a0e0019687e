//! One probe for the fleet: the lease, and how a host that lost it keeps
//! its breaker from probing, with no socket on any call's path.
//!
//! When a joined breaker's cool-down (or hold) is about to end, within the
//! configured lead, the publishing thread asks Redis for the breaker's
//! lease (`SET` if absent, with a TTL of the time left plus the probe
//! timeout, in one script) if the breaker has callers: it refused a call
//! since the link last looked. An idle breaker has no call to probe with,
//! and its winning would hold every other host until the lease ends: it
//! asks for none. It obeys another host's lease if one is held (as a loser
//! does), or else is held on for twice the lead and looked at again, so
//! that it never probes without a lease while the link is up; a caller
//! refused meanwhile makes it ask next time (each such hold is a
//! transition, which a [`NamedBreaker`](tripwire::NamedBreaker)'s listeners
//! hear, a lead apart). Asked, then:
//! - **won**: nothing changes locally; when the wait ends, the next call is
//!   the probe (the core's Half-Open admission, as on a lone host). Once the
//!   probe's outcome moves the breaker (closed, or opened again), the new
//!   state is published and the lease deleted.
//! - **lost**: the breaker is held open locally (the core's `open_for`)
//!   until the lease ends, plus the lead and a margin, so that it asks again
//!   only after the lease has expired. The prober's published result ends
//!   the hold sooner (closed) or replaces it (opened).
//! - **no answer in time** (Redis slow or down): the wait ends and the host
//!   probes on its own, as a plain local breaker.
//!
//! A prober that dies never publishes: its lease expires at its TTL, the
//! other hosts' holds end just after, and one of them wins the next lease.
//!
//! The lease's value is a signed message naming its holder and its length,
//! so that a process that can write keys but lacks the fleet's key cannot
//! hold every breaker of the fleet with a lease of its own making: a
//! value that does not check is counted as rejected and not obeyed.

use core::time::Duration;

/// The lease script: `KEYS[1]` the lease, `ARGV[1]` the new value,
/// `ARGV[2]` its TTL in ms, `ARGV[3]` this host's last value (a lease it
/// holds already is renewed). Returns 1 when won, else the holder's value
/// and the lease's TTL in ms.
pub(crate) const ACQUIRE: &str = r"
local cur = redis.call('GET', KEYS[1])
if cur == false or cur == ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return {cur, redis.call('PTTL', KEYS[1])}
";

/// Deletes the lease `KEYS[1]` if it still holds `ARGV[1]`.
pub(crate) const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// Past a lost lease's end, how long the hold lasts before the host asks
/// again: Redis has expired the lease by then.
pub(crate) const MARGIN: Duration = Duration::from_millis(5);

/// How long a host that lost the lease holds its breaker: until the lease
/// ends (`ttl`, at most `lead + probe_timeout`, the longest lease a host
/// takes) plus the lead and the margin, so that it asks again, `lead`
/// before its hold ends, only once the lease has expired.
pub(crate) fn loser_hold(ttl: Duration, lead: Duration, probe_timeout: Duration) -> Duration {
    ttl.min(lead.saturating_add(probe_timeout)).saturating_add(lead).saturating_add(MARGIN)
}

/// A TTL for Redis in whole milliseconds, rounded up, at least 1.
pub(crate) fn ttl_ms(d: Duration) -> u64 {
    let ms = d.as_nanos().div_ceil(1_000_000);
    u64::try_from(ms).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loser_asks_again_only_after_the_lease() {
        let (lead, probe) = (Duration::from_millis(100), Duration::from_secs(10));
        let ttl = Duration::from_millis(700);
        let hold = loser_hold(ttl, lead, probe);
        assert_eq!(hold, ttl + lead + MARGIN);
        // It asks `lead` before the hold ends: after the lease's end.
        assert!(hold - lead > ttl);
        // A lease longer than any host takes is cut to the longest one.
        assert_eq!(loser_hold(Duration::from_secs(3600), lead, probe), lead + probe + lead + MARGIN);
        assert_eq!(loser_hold(Duration::MAX, Duration::MAX, Duration::MAX), Duration::MAX);
    }

    #[test]
    fn ttls_round_up() {
        assert_eq!(ttl_ms(Duration::ZERO), 1);
        assert_eq!(ttl_ms(Duration::from_nanos(1)), 1);
        assert_eq!(ttl_ms(Duration::from_micros(1001)), 2);
        assert_eq!(ttl_ms(Duration::from_secs(3)), 3000);
        assert_eq!(ttl_ms(Duration::MAX), u64::MAX);
    }
}
