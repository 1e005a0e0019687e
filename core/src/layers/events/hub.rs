//! [`Events`]: the listeners and counters of one dependency's bulkhead and
//! retries.

use core::fmt;
use core::time::Duration;
use std::boxed::Box;
use std::string::String;
use std::sync::Arc;

use crate::layers::events::bulkhead::BulkheadEvent;
use crate::layers::events::list::List;
use crate::layers::events::retry::{RetryCause, RetryNotice};
use crate::retry::error::RetryError;
use crate::sync::{AtomicU64, Ordering};

type BulkheadListener = dyn Fn(&BulkheadEvent<'_>) + Send + Sync;
type RetryListener = dyn Fn(&RetryNotice<'_>) + Send + Sync;

/// The bulkhead and retry events of the layers guarding one dependency,
/// beside its breaker's [`on_state_change`](crate::NamedBreaker::on_state_change):
/// give it (an `Arc`) to a [`Pipeline`](crate::pipeline::PipelineBuilder::events), a
/// tower [`BulkheadLayer`](crate::tower::BulkheadLayer) or
/// [`RetryLayer`](crate::tower::RetryLayer), or the reqwest
/// `GuardMiddleware`, and each event they cause is
///
/// - heard by every listener ([`on_bulkhead`](Self::on_bulkhead),
///   [`on_retry`](Self::on_retry)) once, on the thread that caused it,
///   with no lock held;
/// - counted ([`counts`](Self::counts));
/// - logged with `tracing` at the `tripwire` target (feature `tracing`):
///   `warn` when retries stop for want of budget or attempts, `info` for
///   a refusal, `debug` for a wait and a scheduled retry;
/// - published to the `metrics` crate's recorder by `publish_metrics`
///   (feature `metrics`).
///
/// Reporting allocates nothing, with or without listeners (a listener's
/// own work aside); a layer given no `Events` reports nothing and pays one
/// branch.
///
/// # Examples
/// ```
/// use std::sync::{Arc, Mutex};
/// use tripwire::events::{BulkheadEvent, Events};
/// use tripwire::pipeline::PipelineError;
/// use tripwire::{Bulkhead, Pipeline};
///
/// let events = Arc::new(Events::new("binance/rest"));
/// let refused = Arc::new(Mutex::new(Vec::new()));
/// let log = refused.clone();
/// events.on_bulkhead(move |e| {
///     if let BulkheadEvent::Refused { name, in_flight, max } = *e {
///         log.lock().unwrap().push(format!("{name}: {in_flight}/{max}"));
///     }
/// });
/// let bulkhead = Arc::new(Bulkhead::new(1));
/// let pipeline = Pipeline::builder().bulkhead(bulkhead.clone()).events(events.clone()).build();
///
/// let _busy = bulkhead.try_acquire()?;
/// assert!(matches!(pipeline.call(|| Ok::<_, ()>(1)), Err(PipelineError::Full(_))));
/// assert_eq!(*refused.lock().unwrap(), ["binance/rest: 1/1"]);
/// assert_eq!(events.counts().bulkhead_refused, 1);
/// # Ok::<(), tripwire::BulkheadFull>(())
/// ```
pub struct Events {
    name: Box<str>,
    bulkhead: List<BulkheadListener>,
    retry: List<RetryListener>,
    counts: Counts,
}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Events")
            .field("name", &self.name)
            .field("bulkhead", &self.bulkhead)
            .field("retry", &self.retry)
            .field("counts", &self.counts())
            .finish()
    }
}

/// How many events of each kind an [`Events`] has heard (each read
/// separately).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// Calls a full bulkhead refused without a wait.
    pub bulkhead_refused: u64,
    /// Calls that waited for a bulkhead slot and got one.
    pub bulkhead_waited: u64,
    /// Calls that waited for a bulkhead slot in vain.
    pub bulkhead_timed_out: u64,
    /// Retries scheduled.
    pub retries_scheduled: u64,
    /// Retries scheduled whose server asked for a pause longer than the
    /// policy's `max_retry_after`, and waited that cap instead.
    pub retry_pauses_capped: u64,
    /// Requests whose retries stopped for want of a budget token.
    pub retry_budget_refused: u64,
    /// Requests whose every allowed attempt failed.
    pub retries_exhausted: u64,
}

/// One counter per kind of event, in the order of [`EventCounts`].
#[derive(Default)]
struct Counts([AtomicU64; 7]);

const REFUSED: usize = 0;
const WAITED: usize = 1;
const TIMED_OUT: usize = 2;
const SCHEDULED: usize = 3;
const BUDGET_REFUSED: usize = 4;
const EXHAUSTED: usize = 5;
const CAPPED: usize = 6;

impl Counts {
    fn bump(&self, i: usize) {
        // Relaxed: statistics, ordering nothing else.
        self.0[i].fetch_add(1, Ordering::Relaxed);
    }

    fn get(&self, i: usize) -> u64 {
        // Relaxed: a report (see `bump`).
        self.0[i].load(Ordering::Relaxed)
    }
}

impl Events {
    /// Events under `name` (e.g. `binance/rest`), which every event and
    /// metric carries; no listener yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into().into_boxed_str(),
            bulkhead: List::default(),
            retry: List::default(),
            counts: Counts::default(),
        }
    }

    /// The name it was made with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `f` once for every later bulkhead event.
    pub fn on_bulkhead(&self, f: impl Fn(&BulkheadEvent<'_>) + Send + Sync + 'static) {
        self.bulkhead.add(Arc::new(f));
    }

    /// Runs `f` once for every later retry event.
    pub fn on_retry(&self, f: impl Fn(&RetryNotice<'_>) + Send + Sync + 'static) {
        self.retry.add(Arc::new(f));
    }

    /// The counts at this moment.
    pub fn counts(&self) -> EventCounts {
        let c = &self.counts;
        EventCounts {
            bulkhead_refused: c.get(REFUSED),
            bulkhead_waited: c.get(WAITED),
            bulkhead_timed_out: c.get(TIMED_OUT),
            retries_scheduled: c.get(SCHEDULED),
            retry_pauses_capped: c.get(CAPPED),
            retry_budget_refused: c.get(BUDGET_REFUSED),
            retries_exhausted: c.get(EXHAUSTED),
        }
    }

    /// Reports a bulkhead event.
    #[cold]
    pub(crate) fn bulkhead(&self, e: BulkheadEvent<'_>) {
        self.counts.bump(match e {
            BulkheadEvent::Refused { .. } => REFUSED,
            BulkheadEvent::Waited { .. } => WAITED,
            BulkheadEvent::TimedOut { .. } => TIMED_OUT,
        });
        #[cfg(feature = "tracing")]
        trace_bulkhead(&e);
        self.bulkhead.each(|listener| listener(&e));
    }

    /// Reports a retry event.
    #[cold]
    pub(crate) fn retry(&self, e: RetryNotice<'_>) {
        if let RetryNotice::Scheduled { capped_from: Some(_), .. } = e {
            self.counts.bump(CAPPED);
        }
        self.counts.bump(match e {
            RetryNotice::Scheduled { .. } => SCHEDULED,
            RetryNotice::BudgetRefused { .. } => BUDGET_REFUSED,
            RetryNotice::Exhausted { .. } => EXHAUSTED,
        });
        #[cfg(feature = "tracing")]
        trace_retry(&e);
        self.retry.each(|listener| listener(&e));
    }

    /// Reports a retry about to wait `delay` after attempt `attempt`
    /// (`capped_from`: the longer pause the server asked for).
    pub(crate) fn retry_scheduled(
        &self,
        attempt: u32,
        delay: Duration,
        capped_from: Option<Duration>,
        cause: RetryCause<'_>,
    ) {
        self.retry(RetryNotice::Scheduled { name: &self.name, attempt, delay, cause, capped_from });
    }

    /// Reports why a retry loop stopped, if it stopped for want of budget
    /// or attempts.
    pub(crate) fn retry_ended<E>(&self, e: &RetryError<E>) {
        let name = &*self.name;
        match *e {
            RetryError::BudgetExhausted { attempts, .. } => {
                self.retry(RetryNotice::BudgetRefused { name, attempts });
            }
            RetryError::Exhausted { attempts, .. } => self.retry(RetryNotice::Exhausted { name, attempts }),
            _ => {}
        }
    }
}

#[cfg(feature = "tracing")]
fn trace_bulkhead(e: &BulkheadEvent<'_>) {
    match *e {
        BulkheadEvent::Refused { name, in_flight, max } => {
            tracing::info!(target: "tripwire", bulkhead = name, in_flight, max, "bulkhead full: call refused");
        }
        BulkheadEvent::Waited { name, waited } => {
            let waited_us = waited.as_micros() as u64;
            tracing::debug!(target: "tripwire", bulkhead = name, waited_us, "bulkhead slot after a wait");
        }
        BulkheadEvent::TimedOut { name, waited, max } => {
            let waited_us = waited.as_micros() as u64;
            tracing::info!(target: "tripwire", bulkhead = name, waited_us, max, "bulkhead full: wait timed out, call refused");
        }
    }
}

#[cfg(feature = "tracing")]
fn trace_retry(e: &RetryNotice<'_>) {
    match *e {
        RetryNotice::Scheduled { name, attempt, delay, cause, capped_from } => {
            let delay_ms = delay.as_millis() as u64;
            match capped_from {
                None => {
                    tracing::debug!(target: "tripwire", retry = name, attempt, delay_ms, cause = %cause, "retry scheduled")
                }
                Some(asked) => {
                    let asked_ms = u64::try_from(asked.as_millis()).unwrap_or(u64::MAX);
                    tracing::info!(target: "tripwire", retry = name, attempt, delay_ms, asked_ms, cause = %cause, "retry scheduled; the server's pause capped");
                }
            }
        }
        RetryNotice::BudgetRefused { name, attempts } => {
            tracing::warn!(target: "tripwire", retry = name, attempts, "retry budget exhausted: not retried");
        }
        RetryNotice::Exhausted { name, attempts } => {
            tracing::warn!(target: "tripwire", retry = name, attempts, "retries exhausted");
        }
    }
}
