//! What the tests of the shared regions share: zeroed memory aligned for a
//! region (64 bytes, every kind's alignment), freed on drop.
#![allow(dead_code, reason = "each test file uses part of it")]

use std::alloc::{Layout, alloc_zeroed, dealloc};

/// Zeroed memory aligned for a region, freed on drop.
pub struct Mem {
    pub ptr: *mut u8,
    layout: Layout,
}

impl Mem {
    pub fn new(len: usize) -> Self {
        let layout = Layout::from_size_align(len.max(1), 64).unwrap();
        // SAFETY:
        // - The layout's size is non-zero.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Self { ptr, layout }
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Writes `bytes` at `offset` (tests that corrupt a region).
    pub fn poke(&mut self, offset: usize, bytes: &[u8]) {
        assert!(offset + bytes.len() <= self.len());
        // SAFETY:
        // - In bounds (asserted); `&mut self`: no view of this memory is alive.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(offset), bytes.len()) }
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        // SAFETY:
        // - Allocated in `new` with this layout; no view outlives `self`.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}
