//! The C value types of the breaker API: states, outcomes, tickets,
//! rejections and transitions, and their conversions from and to the core's
//! types. Plain `#[repr(C)]` values that C copies freely; no handles here.

use tripwire::{Breaker, Outcome, Rejected, State, Ticket, Transition};

/// A breaker's state.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_state {
    /// Calls pass; outcomes are counted.
    Closed = 0,
    /// Calls are rejected until the cool-down, or a server's hold, has
    /// passed.
    Open = 1,
    /// A bounded number of probe calls decide between Closed and Open.
    HalfOpen = 2,
    /// Rejects every call until `tw_breaker_reset`.
    ForcedOpen = 3,
    /// Permits every call and never trips, until `tw_breaker_reset`.
    Disabled = 4,
}

impl From<State> for tw_state {
    fn from(s: State) -> Self {
        match s {
            State::Closed => tw_state::Closed,
            State::Open => tw_state::Open,
            State::HalfOpen => tw_state::HalfOpen,
            State::ForcedOpen => tw_state::ForcedOpen,
            State::Disabled => tw_state::Disabled,
        }
    }
}

/// How a call ended, as the caller classifies it. Passed to
/// `tw_breaker_record` as a `uint32_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_outcome {
    /// The dependency did its job.
    Success = 0,
    /// The dependency failed (5xx, timeout, connection refused…).
    Failure = 1,
    /// Says nothing about the dependency (the caller cancelled, a 4xx the
    /// caller caused): frees a probe slot, changes no state counter.
    Ignored = 2,
}

/// `o` as the `uint32_t` a `tw_outcome` is passed as.
pub(crate) fn outcome_to_c(o: Outcome) -> u32 {
    (match o {
        Outcome::Success => tw_outcome::Success,
        Outcome::Failure => tw_outcome::Failure,
        Outcome::Ignored => tw_outcome::Ignored,
    }) as u32
}

/// The core outcome for a `tw_outcome` passed as an integer; `None` for a
/// value `tw_outcome` does not define.
pub(crate) fn outcome_from_c(outcome: u32) -> Option<Outcome> {
    match outcome {
        0 => Some(Outcome::Success),
        1 => Some(Outcome::Failure),
        2 => Some(Outcome::Ignored),
        _ => None,
    }
}

/// Proof that a call was admitted: hand it back to `tw_breaker_record`
/// exactly once. A plain 16-byte value; copy it anywhere.
///
/// Pass it back unchanged: only `generation` may be read (the generation
/// the ticket was issued in); the other fields are the library's (`flags`
/// holds the ticket's kind and, for a Half-Open probe, its probe slot).
///
/// Recorded more than once, late, or made up, a ticket does exactly this:
/// - from an older generation: counted in the snapshot, nothing else;
/// - Half-Open: only a probe ticket naming a probe slot still in flight
///   changes the state, once; recorded again (with any outcome) it changes
///   nothing but the counters, so never more than `half_open_max` probes
///   are in flight and no success counts twice, whatever is recorded. A
///   made-up ticket that names a slot of the current generation still in
///   flight ends that probe, as the real one would;
/// - Closed: a ticket stands for no particular call, so a failure recorded
///   twice counts twice toward `failure_threshold` and the window;
/// - the generation is 32 bits: a ticket from exactly 2^32 transitions ago
///   reads as current (out of reach in practice).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tw_ticket {
    /// The library's: when the call started, if it measures durations.
    pub started_at: u64,
    /// The generation of the state the ticket was issued in.
    pub generation: u32,
    /// The library's: what kind of ticket this is.
    pub flags: u32,
}

pub(crate) fn ticket_to_c(t: Ticket) -> tw_ticket {
    tw_ticket { started_at: t.started_at(), generation: t.generation(), flags: t.flags() }
}

/// The ticket's memory as two native 8-byte words.
#[inline(always)]
pub(crate) fn ticket_words(t: tw_ticket) -> [u64; 2] {
    let (g, f) = (t.generation.to_ne_bytes(), t.flags.to_ne_bytes());
    [t.started_at, u64::from_ne_bytes([g[0], g[1], g[2], g[3], f[0], f[1], f[2], f[3]])]
}

/// The core ticket for a C one. `Ticket::from_raw` ignores unknown flag
/// bits; what a damaged or made-up ticket can do when recorded is what
/// `tw_ticket`'s docs say: never more probes in flight than the config
/// allows, but it can count as the outcome of a call of its generation.
pub(crate) fn ticket_from_c(t: tw_ticket) -> Ticket {
    Ticket::from_raw(t.started_at, t.generation, t.flags)
}

/// Why a call was refused.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tw_rejection {
    /// The state that refused the call.
    pub state: tw_state,
    /// Nanoseconds until a probe may be admitted; `UINT64_MAX` when the
    /// breaker is forced open and only `tw_breaker_reset` will close it.
    pub retry_after_ns: u64,
}

pub(crate) fn rejection_to_c(r: Rejected) -> tw_rejection {
    let retry_after_ns = r.retry_after.map_or(u64::MAX, tripwire::clock::duration_ns);
    tw_rejection { state: r.state.into(), retry_after_ns }
}

/// A change of state, reported to exactly one caller: the one whose call
/// made it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct tw_transition {
    /// Whether the call changed the state. When false, the other fields
    /// repeat the current state (`from` = `to`) and generation.
    pub changed: bool,
    /// The state left.
    pub from: tw_state,
    /// The state entered.
    pub to: tw_state,
    /// The generation of the state entered.
    pub generation: u32,
}

impl From<Transition> for tw_transition {
    fn from(t: Transition) -> Self {
        tw_transition { changed: true, from: t.from.into(), to: t.to.into(), generation: t.generation }
    }
}

/// What a call reports: the change it made, or (`changed` false) the
/// breaker's current state and generation.
pub(crate) fn transition_to_c(t: Option<Transition>, breaker: &Breaker) -> tw_transition {
    match t {
        Some(t) => t.into(),
        None => {
            let now = breaker.state().into();
            tw_transition { changed: false, from: now, to: now, generation: breaker.generation() }
        }
    }
}
