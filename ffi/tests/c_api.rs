//! Compiles the C and C++ tests in `tests/c/` against the static library
//! this test run built (and, for the old-header test, the shared one too)
//! and `include/`, with `-Wall -Wextra -Werror
//! -Wconversion -Wsign-conversion -Wshadow -pedantic` (and `-Wold-style-cast` for
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

/// Which library a test links.
#[derive(Clone, Copy, PartialEq)]
enum Link {
    Static,
    /// `libtripwire_ffi.so`, found at run time through an rpath.
    Shared,
}

/// Builds `source` (in `tests/c/`) twice (plain, sanitized) against the
/// static library and runs both binaries.
fn build_and_run(source: &str, cpp: bool) {
    build_and_run_linked(source, cpp, Link::Static, &[]);
}

/// As [`build_and_run`], against the library `link` names, with `extra`
/// linker arguments.
fn build_and_run_linked(source: &str, cpp: bool, link: Link, extra_link: &[&str]) {
    build_and_run_file(&repo_root().join("ffi/tests/c").join(source), cpp, link, extra_link);
}

/// Builds the C or C++ file `src` twice (plain, sanitized) against the
/// library `link` names and runs both binaries.
fn build_and_run_file(src: &Path, cpp: bool, link: Link, extra_link: &[&str]) {
    let source = src.file_name().unwrap().to_str().unwrap();
    let deps = deps_dir();
    let mut lib = deps.join(if link == Link::Static { "libtripwire_ffi.a" } else { "libtripwire_ffi.so" });
    assert!(lib.exists(), "{} is missing: cargo builds it with the tests", lib.display());
    let out_dir = deps.join("c-tests");
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut link_flags = Vec::new();
    if link == Link::Shared {
        // The library's soname (build.rs) is libtripwire.so.0, which is
        // what the program looks for at run time, through the rpath.
        let dir = out_dir.join("shared");
        std::fs::create_dir_all(&dir).unwrap();
        let so = dir.join("libtripwire.so.0");
        std::fs::copy(&lib, &so).unwrap();
        lib = so;
        link_flags.push(format!("-Wl,-rpath,{}", dir.display()));
    }
    let root = repo_root();
    let (compiler, std_flag, lang_flags) = if cpp {
        (std::env::var("CXX").unwrap_or_else(|_| "c++".into()), "-std=c++17", &["-Wold-style-cast"][..])
    } else {
        (std::env::var("CC").unwrap_or_else(|_| "cc".into()), "-std=c11", &[][..])
    };
    let stem = Path::new(source).file_stem().unwrap().to_str().unwrap().to_owned();
    let ext = match (cpp, link) {
        (true, _) => "_cpp",
        (false, Link::Static) => "",
        (false, Link::Shared) => "_shared",
    };
    for (suffix, extra) in
        [("", &[][..]), ("_san", &["-fsanitize=address,undefined", "-fno-sanitize-recover=all"][..])]
    {
        let exe = out_dir.join(format!("{stem}{ext}{suffix}"));
        let status = Command::new(&compiler)
            .args([std_flag, "-Wall", "-Wextra", "-Werror", "-g", "-O1"])
            .args(["-Wconversion", "-Wsign-conversion", "-Wshadow", "-pedantic"])
            .args(lang_flags)
            .args(extra)
            .arg("-I")
            .arg(root.join("include"))
            .arg(src)
            .arg(&lib)
            .args(&link_flags)
            .args(extra_link)
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
#[cfg_attr(miri, ignore)] // runs a C compiler, and the test forks
fn one_rate_limiter_shared_by_several_processes() {
    build_and_run("test_rate_limiter.c", false);
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

/// The out-of-line functions the inline fast path may call, wrapped so
/// that the test counts the calls its own code makes to them.
const WRAPPED: &[&str] = &[
    "-Wl,--wrap=tw_breaker_try_acquire",
    "-Wl,--wrap=tw_breaker_try_acquire_at",
    "-Wl,--wrap=tw_breaker_record",
    "-Wl,--wrap=tw_breaker_record_at",
    "-Wl,--wrap=tw_breaker_record_healthy_success",
];

#[test]
#[cfg_attr(miri, ignore)] // runs a C compiler
fn inline_fast_path_decides_as_the_library_does() {
    build_and_run_linked("test_fast_path.c", false, Link::Static, WRAPPED);
}

#[test]
#[cfg_attr(miri, ignore)] // runs a C++ compiler
fn cpp_wrapper() {
    build_and_run("test_tripwire.cpp", true);
}

#[test]
#[cfg_attr(miri, ignore)] // runs a C compiler
fn a_program_built_against_an_older_header_runs_with_this_library() {
    build_and_run_linked("test_old_header.c", false, Link::Static, &[]);
    build_and_run_linked("test_old_header.c", false, Link::Shared, &[]);
}

/// `include/tripwire_inline.h`, hand-written C, compiled as a translation
/// unit of its own, as C and as C++, with the warnings of the tests above:
/// it includes `tripwire.h` itself, and `tripwire.h`'s own include of it
/// at its end is then a no-op.
#[test]
#[cfg_attr(miri, ignore)] // runs a C and a C++ compiler
fn the_inline_header_compiles_alone_as_c_and_cpp() {
    let header = repo_root().join("include/tripwire_inline.h");
    for (compiler, lang, std_flag) in [
        (std::env::var("CC").unwrap_or_else(|_| "cc".into()), "c", "-std=c11"),
        (std::env::var("CXX").unwrap_or_else(|_| "c++".into()), "c++", "-std=c++17"),
    ] {
        let mut cmd = Command::new(&compiler);
        cmd.args([std_flag, "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pedantic", "-Wshadow"]);
        cmd.args(["-Wconversion", "-Wsign-conversion", "-Wno-unused-function"]);
        if lang == "c++" {
            cmd.arg("-Wold-style-cast");
        }
        let status = cmd
            .args(["-x", lang])
            .arg(&header)
            .status()
            .unwrap_or_else(|e| panic!("could not run `{compiler}`: {e}"));
        assert!(status.success(), "include/tripwire_inline.h does not compile alone as {lang}");
    }
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
    build_and_run_file(&src, false, Link::Static, &[]);
    // The example leaves its object for the next worker; this test is the last.
    // SAFETY:
    // - A NUL-terminated name; a missing object is only an error return.
    unsafe { libc::shm_unlink(c"/binance-orders-cap".as_ptr()) };
}
