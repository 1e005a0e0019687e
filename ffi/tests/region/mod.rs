//! What the tests of the shared regions' C ABI share: the last error's
//! text, and zeroed memory aligned for a region.
#![allow(dead_code, reason = "each test file uses part of it")]

use core::alloc::Layout;
use core::ffi::{CStr, c_void};
use std::alloc::{alloc_zeroed, dealloc};

use tripwire_ffi::tw_last_error_message;

pub fn last_error() -> String {
    // SAFETY:
    // - A NUL-terminated string valid until the next failing call on this
    //   thread; copied here.
    unsafe { CStr::from_ptr(tw_last_error_message()) }.to_str().unwrap().to_owned()
}

/// Zeroed memory aligned to 64 bytes, freed on drop.
pub struct Mem {
    pub ptr: *mut u8,
    layout: Layout,
}

impl Mem {
    pub fn new(len: usize) -> Self {
        let layout = Layout::from_size_align(len.max(1), 64).unwrap();
        // SAFETY:
        // - Non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Mem { ptr, layout }
    }

    pub fn void(&self) -> *mut c_void {
        self.ptr.cast()
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }

    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY:
        // - `len` initialised bytes; `&mut self`: no handle is in use.
        unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len()) }
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        // SAFETY:
        // - Allocated in `new` with this layout; no handle outlives it.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}
