//! Recording an [`Assessment`] through a named breaker: its outcome, and
//! for backpressure a hold.

use crate::assessment::Assessment;
use crate::breaker::ticket::{Ticket, Transition};
use crate::clock::Clock;
use crate::layers::named::{NamedBreaker, NamedPermit, OwnedNamedPermit};

impl<C: Clock> NamedBreaker<C> {
    /// Records an admitted call's assessment: its outcome, and for
    /// backpressure a hold ([`open_for`](Self::open_for)). Returns the last
    /// transition this caused, if any.
    pub fn settle(&self, ticket: Ticket, assessment: Assessment) -> Option<Transition> {
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

impl<C: Clock> NamedPermit<'_, C> {
    /// Records the call's assessment (see [`NamedBreaker::settle`]).
    pub fn settle(mut self, assessment: Assessment) -> Option<Transition> {
        let ticket = self.ticket.take()?;
        self.breaker.settle(ticket, assessment)
    }
}

impl<C: Clock> OwnedNamedPermit<C> {
    /// Records the call's assessment (see [`NamedBreaker::settle`]).
    pub fn settle(mut self, assessment: Assessment) -> Option<Transition> {
        let ticket = self.ticket.take()?;
        self.breaker.settle(ticket, assessment)
    }
}
