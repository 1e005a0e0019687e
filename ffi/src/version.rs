//! The library's version: as macros in the header (for the compiler) and
//! from `tw_version()` (for the library a program actually loaded).
//!
//! The macros are plain numbers written here, because cbindgen copies
//! literals into the header and cannot evaluate `env!`; the assertions
//! below fail the build when they drift from the crate's version in
//! `Cargo.toml`, and `.ci/run` fails when the header drifts from them.

use core::ffi::c_char;

use crate::status::ffi_body;

/// Major version of this header. With `TW_VERSION_MINOR` and
/// `TW_VERSION_PATCH`, the version of the library the header belongs to;
/// `tw_version()` is the version of the library a program loaded, so
/// comparing the two catches a program running with another build than
/// the one it was compiled against.
pub const TW_VERSION_MAJOR: u32 = 0;
/// Minor version of this header (see `TW_VERSION_MAJOR`).
pub const TW_VERSION_MINOR: u32 = 1;
/// Patch version of this header (see `TW_VERSION_MAJOR`).
pub const TW_VERSION_PATCH: u32 = 0;

/// Parses one decimal component of a version at compile time.
const fn parse(text: &str) -> u32 {
    let bytes = text.as_bytes();
    assert!(!bytes.is_empty(), "an empty version component");
    let mut value = 0u32;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "a version component that is not a number");
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

const _: () = {
    assert!(
        TW_VERSION_MAJOR == parse(env!("CARGO_PKG_VERSION_MAJOR")),
        "TW_VERSION_MAJOR differs from the version in Cargo.toml: update ffi/src/version.rs and regenerate the header"
    );
    assert!(
        TW_VERSION_MINOR == parse(env!("CARGO_PKG_VERSION_MINOR")),
        "TW_VERSION_MINOR differs from the version in Cargo.toml: update ffi/src/version.rs and regenerate the header"
    );
    assert!(
        TW_VERSION_PATCH == parse(env!("CARGO_PKG_VERSION_PATCH")),
        "TW_VERSION_PATCH differs from the version in Cargo.toml: update ffi/src/version.rs and regenerate the header"
    );
};

/// The library's version, e.g. `"0.1.0"` (major.minor.patch, as in
/// `TW_VERSION_MAJOR` / `_MINOR` / `_PATCH` of the header it was built
/// with, plus any pre-release suffix). A static string; never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn tw_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    ffi_body!("tw_version", on_panic = VERSION.as_ptr().cast(); { VERSION.as_ptr().cast() })
}
