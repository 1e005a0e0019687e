//! What the link did: messages sent, received, dropped and rejected (by
//! reason), leases, the link's state and its reconnections.
//!
//! Only the link's threads write these; any thread reads them.
//!
//! # Orderings
//! Every access is `Relaxed`: each counter is a report on its own, and no
//! other data is read on the strength of one.

use crate::sync::{AtomicU64, Ordering};

/// The link to Redis, as [`Fleet::link_state`](crate::Fleet::link_state)
/// reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Neither connection is up: each breaker acts alone.
    Down,
    /// One of the two connections (publishing, subscribed) is up.
    Partial,
    /// Both connections are up.
    Up,
}

impl LinkState {
    /// The state's name in metrics: `down`, `partial`, `up`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Down => "down",
            Self::Partial => "partial",
            Self::Up => "up",
        }
    }

    /// Every state, in the order of the metrics' series.
    pub const ALL: [LinkState; 3] = [Self::Down, Self::Partial, Self::Up];
}

/// Why a received message was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    /// Not a message of this format.
    Malformed,
    /// Not signed with the fleet's key (unsigned, forged, or altered).
    Signature,
    /// Sent longer ago than the skew allowance.
    Stale,
    /// Sent later than the skew allowance ahead of this host's clock.
    Future,
    /// Taken once already.
    Replayed,
}

impl RejectReason {
    /// Every reason, in the order of [`FleetSnapshot::rejected`].
    pub const ALL: [RejectReason; 5] =
        [Self::Malformed, Self::Signature, Self::Stale, Self::Future, Self::Replayed];

    /// The reason's name in metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::Signature => "signature",
            Self::Stale => "stale",
            Self::Future => "future",
            Self::Replayed => "replayed",
        }
    }
}

/// The link's counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FleetSnapshot {
    /// Messages published.
    pub sent: u64,
    /// Messages received, signed, fresh, and taken (whether or not the
    /// breaker they name joined this host, and whether or not they changed it).
    pub received: u64,
    /// Messages that could not be published (the link was down or failed):
    /// the state they carried goes out with the next resync.
    pub dropped: u64,
    /// Received messages refused, by [`RejectReason`] in the order of
    /// [`RejectReason::ALL`].
    pub rejected: [u64; 5],
    /// Received states put into a local breaker (opened, held or closed it).
    pub applied: u64,
    /// Probe leases this host won.
    pub leases_won: u64,
    /// Probe leases this host asked for and another host held: its breaker
    /// was held until that lease ends.
    pub leases_lost: u64,
    /// Connections made again after one was lost or failed to open.
    pub reconnects: u64,
    /// Attempts to connect that failed (refused, timed out, a log-in,
    /// `SELECT` or TLS handshake refused), by either connection:
    /// [`Fleet::last_error`](crate::Fleet::last_error) says why.
    pub connect_failures: u64,
    /// Whether the publishing connection is up (1) or not (0).
    pub publisher_up: u64,
    /// Whether the subscribed connection is up (1) or not (0).
    pub subscriber_up: u64,
}

impl FleetSnapshot {
    /// Every refused message, whatever the reason.
    pub fn rejected_total(&self) -> u64 {
        self.rejected.iter().sum()
    }

    /// The refused messages of one reason.
    pub fn rejected(&self, reason: RejectReason) -> u64 {
        self.rejected[reason as usize]
    }

    /// The link's state these counters describe.
    pub fn link_state(&self) -> LinkState {
        match self.publisher_up + self.subscriber_up {
            0 => LinkState::Down,
            1 => LinkState::Partial,
            _ => LinkState::Up,
        }
    }
}

/// The live counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    sent: AtomicU64,
    received: AtomicU64,
    dropped: AtomicU64,
    rejected: [AtomicU64; 5],
    applied: AtomicU64,
    leases_won: AtomicU64,
    leases_lost: AtomicU64,
    reconnects: AtomicU64,
    connect_failures: AtomicU64,
    publisher_up: AtomicU64,
    subscriber_up: AtomicU64,
}

/// One thing the link counts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Count {
    Sent,
    Received,
    Dropped,
    Rejected(RejectReason),
    Applied,
    LeaseWon,
    LeaseLost,
    Reconnect,
    ConnectFailed,
}

/// One of the link's two connections.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Conn {
    Publisher = 0,
    Subscriber = 1,
}

impl Conn {
    /// The connection's name in the link's last error.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Publisher => "publisher",
            Self::Subscriber => "subscriber",
        }
    }
}

impl Counters {
    fn cell(&self, c: Count) -> &AtomicU64 {
        match c {
            Count::Sent => &self.sent,
            Count::Received => &self.received,
            Count::Dropped => &self.dropped,
            Count::Rejected(r) => &self.rejected[r as usize],
            Count::Applied => &self.applied,
            Count::LeaseWon => &self.leases_won,
            Count::LeaseLost => &self.leases_lost,
            Count::Reconnect => &self.reconnects,
            Count::ConnectFailed => &self.connect_failures,
        }
    }

    pub(crate) fn add(&self, c: Count) {
        // Relaxed: see the module's Orderings. Saturating would cost a CAS
        // loop; 2^64 messages are out of reach.
        self.cell(c).fetch_add(1, Ordering::Relaxed);
    }

    /// One counter now.
    pub(crate) fn get(&self, c: Count) -> u64 {
        // Relaxed: see the module's Orderings.
        self.cell(c).load(Ordering::Relaxed)
    }

    pub(crate) fn set_up(&self, conn: Conn, up: bool) {
        let cell = match conn {
            Conn::Publisher => &self.publisher_up,
            Conn::Subscriber => &self.subscriber_up,
        };
        // Relaxed: see the module's Orderings.
        cell.store(u64::from(up), Ordering::Relaxed);
    }

    pub(crate) fn is_up(&self, conn: Conn) -> bool {
        let cell = match conn {
            Conn::Publisher => &self.publisher_up,
            Conn::Subscriber => &self.subscriber_up,
        };
        // Relaxed: see the module's Orderings.
        cell.load(Ordering::Relaxed) != 0
    }

    pub(crate) fn snapshot(&self) -> FleetSnapshot {
        // Relaxed: see the module's Orderings.
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        FleetSnapshot {
            sent: get(&self.sent),
            received: get(&self.received),
            dropped: get(&self.dropped),
            rejected: core::array::from_fn(|i| get(&self.rejected[i])),
            applied: get(&self.applied),
            leases_won: get(&self.leases_won),
            leases_lost: get(&self.leases_lost),
            reconnects: get(&self.reconnects),
            connect_failures: get(&self.connect_failures),
            publisher_up: get(&self.publisher_up),
            subscriber_up: get(&self.subscriber_up),
        }
    }
}
