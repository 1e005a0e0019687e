//! The conformance matrix's cancellation rows: the caller's future is
//! dropped while its request hangs at the server, during the pause after a
//! 503, or while it is a Half-Open breaker's one probe. Async integrations
//! only: a blocking call is not cancelled.

use std::sync::Arc;
use std::time::Duration;

use tripwire::{
    Assessment, BreakerConfig, Bulkhead, NamedBreaker, State,
    events::Events,
    retry::{BackoffConfig, Jitter, RetryPolicy},
};

use crate::cell::{Answer, Cell};
use crate::support::{Mode, Server};
use crate::{ATTEMPT, ATTEMPTS, COOL_DOWN, Call, Door, got_text, send, send_with};

/// Where the caller's future is dropped.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cancel {
    /// While its request hangs at the server.
    Call,
    /// During the pause after a 503.
    Backoff,
    /// While it is the one probe of a Half-Open breaker, hanging at the
    /// server.
    Probe,
}

/// Why the sync pipeline has no cell in these rows: it is stopped as
/// `Pipeline::call_with` and `call_before` document.
const BLOCKING: &str =
    "a blocking call is not cancelled: its I/O client's timeout or call_before's deadline ends it";

/// How long a Half-Open probe may run before another takes over: far
/// longer than a row takes, so that a caller admitted after a dropped probe
/// was let in by the drop, not by this timeout.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The pause after the 503 of [`Cancel::Backoff`]: the caller is
/// dropped as soon as it begins.
const PAUSE: Duration = Duration::from_millis(150);

impl Cancel {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Cancel::Call => "cancelled mid-call",
            Cancel::Backoff => "cancelled mid-backoff",
            Cancel::Probe => "cancelled mid-probe",
        }
    }
}

fn state(s: State) -> &'static str {
    match s {
        State::Closed => "closed",
        State::Open => "open",
        State::HalfOpen => "half-open",
        State::ForcedOpen => "forced open",
        State::Disabled => "disabled",
    }
}

/// A policy whose one pause is [`PAUSE`], unjittered.
fn pausing_policy() -> RetryPolicy<'static> {
    let backoff = BackoffConfig::builder().base(PAUSE).cap(PAUSE).jitter(Jitter::None).build().unwrap();
    RetryPolicy::builder().max_attempts(ATTEMPTS).backoff(backoff).build().unwrap()
}

pub(crate) async fn run(door: Door, what: Cancel) -> Answer {
    if let Door::SyncPipeline(_) = door {
        return Answer::NotApplicable(BLOCKING);
    }
    let server = Server::start().await;
    let config = BreakerConfig::builder()
        .failure_threshold(2 * ATTEMPTS)
        .open_timeout(COOL_DOWN)
        .probe_timeout(PROBE_TIMEOUT);
    let breaker = Arc::new(NamedBreaker::new("conformance", config.build().unwrap()));
    let bulkhead = Arc::new(Bulkhead::new(1));
    let events = Arc::new(Events::new("conformance"));
    let mut call = Call::plain();
    match what {
        Cancel::Call => server.set(Mode::Hang),
        Cancel::Backoff => {
            server.set(Mode::Unavailable);
            call.policy = pausing_policy();
            call.events = Some(events.clone());
        }
        Cancel::Probe => {
            while breaker.state() != State::Open {
                breaker.permit().unwrap().settle(Assessment::Failure);
            }
            tokio::time::sleep(2 * COOL_DOWN).await;
            server.set(Mode::Hang);
        }
    }
    // The trip's own failures, made here, are no part of the trace.
    let tripped = breaker.snapshot().failures;
    // The caller is dropped once its request reached the server, or,
    // mid-backoff, once its retry was scheduled (heard before the pause).
    let drop_point = async {
        match what {
            Cancel::Backoff => {
                while events.counts().retries_scheduled == 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
            Cancel::Call | Cancel::Probe => server.reached(1).await,
        }
    };
    tokio::select! {
        got = send_with(door, &breaker, &bulkhead, &server, call) => {
            panic!("{door:?}: {what:?}: the caller got {got:?} before it was dropped")
        }
        () = drop_point => {}
    }
    // Long enough for an attempt the drop did not stop to time out and be
    // retried, or for a pause it did not stop to end: either would be seen.
    tokio::time::sleep(ATTEMPT + ATTEMPT / 4).await;
    let (hits, snapshot, after_drop) = (server.hits(), breaker.snapshot(), breaker.state());
    server.set(Mode::Up);
    let then = send(door, &breaker, &bulkhead, &server).await;
    // A second caller let in while the breaker is Half-Open is its new probe.
    let admitted = server.hits() > hits;
    let role = match (after_drop, admitted) {
        (State::HalfOpen, true) => ", as the new probe",
        (State::HalfOpen, false) => ", the probe slot still taken",
        _ => "",
    };
    Answer::Cell(Cell(vec![
        ("sent", format!("{hits} sent")),
        ("counts", format!("failures {}, ignored {}", snapshot.failures - tripped, snapshot.ignored)),
        ("state", format!("breaker {}", state(after_drop))),
        (
            "next",
            format!(
                "next caller: {} ({} sent{role}), breaker {}",
                got_text(then),
                server.hits() - hits,
                state(breaker.state())
            ),
        ),
    ]))
}
