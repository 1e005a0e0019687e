//! The subscribed thread: owns the pub/sub connection, checks every
//! message, and puts the fleet's states into the joined breakers.
//!
//! A message is taken only if it decodes, is signed with the fleet's key,
//! was stamped after this subscription began and within the skew
//! allowance, and carries a sequence number above its sender's last (see
//! `replay`); anything else is counted by reason and dropped. Taken, an "opened" or "held" message holds the breaker of that
//! name for the message's wait (the core's `open_for`, which never shortens
//! a wait), and "closed" closes it if it is Open or Half-Open.
//!
//! Reads time out every [`POLL`] so that a stop is seen; a connection idle
//! for [`PING_EVERY`] is pinged, so that a server that stopped answering
//! (not only one that closed the connection) is noticed and left.

use core::time::Duration;
use std::sync::Arc;
use std::time::Instant;

use redis::{Connection, RedisResult};

use tripwire::retry::Backoff;

use crate::connect;
use crate::counters::{Conn, Count, RejectReason};
use crate::handle::Shared;
use crate::message::{self, Kind};
use crate::publish::reconnect_backoff;
use crate::replay::{ReplayGuard, Unfresh};

/// How often a blocked read gives up to look at the stop flag.
const POLL: Duration = Duration::from_millis(100);
/// How long a quiet connection goes before it is pinged.
const PING_EVERY: Duration = Duration::from_secs(1);

pub(crate) fn run(shared: Arc<Shared>) {
    let mut backoff = reconnect_backoff(&shared);
    let mut guard = ReplayGuard::default();
    let mut connected_once = false;
    while !shared.stopped() {
        match connect::open(&shared.link, &shared.config, &shared.clock) {
            Ok((mut conn, redis_ms)) => {
                if shared.stopped() {
                    return;
                }
                if connected_once {
                    shared.counters.add(Count::Reconnect);
                }
                connected_once = true;
                let subscribed = listen(&shared, &mut conn, redis_ms, &mut guard, &mut backoff);
                shared.counters.set_up(Conn::Subscriber, false);
                // The server may be gone for the publisher too: it checks
                // sooner while this connection is down.
                shared.wake_publisher();
                match subscribed {
                    // Stopped.
                    Ok(()) => return,
                    Err(e) => shared.conn_dropped(Conn::Subscriber, &e),
                }
            }
            // Stopped while connecting: the error is the drop's doing.
            Err(_) if shared.stopped() => return,
            Err(why) => shared.connect_failed(Conn::Subscriber, &why),
        }
        sleep_unless_stopped(&shared, backoff.next_delay());
    }
}

/// Sleeps `d`, returning early once the fleet stops.
fn sleep_unless_stopped(shared: &Shared, d: Duration) {
    let end = Instant::now() + d;
    while !shared.stopped() {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        // The handle's drop unparks this thread.
        std::thread::park_timeout(left);
    }
}

/// Subscribes and takes messages until the fleet stops (`Ok`) or the
/// connection fails (`Err`).
fn listen(
    shared: &Shared,
    conn: &mut Connection,
    subscribed_at: u64,
    guard: &mut ReplayGuard,
    backoff: &mut Backoff,
) -> RedisResult<()> {
    // `subscribed_at`, Redis's time read last by `open`, is before the
    // subscription: no message stamped earlier reaches it but as a replay
    // (see `clock`).
    connect::subscribe(conn, &shared.keys.channel)?;
    let mut ps = conn.as_pubsub();
    ps.set_read_timeout(Some(POLL))?;
    shared.conn_up(Conn::Subscriber);
    backoff.reset();
    // Messages sent while this host was not subscribed are in the keys.
    shared.request_resync();
    let mut heard = Instant::now();
    while !shared.stopped() {
        match ps.get_message() {
            Ok(msg) => {
                heard = Instant::now();
                receive(shared, guard, subscribed_at, msg.get_payload_bytes());
            }
            Err(e) if e.is_timeout() => {
                if heard.elapsed() >= PING_EVERY {
                    ps.set_read_timeout(Some(shared.config.io_timeout))?;
                    let _: redis::Value = ps.ping()?;
                    ps.set_read_timeout(Some(POLL))?;
                    heard = Instant::now();
                }
            }
            Err(e) => return Err(e),
        }
    }
    // Stopped: the connection is closed on the way out, which ends the
    // subscription; the UNSUBSCRIBE the client sends first is given no
    // time to wait for an answer.
    let _ = ps.set_read_timeout(Some(Duration::from_millis(1)));
    Ok(())
}

/// Checks one payload, heard on a subscription that began at Redis time
/// `subscribed_at` (ms), and puts what it says into the breaker it names.
pub(crate) fn receive(shared: &Shared, guard: &mut ReplayGuard, subscribed_at: u64, payload: &[u8]) {
    let counters = &shared.counters;
    let msg = match message::decode(payload) {
        Ok(msg) => msg,
        Err(_) => return shared.rejected(RejectReason::Malformed),
    };
    if !shared.signer.verify(msg.signed, msg.tag) {
        return shared.rejected(RejectReason::Signature);
    }
    // This host's own message, back from the channel.
    if msg.sender == shared.id {
        return;
    }
    let skew = crate::lease::ttl_ms(shared.config.max_skew);
    let now = shared.clock.now_ms();
    if let Err(u) = guard.take(msg.sender, msg.seq, msg.sent_at_ms, (now, skew), subscribed_at) {
        let reason = match u {
            Unfresh::Stale => RejectReason::Stale,
            Unfresh::Future => RejectReason::Future,
            Unfresh::Replayed => RejectReason::Replayed,
            Unfresh::Unheard => {
                // Or a genuine message stamped just before the subscription
                // and published just after: the state it carries is in its
                // key, read again.
                shared.request_resync();
                RejectReason::Replayed
            }
        };
        return shared.rejected(reason);
    }
    counters.add(Count::Received);
    let Some(m) = shared.member(msg.name) else { return };
    if msg.kind != Kind::Lease {
        m.saw(msg.sent_at_ms);
    }
    let changed = match msg.kind {
        Kind::Opened | Kind::Held => m.apply_hold(msg.wait()),
        Kind::Closed => m.apply_close(),
        // Leases live in keys; one on the channel says nothing.
        Kind::Lease => None,
    };
    if changed.is_some() {
        counters.add(Count::Applied);
        // A new wait, whose lease is to be asked for in time.
        shared.wake_publisher();
    }
}
