//! The tickets of open `with breaker:` blocks.
//!
//! `__enter__` and `__exit__` are two calls on the breaker, which threads
//! and tasks share, so the ticket between them cannot live in the breaker:
//! each block's ticket must come back to the block that took it, never to
//! a block of another thread or another task (a ticket of an older
//! generation recorded for a newer call would break the generation rule).
//!
//! Where nothing but threads can interleave blocks (no asyncio loop runs in
//! this thread, and neither greenlet nor trio is loaded), the ticket lives
//! in a stack per thread: blocks in one thread are properly nested, so the
//! innermost open block of a breaker is the one exiting. This costs a push
//! and a pop on a thread-local vector.
//!
//! Where tasks switch inside one thread (an asyncio loop running here, or
//! greenlet or trio loaded), each task has its own `contextvars` context, so
//! the ticket lives in a `ContextVar`: blocks of interleaved tasks never
//! take each other's tickets, and nested blocks restore the outer one on
//! exit (the variable's `Token`). The thread's stack then holds a marker in
//! its place: markers are alike, so interleaved tasks may pop each other's,
//! and each finds its own ticket in its own context.
//!
//! `__enter__` decides where the ticket goes; `__exit__` only looks at the
//! innermost entry of its breaker in the thread's stack, so a block exits
//! from the store its `__enter__` chose even if the scheduler changed in
//! between (a block entered before asyncio started a loop in this thread).
//! Generators interleaved in one thread share a thread and a context: a
//! block open across a `yield` may swap tickets with another generator's
//! block of the same breaker, whichever store holds them.

use core::cell::RefCell;
use core::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};
use pyo3::{PyTraverseError, PyVisit, intern};

/// The innermost open block of one breaker in one context: its ticket, the
/// token that restores the block around it, and the timeout scope of an
/// `async with` block on a breaker with `timeout=`.
#[pyclass(module = "tripwire", frozen)]
pub(crate) struct Frame {
    ticket: tripwire::Ticket,
    token: OnceLock<Py<PyAny>>,
    scope: Option<Py<PyAny>>,
}

#[pymethods]
impl Frame {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(token) = self.token.get() {
            visit.call(token)?;
        }
        if let Some(scope) = &self.scope {
            visit.call(scope)?;
        }
        Ok(())
    }
}

/// An open block's ticket, and its timeout scope if it has one.
pub(crate) type Block = (tripwire::Ticket, Option<Py<PyAny>>);

/// One breaker's open blocks, in this thread's stack or its `ContextVar`.
pub(crate) struct WithStack {
    /// Tells this breaker's entries in the thread stacks from others'.
    id: u64,
    /// `get`, `set` and `reset` of the breaker's `ContextVar`, looked up once.
    get: Py<PyAny>,
    set: Py<PyAny>,
    reset: Py<PyAny>,
}

/// Breakers' ids, never reused.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// Where an open block's ticket is.
#[derive(Debug, Clone, Copy)]
enum Held {
    /// Here: no task switches in this thread.
    Here(tripwire::Ticket),
    /// In the breaker's `ContextVar`, in the block's own context.
    InContext,
}

thread_local! {
    /// This thread's open blocks: the breaker's id and where the block's
    /// ticket is, innermost last.
    static THREAD_BLOCKS: RefCell<Vec<(u64, Held)>> = const { RefCell::new(Vec::new()) };
}

static CONTEXT_VAR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static MODULES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// What `sys.modules` held when last looked at: its length, and which
/// schedulers were loaded.
static MODULES_SEEN: AtomicU64 = AtomicU64::new(u64::MAX);
/// `MODULES_SEEN`'s low bits: the schedulers loaded; the rest: the length.
const ASYNCIO: u64 = 1;
const SWITCHING: u64 = 2;
const SCHEDULER_BITS: u32 = 2;

/// Whether tasks may switch inside this thread while a block is open: an
/// asyncio loop runs in it, or greenlet (gevent, eventlet) or trio is
/// loaded. Without asyncio imported no loop can run.
///
/// Which modules are loaded is looked up again only when `sys.modules`
/// changes length (an import adds at least the module imported), so that
/// most blocks pay one length read; the running loop is asked for each time.
#[inline]
fn tasks_switch_here(py: Python<'_>) -> PyResult<bool> {
    let modules = MODULES
        .get_or_try_init(py, || -> PyResult<_> {
            Ok(py.import("sys")?.getattr("modules")?.cast_into::<PyDict>()?.unbind())
        })?
        .bind(py);
    let len = modules.len() as u64;
    // Relaxed: the interpreter lock orders every access (and a stale value
    // only costs a second look).
    let mut seen = MODULES_SEEN.load(Ordering::Relaxed);
    if seen >> SCHEDULER_BITS != len {
        seen = schedulers_loaded(py, modules)? | (len << SCHEDULER_BITS);
        MODULES_SEEN.store(seen, Ordering::Relaxed);
    }
    if seen & SWITCHING != 0 {
        return Ok(true);
    }
    if seen & ASYNCIO == 0 {
        return Ok(false);
    }
    let get_running_loop = GET_RUNNING_LOOP
        .get_or_try_init(py, || py.import("asyncio")?.getattr("_get_running_loop").map(Bound::unbind))?;
    Ok(!get_running_loop.bind(py).call0()?.is_none())
}

/// `ASYNCIO` and `SWITCHING`, as `modules` says.
#[cold]
fn schedulers_loaded(py: Python<'_>, modules: &Bound<'_, PyDict>) -> PyResult<u64> {
    let mut found = 0;
    if modules.contains(intern!(py, "asyncio"))? {
        found |= ASYNCIO;
    }
    if modules.contains(intern!(py, "greenlet"))? || modules.contains(intern!(py, "trio"))? {
        found |= SWITCHING;
    }
    Ok(found)
}

impl WithStack {
    pub(crate) fn new(py: Python<'_>) -> PyResult<Self> {
        let class = CONTEXT_VAR
            .get_or_try_init(py, || py.import("contextvars")?.getattr("ContextVar").map(Bound::unbind))?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("default", py.None())?;
        let var = class.bind(py).call((PyString::new(py, "tripwire.Breaker.with_stack"),), Some(&kwargs))?;
        Ok(Self {
            // Relaxed: a unique number, ordering nothing.
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            get: var.getattr("get")?.unbind(),
            set: var.getattr("set")?.unbind(),
            reset: var.getattr("reset")?.unbind(),
        })
    }

    /// Another breaker's stack, in the same `ContextVar`: a breaker's
    /// entries are told apart by its own id, and a task's blocks nest in its
    /// context whichever breaker they are of. Cheaper than [`new`](Self::new),
    /// for breakers made on every lookup (`Breakers[key]`).
    pub(crate) fn another(&self, py: Python<'_>) -> Self {
        Self {
            // Relaxed: as in `new`.
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            get: self.get.clone_ref(py),
            set: self.set.clone_ref(py),
            reset: self.reset.clone_ref(py),
        }
    }

    /// Opens a block holding `ticket`.
    #[inline]
    pub(crate) fn push(&self, py: Python<'_>, ticket: tripwire::Ticket) -> PyResult<()> {
        let held = if tasks_switch_here(py)? {
            self.push_context(py, ticket, None)?;
            Held::InContext
        } else {
            Held::Here(ticket)
        };
        THREAD_BLOCKS.with(|blocks| blocks.borrow_mut().push((self.id, held)));
        Ok(())
    }

    /// Opens an `async with` block holding `ticket` and its timeout
    /// `scope`: in the task's context (a coroutine's block always is).
    pub(crate) fn push_scoped(
        &self,
        py: Python<'_>,
        ticket: tripwire::Ticket,
        scope: Py<PyAny>,
    ) -> PyResult<()> {
        self.push_context(py, ticket, Some(scope))?;
        THREAD_BLOCKS.with(|blocks| blocks.borrow_mut().push((self.id, Held::InContext)));
        Ok(())
    }

    /// Closes the innermost open block; its ticket and timeout scope.
    #[inline]
    pub(crate) fn pop(&self, py: Python<'_>) -> PyResult<Block> {
        loop {
            match self.pop_thread() {
                Some(Held::Here(ticket)) => return Ok((ticket, None)),
                Some(Held::InContext) => {
                    // None: a marker left by a task that never exited its
                    // block; look further out.
                    if let Some(block) = self.pop_context(py)? {
                        return Ok(block);
                    }
                }
                // Entered in another thread (a generator moved between
                // threads)? Its context may have come along.
                None => {
                    return self.pop_context(py)?.ok_or_else(|| {
                        PyRuntimeError::new_err(
                            "Breaker.__exit__ without a matching __enter__ in this thread or task",
                        )
                    });
                }
            }
        }
    }

    /// The innermost entry of this breaker in this thread's stack.
    fn pop_thread(&self) -> Option<Held> {
        THREAD_BLOCKS.with(|blocks| {
            let mut blocks = blocks.borrow_mut();
            // The innermost open block is the last, unless blocks of other
            // breakers were left open around it (generators).
            let i = blocks.iter().rposition(|(id, _)| *id == self.id)?;
            Some(blocks.remove(i).1)
        })
    }

    fn push_context(
        &self,
        py: Python<'_>,
        ticket: tripwire::Ticket,
        scope: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let frame = Bound::new(py, Frame { ticket, token: OnceLock::new(), scope })?;
        let token = self.set.bind(py).call1((&frame,))?;
        // Only this thread has seen the new frame: the cell is empty.
        let _ = frame.get().token.set(token.unbind());
        Ok(())
    }

    fn pop_context(&self, py: Python<'_>) -> PyResult<Option<Block>> {
        let top = self.get.bind(py).call0()?;
        if top.is_none() {
            return Ok(None);
        }
        let top = top.cast_into::<Frame>()?;
        let frame = top.get();
        if let Some(token) = frame.token.get() {
            self.reset.bind(py).call1((token,))?;
        }
        Ok(Some((frame.ticket, frame.scope.as_ref().map(|s| s.clone_ref(py)))))
    }

    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.get)?;
        visit.call(&self.set)?;
        visit.call(&self.reset)
    }
}
