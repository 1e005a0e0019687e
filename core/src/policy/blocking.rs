//! The blocking driver: performs a [`Run`]'s steps on the calling thread,
//! parking it for a bulkhead slot and between attempts.

use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::time::Instant;

use crate::clock::Clock;
use crate::layers::events::wait_slot;
use crate::layers::retry::CANCEL_CHECK;
use crate::policy::plan::{Calls, Plan};
use crate::policy::run::{Ended, Next, Run, Tried};

/// An integration's blocking call.
pub(crate) trait BlockingCalls: Calls {
    /// Makes attempt `attempt` (from 1).
    fn call(&mut self, attempt: u32) -> Self::Answer;
}

/// Takes one request through `plan`, stopping at `deadline` (a reading of
/// [`MonotonicClock`](crate::MonotonicClock)) and when `cancel` reads
/// `true` (checked before each attempt and during each pause). A blocking
/// call is not cut short: its I/O client's own timeout bounds it.
#[inline]
pub(crate) fn drive<C: Clock, K: BlockingCalls>(
    plan: Plan<'_, C>,
    deadline: Option<u64>,
    cancel: Option<&AtomicBool>,
    calls: &mut K,
) -> Result<K::Answer, Ended<K::Answer>> {
    let outer = Run::admit(&plan)?;
    let mut run = Run::new(plan, deadline, outer);
    loop {
        // Did the caller give up while we were away?
        if cancelled(cancel) {
            return Err(run.cancelled());
        }
        let mut attempt = run.start()?;
        if let Some(wait) = run.ration(&mut attempt)? {
            sleep(wait, cancel);
            if cancelled(cancel) {
                return Err(run.cancelled());
            }
            attempt.restart_clock();
        }
        if let Some(w) = run.slot_wait() {
            let got = wait_slot(w.bulkhead, w.wait, run.events());
            run.slotted(&mut attempt, got, w.cut)?;
        }
        let answer = calls.call(attempt.n);
        let judged = calls.judge(&answer);
        match run.finish(attempt, Tried::Answer(answer), judged) {
            Next::Done(result) => return result,
            Next::Wait(delay) => {
                run.scheduled(calls, delay);
                sleep(delay, cancel);
            }
        }
    }
}

fn cancelled(cancel: Option<&AtomicBool>) -> bool {
    // Acquire pairs with the canceller's Release store, so whatever it
    // wrote before cancelling is visible to the caller's error path.
    cancel.is_some_and(|c| c.load(Ordering::Acquire))
}

/// Parks for `delay` or until the cancel flag is seen, in slices of at
/// most [`CANCEL_CHECK`] when there is a flag to watch.
fn sleep(delay: Duration, cancel: Option<&AtomicBool>) {
    let wake_at = Instant::now().checked_add(delay);
    loop {
        let now = Instant::now();
        // Is it time, or did the caller give up?
        if wake_at.is_some_and(|w| now >= w) || cancelled(cancel) {
            return;
        }
        let left = wake_at.map_or(CANCEL_CHECK, |w| w - now);
        // With no cancel flag to watch, one park covers the whole wait
        // (spurious wake-ups loop back here).
        let slice = if cancel.is_some() { left.min(CANCEL_CHECK) } else { left };
        std::thread::park_timeout(slice);
    }
}
