//! [`Fleet`]: the handle that owns the link's two threads, and what they
//! share.

use core::time::Duration;
use std::boxed::Box;
use std::collections::BTreeMap;
use std::string::String;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::thread::{JoinHandle, Thread};
use std::vec::Vec;

use crate::sync::{AtomicU32, Ordering};
use tripwire::Clock;
use tripwire::MonotonicClock;
use tripwire::NamedBreaker;

use crate::clock::FleetClock;
#[cfg(doc)]
use crate::config::FleetConfigBuilder;
use crate::config::{FleetConfig, FleetError, check_name};
use crate::counters::{Conn, Count, Counters, FleetSnapshot, LinkState, RejectReason};
use crate::fault::LastError;
use crate::keys::Keys;
use crate::member::{AsBreaker, Core, Joined, Member, Signal};
use crate::sign::Signer;
use crate::{connect, listen, publish};

/// What the handle and the link's threads share.
///
/// # Orderings
/// `stop` and `resync` are flags read by the link's threads in their
/// loops; each is `Relaxed`, as it carries no data: a thread that sees one
/// late sees it on its next turn, at most one poll later.
pub(crate) struct Shared {
    pub(crate) config: FleetConfig,
    pub(crate) link: connect::Link,
    pub(crate) signer: Signer,
    pub(crate) keys: Keys,
    /// This host's random id in the fleet's messages.
    pub(crate) id: u64,
    pub(crate) counters: Counters,
    /// Why the link last failed.
    pub(crate) last_error: LastError,
    /// Redis's time, as this host reads it: the time of every stamp.
    pub(crate) clock: FleetClock,
    pub(crate) members: RwLock<BTreeMap<Box<str>, Arc<Member>>>,
    publisher: OnceLock<Thread>,
    stop: AtomicU32,
    resync: AtomicU32,
}

impl Shared {
    pub(crate) fn stopped(&self) -> bool {
        // Relaxed: see the type's Orderings.
        self.stop.load(Ordering::Relaxed) != 0
    }

    /// Asks the publisher to read every breaker's state and lease keys
    /// again (the subscriber does, once subscribed: messages may have been
    /// missed while it was not).
    pub(crate) fn request_resync(&self) {
        // Relaxed: see the type's Orderings.
        self.resync.store(1, Ordering::Relaxed);
        self.wake_publisher();
    }

    pub(crate) fn take_resync(&self) -> bool {
        // Relaxed: see the type's Orderings.
        self.resync.swap(0, Ordering::Relaxed) != 0
    }

    pub(crate) fn wake_publisher(&self) {
        if let Some(t) = self.publisher.get() {
            t.unpark();
        }
    }

    /// `conn` could not be made: counted, and `why` (from
    /// [`connect::open`]) made the last error.
    pub(crate) fn connect_failed(&self, conn: Conn, why: &str) {
        self.counters.add(Count::ConnectFailed);
        self.last_error.set(&self.config.namespace, conn, why);
    }

    /// `conn` failed while up, and is dropped: `e` made the last error.
    pub(crate) fn conn_dropped(&self, conn: Conn, e: &redis::RedisError) {
        let why = std::format!("connection dropped: {e}");
        self.last_error.set(&self.config.namespace, conn, &why);
    }

    /// `conn` is up: marked so, and its next error is logged.
    pub(crate) fn conn_up(&self, conn: Conn) {
        self.counters.set_up(conn, true);
        self.last_error.connected(conn);
    }

    /// A received message or a stored value is refused for `reason`:
    /// counted, and, for a bad signature, the last error (hosts whose keys
    /// differ are linked, and would say nothing else).
    pub(crate) fn rejected(&self, reason: RejectReason) {
        self.counters.add(Count::Rejected(reason));
        if reason == RejectReason::Signature {
            let n = self.counters.get(Count::Rejected(reason));
            self.last_error.bad_signatures(&self.config.namespace, n);
        }
    }

    /// The joined breakers, copied out of the lock.
    pub(crate) fn members(&self) -> Vec<Arc<Member>> {
        self.members.read().unwrap_or_else(PoisonError::into_inner).values().cloned().collect()
    }

    pub(crate) fn member(&self, name: &str) -> Option<Arc<Member>> {
        self.members.read().unwrap_or_else(PoisonError::into_inner).get(name).cloned()
    }
}

/// A link from this process's breakers to the other hosts of a fleet,
/// through Redis.
///
/// [`join`](Self::join) a [`NamedBreaker`]; from then on its trips, holds
/// and closes are published to the fleet, and the fleet's put into it.
/// Two threads own the Redis connections (one publishes and holds leases,
/// one is subscribed); the breaker's callers never wait for them. Dropping
/// the handle stops both threads and leaves the joined breakers as plain
/// local breakers. It waits for what each thread is doing to end: at most
/// the longer of [`connect_timeout`](FleetConfigBuilder::connect_timeout)
/// and [`io_timeout`](FleetConfigBuilder::io_timeout), plus 0.1 s (a
/// subscribed read's poll), however Redis behaves.
///
/// # Examples
/// ```no_run
/// use std::sync::Arc;
/// use tripwire::{BreakerConfig, NamedBreaker};
/// use tripwire_fleet::{Fleet, FleetConfig};
///
/// let key = std::env::var("FLEET_KEY")?; // shared by every host, 32 random bytes
/// let fleet = Fleet::new(FleetConfig::builder("redis://10.0.0.5:6379", "prod", key).build()?)?;
/// let book = Arc::new(NamedBreaker::new("binance/orderbook", BreakerConfig::default()));
/// fleet.join(&book)?;
/// // Guard calls with `book` as always: no call touches Redis.
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Fleet {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl core::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Fleet")
            .field("namespace", &self.shared.config.namespace)
            .field("id", &format_args!("{:016x}", self.shared.id))
            .field("link", &self.link_state())
            .finish_non_exhaustive()
    }
}

impl Fleet {
    /// Starts the link's threads. Connecting happens on them: a Redis that
    /// is down now is retried in the background, and this returns at once.
    /// Fails only on settings that cannot work (a URL that does not parse).
    pub fn new(config: FleetConfig) -> Result<Self, FleetError> {
        let link = connect::link(&config)?;
        let shared = Arc::new(Shared {
            signer: Signer::new(&config.key, &config.namespace),
            keys: Keys::new(&config.namespace),
            id: random_id(),
            link,
            config,
            counters: Counters::default(),
            last_error: LastError::default(),
            clock: FleetClock::default(),
            members: RwLock::default(),
            publisher: OnceLock::new(),
            stop: AtomicU32::new(0),
            resync: AtomicU32::new(0),
        });
        crate::live::register(&shared);
        let spawn = |s: Arc<Shared>, name: &str, run: fn(Arc<Shared>)| {
            std::thread::Builder::new()
                .name(String::from(name))
                .spawn(move || run(s))
                .map_err(|e| FleetError::Spawn(std::string::ToString::to_string(&e)))
        };
        let publisher = spawn(shared.clone(), "tripwire-fleet-pub", publish::run)?;
        let _ = shared.publisher.set(publisher.thread().clone());
        let mut fleet = Self { shared: shared.clone(), threads: std::vec![publisher] };
        // On failure the drop stops the publisher.
        fleet.threads.push(spawn(shared, "tripwire-fleet-sub", listen::run)?);
        Ok(fleet)
    }

    /// Joins `breaker` to the fleet under its name: its trips, holds and
    /// closes (made through the [`NamedBreaker`]) are published, and the
    /// fleet's are put into it. Its current state is not news: it is not
    /// published, and the fleet's current state for the name is read from
    /// Redis (a late joiner learns of an outage in progress).
    ///
    /// Fails if the name is empty or longer than 255 bytes, or already
    /// joined to this fleet.
    pub fn join<C: Clock + Send + Sync + 'static>(
        &self,
        breaker: &Arc<NamedBreaker<C>>,
    ) -> Result<(), FleetError> {
        self.add(breaker.name(), false, |signal| {
            // Listening first, then the generation: a transition racing
            // the join is taken as the state it joined with, unpublished.
            breaker.listen(signal);
            (breaker.clone(), breaker.breaker().generation())
        })
    }

    /// Joins a core [`Breaker`](tripwire::Breaker) kept in a handle of its
    /// owner's (as the Python and C bindings keep theirs) under `name`,
    /// read on `clock` (the clock its callers pass; it must be the host's
    /// monotonic time, or advance as fast). As [`join`](Self::join), but with
    /// no listeners to hear its transitions, the link looks at it every
    /// 5 ms instead: its news leaves up to that much later. The fleet's
    /// states put into it reach none of its owner's listeners.
    pub fn join_core<H: AsBreaker, C: Clock + Send + Sync + 'static>(
        &self,
        name: &str,
        breaker: Arc<H>,
        clock: C,
    ) -> Result<(), FleetError> {
        self.add(name, true, |_| {
            let joined_at = breaker.as_breaker().generation();
            (Arc::new(Core { name: Box::from(name), handle: breaker, clock }), joined_at)
        })
    }

    /// Adds a member under `name`, once the name is known to be free:
    /// `make` returns it (given its signal) and the generation it joins with.
    fn add(
        &self,
        name: &str,
        polled: bool,
        make: impl FnOnce(Arc<Signal>) -> (Arc<dyn Joined>, u32),
    ) -> Result<(), FleetError> {
        check_name(name)?;
        let mut members = self.shared.members.write().unwrap_or_else(PoisonError::into_inner);
        if members.contains_key(name) {
            let reason = "a breaker of that name joined already";
            return Err(FleetError::Join { name: String::from(name), reason });
        }
        let Some(publisher) = self.shared.publisher.get() else {
            unreachable!("set before the handle is returned")
        };
        let signal = Arc::new(Signal::new(publisher.clone()));
        let (breaker, joined_at) = make(signal.clone());
        members.insert(Box::from(name), Arc::new(Member::new(breaker, signal, joined_at, polled)));
        drop(members);
        self.shared.wake_publisher();
        Ok(())
    }

    /// The link's counters now.
    pub fn snapshot(&self) -> FleetSnapshot {
        self.shared.counters.snapshot()
    }

    /// Why the link last failed, if it ever did: a connection that could
    /// not be made (`"subscriber: AUTH failed: WRONGPASS ..."`,
    /// `"publisher: SELECT 99: ..."`, `"publisher: TLS handshake: ..."`), one
    /// that was dropped, or messages that keep failing the signature check
    /// (`"3 messages with a bad signature: is the key the same on every
    /// host?"`). The text stays once the link is up again:
    /// [`link_state`](Self::link_state) says whether it is, and
    /// [`FleetSnapshot::connect_failures`] how often connecting failed.
    /// Each is logged with `tracing` as a `warn` at the `tripwire` target
    /// (feature `tracing`), once for each new reason of each connection,
    /// not once per attempt.
    pub fn last_error(&self) -> Option<String> {
        self.shared.last_error.get()
    }

    /// Whether the link is up now.
    pub fn link_state(&self) -> LinkState {
        self.snapshot().link_state()
    }

    /// Waits until both connections are up, for at most `timeout`; returns
    /// whether they are. For start-up and tests: nothing needs the link to
    /// be up.
    pub fn wait_linked(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if self.link_state() == LinkState::Up {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The settings it was made with.
    pub fn config(&self) -> &FleetConfig {
        &self.shared.config
    }

    /// This host's id in the fleet's messages: random, new for each handle.
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// The counters in the Prometheus text format, labelled
    /// `fleet="<namespace>"` (see [`prometheus::write_fleets`](crate::prometheus::write_fleets)).
    pub fn prometheus(&self) -> String {
        let mut out = String::new();
        // Writing to a `String` cannot fail.
        let _ = crate::prometheus::write_fleets(
            &mut out,
            &[(self.shared.config.namespace.as_str(), self.snapshot())],
        );
        out
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        // Relaxed: see `Shared`'s Orderings.
        self.shared.stop.store(1, Ordering::Relaxed);
        // Out of their sleeps now; a thread in a command sees the flag
        // once the command ends, within its timeout.
        for t in &self.threads {
            t.thread().unpark();
        }
        for t in self.threads.drain(..) {
            // A thread that panicked has nothing left to stop.
            let _ = t.join();
        }
    }
}

/// A random id: the standard library's per-process random hash keys,
/// mixed with the time and the process id, so that two handles, in one
/// process or in two, never share one.
fn random_id() -> u64 {
    use core::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(crate::replay::wall_ms());
    h.write_u64(MonotonicClock.now());
    h.write_u32(std::process::id());
    h.finish()
}
