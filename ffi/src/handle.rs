//! Ownership of the opaque C handles, in one place: which Rust value each
//! handle type stands for, how a `_new` hands a boxed value to C, how a
//! `_free` takes it back, and how a checked pointer becomes a reference.
//!
//! Every exported function reaches a handle's value through this file, so
//! the cast from the C type to the Rust one is written once per handle type
//! (its [`Handle`] impl, next to the type) and nowhere else.
//!
//! `tw_breaker` is the one handle that is not [`Boxed`]: it points into a
//! tagged allocation (`Owned` in `breaker.rs`) so that `tw_breaker_free`
//! can tell a heap breaker from one in shared memory, which it must not
//! free. Reaching its value still goes through [`handle!`].

/// An opaque C handle type: C only ever holds a pointer to it, and a live
/// handle points to one [`Handle::Rust`] value.
///
/// # Safety
/// Every non-null `*const Self` the library gives to C points to a valid
/// `Self::Rust` for as long as the handle is live, and that value is only
/// touched through shared references (and atomics) unless the function
/// says the caller keeps it to one thread.
pub(crate) unsafe trait Handle {
    /// The value behind the handle.
    type Rust;
}

/// A [`Handle`] whose value `_new` allocates with [`box_into_out`] and
/// `_free` releases with [`free_box`].
///
/// # Safety
/// Every handle of this type the library gives to C comes from
/// [`box_into_out`] and from nothing else.
pub(crate) unsafe trait Boxed: Handle {}

/// Moves `value` to the heap and writes the handle C keeps to `*out`, as
/// every `_new` does last; the handle goes back to [`free_box`] exactly
/// once.
///
/// # Safety
/// `out` is non-null and writable.
pub(crate) unsafe fn box_into_out<H: Boxed>(out: *mut *mut H, value: H::Rust) {
    let handle = Box::into_raw(Box::new(value)).cast::<H>();
    // SAFETY:
    // - Non-null and writable (this function's contract).
    unsafe { out.write(handle) };
}

/// Frees the value behind a handle from [`box_into_out`]. NULL does
/// nothing, as every `_free` promises C.
///
/// # Safety
/// `handle` is NULL or a live handle from [`box_into_out`], and no one uses
/// it during or after this call.
pub(crate) unsafe fn free_box<H: Boxed>(handle: *mut H) {
    if !handle.is_null() {
        // SAFETY:
        // - `H: Boxed`, so a non-null handle came from `Box::into_raw` of
        //   an `H::Rust` in `box_into_out`; the caller guarantees it is
        //   not used again, so the box is dropped exactly once.
        drop(unsafe { Box::from_raw(handle.cast::<H::Rust>()) });
    }
}

/// The value behind a non-null, live handle.
///
/// # Safety
/// `handle` is non-null and live for `'a`.
#[inline(always)]
pub(crate) unsafe fn rust_ref<'a, H: Handle>(handle: *const H) -> &'a H::Rust {
    // SAFETY:
    // - Non-null and live (this function's contract); `H: Handle` says a
    //   live handle points to a valid `H::Rust` only shared meanwhile.
    unsafe { &*handle.cast::<H::Rust>() }
}

/// The value behind a non-null, live handle that no one else uses
/// meanwhile.
///
/// # Safety
/// `handle` is non-null and live for `'a`, and no other reference to its
/// value exists meanwhile (the function's docs keep it to one thread).
#[inline(always)]
pub(crate) unsafe fn rust_mut<'a, H: Handle>(handle: *mut H) -> &'a mut H::Rust {
    // SAFETY:
    // - Non-null, live and unaliased (this function's contract); `H:
    //   Handle` says a live handle points to a valid `H::Rust`.
    unsafe { &mut *handle.cast::<H::Rust>() }
}

/// Checks a handle argument inside `ffi_body!` and gives its value:
/// `TW_STATUS_NULL_ARGUMENT` with a message naming it if it is NULL.
/// `handle!(name, p)` gives `&Rust`; `handle!(name, mut p)` gives
/// `&mut Rust`, for the few handles one thread uses at a time.
macro_rules! handle {
    ($fn_name:expr, mut $p:ident) => {{
        let p = $crate::status::arg!($fn_name, $p);
        // SAFETY:
        // - `p` is non-null (checked just above).
        // - The exported function's `# Safety` section makes the caller
        //   guarantee that a non-null handle is live and used by no other
        //   thread during the call.
        unsafe { $crate::handle::rust_mut(p) }
    }};
    ($fn_name:expr, $p:ident) => {{
        let p = $crate::status::arg!($fn_name, $p);
        // SAFETY:
        // - `p` is non-null (checked just above).
        // - The exported function's `# Safety` section makes the caller
        //   guarantee that a non-null handle is live for the call.
        unsafe { $crate::handle::rust_ref(p) }
    }};
}

pub(crate) use handle;
