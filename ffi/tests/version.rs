//! The version macros of `include/tripwire.h`, the Rust constants they are
//! generated from, and `tw_version()` all say the version in the
//! workspace's `Cargo.toml`.

use std::ffi::CStr;
use std::path::Path;

use tripwire_ffi::{TW_VERSION_MAJOR, TW_VERSION_MINOR, TW_VERSION_PATCH, tw_version};

fn repo_file(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `version = "..."` of `[workspace.package]`, read from the file itself.
fn cargo_toml_version() -> String {
    let toml = repo_file("Cargo.toml");
    let section = toml.split("[workspace.package]").nth(1).expect("a [workspace.package] section");
    let line = section
        .lines()
        .take_while(|l| !l.starts_with('['))
        .find(|l| l.trim_start().starts_with("version"))
        .expect("a version in [workspace.package]");
    line.split('"').nth(1).expect("a quoted version").to_owned()
}

/// `(major, minor, patch)` of a version such as `1.2.3-rc.1`.
fn numbers(version: &str) -> (u32, u32, u32) {
    let core = version.split(['-', '+']).next().unwrap();
    let parts: Vec<u32> = core.split('.').map(|p| p.parse().expect("a number")).collect();
    assert_eq!(parts.len(), 3, "{version} is not major.minor.patch");
    (parts[0], parts[1], parts[2])
}

/// The value of `#define NAME value` in the header.
fn header_define(header: &str, name: &str) -> u32 {
    let prefix = format!("#define {name} ");
    let line =
        header.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no {name} in tripwire.h"));
    line[prefix.len()..].trim().parse().unwrap_or_else(|e| panic!("{line}: {e}"))
}

#[test]
#[cfg_attr(miri, ignore)] // reads files, which miri's isolation forbids
fn header_macros_say_the_version_in_cargo_toml() {
    let header = repo_file("include/tripwire.h");
    let macros = (
        header_define(&header, "TW_VERSION_MAJOR"),
        header_define(&header, "TW_VERSION_MINOR"),
        header_define(&header, "TW_VERSION_PATCH"),
    );
    assert_eq!(macros, numbers(&cargo_toml_version()));
    assert_eq!(macros, (TW_VERSION_MAJOR, TW_VERSION_MINOR, TW_VERSION_PATCH));
}

#[test]
#[cfg_attr(miri, ignore)] // reads files, which miri's isolation forbids
fn tw_version_is_the_version_in_cargo_toml() {
    // SAFETY:
    // - `tw_version` returns a static NUL-terminated string.
    let version = unsafe { CStr::from_ptr(tw_version()) }.to_str().unwrap();
    assert_eq!(version, cargo_toml_version());
    assert_eq!(numbers(version), (TW_VERSION_MAJOR, TW_VERSION_MINOR, TW_VERSION_PATCH));
}
