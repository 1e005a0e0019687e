//! A list of listeners that only grows, run without a lock held and
//! without a copy of the list.

use core::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::vec::Vec;

/// Listeners of one kind of event (`F` is a `dyn Fn(&Event) + Send + Sync`).
pub(crate) struct List<F: ?Sized> {
    list: RwLock<Vec<Arc<F>>>,
    // Relaxed: a hint that spares the lock when nobody listens; a listener
    // added concurrently with an event may or may not hear of it.
    any: AtomicBool,
}

impl<F: ?Sized> Default for List<F> {
    fn default() -> Self {
        Self { list: RwLock::new(Vec::new()), any: AtomicBool::new(false) }
    }
}

impl<F: ?Sized> core::fmt::Debug for List<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let n = self.list.read().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("Listeners").field("len", &n).finish()
    }
}

impl<F: ?Sized> List<F> {
    /// Adds a listener (allocates: done when a client is set up, not per call).
    pub(crate) fn add(&self, f: Arc<F>) {
        self.list.write().unwrap_or_else(PoisonError::into_inner).push(f);
        // Relaxed: see the field's comment.
        self.any.store(true, Ordering::Relaxed);
    }

    /// Runs `call` on every listener, after the list's lock is released (a
    /// listener may add listeners, or cause another event).
    ///
    /// One listener at a time, by index: the read lock is held only to
    /// take a reference on the next one (a count, not an allocation), so
    /// no listener runs under it and no copy of the list is made. The list
    /// only grows: a listener added meanwhile is heard too, or not.
    pub(crate) fn each(&self, mut call: impl FnMut(&F)) {
        // Relaxed: see the field's comment.
        if !self.any.load(Ordering::Relaxed) {
            return;
        }
        let mut i = 0;
        while let Some(listener) = self.nth(i) {
            call(&listener);
            i += 1;
        }
    }

    /// The `i`-th listener, if there are that many; the read lock ends with
    /// this call.
    fn nth(&self, i: usize) -> Option<Arc<F>> {
        self.list.read().unwrap_or_else(PoisonError::into_inner).get(i).cloned()
    }
}
