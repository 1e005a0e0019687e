//! `struct_size`: how the config structs C passes by pointer stay
//! compatible across releases of one soname.
//!
//! Each such struct starts with `uint32_t struct_size`, which the header's
//! `tw_<struct>_default()` sets to `sizeof` the struct as the *caller's*
//! header declares it (a `static inline` passing `sizeof *out` to the
//! exported `tw_<struct>_init(out, size)`). The library then reads exactly
//! that many bytes, never more:
//!
//! - a size this library knows (one of [`Versioned::SIZES`], each the end
//!   of a group of fields some header had): the caller's bytes, and the
//!   library's defaults for the fields after them;
//! - a larger size, from a newer header: accepted if every byte past the
//!   fields this library knows is zero (the newer fields left unset), so a
//!   program never silently loses a setting it asked for (the rule of
//!   Linux's `copy_struct_from_user`); at most [`MAX_STRUCT_SIZE`] bytes
//!   and a multiple of 8, so that a garbage size is refused before a byte
//!   past the struct is read;
//! - anything else (smaller than the first layout, between two layouts):
//!   `TW_STATUS_INVALID_STRUCT_SIZE`, with a message naming the struct's
//!   `struct_size`.
//!
//! Output structs (`tw_<struct>_init`, `tw_breaker_get_config`) are written
//! by the same rule: the first `size` bytes, `struct_size` = `size`, zeros
//! past the fields this library knows.

use core::fmt::{self, Display};

use crate::status::{fail, tw_status};

/// The largest `struct_size` accepted: a page, as Linux caps `openat2`'s
/// `struct open_how`. A size above it is garbage, not a newer header.
pub(crate) const MAX_STRUCT_SIZE: usize = 4096;

const _: () = assert!(MAX_STRUCT_SIZE == 4096, "the message in `check` says 4096");

/// A C struct whose first field is `uint32_t struct_size`.
///
/// # Safety
/// `Self` is `#[repr(C)]`, starts with a `u32` at offset 0, has no padding
/// (so every prefix of [`Versioned::SIZES`] bytes holds whole fields), and
/// every bit pattern of its bytes is a valid value (integers, floats and raw
/// pointers only). `SIZES` is ascending, each a multiple of 8 and the end of
/// a field, and its last entry is `size_of::<Self>()`.
pub(crate) unsafe trait Versioned: Copy {
    /// The C name, for messages (`"tw_breaker_config"`).
    const NAME: &'static str;
    /// The sizes of the layouts this library accepts, oldest first.
    const SIZES: &'static [usize];
    /// The default value (its `struct_size` is ignored).
    fn defaults() -> Self;
}

/// The sizes, written as C would: `64, 104 or 112`.
struct Sizes(&'static [usize]);

impl Display for Sizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            let sep = match i {
                0 => "",
                i if i + 1 == self.0.len() => " or ",
                _ => ", ",
            };
            write!(f, "{sep}{s}")?;
        }
        Ok(())
    }
}

/// Whether `size` is one this library can read or write for `T` (the
/// module's rules, but the zero check of a newer header's bytes).
fn check<T: Versioned>(fn_name: &str, size: usize) -> Result<(), tw_status> {
    let known = T::SIZES[T::SIZES.len() - 1];
    // A layout this library knows?
    if T::SIZES.contains(&size) {
        return Ok(());
    }
    let name = T::NAME;
    let why = if size < T::SIZES[0] {
        "smaller than the first layout"
    } else if size < known {
        "between two layouts"
    } else if size > MAX_STRUCT_SIZE || !size.is_multiple_of(8) {
        "not the size of any layout (at most 4096, a multiple of 8)"
    } else {
        // A newer header's: the caller checks its bytes past ours.
        return Ok(());
    };
    Err(fail(
        tw_status::InvalidStructSize,
        format_args!(
            "{fn_name}: {name}.struct_size = {size}, {why}: expected {} bytes, or more from a newer \
             header; {name}_default() sets it",
            Sizes(T::SIZES)
        ),
    ))
}

/// Reads a caller's `T` at `p` by the module's rules: the caller's fields,
/// the defaults for those its header did not have.
///
/// # Safety
/// `p` is non-null, and points to `struct_size` readable bytes (the
/// caller's struct, of its header's layout); the first four are its
/// `struct_size`.
pub(crate) unsafe fn read_in<T: Versioned>(fn_name: &str, p: *const T) -> Result<T, tw_status> {
    let bytes = p.cast::<u8>();
    let mut size = [0u8; 4];
    // SAFETY:
    // - Every layout starts with the 4-byte `struct_size` (the caller's
    //   guarantee); byte copies need no alignment.
    unsafe { core::ptr::copy_nonoverlapping(bytes, size.as_mut_ptr(), 4) };
    let size = u32::from_ne_bytes(size) as usize;
    check::<T>(fn_name, size)?;
    let known = size_of::<T>();
    // Does a newer header's struct set a field this library cannot honour?
    for at in known..size {
        // SAFETY:
        // - `at` < `size`, which `check` bounded and the caller's struct
        //   holds (the caller's guarantee).
        if unsafe { bytes.add(at).read() } != 0 {
            return Err(fail(
                tw_status::InvalidStructSize,
                format_args!(
                    "{fn_name}: {name}.struct_size = {size}, larger than this library's {known} bytes, \
                     and byte {at} is not zero: the program sets a field of a newer header than this \
                     library's ({version})",
                    name = T::NAME,
                    version = env!("CARGO_PKG_VERSION"),
                ),
            ));
        }
    }
    let mut value = T::defaults();
    // SAFETY:
    // - The source holds `size` ≥ `min` readable bytes (the caller's
    //   guarantee); `value` is a `T` of `known` ≥ `min` bytes.
    // - `min` is a layout's size (`check`), so whole fields are copied, and
    //   any bytes make a valid `T` (`Versioned`'s contract).
    unsafe { core::ptr::copy_nonoverlapping(bytes, (&raw mut value).cast::<u8>(), size.min(known)) };
    Ok(value)
}

/// Writes `value` to a caller's `T` of `size` bytes by the module's rules:
/// its first `size` bytes, with `struct_size` = `size` and zeros past the
/// fields this library knows.
///
/// # Safety
/// `out` is non-null and points to `size` writable bytes.
pub(crate) unsafe fn write_out<T: Versioned>(fn_name: &str, out: *mut T, size: usize, value: T) -> tw_status {
    if let Err(status) = check::<T>(fn_name, size) {
        return status;
    }
    let known = size_of::<T>();
    let mut value = value;
    let bytes = out.cast::<u8>();
    // SAFETY:
    // - `value` starts with its `u32` `struct_size` (`Versioned`'s
    //   contract), and `check` bounded `size` by `MAX_STRUCT_SIZE`.
    // - The destination holds `size` ≥ `min` writable bytes (this
    //   function's contract); `value` has `known` ≥ `min`; the two are
    //   distinct objects.
    unsafe {
        (&raw mut value).cast::<u32>().write(size as u32);
        core::ptr::copy_nonoverlapping((&raw const value).cast::<u8>(), bytes, size.min(known));
        if size > known {
            bytes.add(known).write_bytes(0, size - known);
        }
    }
    tw_status::Ok
}
