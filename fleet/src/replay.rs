//! Freshness: a signed message is taken once, only if this host could have
//! heard it, and only near the time it was sent.
//!
//! Every time here is Redis's (see `clock`): stamps are read on it, so
//! hosts' own clocks need not agree.
//!
//! - **Time**: the stamp must lie within the skew allowance of this host's
//!   reading of Redis's clock, either way. Older is stale, later is from
//!   the future. The allowance (5 s by default) covers the time a message
//!   spends in transit and the readings' error (a round trip).
//! - **Subscription**: Redis delivers a message only to the connections
//!   subscribed when it is published. A message stamped before this host's
//!   subscription began (Redis's time read just before `SUBSCRIBE`) was
//!   made before it: whether this host saw the original or not, what it
//!   hears is a replay. The bound: a replay of a message made within one
//!   round trip to Redis (plus 1 ms) before the subscription is taken.
//!   A genuine message stamped just before and published just after is
//!   refused too; its state is in its key, which is read again then.
//! - **Sequence**: each sender numbers its messages from 1; a receiver
//!   keeps the highest number it took from each sender and refuses any
//!   number not above it (a replay). Redis delivers one channel's messages
//!   in the order they were published, so a genuine message is never
//!   behind its sender's last.
//! - **Keys**: a state kept in Redis (read at a join and after every
//!   reconnection) stamped earlier than a state of that breaker this host
//!   took or sent (a close it heard, its own trip) is a replay (see
//!   `publish`). A host that joins later has taken nothing yet: it reads a
//!   key as the fleet's current state, within its wait and the allowance.
//!
//! A sender not heard from for twice the allowance is forgotten: any replay
//! of its messages is stale by then. At most [`MAX_SENDERS`] are kept; past
//! that the one heard from longest ago is forgotten, which lets a replay of
//! its messages through within the allowance only (and on a subscription
//! it began after, never).

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// This host's wall clock, in milliseconds since the Unix epoch (0 before it).
pub(crate) fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How long a value kept in Redis (a state key, a lease) that was sent at
/// `sent_ms` for `wait_ms` stays good at `now_ms`, allowing `skew_ms`
/// either way; `Err` if it is from the future or no longer good.
pub(crate) fn stored_left(sent_ms: u64, wait_ms: u64, now_ms: u64, skew_ms: u64) -> Result<u64, Unfresh> {
    if sent_ms > now_ms.saturating_add(skew_ms) {
        return Err(Unfresh::Future);
    }
    let end = sent_ms.saturating_add(wait_ms).saturating_add(skew_ms);
    match end.checked_sub(now_ms) {
        Some(left) if left > 0 => Ok(left),
        _ => Err(Unfresh::Stale),
    }
}

/// The most senders remembered at once.
pub(crate) const MAX_SENDERS: usize = 4096;

/// Why a well-signed message is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unfresh {
    /// Sent longer ago than the allowance.
    Stale,
    /// Sent later than the allowance ahead of this host's clock.
    Future,
    /// Its sequence number was taken before.
    Replayed,
    /// Stamped before this host's subscription began: a replay of a
    /// message it could not have heard.
    Unheard,
}

/// Whether a message sent at `sent_ms` may be taken at `now_ms`.
pub(crate) fn check_time(sent_ms: u64, now_ms: u64, skew_ms: u64) -> Result<(), Unfresh> {
    if sent_ms > now_ms.saturating_add(skew_ms) {
        return Err(Unfresh::Future);
    }
    if sent_ms < now_ms.saturating_sub(skew_ms) {
        return Err(Unfresh::Stale);
    }
    Ok(())
}

/// The highest sequence number taken from each sender.
#[derive(Debug, Default)]
pub(crate) struct ReplayGuard {
    /// Sender → (highest sequence taken, when last heard, in wall ms).
    last: HashMap<u64, (u64, u64)>,
}

impl ReplayGuard {
    /// Takes message `seq` of `sender`, stamped `sent_ms`, at `now_ms`
    /// with the allowance `skew_ms`, heard on a subscription that began at
    /// `since_ms`: checks its time, then that it was made since, then its
    /// sequence, and remembers it if all pass.
    pub(crate) fn take(
        &mut self,
        sender: u64,
        seq: u64,
        sent_ms: u64,
        (now_ms, skew_ms): (u64, u64),
        since_ms: u64,
    ) -> Result<(), Unfresh> {
        check_time(sent_ms, now_ms, skew_ms)?;
        // Made before this host could hear it?
        if sent_ms < since_ms {
            return Err(Unfresh::Unheard);
        }
        if let Some(&(highest, _)) = self.last.get(&sender) {
            // Taken already, or behind one that was?
            if seq <= highest {
                return Err(Unfresh::Replayed);
            }
        } else if self.last.len() >= MAX_SENDERS {
            self.forget(now_ms, skew_ms);
        }
        self.last.insert(sender, (seq, now_ms));
        Ok(())
    }

    /// Forgets the senders whose messages would all be stale now; if none
    /// is, the one heard from longest ago.
    fn forget(&mut self, now_ms: u64, skew_ms: u64) {
        let horizon = now_ms.saturating_sub(skew_ms.saturating_mul(2));
        self.last.retain(|_, &mut (_, heard)| heard >= horizon);
        if self.last.len() >= MAX_SENDERS {
            let oldest = self.last.iter().min_by_key(|(_, (_, heard))| *heard).map(|(&s, _)| s);
            if let Some(s) = oldest {
                self.last.remove(&s);
            }
        }
    }

    /// How many senders are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.last.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SKEW: u64 = 5_000;

    #[test]
    fn time_window_both_ways() {
        let now = 1_000_000;
        assert_eq!(check_time(now, now, SKEW), Ok(()));
        assert_eq!(check_time(now + SKEW, now, SKEW), Ok(()));
        assert_eq!(check_time(now - SKEW, now, SKEW), Ok(()));
        assert_eq!(check_time(now + SKEW + 1, now, SKEW), Err(Unfresh::Future));
        assert_eq!(check_time(now - SKEW - 1, now, SKEW), Err(Unfresh::Stale));
        // Clocks at the ends of the range.
        assert_eq!(check_time(u64::MAX, now, SKEW), Err(Unfresh::Future));
        assert_eq!(check_time(0, now, SKEW), Err(Unfresh::Stale));
        assert_eq!(check_time(0, 0, SKEW), Ok(()));
        assert_eq!(check_time(u64::MAX, u64::MAX, SKEW), Ok(()));
        assert_eq!(check_time(0, u64::MAX, u64::MAX), Ok(()));
    }

    #[test]
    fn a_stored_value_is_good_for_its_wait_and_the_allowance() {
        let now = 1_000_000;
        assert_eq!(stored_left(now, 2_000, now, SKEW), Ok(7_000));
        assert_eq!(stored_left(now - 6_999, 2_000, now, SKEW), Ok(1));
        assert_eq!(stored_left(now - 7_000, 2_000, now, SKEW), Err(Unfresh::Stale));
        assert_eq!(stored_left(now + SKEW + 1, 0, now, SKEW), Err(Unfresh::Future));
        assert_eq!(stored_left(now + SKEW, 0, now, SKEW), Ok(2 * SKEW));
        assert_eq!(stored_left(0, u64::MAX, now, SKEW), Ok(u64::MAX - now));
        assert_eq!(stored_left(0, 0, u64::MAX, SKEW), Err(Unfresh::Stale));
        assert!(wall_ms() > 1_600_000_000_000, "the wall clock reads after 2020");
    }

    #[test]
    fn a_sequence_number_is_taken_once() {
        let mut g = ReplayGuard::default();
        let now = 10_000_000;
        assert_eq!(g.take(1, 1, now, (now, SKEW), 0), Ok(()));
        assert_eq!(g.take(1, 1, now, (now, SKEW), 0), Err(Unfresh::Replayed));
        assert_eq!(g.take(2, 1, now, (now, SKEW), 0), Ok(()), "another sender's numbers are its own");
        assert_eq!(g.take(1, 3, now, (now, SKEW), 0), Ok(()));
        assert_eq!(g.take(1, 2, now, (now, SKEW), 0), Err(Unfresh::Replayed), "behind the highest taken");
        assert_eq!(g.take(1, u64::MAX, now, (now, SKEW), 0), Ok(()));
        assert_eq!(
            g.take(1, u64::MAX, now, (now, SKEW), 0),
            Err(Unfresh::Replayed),
            "the top number is taken once too"
        );
        // Made before the subscription began: refused whoever sent it, and
        // leaves no trace.
        assert_eq!(g.take(9, 1, now - 1, (now, SKEW), now), Err(Unfresh::Unheard));
        assert_eq!(g.take(9, 1, now, (now, SKEW), now), Ok(()));
        // A stale message is refused before its number is looked at, and
        // leaves no trace.
        assert_eq!(g.take(3, 1, now - SKEW - 1, (now, SKEW), 0), Err(Unfresh::Stale));
        assert_eq!(g.take(3, 1, now, (now, SKEW), 0), Ok(()));
    }

    #[test]
    fn memory_is_bounded_and_forgets_the_stale_first() {
        let mut g = ReplayGuard::default();
        let t0 = 10_000_000;
        for s in 0..MAX_SENDERS as u64 {
            g.take(s, 1, t0, (t0, SKEW), 0).unwrap();
        }
        assert_eq!(g.len(), MAX_SENDERS);
        // Much later: every remembered sender is past the horizon.
        let t1 = t0 + 3 * SKEW;
        g.take(u64::MAX, 1, t1, (t1, SKEW), 0).unwrap();
        assert_eq!(g.len(), 1);
        // Full of fresh senders: the oldest one goes.
        for s in 0..MAX_SENDERS as u64 - 1 {
            g.take(s, 1, t1, (t1 + 1 + s, SKEW), 0).unwrap();
        }
        assert_eq!(g.len(), MAX_SENDERS);
        g.take(1 << 40, 1, t1, (t1 + MAX_SENDERS as u64, SKEW), 0).unwrap();
        assert_eq!(g.len(), MAX_SENDERS);
        assert_eq!(
            g.take(u64::MAX, 1, t1, (t1 + MAX_SENDERS as u64, SKEW), 0),
            Ok(()),
            "the oldest was forgotten"
        );
        assert_eq!(
            g.take(5, 1, t1, (t1 + MAX_SENDERS as u64, SKEW), 0),
            Err(Unfresh::Replayed),
            "a recent one was not"
        );
    }
}
