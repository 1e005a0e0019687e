//! Waiting for a bulkhead slot in a coroutine: the core's awaitable
//! acquire, driven by the asyncio loop and woken by the release that frees
//! a slot. Nothing polls on a timer.
//!
//! `Bulkhead._wait(loop)` makes a [`BulkheadWait`]: one
//! `tripwire::Bulkhead::acquire_async` future, polled on the loop's thread,
//! and the asyncio future the coroutine awaits. The core's release notifies
//! the Rust future's listener, which calls its waker. That call may come
//! from inside the release, under the core's list lock, on any thread, even
//! one detached from the interpreter (a thread whose blocking wait just
//! ended passes its notification on), so the waker does not touch Python:
//! it queues the wait in the bulkhead's [`Wakeups`]. Every path of this
//! binding that runs core code able to notify (a release, a blocking wait,
//! polling or dropping a wait) calls [`Wakeups::deliver`] afterwards, once
//! attached: each queued wait is handed to its loop
//! (`call_soon_threadsafe`), which polls it on its own thread.
//!
//! The deadline is the loop's `call_later(max_wait, wait.expire)`: it ends
//! the core's sleep, and the core takes a slot freed just then or counts the
//! refusal, once.
//!
//! # Orderings
//! The flags are `Relaxed`: `queued` only decides whether a wake-up adds
//! the wait to the queue (the queue's mutex orders the entries themselves),
//! `expired` is written and read on the loop's thread with the interpreter
//! attached, and `Wakeups::any` is a hint whose miss costs nothing: a
//! deliverer that reads `false` while another thread queues a wait leaves
//! it to that thread, which delivers after its own core call.

use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicBool, Ordering};
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::Wake;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyWeakrefMethods, PyWeakrefReference};
use pyo3::{PyTraverseError, PyVisit, intern};

use crate::bulkhead::Bulkhead;

/// Waits whose listener was notified, until their loops are told.
#[derive(Debug, Default)]
pub(crate) struct Wakeups {
    queue: Mutex<Vec<Arc<Waiting>>>,
    /// Whether `queue` may hold a wait: spares every release the lock while
    /// no coroutine waits.
    any: AtomicBool,
}

impl Wakeups {
    fn push(&self, waiting: Arc<Waiting>) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.push(waiting);
        // Relaxed: see the module's Orderings.
        self.any.store(true, Ordering::Relaxed);
    }

    /// Hands every queued wait to its loop.
    #[inline]
    pub(crate) fn deliver(&self, py: Python<'_>) {
        // Relaxed: see the module's Orderings.
        if self.any.load(Ordering::Relaxed) {
            self.deliver_queued(py);
        }
    }

    #[cold]
    fn deliver_queued(&self, py: Python<'_>) {
        let queued = {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            // Relaxed: see the module's Orderings.
            self.any.store(false, Ordering::Relaxed);
            core::mem::take(&mut *queue)
        };
        for waiting in queued {
            waiting.schedule(py);
        }
    }
}

/// What a wait's waker and its deadline share with it.
#[derive(Debug)]
struct Waiting {
    wakeups: Arc<Wakeups>,
    /// The deadline has passed: the core's sleep is over.
    expired: AtomicBool,
    /// Queued and not polled since: a second wake-up adds nothing.
    queued: AtomicBool,
    /// The loop's `call_soon_threadsafe`.
    call_soon_threadsafe: Py<PyAny>,
    /// A weak reference to the `BulkheadWait` (set once it exists), so that
    /// a wait dropped by its coroutine is not kept alive by its waker.
    wait: OnceLock<Py<PyWeakrefReference>>,
}

impl Wake for Waiting {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Relaxed: see the module's Orderings.
        if !self.queued.swap(true, Ordering::Relaxed) {
            self.wakeups.push(Arc::clone(self));
        }
    }
}

static WAKE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The loop's callback: polls the wait, if it is still alive.
#[pyfunction]
fn wake(wait: &Bound<'_, PyWeakrefReference>) -> PyResult<()> {
    match wait.upgrade_as::<BulkheadWait>()? {
        Some(w) => w.get().poll(w.py()),
        None => Ok(()),
    }
}

impl Waiting {
    /// Asks the wait's loop to poll it, from any thread.
    fn schedule(&self, py: Python<'_>) {
        let Some(wait) = self.wait.get() else { return };
        let Ok(callback) =
            WAKE.get_or_try_init(py, || wrap_pyfunction!(wake, py).map(|f| f.into_any().unbind()))
        else {
            return;
        };
        // A loop closed since has no task left to wake: its waits went with
        // their tasks, and the error says only that.
        let _ = self.call_soon_threadsafe.bind(py).call1((callback, wait));
    }
}

/// The core's sleep until the loop's deadline: ready once `expire` ran.
struct Deadline(Arc<Waiting>);

/// The sleep of one wait: ready at once for a wait of zero, else once the
/// loop's deadline has passed (the loop polls the wait right after).
struct Expiry {
    waiting: Arc<Waiting>,
    zero: bool,
}

impl Future for Expiry {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        // Relaxed: see the module's Orderings.
        if self.zero || self.waiting.expired.load(Ordering::Relaxed) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl tripwire::timeout::Timer for Deadline {
    type Sleep = Expiry;
    fn sleep(&self, d: Duration) -> Expiry {
        Expiry { waiting: Arc::clone(&self.0), zero: d.is_zero() }
    }
}

/// The core's acquire: `true` with a slot taken.
type Acquire = Pin<Box<dyn Future<Output = bool> + Send>>;

#[derive(Default)]
struct State {
    /// The core's acquire, until it ends.
    acquire: Option<Acquire>,
    /// It ended with a slot, which is the caller's unless `cancel` gives it
    /// back.
    took: bool,
}

/// A coroutine's wait for a slot in a full bulkhead (made by
/// `Bulkhead._wait`, awaited by `tripwire/_aio.py`): `future` ends with
/// `True` (a slot taken) or `False` (refused at the deadline).
#[pyclass(module = "tripwire", frozen, weakref)]
pub struct BulkheadWait {
    bulkhead: Py<Bulkhead>,
    waiting: Arc<Waiting>,
    state: Mutex<State>,
    /// The asyncio future the coroutine awaits.
    future: Py<PyAny>,
}

impl BulkheadWait {
    /// Starts waiting for a slot of `bulkhead` (which has none free) for up
    /// to `max_wait`, on `event_loop`.
    pub(crate) fn start<'py>(
        bulkhead: &Bound<'py, Bulkhead>,
        core: Arc<tripwire::Bulkhead>,
        wakeups: Arc<Wakeups>,
        max_wait: Duration,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let py = bulkhead.py();
        let waiting = Arc::new(Waiting {
            wakeups,
            expired: AtomicBool::new(false),
            queued: AtomicBool::new(false),
            call_soon_threadsafe: event_loop.getattr(intern!(py, "call_soon_threadsafe"))?.unbind(),
            wait: OnceLock::new(),
        });
        let timer = Deadline(Arc::clone(&waiting));
        let acquire: Acquire = Box::pin(async move {
            match core.acquire_async(&timer, max_wait).await {
                Ok(permit) => {
                    // The slot is the caller's: `Bulkhead.release()` frees it.
                    core::mem::forget(permit);
                    true
                }
                Err(_) => false,
            }
        });
        let future = event_loop.call_method0(intern!(py, "create_future"))?.unbind();
        let wait = Bound::new(
            py,
            BulkheadWait {
                bulkhead: bulkhead.clone().unbind(),
                waiting: Arc::clone(&waiting),
                state: Mutex::new(State { acquire: Some(acquire), took: false }),
                future,
            },
        )?;
        // Only this thread has seen the new wait: the cell is empty.
        let _ = waiting.wait.set(PyWeakrefReference::new(&wait)?.unbind());
        wait.get().poll(py)?;
        Ok(wait)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Every change of the state is one assignment: a panic cannot leave
        // it half done.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Polls the core's acquire; ends `future` when it is done.
    fn poll(&self, py: Python<'_>) -> PyResult<()> {
        // Relaxed: see the module's Orderings. Cleared first, so that a
        // wake-up during the poll queues the wait again.
        self.waiting.queued.store(false, Ordering::Relaxed);
        let done = {
            let mut state = self.state();
            let polled = match state.acquire.as_mut() {
                None => None,
                Some(acquire) => {
                    let waker = Waker::from(Arc::clone(&self.waiting));
                    match acquire.as_mut().poll(&mut Context::from_waker(&waker)) {
                        Poll::Pending => None,
                        Poll::Ready(took) => Some(took),
                    }
                }
            };
            if let Some(took) = polled {
                state.acquire = None;
                state.took = took;
            }
            polled
        };
        // The acquire dropped, its listener may have passed a notification on.
        self.bulkhead.get().wakeups().deliver(py);
        if let Some(took) = done {
            let future = self.future.bind(py);
            // Cancelled already? Then `cancel` gives the slot back.
            if !future.call_method0(intern!(py, "done"))?.is_truthy()? {
                future.call_method1(intern!(py, "set_result"), (took,))?;
            }
        }
        Ok(())
    }
}

#[pymethods]
impl BulkheadWait {
    /// The asyncio future: `True` with a slot taken, `False` when refused.
    #[getter]
    fn future(&self, py: Python<'_>) -> Py<PyAny> {
        self.future.clone_ref(py)
    }

    /// The deadline has passed (the loop's `call_later`): takes a slot freed
    /// just now, or ends the wait refused.
    fn expire(&self, py: Python<'_>) -> PyResult<()> {
        // Relaxed: see the module's Orderings.
        self.waiting.expired.store(true, Ordering::Relaxed);
        self.poll(py)
    }

    /// The coroutine stopped waiting (cancelled): leaves the core's wait,
    /// and gives back a slot the wait took that the coroutine will not use.
    fn cancel(&self, py: Python<'_>) -> PyResult<()> {
        let (acquire, took) = {
            let mut state = self.state();
            (state.acquire.take(), core::mem::take(&mut state.took))
        };
        // Dropping the core's acquire takes it off the waiter count (and
        // frees a slot it took on the way out).
        drop(acquire);
        let bulkhead = self.bulkhead.get();
        if took {
            bulkhead.give_back(py)?;
        }
        bulkhead.wakeups().deliver(py);
        Ok(())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.bulkhead)?;
        visit.call(&self.future)
    }
}

impl Drop for BulkheadWait {
    fn drop(&mut self) {
        let acquire = self.state.get_mut().unwrap_or_else(PoisonError::into_inner).acquire.take();
        if acquire.is_some() {
            drop(acquire);
            // Attached already (the interpreter frees the object).
            Python::attach(|py| self.bulkhead.get().wakeups().deliver(py));
        }
    }
}
