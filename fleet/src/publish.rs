//! The publishing thread: owns the command connection; publishes joined
//! breakers' transitions and keeps their state keys; asks for probe leases
//! and releases them; reads the keys again after every (re)connection.
//!
//! It sleeps (parked) until a listener wakes it, a lease is due, or a
//! second passes; every Redis command is bounded by the I/O timeout, and a
//! failed one drops the connection, which is made again with backoff. No
//! caller of a breaker ever waits for this thread.

use core::time::Duration;
use std::boxed::Box;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use std::vec::Vec;

use redis::{Connection, RedisResult, Value};

use tripwire::State;
use tripwire::retry::Backoff;
use tripwire::retry::{BackoffConfig, Jitter};

use crate::connect;
use crate::counters::{Conn, Count, RejectReason};
use crate::handle::Shared;
use crate::lease::{self, ACQUIRE, RELEASE};
use crate::member::Member;
use crate::message::{self, Kind};
use crate::replay::{self, Unfresh};

/// The longest sleep: lease deadlines and new members are looked at once a
/// second at least.
const IDLE: Duration = Duration::from_secs(1);

/// The longest sleep while a breaker without listeners is joined
/// ([`Fleet::join_core`](crate::Fleet::join_core)): how late its
/// transitions may be seen, on top of the link's own latency.
pub(crate) const POLL: Duration = Duration::from_millis(5);

/// What the publisher remembers of one joined breaker.
#[derive(Debug)]
struct Track {
    /// The last generation published, or the one it joined with.
    published: u32,
    /// Whether its keys are to be read (it joined, or the link came back).
    resync: bool,
    /// The Open generation a lease was asked for in.
    asked: Option<u32>,
    /// The lease this host holds: the generation it was won in, and its value.
    won: Option<(u32, Vec<u8>)>,
    /// The generation counted as dropped while unlinked, counted once.
    dropped: Option<u32>,
    /// The breaker's refused calls when the link last looked at its lease:
    /// more since means it has callers, a call to probe with.
    refused_seen: u64,
    /// The values of its state key and lease last refused by a resync: read
    /// again (the keys are read at the join, once subscribed, after every
    /// reconnection), one is not counted again.
    refused_stored: [Option<Vec<u8>>; 2],
}

impl Track {
    /// A breaker seen for the first time. Its keys are read now if the
    /// subscriber is up; if not, they will be once it is (every breaker's
    /// are, then), and reading them twice would count twice.
    fn new(m: &Member, subscribed: bool) -> Self {
        Self {
            published: m.joined_at,
            resync: subscribed,
            asked: None,
            won: None,
            dropped: None,
            refused_seen: m.breaker.refused(),
            refused_stored: [None, None],
        }
    }
}

pub(crate) fn run(shared: Arc<Shared>) {
    let mut p = Publisher::new(shared);
    while !p.shared.stopped() {
        let sleep = p.turn();
        std::thread::park_timeout(sleep);
    }
    p.release_all();
}

struct Publisher {
    shared: Arc<Shared>,
    conn: Option<Connection>,
    backoff: Backoff,
    retry_at: Instant,
    /// When the connection last carried a command.
    used_at: Instant,
    /// When Redis's clock was last read (see `clock`).
    clock_read_at: Instant,
    connected_once: bool,
    seq: u64,
    tracks: HashMap<Box<str>, Track>,
}

impl Publisher {
    fn new(shared: Arc<Shared>) -> Self {
        let backoff = reconnect_backoff(&shared);
        Self {
            shared,
            conn: None,
            backoff,
            retry_at: Instant::now(),
            used_at: Instant::now(),
            clock_read_at: Instant::now(),
            connected_once: false,
            seq: 0,
            tracks: HashMap::new(),
        }
    }

    /// One round over every joined breaker; returns how long to sleep.
    fn turn(&mut self) -> Duration {
        let now = Instant::now();
        // The subscriber asks for a resync once subscribed; a breaker keeps
        // the request until this thread is connected to carry it out.
        let resync_all = self.shared.take_resync();
        if self.conn.is_none() && now >= self.retry_at {
            self.connect(now);
        } else if self.conn.is_some()
            && (self.quiet(now) || now.saturating_duration_since(self.clock_read_at) >= IDLE)
            && let Err(e) = self.ping()
        {
            self.lost(&e);
        }
        let mut wake = now + IDLE;
        if self.conn.is_none() {
            wake = wake.min(self.retry_at);
        }
        // Out of `self` while `step` borrows it; a name is allocated once,
        // when its breaker is first seen.
        let mut tracks = core::mem::take(&mut self.tracks);
        for m in self.shared.members() {
            // Stopped during a command: the handle's drop waits for this
            // thread, so no further command is sent.
            if self.shared.stopped() {
                break;
            }
            if m.polled {
                wake = wake.min(now + POLL);
            }
            let name = m.breaker.name();
            if !tracks.contains_key(name) {
                let subscribed = self.shared.counters.is_up(Conn::Subscriber);
                tracks.insert(Box::from(name), Track::new(&m, subscribed));
            }
            let Some(track) = tracks.get_mut(name) else { continue };
            track.resync |= resync_all;
            match self.step(&m, track) {
                Ok(Some(at)) => wake = wake.min(at),
                Ok(None) => {}
                Err(e) => self.lost(&e),
            }
        }
        self.tracks = tracks;
        wake.saturating_duration_since(Instant::now())
    }

    /// Whether the connection has gone long enough without a command to be
    /// pinged: a second, or a tenth of one while the subscriber is down
    /// (the server may be gone for both).
    fn quiet(&self, now: Instant) -> bool {
        let every = if self.shared.counters.is_up(Conn::Subscriber) { IDLE } else { IDLE / 10 };
        now.saturating_duration_since(self.used_at) >= every
    }

    /// Reads Redis's clock again, which pings the connection too.
    fn ping(&mut self) -> RedisResult<()> {
        let shared = Arc::clone(&self.shared);
        shared.clock.read(self.conn()?)?;
        self.clock_read_at = Instant::now();
        Ok(())
    }

    /// Tries to connect.
    fn connect(&mut self, now: Instant) {
        let counters = &self.shared.counters;
        // Stamps are read on Redis's clock: `open` reads it.
        match connect::open(&self.shared.link, &self.shared.config, &self.shared.clock) {
            Ok((c, _)) => {
                self.clock_read_at = Instant::now();
                self.conn = Some(c);
                self.backoff.reset();
                if self.connected_once {
                    counters.add(Count::Reconnect);
                }
                self.connected_once = true;
                self.shared.conn_up(Conn::Publisher);
                // Whatever moved while the link was down goes out now.
                for m in self.shared.members() {
                    m.signal.mark_dirty();
                }
            }
            Err(why) => {
                // Stopped while connecting: the error is the drop's doing.
                if !self.shared.stopped() {
                    self.shared.connect_failed(Conn::Publisher, &why);
                }
                self.retry_at = now + self.backoff.next_delay();
            }
        }
    }

    /// The connection failed with `e`: drop it, and try again after a
    /// backoff.
    fn lost(&mut self, e: &redis::RedisError) {
        if self.conn.take().is_some() {
            self.shared.counters.set_up(Conn::Publisher, false);
            if !self.shared.stopped() {
                self.shared.conn_dropped(Conn::Publisher, e);
            }
        }
        self.retry_at = Instant::now() + self.backoff.next_delay();
    }

    /// Resync, publication and lease for one breaker; returns when it
    /// next needs a turn, if at a set time.
    fn step(&mut self, m: &Member, t: &mut Track) -> RedisResult<Option<Instant>> {
        // A transition flagged by a listener, or, without one, any turn.
        let looked_at = m.signal.take_dirty() || m.polled;
        if self.conn.is_none() {
            if let Some((.., generation)) = self.news(m, t).filter(|_| looked_at)
                && t.dropped != Some(generation)
            {
                // Published when the link is back (connecting marks every
                // breaker dirty).
                t.dropped = Some(generation);
                self.shared.counters.add(Count::Dropped);
            }
            return Ok(None);
        }
        if t.resync {
            self.resync(m, t)?;
            t.resync = false;
        }
        if looked_at || m.signal.take_dirty() {
            self.publish(m, t).inspect_err(|_| self.shared.counters.add(Count::Dropped))?;
        }
        self.lease(m, t)
    }

    /// The message the breaker's state calls for, if it is news: a
    /// generation neither published nor made by the link, in a state the
    /// fleet hears of (an Open breaker still waiting, or Closed).
    fn news(&self, m: &Member, t: &Track) -> Option<(Kind, Duration, u32)> {
        let b = &m.breaker;
        let generation = b.generation();
        if generation == t.published || m.signal.applied(generation) {
            return None;
        }
        match b.state() {
            State::Open => {
                let (left, held) = b.open_left()?;
                Some((if held { Kind::Held } else { Kind::Opened }, left, generation))
            }
            State::Closed => Some((Kind::Closed, Duration::ZERO, generation)),
            State::HalfOpen | State::ForcedOpen | State::Disabled => None,
        }
    }

    /// A signed message of this host, and its stamp.
    fn message(&mut self, kind: Kind, wait: Duration, name: &str) -> (Vec<u8>, u64) {
        self.seq += 1;
        let stamp = self.shared.clock.now_ms();
        let unsigned = message::encode_unsigned(kind, self.shared.id, self.seq, stamp, wait, name);
        (self.shared.signer.sign(unsigned), stamp)
    }

    /// Publishes the breaker's state if it is news, and keeps its state
    /// key: the message while it waits, nothing once closed.
    fn publish(&mut self, m: &Member, t: &mut Track) -> RedisResult<()> {
        let Some((kind, wait, generation)) = self.news(m, t) else {
            return Ok(());
        };
        let name = m.breaker.name();
        let (bytes, stamp) = self.message(kind, wait, name);
        let state_key = self.shared.keys.state(name);
        let mut pipe = redis::pipe();
        if kind == Kind::Closed {
            pipe.cmd("DEL").arg(&state_key).ignore();
        } else {
            pipe.cmd("SET").arg(&state_key).arg(&bytes).arg("PX").arg(lease::ttl_ms(wait)).ignore();
        }
        pipe.cmd("PUBLISH").arg(&self.shared.keys.channel).arg(&bytes).ignore();
        pipe.exec(self.conn()?)?;
        self.shared.counters.add(Count::Sent);
        m.saw(stamp);
        t.published = generation;
        Ok(())
    }

    /// Releases a lease whose probe has an outcome; asks for one when an
    /// Open breaker's wait is within the lead of its end.
    fn lease(&mut self, m: &Member, t: &mut Track) -> RedisResult<Option<Instant>> {
        let b = &m.breaker;
        let (generation, state) = (b.generation(), b.state());
        // Has the probe of the lease this host holds ended?
        if let Some((won_in, value)) = &t.won
            && generation != *won_in
            && state != State::HalfOpen
        {
            let key = self.shared.keys.lease(b.name());
            let value = value.clone();
            t.won = None;
            redis::cmd("EVAL").arg(RELEASE).arg(1).arg(key).arg(value).exec(self.conn()?)?;
        }
        // An Open breaker whose lease is yet to be asked for?
        if state != State::Open || t.asked == Some(generation) {
            return Ok(None);
        }
        let cfg = &self.shared.config;
        let (lead, probe_timeout) = (cfg.lease_lead, cfg.probe_timeout);
        let left = b.open_left().map_or(Duration::ZERO, |(left, _)| left);
        // Is the end of the wait within the lead?
        if left > lead {
            return Ok(Some(Instant::now() + (left - lead)));
        }
        // Has it callers (refused since the link last looked)? An idle
        // host that won the lease would probe with nothing, and hold every
        // other host until the lease ends.
        let refused = b.refused();
        let idle = refused == t.refused_seen;
        t.refused_seen = refused;
        t.asked = Some(generation);
        if idle {
            return self.stand_by(m, generation);
        }
        let ttl = left.saturating_add(probe_timeout);
        let (value, _) = self.message(Kind::Lease, ttl, b.name());
        let previous = t.won.as_ref().map_or(&[][..], |(_, v)| v.as_slice());
        let key = self.shared.keys.lease(b.name());
        let reply: Value = redis::cmd("EVAL")
            .arg(ACQUIRE)
            .arg(1)
            .arg(&key)
            .arg(&value)
            .arg(lease::ttl_ms(ttl))
            .arg(previous)
            .query(self.conn()?)?;
        match reply {
            Value::Int(1) => {
                self.shared.counters.add(Count::LeaseWon);
                t.won = Some((generation, value));
                Ok(None)
            }
            Value::Array(items) => {
                let (holder, pttl) = match items.as_slice() {
                    [Value::BulkString(v), Value::Int(ms)] => (v.as_slice(), *ms),
                    _ => return Ok(None),
                };
                if pttl == -2 {
                    // Gone between the two reads: ask again now.
                    t.asked = None;
                    return Ok(Some(Instant::now()));
                }
                // A lease without a TTL is cut to the longest a host takes.
                let ttl = u64::try_from(pttl).map_or(Duration::MAX, Duration::from_millis);
                self.obey_lease(m, holder, ttl, true, Some(generation));
                // The hold is a new generation, whose lease is asked for
                // before it ends: schedule it.
                Ok(Some(Instant::now()))
            }
            _ => Ok(None),
        }
    }

    /// An idle breaker (no call refused since the link last looked) whose
    /// wait is about to end: it asks for no lease, having no call to probe
    /// with. It obeys another host's lease, if one is held; if none is, it
    /// is held on for twice the lead and looked at again a lead before
    /// that ends: by then a caller refused meanwhile makes it ask, or
    /// another host has taken the lease.
    fn stand_by(&mut self, m: &Member, generation: u32) -> RedisResult<Option<Instant>> {
        let key = self.shared.keys.lease(m.breaker.name());
        let (holder, pttl): (Option<Vec<u8>>, i64) =
            redis::pipe().cmd("GET").arg(&key).cmd("PTTL").arg(&key).query(self.conn()?)?;
        let ttl = Duration::from_millis(u64::try_from(pttl).unwrap_or(0));
        let obeyed = match holder {
            Some(v) if pttl > 0 => self.obey_lease(m, &v, ttl, false, Some(generation)),
            _ => false,
        };
        // Moved on while Redis answered (the prober's close came in)? Then
        // a hold would open it again, with no close to come.
        if !obeyed && m.breaker.generation() == generation {
            // As the link: the hold is not news to the fleet.
            let _ = m.apply_hold(self.shared.config.lease_lead.saturating_mul(2));
        }
        // A new generation, whose lease is looked at in time.
        Ok(Some(Instant::now()))
    }

    /// Another host holds `breaker`'s lease (its value `holder`, `ttl`
    /// left): hold the breaker until just after it ends, if the lease
    /// checks, and return whether it does (counted as lost if this host
    /// `asked` for it). A lease that does not is counted and not obeyed:
    /// this host probes on its own. A breaker no longer in the generation
    /// `looked_in` it was looked at in (a close or a new trip came in while
    /// Redis answered) is left as it is, and the lease taken as obeyed.
    fn obey_lease(
        &self,
        m: &Member,
        holder: &[u8],
        ttl: Duration,
        asked: bool,
        looked_in: Option<u32>,
    ) -> bool {
        let counters = &self.shared.counters;
        let (sender, _, good_for) = match self.check_stored(holder, m.breaker.name(), Kind::Lease) {
            Ok(msg) => msg,
            Err(reason) => {
                self.shared.rejected(reason);
                return false;
            }
        };
        if sender == self.shared.id {
            return false;
        }
        let cfg = &self.shared.config;
        let hold = lease::loser_hold(ttl.min(good_for), cfg.lease_lead, cfg.probe_timeout);
        if asked {
            counters.add(Count::LeaseLost);
        }
        if looked_in.is_some_and(|g| m.breaker.generation() != g) {
            return true;
        }
        if m.apply_hold(hold).is_some() {
            counters.add(Count::Applied);
        }
        true
    }

    /// Checks a value kept in Redis (a state key, a lease) for `name`, of
    /// `kind` (for a state key, opened or held): its shape, its signature,
    /// and that it is still good. Returns its sender, its stamp and how
    /// long it stays good.
    fn check_stored(
        &self,
        bytes: &[u8],
        name: &str,
        kind: Kind,
    ) -> Result<(u64, u64, Duration), RejectReason> {
        let msg = message::decode(bytes).map_err(|_| RejectReason::Malformed)?;
        if !self.shared.signer.verify(msg.signed, msg.tag) {
            return Err(RejectReason::Signature);
        }
        let kind_fits = match kind {
            Kind::Lease => msg.kind == Kind::Lease,
            _ => matches!(msg.kind, Kind::Opened | Kind::Held),
        };
        // Signed by the fleet, but kept under another breaker's or
        // purpose's key: a value moved by someone without the key.
        if msg.name != name || !kind_fits {
            return Err(RejectReason::Malformed);
        }
        let skew = lease::ttl_ms(self.shared.config.max_skew);
        let wait_ms = msg.wait_us / 1000;
        let left =
            replay::stored_left(msg.sent_at_ms, wait_ms, self.shared.clock.now_ms(), skew).map_err(|u| {
                match u {
                    Unfresh::Future => RejectReason::Future,
                    Unfresh::Stale | Unfresh::Replayed | Unfresh::Unheard => RejectReason::Stale,
                }
            })?;
        Ok((msg.sender, msg.sent_at_ms, Duration::from_millis(left)))
    }

    /// Reads the breaker's state key and lease, and puts what another
    /// host wrote there into it: an open or a hold in progress, a probe
    /// under way elsewhere.
    fn resync(&mut self, m: &Member, t: &mut Track) -> RedisResult<()> {
        let name = m.breaker.name();
        let (state_key, lease_key) = (self.shared.keys.state(name), self.shared.keys.lease(name));
        let (state, state_ttl, holder, lease_ttl): (Option<Vec<u8>>, i64, Option<Vec<u8>>, i64) =
            redis::pipe()
                .cmd("GET")
                .arg(&state_key)
                .cmd("PTTL")
                .arg(&state_key)
                .cmd("GET")
                .arg(&lease_key)
                .cmd("PTTL")
                .arg(&lease_key)
                .query(self.conn()?)?;
        let counters = &self.shared.counters;
        let [refused_state, refused_lease] = &mut t.refused_stored;
        if let Some(bytes) = state.filter(|b| refused_state.as_ref() != Some(b)) {
            match self.check_stored(&bytes, name, Kind::Opened) {
                // Older than a state of this breaker this host took or
                // sent (a close it heard, say): put back by someone
                // without the key, a replay.
                Ok((sender, stamp, _)) if sender != self.shared.id && stamp < m.newest() => {
                    self.shared.rejected(RejectReason::Replayed);
                    *refused_state = Some(bytes);
                }
                Ok((sender, stamp, good_for)) if sender != self.shared.id => {
                    let left = u64::try_from(state_ttl)
                        .map_or(good_for, |ms| good_for.min(Duration::from_millis(ms)));
                    // Known already: this very state taken (from the channel,
                    // or at the join's read: the keys are read at the join and
                    // again once subscribed), or its wait in place to the
                    // millisecond Redis rounds to? A wait cut by the local
                    // `max_hold` is shorter, and taken all the same.
                    let known = stamp == m.newest()
                        || m.breaker.open_left().is_some_and(|(l, _)| l + Duration::from_millis(1) >= left);
                    m.saw(stamp);
                    if !known {
                        counters.add(Count::Received);
                        if m.apply_hold(left).is_some() {
                            counters.add(Count::Applied);
                        }
                    }
                }
                Ok(_) => {}
                Err(reason) => {
                    self.shared.rejected(reason);
                    *refused_state = Some(bytes);
                }
            }
        }
        if let Some(bytes) = holder.filter(|b| refused_lease.as_ref() != Some(b))
            && lease_ttl > 0
        {
            if self.check_stored(&bytes, name, Kind::Lease).is_err() {
                *refused_lease = Some(bytes.clone());
            }
            self.obey_lease(m, &bytes, Duration::from_millis(lease_ttl as u64), true, None);
        }
        Ok(())
    }

    /// The connection, for a command about to be sent.
    fn conn(&mut self) -> RedisResult<&mut Connection> {
        self.used_at = Instant::now();
        self.conn.as_mut().ok_or_else(|| redis::RedisError::from((redis::ErrorKind::Io, "not connected")))
    }

    /// On the way out: leases this host holds are let go, so that another
    /// host need not wait for them to expire. All of them within one I/O
    /// timeout (the handle's drop waits for this): a lease not let go by
    /// then expires at its TTL.
    fn release_all(&mut self) {
        let won: Vec<(Box<str>, Vec<u8>)> =
            self.tracks.iter_mut().filter_map(|(n, t)| t.won.take().map(|(_, v)| (n.clone(), v))).collect();
        let deadline = Instant::now() + self.shared.config.io_timeout;
        for (name, value) in won {
            let key = self.shared.keys.lease(&name);
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(conn) = self.conn() else { return };
            if left < Duration::from_millis(1)
                || conn.set_read_timeout(Some(left)).is_err()
                || conn.set_write_timeout(Some(left)).is_err()
            {
                return;
            }
            if redis::cmd("EVAL").arg(RELEASE).arg(1).arg(key).arg(value).exec(conn).is_err() {
                return;
            }
        }
    }
}

/// Reconnection waits: from the configured minimum, doubling, to the
/// maximum, with equal jitter (never much under half the curve, so a
/// refused connection does not spin).
pub(crate) fn reconnect_backoff(shared: &Shared) -> Backoff {
    let cfg = &shared.config;
    let config = BackoffConfig::builder()
        .base(cfg.reconnect_min)
        .cap(cfg.reconnect_max)
        .factor(2.0)
        .jitter(Jitter::Equal)
        .seed(shared.id)
        .build();
    // The fleet's settings are checked into the backoff's ranges.
    Backoff::seeded(config.unwrap_or_default(), shared.id)
}
