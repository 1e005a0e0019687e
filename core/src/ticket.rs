//! What passes between a breaker and its caller: tickets, outcomes,
//! rejections and transitions. All are small `Copy` values.

use core::time::Duration;

use crate::state::State;

/// Proof that a call was admitted, to be handed back with its [`Outcome`].
///
/// A ticket carries the generation it was issued in: an outcome recorded
/// with a ticket from an older generation is counted in the metrics but
/// never changes the state. Tickets are `Copy` so that C callers and
/// callers who move work between threads can keep them anywhere; Rust
/// callers usually prefer the RAII [`Permit`](crate::Permit).
///
/// # Size and alignment
/// 16 bytes, 8-aligned, `#[repr(C)]`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    /// When the call started (ns), if the breaker measures call durations;
    /// otherwise 0.
    pub(crate) started_at: u64,
    pub(crate) generation: u32,
    pub(crate) flags: u32,
}

/// The ticket is a Half-Open probe.
pub(crate) const PROBE: u32 = 1;
/// Issuing the ticket moved the breaker from Open to Half-Open.
pub(crate) const FROM_OPEN: u32 = 2;
/// Issuing the ticket took over a Half-Open whose probes were lost.
pub(crate) const TOOK_OVER: u32 = 4;

impl Ticket {
    #[inline]
    /// The generation of the state the ticket was issued in.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    #[inline]
    /// Whether the ticket is a Half-Open probe (its outcome decides the
    /// breaker's next state).
    pub fn is_probe(&self) -> bool {
        self.flags & PROBE != 0
    }

    #[inline]
    /// The transition that issuing this ticket caused, if any: Open →
    /// Half-Open when the cool-down had passed, or Half-Open → Half-Open (a
    /// new generation) when lost probes were taken over. Exactly one caller
    /// learns of each.
    pub fn transition(&self) -> Option<Transition> {
        let from = if self.flags & FROM_OPEN != 0 {
            State::Open
        } else if self.flags & TOOK_OVER != 0 {
            State::HalfOpen
        } else {
            return None;
        };
        Some(Transition { from, to: State::HalfOpen, generation: self.generation })
    }
}

/// How a guarded call ended, as the caller's classifier sees it.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The dependency did its job.
    Success = 0,
    /// The dependency failed (5xx, timeout, connection refused…).
    Failure = 1,
    /// Says nothing about the dependency (the caller cancelled, a 4xx the
    /// caller caused): changes no counter of the state, frees a probe slot.
    Ignored = 2,
}

/// Why a call was refused, and when trying again makes sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejected {
    /// The state that refused the call.
    pub state: State,
    /// Time left until a probe may be admitted; `None` when the breaker was
    /// forced open and only an operator's `reset` will close it.
    pub retry_after: Option<Duration>,
}

impl core::fmt::Display for Rejected {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match (self.state, self.retry_after) {
            (State::ForcedOpen, _) | (_, None) => f.write_str("circuit breaker is forced open"),
            (State::HalfOpen, Some(d)) => {
                write!(f, "circuit breaker is half-open with every probe slot taken; retry after {d:?}")
            }
            (_, Some(d)) => write!(f, "circuit breaker is open; retry after {d:?}"),
        }
    }
}

impl core::error::Error for Rejected {}

/// A change of state, reported to exactly one caller: the one whose
/// compare-and-swap made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transition {
    /// The state left.
    pub from: State,
    /// The state entered.
    pub to: State,
    /// The generation of the state entered.
    pub generation: u32,
}
