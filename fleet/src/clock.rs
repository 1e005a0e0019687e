//! The fleet's clock: Redis's, read with `TIME`, so that hosts' own clocks
//! need not agree for a message's time to mean the same on every host.
//!
//! Each link thread reads `TIME` when it connects (and the publisher again
//! every second), and keeps the offset from this host's monotonic clock to
//! it: the Redis time read, minus the monotonic time at which `TIME` was
//! *sent*. Redis read its clock after that, so the offset, added to a
//! later monotonic time, gives an upper bound on Redis's time then (plus
//! the drift between the two clocks since the reading: microseconds over a
//! second, covered by [`MARGIN_MS`]).
//!
//! - A **stamp** (a message's send time) is that upper bound: never
//!   earlier than Redis's time when the message was made.
//! - A **subscription** begins after the `TIME` its thread read just before
//!   `SUBSCRIBE`: Redis's time then is a lower bound on its start.
//!
//! So a message stamped before a subscription began was made before it: a
//! subscriber cannot have heard it, and hears only a replay (see `replay`).
//! The bound is one round trip to Redis plus the margin: a replay of a
//! message made that little before the subscription is not told apart.
//!
//! # Orderings
//! `offset_us` is one number, read and written `Relaxed`: it is a report
//! from either thread, no other data is read on the strength of it, and any
//! reading is an upper bound as good as another.

use std::time::Instant;

use redis::{Connection, RedisResult};

use crate::sync::{AtomicU64, Ordering};

/// Added to a stamp for the drift of this host's clock from Redis's since
/// the last reading.
pub(crate) const MARGIN_MS: u64 = 1;

/// Redis's time, as this host reads it.
#[derive(Debug)]
pub(crate) struct FleetClock {
    /// Where this host's monotonic microseconds start.
    origin: Instant,
    /// Redis's microseconds since the Unix epoch minus this host's
    /// monotonic ones since `origin`, at a reading; 0 before the first.
    offset_us: AtomicU64,
}

impl Default for FleetClock {
    fn default() -> Self {
        Self { origin: Instant::now(), offset_us: AtomicU64::new(0) }
    }
}

impl FleetClock {
    fn mono_us(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Reads `TIME` on `conn`: keeps the offset, and returns Redis's time
    /// in whole milliseconds, rounded down (a lower bound on its time once
    /// the answer is in).
    pub(crate) fn read(&self, conn: &mut Connection) -> RedisResult<u64> {
        let sent = self.mono_us();
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query(conn)?;
        let redis_us = secs.saturating_mul(1_000_000).saturating_add(micros);
        // Relaxed: see the module's Orderings.
        self.offset_us.store(redis_us.saturating_sub(sent).max(1), Ordering::Relaxed);
        Ok(redis_us / 1000)
    }

    /// Redis's time now, in milliseconds since the Unix epoch, rounded up:
    /// an upper bound, as a stamp must be. Before any reading, this host's
    /// wall clock.
    pub(crate) fn now_ms(&self) -> u64 {
        // Relaxed: see the module's Orderings.
        let offset = self.offset_us.load(Ordering::Relaxed);
        if offset == 0 {
            return crate::replay::wall_ms();
        }
        self.mono_us().saturating_add(offset).div_ceil(1000).saturating_add(MARGIN_MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_a_reading_the_wall_clock_serves() {
        let c = FleetClock::default();
        let (before, now, after) = (crate::replay::wall_ms(), c.now_ms(), crate::replay::wall_ms());
        assert!(before <= now && now <= after);
    }

    #[test]
    fn a_stamp_runs_on_from_the_reading_and_never_goes_back() {
        let c = FleetClock::default();
        c.offset_us.store(1_700_000_000_000_000, Ordering::Relaxed);
        let first = c.now_ms();
        assert!(first >= 1_700_000_000_000 + MARGIN_MS, "{first}");
        std::thread::sleep(core::time::Duration::from_millis(3));
        let second = c.now_ms();
        assert!(second >= first + 3, "{first} then {second}");
    }
}
