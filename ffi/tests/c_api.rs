//! Compiles the C and C++ tests in `tests/c/` against the static library
//! this test run built and `include/`, with `-Wall -Wextra -Werror
//! -Wconversion -Wsign-conversion -Wshadow` (and `-Wold-style-cast` for
//! C++), once plainly and once with `-fsanitize=address,undefined`, and
//! runs them.
//!
//! Needs a C and a C++ compiler (`cc` and `c++`, or `$CC` and `$CXX`).
//! Skipped under miri, which cannot run a C compiler or fork.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory holding this test binary: cargo writes the library's
/// `libtripwire_ffi.a` to the same `deps` directory.
fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent().expect("a deps directory").to_path_buf()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// Builds `source` (in `tests/c/`) twice (plain, sanitized) and runs both binaries.
fn build_and_run(source: &str, cpp: bool) {
    build_and_run_file(&repo_root().join("ffi/tests/c").join(source), cpp);
}

/// Builds the C or C++ file `src` twice (plain, sanitized) and runs both binaries.
fn build_and_run_file(src: &Path, cpp: bool) {
    let source = src.file_name().unwrap().to_str().unwrap();
    let deps = deps_dir();
    let lib = deps.join("libtripwire_ffi.a");
    assert!(lib.exists(), "{} is missing: cargo builds it with the tests", lib.display());
    let root = repo_root();
    let out_dir = deps.join("c-tests");
    std::fs::create_dir_all(&out_dir).unwrap();
    let (compiler, std_flag, lang_flags) = if cpp {
        (std::env::var("CXX").unwrap_or_else(|_| "c++".into()), "-std=c++17", &["-Wold-style-cast"][..])
    } else {
        (std::env::var("CC").unwrap_or_else(|_| "cc".into()), "-std=c11", &[][..])
    };
    let stem = Path::new(source).file_stem().unwrap().to_str().unwrap().to_owned();
    let ext = if cpp { "_cpp" } else { "" };
    for (suffix, extra) in
        [("", &[][..]), ("_san", &["-fsanitize=address,undefined", "-fno-sanitize-recover=all"][..])]
    {
        let exe = out_dir.join(format!("{stem}{ext}{suffix}"));
        let status = Command::new(&compiler)
            .args([std_flag, "-Wall", "-Wextra", "-Werror", "-g", "-O1"])
            .args(["-Wconversion", "-Wsign-conversion", "-Wshadow"])
            .args(lang_flags)
            .args(extra)
            .arg("-I")
            .arg(root.join("include"))
            .arg(src)
            .arg(&lib)
            .args(["-lpthread", "-ldl", "-lm", "-o"])
            .arg(&exe)
            .status()
            .unwrap_or_else(|e| panic!("could not run `{compiler}` (a C/C++ compiler is needed): {e}"));
        assert!(status.success(), "compiling {source}{suffix} failed");
        let output = Command::new(&exe).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        print!("{stdout}");
        assert!(output.status.success(), "{}{suffix} failed:\n{stdout}\n{stderr}", exe.display());
    }
}

#[test]
#[cfg_attr(miri, ignore)] // runs a C compiler
fn c_api_from_c() {
    build_and_run("test_tripwire.c", false);
}

#[test]
#[cfg_attr(miri, ignore)] // runs a C compiler, and the test forks
fn one_breaker_shared_by_several_processes() {
    build_and_run("test_shared.c", false);
}

#[test]
#[cfg_attr(miri, ignore)] // runs a C compiler, and the test forks
fn one_bulkhead_shared_by_several_processes() {
    build_and_run("test_shared_bulkhead.c", false);
}

#[test]
#[cfg_attr(miri, ignore)] // runs a C++ compiler, and the test forks
fn shared_bulkhead_from_cpp() {
    build_and_run("test_shared_bulkhead.cpp", true);
}

#[test]
#[cfg_attr(miri, ignore)] // runs a C compiler, and the fleet's threads use sockets
fn fleet_from_c() {
    build_and_run("test_fleet.c", false);
}

#[test]
#[cfg_attr(miri, ignore)] // runs a C++ compiler
fn cpp_wrapper() {
    build_and_run("test_tripwire.cpp", true);
}

/// The block after `marker` in `ffi/README.md`, fenced as `c`.
fn readme_block(marker: &str) -> String {
    let readme = std::fs::read_to_string(repo_root().join("ffi/README.md")).unwrap();
    let after = &readme[readme.find(marker).unwrap_or_else(|| panic!("no `{marker}` in ffi/README.md"))..];
    let start = after.find("```c\n").expect("a C block after the marker") + "```c\n".len();
    let len = after[start..].find("```").expect("the block's end");
    after[start..start + len].to_owned()
}

#[test]
#[cfg_attr(miri, ignore)] // runs a C compiler
fn readme_shared_bulkhead_example() {
    let code = readme_block("<!-- ffi/tests/c_api.rs compiles and runs the next block -->");
    assert!(code.contains("tw_shared_bulkhead_open_in"), "the shared bulkhead example");
    let dir = deps_dir().join("c-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("readme_shared_bulkhead.c");
    std::fs::write(&src, code).unwrap();
    build_and_run_file(&src, false);
    // The example leaves its object for the next worker; this test is the last.
    // SAFETY:
    // - A NUL-terminated name; a missing object is only an error return.
    unsafe { libc::shm_unlink(c"/binance-orders-cap".as_ptr()) };
}
