//! loom model of keyed breakers' eviction word: a call taking a key's
//! breaker races a sweep evicting it, and exactly one of them wins. Run
//! with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p tripwire-breaker --release --target-dir target/loom --features keyed --test loom_keyed`.
//!
//! The map itself is papaya's (its own atomics, not modelled here); what
//! this crate adds on top is the `seen` word of each entry, modelled here
//! through `tripwire::keyed::LoomSeen`, and the rule that a retired entry
//! is removed only if the key still maps to it (papaya's `remove_if`).
#![cfg(all(loom, feature = "keyed"))]

mod loom_support;

use loom::sync::Arc;
use loom::thread;
use loom_support::model;
use tripwire::keyed::LoomSeen;

/// A call in period 2 takes an entry last used in period 1 while a sweep
/// that began period 3 retires what was idle in period 2: one wins.
/// Guards: the take raises the word with a CAS from the value it loaded,
/// and the retire swaps it from the value it judged idle, so neither
/// overwrites the other.
#[test]
fn a_call_and_a_sweep_never_both_win_one_entry() {
    model(["the call took the entry", "the sweep retired the entry"], |sides| {
        let seen = Arc::new(LoomSeen::new(1));
        let sweep = {
            let seen = seen.clone();
            thread::spawn(move || seen.retire_if_idle(2))
        };
        let took = seen.take(2);
        let retired = sweep.join().unwrap();
        assert!(took != retired, "took {took}, retired {retired}: both or neither");
        assert_eq!(seen.is_retired(), retired);
        sides.saw(usize::from(retired));
    });
}
