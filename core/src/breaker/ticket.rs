//! What passes between a breaker and its caller: tickets, outcomes,
//! rejections and transitions. All are small `Copy` values.

use core::time::Duration;

use crate::breaker::state::State;

/// Proof that a call was admitted, to be handed back with its [`Outcome`].
///
/// A ticket carries the generation it was issued in, and a probe ticket
/// the probe slot it holds: an outcome recorded with a ticket from an older
/// generation is counted in the metrics but never changes the state.
/// Tickets are `Copy` so that C callers and callers who move work between
/// threads can keep them anywhere; Rust callers usually prefer the RAII
/// [`Permit`](crate::breaker::Permit), which records exactly once.
///
/// # Recording a ticket twice, late, or made up
/// [`Breaker::record`](crate::Breaker::record) takes any ticket; what a
/// ticket that was not admitted once and recorded once can do is exactly:
/// - From an older generation: counted in the metrics, nothing else.
/// - Half-Open: only a probe ticket naming a slot still in flight changes
///   the state, and each slot's outcome is taken once. A probe recorded a
///   second time (with any outcome), a slot never handed out, or a ticket
///   that is no probe changes nothing but the counters: the bound on probes
///   in flight and the count of successful probes hold whatever a caller
///   records. A ticket made up with [`from_raw`](Self::from_raw) that names
///   a slot of the current generation still in flight does end that probe,
///   as the real one would.
/// - Closed: a ticket stands for no particular call. Every outcome recorded
///   with a ticket of the current generation counts, so a failure recorded
///   twice counts twice toward `failure_threshold` and the window, and a
///   success recorded twice is harmless.
/// - Open, Forced-Open and Disabled: the state does not move (Disabled
///   counts the outcome, as always).
/// - The generation is 32 bits: a ticket from exactly 2^32 transitions ago
///   reads as current (see the state word's bounds); out of reach in practice.
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
    /// An enum, not bare flags: its unused values are a niche that lets
    /// `Result<Ticket, _>` travel in two registers on the hot path.
    pub(crate) kind: Kind,
    /// A probe's slot in its Half-Open generation; 0 for other tickets.
    pub(crate) slot: u8,
    reserved: [u8; 2],
}

/// The ticket is a Half-Open probe.
pub(crate) const PROBE: u32 = 1;
/// Issuing the ticket moved the breaker from Open to Half-Open.
pub(crate) const FROM_OPEN: u32 = 2;
/// Issuing the ticket started a new Half-Open generation: the probes of
/// the last one were lost, or all its probe slots were used.
pub(crate) const TOOK_OVER: u32 = 4;
/// Where a probe's slot sits in the flags.
const SLOT_SHIFT: u32 = 8;

/// The combinations of the flags above that a ticket can carry.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Plain = 0,
    Probe = PROBE as u8,
    ProbeFromOpen = (PROBE | FROM_OPEN) as u8,
    ProbeTookOver = (PROBE | TOOK_OVER) as u8,
}

impl Kind {
    /// The kind for a set of flags; unknown bits are ignored.
    #[inline]
    pub(crate) const fn from_flags(flags: u32) -> Kind {
        if flags & PROBE == 0 {
            Kind::Plain
        } else if flags & FROM_OPEN != 0 {
            Kind::ProbeFromOpen
        } else if flags & TOOK_OVER != 0 {
            Kind::ProbeTookOver
        } else {
            Kind::Probe
        }
    }
}

impl Ticket {
    #[inline]
    pub(crate) const fn new(started_at: u64, generation: u32, kind: Kind, slot: u8) -> Ticket {
        Ticket { started_at, generation, kind, slot, reserved: [0; 2] }
    }

    /// A ticket from its raw parts, as kept by a caller that cannot hold a
    /// `Ticket` (a C ABI): the start time, the generation and the bits of
    /// [`flags`](Self::flags). Unknown flag bits are ignored. A damaged or
    /// made-up ticket is not always a harmless one: see the type's docs for
    /// what recording it can do.
    #[inline]
    pub const fn from_raw(started_at: u64, generation: u32, flags: u32) -> Ticket {
        let kind = Kind::from_flags(flags);
        let slot = if matches!(kind, Kind::Plain) { 0 } else { (flags >> SLOT_SHIFT) as u8 };
        Ticket::new(started_at, generation, kind, slot)
    }

    /// The ticket's flags: bit 0 = probe, bit 1 = it moved the breaker from
    /// Open to Half-Open, bit 2 = it started a new Half-Open generation;
    /// bits 8..16 = a probe's slot.
    #[inline]
    pub const fn flags(&self) -> u32 {
        self.kind as u32 | (self.slot as u32) << SLOT_SHIFT
    }

    /// A probe's slot, `None` for other tickets.
    #[inline]
    pub(crate) fn probe_slot(&self) -> Option<u32> {
        self.is_probe().then_some(u32::from(self.slot))
    }

    /// When the call started (ns) if the breaker times calls, else 0.
    #[inline]
    pub const fn started_at(&self) -> u64 {
        self.started_at
    }

    #[inline]
    /// The generation of the state the ticket was issued in.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    #[inline]
    /// Whether the ticket is a Half-Open probe (its outcome decides the
    /// breaker's next state).
    pub fn is_probe(&self) -> bool {
        self.kind as u32 & PROBE != 0
    }

    #[inline]
    /// The transition that issuing this ticket caused, if any: Open →
    /// Half-Open when the cool-down or hold had passed, or Half-Open →
    /// Half-Open (a new generation) when lost probes were taken over or the
    /// last generation's probe slots were all used. Exactly one caller
    /// learns of each.
    pub fn transition(&self) -> Option<Transition> {
        let from = if self.flags() & FROM_OPEN != 0 {
            State::Open
        } else if self.flags() & TOOK_OVER != 0 {
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
    /// Time left until a probe may be admitted: until the cool-down or the
    /// hold ends (Open), or until probes in flight count as lost
    /// (Half-Open). `None` only when the breaker was forced open, which
    /// only an operator's `reset` ends.
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

/// A [`Rejected`] packed into one word, so that `Result<Ticket, Refused>`
/// is 16 bytes and comes back from the out-of-line paths in two registers:
/// the state in the top two bits (1 Open, 2 Half-Open, 3 Forced-Open), the
/// time left in ns below (saturating at 2^62 − 1, 146 years).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refused(u64);

const REFUSED_SHIFT: u32 = 62;
const REFUSED_MAX_NS: u64 = (1 << REFUSED_SHIFT) - 1;

impl Refused {
    #[inline]
    pub(crate) fn new(state: State, retry_after_ns: Option<u64>) -> Refused {
        let code = match (state, retry_after_ns) {
            (State::HalfOpen, Some(_)) => 2,
            (_, Some(_)) => 1,
            (_, None) => 3,
        };
        Refused((code << REFUSED_SHIFT) | retry_after_ns.unwrap_or(0).min(REFUSED_MAX_NS))
    }

    #[inline]
    pub(crate) fn raw(self) -> u64 {
        self.0
    }

    #[inline]
    pub(crate) fn from_raw(raw: u64) -> Refused {
        Refused(raw)
    }

    #[inline]
    pub(crate) fn expand(self) -> Rejected {
        let ns = self.0 & REFUSED_MAX_NS;
        match self.0 >> REFUSED_SHIFT {
            2 => Rejected { state: State::HalfOpen, retry_after: Some(Duration::from_nanos(ns)) },
            1 => Rejected { state: State::Open, retry_after: Some(Duration::from_nanos(ns)) },
            _ => Rejected { state: State::ForcedOpen, retry_after: None },
        }
    }
}

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
