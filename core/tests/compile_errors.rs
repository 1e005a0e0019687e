//! The compile errors a user meets on the guide's call patterns name the
//! missing piece and the fix; each `.stderr` in `tests/ui/` pins one
//! (`TRYBUILD=overwrite` rewrites them).
// With `tokio`, as every CI run of the tests has it: rustc lists the
// `Timer`s there are, so the text depends on it.
#![cfg(all(feature = "async", feature = "tokio", not(loom), not(miri)))]

#[test]
fn missing_pieces_are_named_with_their_fix() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    // tower's call patterns (`oneshot`, `ready`, `poll_ready`) on stacks
    // that do not fit: the bound that is missing, never E0599.
    #[cfg(feature = "tower")]
    cases.compile_fail("tests/ui/tower/*.rs");
    #[cfg(feature = "reqwest")]
    cases.compile_fail("tests/ui/reqwest/*.rs");
}
