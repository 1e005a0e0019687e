//! A breaker joined to a fleet, as the link sees it; and the listener that
//! tells the link of its transitions without a lock or a socket.
//!
//! The listener runs on the thread that made the transition (a guarded
//! call's, at a trip or a close: never on the path of a call that changes
//! nothing). It sets a flag and unparks the publishing thread: two atomic
//! operations and, if that thread sleeps, one futex wake. The publisher
//! then reads the breaker's state itself and publishes what it finds.
//!
//! States the link itself puts into a breaker (a fleet message received,
//! a lease lost) must not be published again, or hosts would echo each
//! other forever: the link marks the thread while it applies one
//! ([`apply`]), and the listener records the generation so made instead of
//! flagging it.
//!
//! # Orderings
//! `dirty` is set with `Release` after nothing and swapped with `Acquire`
//! by the publisher, which then reads the breaker's own word (with the
//! breaker's orderings): the flag carries no data of its own, so both could
//! be `Relaxed`; the pair keeps "flag seen, then state read" obvious.
//! `applied` is `Relaxed`: the publisher compares it with a generation it
//! read after, and a stale value only costs one redundant publication.
//! `newest` is `Relaxed`: each link thread raises it (`fetch_max`) and
//! reads it for itself; it orders nothing else, and a value a moment old
//! lets through at most a state that raced the one it missed.

use core::cell::Cell;
use core::time::Duration;
use std::sync::Arc;
use std::thread::Thread;

use std::boxed::Box;

use crate::sync::{AtomicU32, AtomicU64, Ordering};
use tripwire::Breaker;
use tripwire::Clock;
use tripwire::NamedBreaker;
use tripwire::State;
use tripwire::Transition;

std::thread_local! {
    /// Set while this thread applies a state the fleet sent.
    static APPLYING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` (which moves a joined breaker) as the link: the transition it
/// makes is recorded as the fleet's, not published.
pub(crate) fn apply<T>(f: impl FnOnce() -> T) -> T {
    /// Clears the mark however `f` ends (a listener may panic).
    struct Unmark;
    impl Drop for Unmark {
        fn drop(&mut self) {
            APPLYING.with(|a| a.set(false));
        }
    }
    APPLYING.with(|a| a.set(true));
    let _unmark = Unmark;
    f()
}

/// What the link needs of a joined breaker, whatever clock it reads.
pub(crate) trait Joined: Send + Sync {
    fn name(&self) -> &str;
    /// The core breaker, by which an export finds the fleets a breaker
    /// joined (see `live`).
    fn core(&self) -> &Breaker;
    fn generation(&self) -> u32;
    fn state(&self) -> State;
    /// The time until an Open breaker's next call is a probe, and whether a
    /// hold sets it.
    fn open_left(&self) -> Option<(Duration, bool)>;
    /// Holds it open for `d` (never shortening a wait).
    fn hold(&self, d: Duration) -> Option<Transition>;
    /// The calls it refused so far: whether it has callers, for the lease.
    fn refused(&self) -> u64;
    /// Closes it if it is Open or Half-Open; an operator's forced-open or
    /// disabled state stays.
    fn close(&self) -> Option<Transition>;
    fn listen(&self, signal: Arc<Signal>);
}

impl<C: Clock + Send + Sync + 'static> Joined for NamedBreaker<C> {
    fn name(&self) -> &str {
        NamedBreaker::name(self)
    }

    fn core(&self) -> &Breaker {
        self.breaker()
    }

    fn generation(&self) -> u32 {
        self.breaker().generation()
    }

    fn state(&self) -> State {
        NamedBreaker::state(self)
    }

    fn open_left(&self) -> Option<(Duration, bool)> {
        self.breaker().open_left(self.clock())
    }

    fn hold(&self, d: Duration) -> Option<Transition> {
        self.open_for(d)
    }

    fn refused(&self) -> u64 {
        self.breaker().snapshot().rejected
    }

    fn close(&self) -> Option<Transition> {
        // A forced-open or disabled breaker entered between this check and
        // the reset would be closed: an operator acting in the same
        // microsecond as a fleet message, whose order is not defined anyway.
        matches!(self.state(), State::Open | State::HalfOpen).then(|| self.reset())
    }

    fn listen(&self, signal: Arc<Signal>) {
        self.on_state_change(move |change| signal.transition(change.generation));
    }
}

/// A core [`Breaker`] kept in a handle of its owner's, as bindings keep
/// theirs (in this process's memory, or in a shared mapping): what
/// [`Fleet::join_core`](crate::Fleet::join_core) takes.
pub trait AsBreaker: Send + Sync + 'static {
    /// The breaker.
    fn as_breaker(&self) -> &Breaker;
}

impl AsBreaker for Breaker {
    fn as_breaker(&self) -> &Breaker {
        self
    }
}

/// A core breaker joined by name, read on `clock`. It has no listeners: the
/// publisher looks at its generation on every turn instead (see
/// `publish::POLL`).
pub(crate) struct Core<H, C> {
    pub(crate) name: Box<str>,
    pub(crate) handle: Arc<H>,
    pub(crate) clock: C,
}

impl<H: AsBreaker, C: Clock + Send + Sync + 'static> Joined for Core<H, C> {
    fn name(&self) -> &str {
        &self.name
    }

    fn core(&self) -> &Breaker {
        self.handle.as_breaker()
    }

    fn generation(&self) -> u32 {
        self.handle.as_breaker().generation()
    }

    fn state(&self) -> State {
        self.handle.as_breaker().state()
    }

    fn open_left(&self) -> Option<(Duration, bool)> {
        self.handle.as_breaker().open_left(&self.clock)
    }

    fn hold(&self, d: Duration) -> Option<Transition> {
        self.handle.as_breaker().open_for(d, &self.clock)
    }

    fn refused(&self) -> u64 {
        self.handle.as_breaker().snapshot().rejected
    }

    fn close(&self) -> Option<Transition> {
        // As for a named breaker: an operator's state entered in the same
        // instant may be closed.
        let b = self.handle.as_breaker();
        matches!(b.state(), State::Open | State::HalfOpen).then(|| b.reset())
    }

    fn listen(&self, _: Arc<Signal>) {}
}

/// The flags a joined breaker's listener sets for the publisher.
#[derive(Debug)]
pub(crate) struct Signal {
    /// 1 when a transition awaits publication.
    dirty: AtomicU32,
    /// The generation the link last moved the breaker to, plus one (0:
    /// none yet).
    applied: AtomicU64,
    /// The publishing thread, woken at each transition.
    publisher: Thread,
}

impl Signal {
    pub(crate) fn new(publisher: Thread) -> Self {
        Self { dirty: AtomicU32::new(0), applied: AtomicU64::new(0), publisher }
    }

    /// The listener: a transition to `generation` happened on this thread.
    fn transition(&self, generation: u32) {
        if APPLYING.with(Cell::get) {
            // Relaxed: see the module's Orderings.
            self.applied.store(u64::from(generation) + 1, Ordering::Relaxed);
            return;
        }
        // Release: see the module's Orderings.
        self.dirty.store(1, Ordering::Release);
        self.publisher.unpark();
    }

    /// Takes the flag: whether a transition awaits publication.
    pub(crate) fn take_dirty(&self) -> bool {
        // Acquire: see the module's Orderings.
        self.dirty.swap(0, Ordering::Acquire) != 0
    }

    /// Flags the breaker for publication, e.g. after a reconnection.
    pub(crate) fn mark_dirty(&self) {
        // Release: see the module's Orderings.
        self.dirty.store(1, Ordering::Release);
    }

    /// Records that the link itself made `generation`.
    fn set_applied(&self, generation: u32) {
        // Relaxed: see the module's Orderings.
        self.applied.store(u64::from(generation) + 1, Ordering::Relaxed);
    }

    /// Whether the link itself made `generation`.
    pub(crate) fn applied(&self, generation: u32) -> bool {
        // Relaxed: see the module's Orderings.
        self.applied.load(Ordering::Relaxed) == u64::from(generation) + 1
    }
}

/// A joined breaker with its signal.
pub(crate) struct Member {
    pub(crate) breaker: Arc<dyn Joined>,
    pub(crate) signal: Arc<Signal>,
    /// The generation it had when it joined: not news to the fleet.
    pub(crate) joined_at: u32,
    /// Whether it has no listener and is looked at on every turn instead.
    pub(crate) polled: bool,
    /// The latest stamp of a state of this breaker that this host took from
    /// the fleet or sent (see `replay`): a state kept in Redis stamped
    /// earlier is a replay.
    newest: AtomicU64,
}

impl Member {
    pub(crate) fn new(breaker: Arc<dyn Joined>, signal: Arc<Signal>, joined_at: u32, polled: bool) -> Self {
        Self { breaker, signal, joined_at, polled, newest: AtomicU64::new(0) }
    }

    /// A state of this breaker stamped `stamp_ms` was taken or sent.
    pub(crate) fn saw(&self, stamp_ms: u64) {
        // Relaxed: see the module's Orderings.
        self.newest.fetch_max(stamp_ms, Ordering::Relaxed);
    }

    /// The latest stamp of a state of this breaker taken or sent.
    pub(crate) fn newest(&self) -> u64 {
        // Relaxed: see the module's Orderings.
        self.newest.load(Ordering::Relaxed)
    }

    /// Holds it open for `d` as the link: the transition is the fleet's,
    /// not news to publish.
    pub(crate) fn apply_hold(&self, d: Duration) -> Option<Transition> {
        let t = apply(|| self.breaker.hold(d))?;
        self.signal.set_applied(t.generation);
        Some(t)
    }

    /// Closes it (if Open or Half-Open) as the link.
    pub(crate) fn apply_close(&self) -> Option<Transition> {
        let t = apply(|| self.breaker.close())?;
        self.signal.set_applied(t.generation);
        Some(t)
    }
}

impl core::fmt::Debug for Member {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Member").field("name", &self.breaker.name()).finish_non_exhaustive()
    }
}
