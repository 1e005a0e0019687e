//! The async driver (feature `async`): performs a [`Run`]'s steps in a
//! future, waiting on a [`Timer`] and cutting each call to its bound.
//! Dropping the future stops at once, mid-call or mid-pause: the call in
//! flight counts as ignored.

use crate::clock::Clock;
use crate::layers::events::wait_slot_async;
use crate::layers::timeout::{Timer, timeout};
use crate::policy::plan::{Calls, Judged, Plan};
use crate::policy::run::{Ended, Next, Run, Tried};

/// An integration's async call.
pub(crate) trait AsyncCalls: Calls {
    /// Makes attempt `attempt` (from 1).
    fn call(&mut self, attempt: u32) -> impl Future<Output = Self::Answer>;
}

/// Takes one request through `plan`, stopping at `deadline` (a reading of
/// [`MonotonicClock`](crate::MonotonicClock)), waiting on `timer`. A call
/// that outlives the plan's timeout is a failure; one cut short by the
/// request's time left ends the request ([`Ended::CutShort`]).
#[inline]
pub(crate) async fn drive<C: Clock, K: AsyncCalls, Tm: Timer>(
    plan: Plan<'_, C>,
    timer: &Tm,
    deadline: Option<u64>,
    calls: &mut K,
) -> Result<K::Answer, Ended<K::Answer>> {
    let outer = Run::admit(&plan)?;
    let mut run = Run::new(plan, deadline, outer);
    loop {
        let mut attempt = run.start()?;
        if let Some(wait) = run.ration(&mut attempt)? {
            timer.sleep(wait).await;
            attempt.restart_clock();
        }
        if let Some(w) = run.slot_wait() {
            let got = wait_slot_async(w.bulkhead, timer, w.wait, run.events()).await;
            run.slotted(&mut attempt, got, w.cut)?;
        }
        let tried = match run.limit(&attempt) {
            None => Tried::Answer(calls.call(attempt.n).await),
            Some(limit) => match timeout(timer, limit.after, calls.call(attempt.n)).await {
                Ok(answer) => Tried::Answer(answer),
                Err(_) if !limit.own => return Err(run.cut_short(attempt, limit.after)),
                Err(_) => Tried::TimedOut(limit.after),
            },
        };
        let judged = match &tried {
            Tried::Answer(answer) => calls.judge(answer),
            Tried::TimedOut(_) => Judged::TIMED_OUT,
        };
        match run.finish(attempt, tried, judged) {
            Next::Done(result) => return result,
            Next::Wait(delay) => {
                run.scheduled(calls, delay);
                timer.sleep(delay).await;
            }
        }
    }
}
