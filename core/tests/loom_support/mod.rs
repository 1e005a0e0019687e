//! What the loom models share: a run of `loom::model` that counts the
//! interleavings loom explored and how often each side of the model's race
//! came out, and fails if the model stopped racing.
//!
//! loom 0.7 reorders only the most recent access to each atomic, so a
//! model whose threads look like they race may be explored in a single
//! interleaving and check nothing concurrent. Each model therefore names
//! the sides its race can come out on and counts them; [`model`] fails
//! unless loom explored more than one interleaving and reached every side.
//! The counts are printed (run with `--nocapture` to see them).
//!
//! The counters are `std` atomics: loom neither sees nor schedules them,
//! they only tally what the explored interleavings did.
#![allow(dead_code, reason = "each model file uses part of the support")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How often each named side of a race came out, over every interleaving.
pub struct Sides<const N: usize> {
    names: [&'static str; N],
    seen: [AtomicUsize; N],
    runs: AtomicUsize,
}

impl<const N: usize> Sides<N> {
    /// Notes that this interleaving came out on side `side`.
    pub fn saw(&self, side: usize) {
        // Relaxed: a tally read after the model has finished.
        self.seen[side].fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs `f` under `loom::model`, then checks that loom explored more than
/// one interleaving and that every side in `names` came out at least once.
///
/// Skips the check when `LOOM_CHECKPOINT_FILE` is set: replaying a saved
/// interleaving explores only what follows it. The models are meant for
/// `LOOM_MAX_PREEMPTIONS=2` (as CI runs them); every side is reached from 1
/// up, none of the races at 0.
pub fn model<const N: usize>(names: [&'static str; N], f: impl Fn(&Sides<N>) + Send + Sync + 'static) {
    let sides = Arc::new(Sides {
        names,
        seen: core::array::from_fn(|_| AtomicUsize::new(0)),
        runs: AtomicUsize::new(0),
    });
    let tally = sides.clone();
    loom::model(move || {
        // Relaxed: as in `saw`.
        tally.runs.fetch_add(1, Ordering::Relaxed);
        f(&tally);
    });
    let runs = sides.runs.load(Ordering::Relaxed);
    let seen: Vec<_> = (0..N).map(|i| (sides.names[i], sides.seen[i].load(Ordering::Relaxed))).collect();
    let name = std::thread::current().name().unwrap_or("model").to_owned();
    println!("{name}: {runs} interleavings; {seen:?}");
    if std::env::var_os("LOOM_CHECKPOINT_FILE").is_some() {
        return;
    }
    // With no preemption allowed, threads only switch where one blocks or
    // yields: too few for most races.
    let bound = std::env::var("LOOM_MAX_PREEMPTIONS").unwrap_or_else(|_| "unset".into());
    assert!(
        runs > 1,
        "{name}: loom explored a single interleaving, so nothing raced (LOOM_MAX_PREEMPTIONS={bound}; run with 2)"
    );
    for (side, count) in seen {
        assert!(
            count > 0,
            "{name}: no interleaving came out as {side:?} ({runs} explored, LOOM_MAX_PREEMPTIONS={bound}; run with 2)"
        );
    }
}

/// Yields to the other threads until `done` holds: the way to make one
/// thread wait for another's step, which loom would otherwise never
/// schedule in between.
pub fn spin_until(mut done: impl FnMut() -> bool) {
    while !done() {
        loom::thread::yield_now();
    }
}

/// The order in which a model's threads passed the points they mark: loom
/// runs one thread at a time and switches only at its own operations, so
/// a `std` counter taken at each point numbers the points in the order of
/// the interleaving. For races whose outcome the breaker's state does not
/// show afterwards (a late outcome refused or counted and then cleared
/// leaves the same state), the marks around each side's calls tell where
/// one ended against the other.
#[derive(Clone, Default)]
pub struct Steps(Arc<AtomicUsize>);

impl Steps {
    /// The number of this point in the interleaving.
    pub fn mark(&self) -> usize {
        // Relaxed: loom runs one thread at a time; the counter orders
        // nothing, it only numbers the points.
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

/// Where `point` (a mark) falls against `span` (from the mark before a
/// thread's first call to the mark after its last): 0 before it began, 1
/// while it ran, 2 after it was done.
pub fn against(point: usize, span: (usize, usize)) -> usize {
    usize::from(point > span.0) + usize::from(point > span.1)
}

/// Whether span `first` ended before span `second` began (each as in
/// [`against`]).
pub fn before(first: (usize, usize), second: (usize, usize)) -> bool {
    first.1 < second.0
}
