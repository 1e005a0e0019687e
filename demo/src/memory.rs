//! Heap bytes per client: a counting allocator that charges each
//! allocation to the client whose runtime thread made it.
//!
//! Each client runs on its own single-threaded tokio runtime, so its
//! requests, connections, timers and buffers are allocated on that thread.
//! A binary opts in with `#[global_allocator] static A: CountingAlloc =
//! CountingAlloc;`; without it nothing is measured and the report says so.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// Threads charged to nobody (the exchange, the display) use tag 0.
pub const TAGS: usize = 3;

// Relaxed everywhere: each counter is a tally read after the run (or for
// display); no other memory is published through it.
static LIVE: [AtomicIsize; TAGS] = [const { AtomicIsize::new(0) }; TAGS];
static PEAK: [AtomicIsize; TAGS] = [const { AtomicIsize::new(0) }; TAGS];
static BASE: [AtomicIsize; TAGS] = [const { AtomicIsize::new(0) }; TAGS];
static INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    static TAG: Cell<usize> = const { Cell::new(0) };
}

/// The system allocator, counting the live bytes of tagged threads.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

fn charge(bytes: isize) {
    // A thread being torn down has no tag left: charge nobody.
    let tag = TAG.try_with(Cell::get).unwrap_or(0);
    if tag == 0 {
        return;
    }
    INSTALLED.store(true, Ordering::Relaxed);
    let live = LIVE[tag].fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK[tag].fetch_max(live, Ordering::Relaxed);
}

// SAFETY:
// - every method forwards to `System` with the caller's own arguments, so
//   `System` upholds the `GlobalAlloc` contract;
// - the counting touches only atomics and a const thread-local without a
//   destructor, so it never allocates or unwinds.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY:
        // - `layout` has a non-zero size: the caller of `alloc` guarantees it.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            charge(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY:
        // - `layout` has a non-zero size: the caller of `alloc_zeroed` guarantees it.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            charge(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY:
        // - `ptr` came from this allocator (hence `System`) with `layout`:
        //   the caller of `dealloc` guarantees it.
        unsafe { System.dealloc(ptr, layout) };
        charge(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY:
        // - `ptr` came from this allocator (hence `System`) with `layout`, and
        //   `new_size` is non-zero and fits `isize` once aligned: the caller
        //   of `realloc` guarantees both.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            charge(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Charges this thread's allocations to `tag` (1 or 2 for the clients).
pub fn tag_thread(tag: usize) {
    TAG.with(|t| t.set(tag.min(TAGS - 1)));
}

/// Live bytes charged to `tag` now.
pub fn live(tag: usize) -> isize {
    LIVE[tag].load(Ordering::Relaxed)
}

/// The most bytes charged to `tag` at once since [`restart_peak`], above
/// what it held then.
pub fn peak(tag: usize) -> isize {
    PEAK[tag].load(Ordering::Relaxed) - BASE[tag].load(Ordering::Relaxed)
}

/// Whether the binary counts allocations (installed [`CountingAlloc`]).
pub fn measured() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// Starts a new peak for `tag` from its live bytes now; returns them.
pub fn restart_peak(tag: usize) -> isize {
    let live = live(tag);
    BASE[tag].store(live, Ordering::Relaxed);
    PEAK[tag].store(live, Ordering::Relaxed);
    live
}
