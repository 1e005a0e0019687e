//! RAII admission for Rust callers, and the `call` conveniences.

use core::fmt;

use crate::breaker::circuit::Breaker;
use crate::breaker::storage::{AnyWindow, Windows};
use crate::breaker::ticket::{Outcome, Rejected, Ticket, Transition};
use crate::clock::Clock;

/// An admitted call that records its outcome exactly once: explicitly with
/// [`record`](Self::record) (or [`success`](Self::success) /
/// [`failure`](Self::failure) / [`ignore`](Self::ignore)), or as
/// [`Outcome::Ignored`] when dropped, so a cancelled future or a panic never
/// leaves a probe slot taken.
///
/// # Examples
/// ```
/// use tripwire::clock::FixedClock;
/// use tripwire::{Breaker, BreakerConfig, Outcome};
///
/// let breaker = Breaker::new(BreakerConfig::default());
/// let permit = breaker.permit(&FixedClock(0)).expect("closed");
/// let reply: Result<u32, &str> = Ok(7); // the guarded call
/// permit.record(if reply.is_ok() { Outcome::Success } else { Outcome::Failure });
/// assert_eq!(breaker.snapshot().successes, 1);
/// ```
#[must_use = "dropping a permit at once records the call as ignored"]
pub struct Permit<'a, C: Clock, W: Windows = AnyWindow> {
    breaker: &'a Breaker<W>,
    clock: &'a C,
    ticket: Ticket,
}

impl<C: Clock, W: Windows> fmt::Debug for Permit<'_, C, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit").field("ticket", &self.ticket).finish_non_exhaustive()
    }
}

impl<C: Clock, W: Windows> Permit<'_, C, W> {
    /// The ticket behind the permit.
    pub fn ticket(&self) -> Ticket {
        self.ticket
    }

    /// The transition that admitting this call caused (Open → Half-Open), if any.
    pub fn transition(&self) -> Option<Transition> {
        self.ticket.transition()
    }

    /// Records the outcome; returns the transition it caused, if any.
    #[inline]
    pub fn record(self, outcome: Outcome) -> Option<Transition> {
        let this = core::mem::ManuallyDrop::new(self);
        this.breaker.record(this.ticket, outcome, this.clock)
    }

    /// Records a success.
    pub fn success(self) -> Option<Transition> {
        self.record(Outcome::Success)
    }

    /// Records a failure.
    pub fn failure(self) -> Option<Transition> {
        self.record(Outcome::Failure)
    }

    /// Records the call as saying nothing about the dependency.
    pub fn ignore(self) -> Option<Transition> {
        self.record(Outcome::Ignored)
    }
}

impl<C: Clock, W: Windows> Drop for Permit<'_, C, W> {
    fn drop(&mut self) {
        self.breaker.record(self.ticket, Outcome::Ignored, self.clock);
    }
}

/// Why a guarded call did not return its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallError<E> {
    /// The breaker refused the call; it was never made.
    Rejected(Rejected),
    /// The call was made and returned this error.
    Inner(E),
}

impl<E: fmt::Display> fmt::Display for CallError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Rejected(r) => r.fmt(f),
            CallError::Inner(e) => e.fmt(f),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for CallError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            CallError::Rejected(r) => Some(r),
            CallError::Inner(e) => Some(e),
        }
    }
}

impl<W: Windows> Breaker<W> {
    /// Asks to make a call; the returned permit records its outcome.
    #[inline]
    pub fn permit<'a, C: Clock>(&'a self, clock: &'a C) -> Result<Permit<'a, C, W>, Rejected> {
        let ticket = self.try_acquire(clock)?;
        Ok(Permit { breaker: self, clock, ticket })
    }

    /// Runs `f` if the breaker admits it; `Ok` counts as a success, `Err` as
    /// a failure. A panic in `f` counts as ignored.
    ///
    /// # Examples
    /// ```
    /// use tripwire::clock::FixedClock;
    /// use tripwire::{Breaker, BreakerConfig, CallError};
    ///
    /// let breaker = Breaker::new(BreakerConfig::builder().failure_threshold(1).build()?);
    /// let clock = FixedClock(0);
    /// let down: Result<(), CallError<&str>> = breaker.call(&clock, || Err("503"));
    /// assert_eq!(down, Err(CallError::Inner("503")));
    /// assert!(matches!(breaker.call(&clock, || Ok::<_, &str>(1)), Err(CallError::Rejected(_))));
    /// # Ok::<(), tripwire::ConfigError>(())
    /// ```
    #[inline]
    pub fn call<C, T, E>(&self, clock: &C, f: impl FnOnce() -> Result<T, E>) -> Result<T, CallError<E>>
    where
        C: Clock,
    {
        self.call_with(
            clock,
            |r: &Result<T, E>| if r.is_ok() { Outcome::Success } else { Outcome::Failure },
            f,
        )
    }

    /// Runs `f` if the breaker admits it, and records what `classify` makes
    /// of its result: e.g. a 4xx the caller caused is [`Outcome::Ignored`],
    /// a 503 a [`Outcome::Failure`] even when it arrives as `Ok(response)`.
    /// A panic in `f` or in `classify` counts as ignored.
    #[inline]
    pub fn call_with<C, T, E>(
        &self,
        clock: &C,
        classify: impl FnOnce(&Result<T, E>) -> Outcome,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, CallError<E>>
    where
        C: Clock,
    {
        let ticket = self.try_acquire(clock).map_err(CallError::Rejected)?;
        // The permit is only for unwinding: a panic in `f` or in `classify`
        // records Ignored, so it lives until both have returned. The normal
        // path records with the ticket it still holds in registers, not by
        // reloading the permit from memory after the call, which stalls on
        // store forwarding.
        let permit = Permit { breaker: self, clock, ticket };
        let result = f();
        let outcome = classify(&result);
        core::mem::forget(permit);
        self.record(ticket, outcome, clock);
        result.map_err(CallError::Inner)
    }
}
