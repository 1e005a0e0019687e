//! Recording an [`Assessment`] through a named breaker: its outcome, and
//! for backpressure a hold.

use crate::assessment::Assessment;
use crate::breaker::storage::Windows;
use crate::breaker::ticket::{Ticket, Transition};
use crate::clock::Clock;
use crate::layers::named::{NamedBreaker, NamedPermit, OwnedNamedPermit};

impl<C: Clock, W: Windows> NamedBreaker<C, W> {
    /// Records an admitted call's assessment: its outcome, and for
    /// backpressure a hold ([`open_for`](Self::open_for)). Returns the last
    /// transition this caused, if any.
    #[inline]
    pub fn settle(&self, ticket: Ticket, assessment: Assessment) -> Option<Transition> {
        // A success on a healthy breaker, the common case: counted, and
        // nothing else to do (`record` would make the same test first).
        if assessment == Assessment::Success && self.breaker().record_healthy_success(ticket.generation) {
            return None;
        }
        self.settle_slow(ticket, assessment)
    }

    /// Every other assessment, out of line so that the test above stays
    /// small enough to inline into a response future's `poll`.
    #[inline(never)]
    pub(crate) fn settle_slow(&self, ticket: Ticket, assessment: Assessment) -> Option<Transition> {
        let recorded = self.record(ticket, assessment.outcome());
        match assessment {
            Assessment::Backpressure(hold) => {
                let d = hold.unwrap_or_else(|| self.breaker().config().open_timeout());
                self.open_for(d).or(recorded)
            }
            _ => recorded,
        }
    }
}

impl<C: Clock, W: Windows> NamedPermit<'_, C, W> {
    /// Records the call's assessment (see [`NamedBreaker::settle`]).
    #[inline]
    pub fn settle(mut self, assessment: Assessment) -> Option<Transition> {
        let ticket = self.ticket.take()?;
        self.breaker.settle(ticket, assessment)
    }
}

impl<C: Clock, W: Windows> OwnedNamedPermit<C, W> {
    /// Records the call's assessment (see [`NamedBreaker::settle`]).
    #[inline]
    pub fn settle(mut self, assessment: Assessment) -> Option<Transition> {
        self.settle_in_place(assessment)
    }

    /// [`settle`](Self::settle) for a permit that stays where it is (in a
    /// response future): it records nothing more, dropped or settled
    /// again. The healthy success reads the ticket where it lies, never
    /// moving it.
    #[inline]
    pub(crate) fn settle_in_place(&mut self, assessment: Assessment) -> Option<Transition> {
        // A success on a healthy breaker, the common case?
        if let Some(ticket) = &self.ticket
            && assessment == Assessment::Success
            && self.breaker.breaker().record_healthy_success(ticket.generation)
        {
            self.ticket = None;
            return None;
        }
        let ticket = self.ticket.take()?;
        self.breaker.settle_slow(ticket, assessment)
    }
}
