//! Installs the C library with `ffi/install.sh`, as a user would, and
//! links programs against the installed tree every supported way
//! (`cmake_consumer/check.sh`): pkg-config static and shared, CMake's
//! `find_package(tripwire CONFIG)` and `pkg_check_modules`, each program
//! run without `LD_LIBRARY_PATH`. Also checks what the libraries export,
//! and the `--prelink-static` archive.
//!
//! Needs what a C user has: `cc`, `c++`, `pkg-config`, `cmake` and GNU
//! binutils (`ld`, `objcopy`, `readelf`, `nm`); `.ci/run` installs them.
//! Each install is a release build (`cargo rustc --release`), shared by the
//! tests of this file. Skipped under miri, which cannot run programs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// Where the installs and the consumer builds go (`target/tmp/install`).
fn work_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("install")
}

/// A relative prefix: install.sh must resolve it against its caller's
/// directory ([`work_dir`]), not against the checkout.
const PLAIN: &str = "tripwire-install-test";
const PRELINKED: &str = "tripwire-install-test-prelinked";

/// Runs a command with no `LD_LIBRARY_PATH` (cargo sets one for tests),
/// and returns its output, failing with both streams if it fails.
fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.env_remove("LD_LIBRARY_PATH").output().unwrap_or_else(|e| {
        panic!("could not run {what} ({cmd:?}): {e}; see this file's doc for the tools needed")
    });
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `ffi/install.sh [options] NAME` from [`work_dir`], once per name.
fn install(name: &'static str, options: &[&str]) -> PathBuf {
    static INSTALLS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut done = INSTALLS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = work_dir();
    if !done.contains(&name) {
        std::fs::create_dir_all(&dir).unwrap();
        let _ = std::fs::remove_dir_all(dir.join(name));
        let out = run(
            Command::new("bash")
                .arg(repo_root().join("ffi/install.sh"))
                .args(options)
                .arg(name)
                .current_dir(&dir),
            "ffi/install.sh",
        );
        print!("{}", String::from_utf8_lossy(&out.stdout));
        done.push(name);
    }
    dir.join(name)
}

fn plain() -> PathBuf {
    install(PLAIN, &[])
}

fn prelinked() -> PathBuf {
    install(PRELINKED, &["--prelink-static"])
}

/// `cmake_consumer/check.sh PREFIX WORKDIR ROUTE`.
fn check(prefix: &Path, route: &str) {
    let work = work_dir().join(format!("{}-{route}", prefix.file_name().unwrap().to_str().unwrap()));
    let out = run(
        Command::new("bash")
            .arg(repo_root().join("ffi/tests/cmake_consumer/check.sh"))
            .arg(prefix)
            .arg(&work)
            .arg(route),
        &format!("check.sh {route}"),
    );
    print!("{}", String::from_utf8_lossy(&out.stdout));
}

/// The functions `include/tripwire.h` declares.
fn header_functions() -> BTreeSet<String> {
    let header = std::fs::read_to_string(repo_root().join("include/tripwire.h")).unwrap();
    let mut names = BTreeSet::new();
    for line in header.lines() {
        // Declarations start in the first column; comments and struct
        // fields do not. `static inline` ones (the `_default()` functions
        // and the inline fast path) are the header's own, not the library's.
        if line.starts_with(|c: char| c.is_ascii_alphabetic())
            && line.contains('(')
            && !line.starts_with("static ")
        {
            let head = &line[..line.find('(').unwrap()];
            let name = head.rsplit([' ', '*']).next().unwrap();
            if name.starts_with("tw_") {
                names.insert(name.to_owned());
            }
        }
    }
    assert!(names.len() > 30, "too few functions found in tripwire.h: {names:?}");
    names
}

/// Defined global (and weak) symbols of an object, archive or shared
/// library, from `readelf` (binutils' `nm` skips the archive's std members:
/// they embed LLVM bitcode, which its plugin fails on).
fn defined_globals(file: &Path, dynamic: bool) -> Vec<String> {
    let out = run(
        Command::new("readelf").arg(if dynamic { "--dyn-syms" } else { "-s" }).arg("-W").arg(file),
        "readelf",
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            // Num: Value Size Type Bind Vis Ndx Name
            let f: Vec<&str> = line.split_whitespace().collect();
            let defined_global =
                f.len() >= 8 && f[0].ends_with(':') && matches!(f[4], "GLOBAL" | "WEAK") && f[6] != "UND";
            defined_global.then(|| f[7].split('@').next().unwrap().to_owned())
        })
        .collect()
}

#[test]
#[cfg_attr(miri, ignore)] // runs install.sh
fn a_relative_prefix_is_taken_from_the_callers_directory() {
    let prefix = plain();
    for file in [
        "include/tripwire.h",
        "include/tripwire_inline.h",
        "include/tripwire.hpp",
        "lib/libtripwire.a",
        "lib/libtripwire.so.0",
    ] {
        assert!(prefix.join(file).exists(), "{} was not installed", prefix.join(file).display());
    }
    let stray = repo_root().join(PLAIN);
    assert!(!stray.exists(), "install.sh {PLAIN} installed into the checkout: {}", stray.display());
}

#[test]
#[cfg_attr(miri, ignore)] // runs a C compiler
fn static_library_links_through_pkg_config_with_and_without_static() {
    check(&plain(), "pkg-config-static");
}

#[test]
#[cfg_attr(miri, ignore)] // runs a C compiler
fn programs_linked_through_tripwire_pc_run_without_ld_library_path() {
    check(&plain(), "pkg-config-shared");
}

#[test]
#[cfg_attr(miri, ignore)] // runs cmake
fn cmake_pkg_check_modules_links_the_static_and_the_shared_library() {
    check(&plain(), "cmake-pkg-config");
}

#[test]
#[cfg_attr(miri, ignore)] // runs cmake
fn cmake_package_gives_the_shared_and_the_static_target() {
    check(&plain(), "cmake-config");
}

#[test]
#[cfg_attr(miri, ignore)] // runs cmake
fn cmake_package_meets_version_requests_by_the_0x_rule() {
    check(&plain(), "cmake-versions");
}

#[test]
#[cfg_attr(miri, ignore)] // runs readelf
fn shared_library_exports_exactly_the_header_functions() {
    let exported: BTreeSet<String> =
        defined_globals(&plain().join("lib/libtripwire.so.0"), true).into_iter().collect();
    let header = header_functions();
    let extra: Vec<_> = exported.difference(&header).collect();
    let missing: Vec<_> = header.difference(&exported).collect();
    assert!(extra.is_empty(), "exported but not in tripwire.h: {extra:?}");
    assert!(missing.is_empty(), "in tripwire.h but not exported: {missing:?}");
}

#[test]
#[cfg_attr(miri, ignore)] // runs install.sh and readelf
fn prelinked_archive_defines_no_global_but_the_header_functions() {
    let others = |archive: &Path| -> (usize, BTreeSet<String>) {
        let all = defined_globals(archive, false);
        let tw: BTreeSet<String> = all.iter().filter(|s| s.starts_with("tw_")).cloned().collect();
        (all.len() - all.iter().filter(|s| s.starts_with("tw_")).count(), tw)
    };
    let (plain_others, plain_tw) = others(&plain().join("lib/libtripwire.a"));
    let (prelinked_others, prelinked_tw) = others(&prelinked().join("lib/libtripwire.a"));
    println!("defined globals other than tw_*: {plain_others} in the archive, {prelinked_others} prelinked");
    assert_eq!(prelinked_others, 0, "the prelinked archive defines globals other than tw_*");
    assert!(plain_others > 0, "the plain archive was expected to carry the Rust runtime's globals");
    assert_eq!(prelinked_tw, header_functions());
    assert_eq!(plain_tw, header_functions());
}

#[test]
#[cfg_attr(miri, ignore)] // runs a C compiler and cmake
fn prelinked_archive_passes_the_c_tests_and_links_every_way() {
    let prefix = prelinked();
    let root = repo_root();
    let dir = work_dir().join("prelinked-c-tests");
    std::fs::create_dir_all(&dir).unwrap();
    for (source, compiler, std_flag) in [
        ("test_tripwire.c", "cc", "-std=c11"),
        ("test_shared.c", "cc", "-std=c11"),
        ("test_tripwire.cpp", "c++", "-std=c++17"),
    ] {
        let exe = dir.join(source.replace('.', "_"));
        run(
            Command::new(compiler)
                .args([std_flag, "-Wall", "-Wextra", "-Werror", "-O1", "-fsanitize=address,undefined"])
                .arg("-I")
                .arg(prefix.join("include"))
                .arg(root.join("ffi/tests/c").join(source))
                .arg(prefix.join("lib/libtripwire.a"))
                .args(["-lpthread", "-ldl", "-lm", "-o"])
                .arg(&exe),
            &format!("compiling {source} against the prelinked archive"),
        );
        print!("{}", String::from_utf8_lossy(&run(&mut Command::new(&exe), source).stdout));
    }
    check(&prefix, "pkg-config-static");
    check(&prefix, "cmake-config");
}

/// Another Rust static library brings its own runtime: its
/// `rust_eh_personality` (the one unmangled global of the Rust runtime)
/// clashes with the plain archive's, but not with the prelinked one's,
/// which is local. `rust_eh_personality` here is a C stand-in for it.
#[test]
#[cfg_attr(miri, ignore)] // runs a C compiler
fn prelinked_archive_links_beside_another_rust_runtime() {
    let dir = work_dir().join("beside-another-runtime");
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("main.c");
    std::fs::write(
        &source,
        r#"#include <stdio.h>
#include <string.h>
#include <tripwire.h>
/* What another Rust static library, built by another rustc, defines. */
int rust_eh_personality(void) { return 7; }
int main(void) {
    tw_breaker_config cfg;
    tw_breaker_config_default(&cfg);
    tw_breaker *b;
    if (tw_breaker_new(&cfg, &b) != TW_STATUS_OK) return 1;
    tw_breaker_free(b);
    printf("tripwire %s beside another runtime (%d)\n", tw_version(), rust_eh_personality());
    return strcmp(tw_version(), "") == 0;
}
"#,
    )
    .unwrap();
    let link = |prefix: &Path, exe: &Path| {
        Command::new("cc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
            .arg("-I")
            .arg(prefix.join("include"))
            .arg(&source)
            .arg(prefix.join("lib/libtripwire.a"))
            .args(["-lpthread", "-ldl", "-lm", "-o"])
            .arg(exe)
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .expect("could not run cc")
    };
    let clash = link(&plain(), &dir.join("plain"));
    let stderr = String::from_utf8_lossy(&clash.stderr);
    assert!(
        !clash.status.success() && stderr.contains("multiple definition of `rust_eh_personality'"),
        "the plain archive was expected to clash:\n{stderr}"
    );
    let exe = dir.join("prelinked");
    let ok = link(&prelinked(), &exe);
    assert!(
        ok.status.success(),
        "linking the prelinked archive failed:\n{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let out = run(&mut Command::new(&exe), "the program linked with the prelinked archive");
    assert!(String::from_utf8_lossy(&out.stdout).contains("beside another runtime (7)"));
}
