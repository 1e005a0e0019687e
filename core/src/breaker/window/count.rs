//! The count-based window: the last N calls, however long ago they were
//! made (resilience4j's `COUNT_BASED` window), exactly.
//!
//! Calls are kept as two bits each (failed, slow) in chunks of [`CHUNK`]
//! (16) calls. The chunk being filled lives in one word, the *cursor*; no
//! clock is read. A success is one `fetch_add` on the cursor: it adds one to
//! the chunk's count, and its two bits are the zeros already there. A
//! failure or a slow call is one CAS that shifts its bits in. A full chunk
//! is *filed* in a ring of [`CHUNKS`] (64) words, at the slot of its number,
//! by whichever caller next finds the cursor full, and the CAS that moves
//! the cursor to the next chunk can count that caller's call. The last N
//! calls are then the cursor's calls plus the newest ones of the chunks
//! filed before it; the trip check reads at most ⌈N / 16⌉ + 1 words.
//!
//! N ranges over 1 to [`MAX_COUNT_WINDOW`] (1000): the window needs the
//! ⌈N / 16⌉ chunks before the cursor's, all in the ring at once and apart
//! from the slot the cursor files into next, so N ≤ 63 × 16; the ring is
//! 512 bytes inside the breaker (plain data, no allocation).
//!
//! # Why a `fetch_add`, and what it costs
//! "The last N calls" is an order over every call, and keeping an order
//! takes one read-modify-write of a shared word per call: a success here
//! is exactly one, which never fails and never retries (a CAS loop paid 2.7
//! of them). Two threads on one count window cost what two threads cost
//! that each make a call writing nothing and then one shared `fetch_add`
//! (1.01× in `benches/RESULTS.md`), and more than a bare `fetch_add` loop,
//! whose adds come back to back. Going below that means giving the order
//! up (striped counts), which this window does not do.
//!
//! # Successes past a full chunk
//! A `fetch_add` cannot look before it adds. One that finds the chunk full
//! (its count was already [`CHUNK`]) still counted its success: the count
//! goes past [`CHUNK`], and those *extra* calls are successes that come
//! after the chunk's. The CAS that moves the cursor on carries them into
//! the next chunk as its first calls (and into the one after, if there are
//! more than a chunk's worth); a reader counts them as the newest calls.
//! The caller whose add found the chunk just full (the count at exactly
//! [`CHUNK`]) moves the cursor on, and the others leave it to that one:
//! their CASes would only make its CAS fail, and each failed CAS is a trip
//! of the cursor's line between cores. Once [`HELP_AFTER`] (64) extras
//! wait (the mover stalled, or died in a shared region), every caller that
//! adds one helps, and adds nothing more until the cursor has moved; so
//! the extras never exceed 64 plus the number of threads recording at
//! once, and the count's 9 bits hold 495 of them.
//!
//! # A success racing a new generation
//! A failure enters the window only through a CAS on a cursor loaded before
//! the generation word (see [the window](super)), so no failure of an older
//! generation ever counts in a newer window. A success's `fetch_add` comes
//! after its load of the generation word: a success whose thread stalls
//! between the two while its generation ends and the next Closed
//! generation's window starts is counted in that newer window. That is at
//! most one success per thread that was recording at that moment; it is
//! counted once in the snapshot either way, and it can only delay a trip
//! by one call, never cause one.
//!
//! # Bit layouts
//!
//! Cursor:
//!
//! | bits    | field   | meaning |
//! | ------- | ------- | ------- |
//! | 0..32   | `marks` | call `i` of the chunk at bit `2i` (failed) and `2i + 1` (slow) |
//! | 32..41  | `calls` | calls in the chunk, 0 to `CHUNK`, then the extra successes past it |
//! | 41..48  | `filed` | chunks filed since the window started, saturating at `CHUNKS` |
//! | 48..64  | `chunk` | the chunk's number, wrapping at 2^16; its slot is `chunk % CHUNKS` |
//!
//! Ring word (a filed chunk):
//!
//! | bits    | field    | meaning |
//! | ------- | -------- | ------- |
//! | 0..32   | `marks`  | the chunk's calls, as in the cursor |
//! | 32..48  | `number` | the chunk's number |
//! | 48..64  | —        | reserved, 0 |
//!
//! # Filing
//! A full cursor `c` is only ever replaced by the next chunk, and only by a
//! caller that first made sure chunk `c` is in its slot: it loads the slot,
//! then the cursor, and, if the cursor is still on `c`'s chunk (the same
//! word but for extra successes added since, which change only the count),
//! CASes the slot from what it loaded to `c`'s chunk. Everything it writes
//! comes from `c`, whose marks no longer change once it is full, so any
//! number of callers may do this at once. One that stalls gets the slot
//! wrong only if its CAS succeeds after the cursor moved on, which needs
//! the slot unchanged since it was loaded; but the cursor moves past chunk
//! `c` only once that slot holds `c`'s chunk (a change, unless it held
//! exactly those bits already), and the slot is next written for chunk
//! `c + CHUNKS` (a change of number). A cursor may come back to the same
//! bits 2^16 chunks later (all successes, say): a caller fooled by that
//! files the bits of the chunk the cursor is really on, which are the same.
//!
//! # Reading
//! `totals` takes a cursor, then for each chunk it needs checks the slot's
//! number: a slot refiled by a later chunk means the cursor has moved on
//! since, and it starts over. A chunk is filed before the cursor passes
//! it, so each slot read holds the chunk expected. Only chunks filed since
//! the window started count (`filed`), which is how a new generation
//! starts with an empty window without touching the ring:
//! [`restart`](CountWindow::restart) moves the cursor to a new, empty chunk
//! with `filed` at 0.
//!
//! # Orderings
//! See [the window's](super); every access here is `SeqCst`.

use crossbeam_utils::CachePadded;

use super::{Gen, Successes, Totals};
use crate::breaker::config::MAX_COUNT_WINDOW;
use crate::sync::{AtomicU64, Ordering};

/// Calls per chunk: two bits each in the cursor's 32 bits of marks.
#[cfg(not(loom))]
const CHUNK: u32 = 16;
/// Slots of the ring of filed chunks.
#[cfg(not(loom))]
const CHUNKS: usize = 64;

// Under loom: small enough that models cross chunks in a few calls.
#[cfg(loom)]
const CHUNK: u32 = 2;
#[cfg(loom)]
const CHUNKS: usize = 4;

const _: () = assert!(MAX_COUNT_WINDOW <= (CHUNKS as u32 - 1) * CHUNK);
const _: () = assert!(CHUNK <= 16 && CHUNKS <= 64 && CHUNKS.is_power_of_two());

/// Extras past which every caller that adds one helps move the cursor on:
/// the bound that holds if the caller whose turn it was stalls or dies.
#[cfg(not(loom))]
const HELP_AFTER: u32 = 64;
#[cfg(loom)]
const HELP_AFTER: u32 = 2;

const CALLS_SHIFT: u32 = 32;
const CALLS_MASK: u64 = 0x1FF;
/// One call more in the cursor's count: a success's whole `fetch_add`.
const ONE_CALL: u64 = 1 << CALLS_SHIFT;
const FILED_SHIFT: u32 = 41;
const FILED_MASK: u64 = 0x7F;
const CHUNK_SHIFT: u32 = 48;
const NUMBER_SHIFT: u32 = 32;
const NUMBER_MASK: u64 = (1 << 16) - 1;
const MARKS_MASK: u64 = (1 << 32) - 1;
const FAILED_BITS: u64 = 0x5555_5555;
const SLOW_BITS: u64 = 0xAAAA_AAAA;

/// A call's two bits.
#[inline]
pub(crate) fn mark(failed: bool, slow: bool) -> u64 {
    u64::from(failed) | (u64::from(slow) << 1)
}

/// The mark bits of calls `from..to` of a chunk.
#[inline]
fn span(from: u32, to: u32) -> u64 {
    let below = |calls: u32| (1u64 << (2 * calls)) - 1;
    below(to) & !below(from)
}

/// One value of the cursor. See the module docs for the layout.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Cursor(u64);

impl Cursor {
    #[inline]
    fn new(marks: u64, calls: u32, filed: u32, chunk: u64) -> Cursor {
        Cursor(
            (marks & MARKS_MASK)
                | ((u64::from(calls) & CALLS_MASK) << CALLS_SHIFT)
                | (u64::from(filed) << FILED_SHIFT)
                | ((chunk & NUMBER_MASK) << CHUNK_SHIFT),
        )
    }

    #[inline]
    fn marks(self) -> u64 {
        self.0 & MARKS_MASK & span(0, self.calls())
    }

    /// The count as stored: the chunk's calls, then the extra successes.
    #[inline]
    fn count(self) -> u32 {
        ((self.0 >> CALLS_SHIFT) & CALLS_MASK) as u32
    }

    /// Calls in the chunk (a count past [`CHUNK`] reads as full).
    #[inline]
    fn calls(self) -> u32 {
        self.count().min(CHUNK)
    }

    /// Successes counted past the full chunk, not yet in a chunk.
    #[inline]
    fn extra(self) -> u32 {
        self.count().saturating_sub(CHUNK)
    }

    #[inline]
    fn is_full(self) -> bool {
        self.count() >= CHUNK
    }

    #[inline]
    fn filed(self) -> u32 {
        (((self.0 >> FILED_SHIFT) & FILED_MASK) as u32).min(CHUNKS as u32)
    }

    #[inline]
    fn chunk(self) -> u64 {
        self.0 >> CHUNK_SHIFT
    }

    #[inline]
    fn slot(self) -> usize {
        (self.chunk() as usize) & (CHUNKS - 1)
    }

    /// Whether `other` is this cursor's chunk, with the same marks: equal
    /// but for the count, both full (extra successes change only that).
    #[inline]
    fn same_full_chunk(self, other: Cursor) -> bool {
        let without_count = !(CALLS_MASK << CALLS_SHIFT);
        self.is_full() && other.is_full() && self.0 & without_count == other.0 & without_count
    }

    /// This chunk with one more call (it must not be full).
    #[inline]
    fn with(self, mark: u64) -> Cursor {
        let calls = self.calls();
        Cursor::new(self.marks() | (mark << (2 * calls)), calls + 1, self.filed(), self.chunk())
    }

    /// The next chunk, once this full one is filed: its first calls are
    /// this one's extra successes (all of them; the count may stay past
    /// [`CHUNK`], for the chunk after it).
    #[inline]
    fn next(self) -> Cursor {
        Cursor::new(0, self.extra(), (self.filed() + 1).min(CHUNKS as u32), self.chunk() + 1)
    }

    /// A new, empty chunk with nothing filed before it: a window started again.
    #[inline]
    fn restarted(self) -> Cursor {
        Cursor::new(0, 0, 0, self.chunk() + 1)
    }

    /// The successes among the chunk's calls, not its extras.
    #[inline]
    fn chunk_successes(self) -> u64 {
        u64::from(self.calls()) - u64::from((self.marks() & FAILED_BITS).count_ones())
    }

    /// The successes in this word: the chunk's, and the extras.
    #[inline]
    fn successes(self) -> u64 {
        self.chunk_successes() + u64::from(self.extra())
    }
}

/// The ring word of a filed chunk.
#[inline]
fn filed(marks: u64, number: u64) -> u64 {
    (marks & MARKS_MASK) | ((number & NUMBER_MASK) << NUMBER_SHIFT)
}

impl Totals {
    /// Adds calls `from..to` of a chunk with these marks.
    #[inline]
    fn add_marks(&mut self, marks: u64, from: u32, to: u32) {
        let marks = marks & span(from, to);
        self.calls += u64::from(to - from);
        self.failures += u64::from((marks & FAILED_BITS).count_ones());
        self.slow += u64::from((marks & SLOW_BITS).count_ones());
    }
}

#[repr(C)]
#[derive(Debug)]
pub(crate) struct CountWindow {
    /// Written by every call.
    cursor: CachePadded<AtomicU64>,
    ring: [AtomicU64; CHUNKS],
}

impl CountWindow {
    #[inline]
    pub(crate) fn new() -> Self {
        Self {
            cursor: CachePadded::new(AtomicU64::new(Cursor::new(0, 0, 0, 0).0)),
            ring: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Counts a success that is not slow, inline, if the generation word
    /// says the window counts `counting`'s generation: one `fetch_add` (see
    /// the module docs). `false`: nothing was done; try `add`.
    #[inline(always)]
    pub(crate) fn try_add_success(&self, generation: &AtomicU64, counting: u64, folds: &Successes) -> bool {
        // SeqCst: see the window's Orderings. Unlike a CAS, this add is not
        // checked against a cursor loaded before the generation word: see
        // "A success racing a new generation".
        if generation.load(Ordering::SeqCst) != counting {
            return false;
        }
        let before = Cursor(self.cursor.fetch_add(ONE_CALL, Ordering::SeqCst));
        // Counted as an extra. The first to find the chunk full moves the
        // cursor on; the others leave it to that one (a CAS of their own
        // would only make its CAS fail) unless `HELP_AFTER` extras wait.
        if before.count() == CHUNK || before.extra() >= HELP_AFTER {
            self.move_on(before, folds);
        }
        true
    }

    /// After adding an extra success to the full chunk of `c`: files it and
    /// moves the cursor past it, unless someone else has. See the module's
    /// "Successes past a full chunk".
    #[cold]
    #[inline(never)]
    fn move_on(&self, before: Cursor, folds: &Successes) {
        // The cursor as this caller's add left it, unless others changed it.
        let mut c = Cursor(before.0.wrapping_add(ONE_CALL));
        while c.is_full() {
            self.file(c);
            // SeqCst: see the window's Orderings.
            match self.cursor.compare_exchange_weak(c.0, c.next().0, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => {
                    folds.fold(c.chunk_successes());
                    c = c.next();
                }
                Err(actual) => c = Cursor(actual),
            }
        }
    }

    /// Counts a call with `mark`; `check` loads the generation word (see
    /// [the window](super)). Returns whether it was counted.
    #[inline]
    pub(crate) fn add(&self, mark: u64, check: &impl Fn() -> Gen, folds: &Successes) -> bool {
        // SeqCst: see the window's Orderings (as for every access below).
        let mut c = Cursor(self.cursor.load(Ordering::SeqCst));
        loop {
            // Does the window count this generation? (Loaded after `c`.)
            match check() {
                Gen::Counting => {}
                Gen::Retry => {
                    c = Cursor(self.cursor.load(Ordering::SeqCst));
                    continue;
                }
                Gen::Stale => return false,
            }
            // Is the chunk full? File it, then count this call in the next
            // one (if the extras leave room there).
            let full = c.is_full();
            // Whether this CAS counts the call: not if the extras carried
            // into the next chunk fill it.
            let (next, counts) = if full {
                self.file(c);
                let next = c.next();
                if next.is_full() { (next, false) } else { (next.with(mark), true) }
            } else {
                (c.with(mark), true)
            };
            match self.cursor.compare_exchange_weak(c.0, next.0, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => {
                    if full {
                        folds.fold(c.chunk_successes());
                    }
                    if counts {
                        return true;
                    }
                    // Moved on by a chunk of extras only: again.
                    c = next;
                }
                Err(actual) => c = Cursor(actual),
            }
        }
    }

    /// Makes sure the full chunk `c` is in its slot. See the module's Filing.
    #[cold]
    #[inline(never)]
    fn file(&self, c: Cursor) {
        let word = &self.ring[c.slot()];
        let want = filed(c.marks(), c.chunk());
        let mut v = word.load(Ordering::SeqCst);
        loop {
            // Filed already, by another caller?
            if v == want {
                return;
            }
            // Is the cursor still on this chunk? (Loaded after `v`.)
            if !Cursor(self.cursor.load(Ordering::SeqCst)).same_full_chunk(c) {
                return;
            }
            match word.compare_exchange_weak(v, want, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return,
                Err(actual) => v = actual,
            }
        }
    }

    /// Starts the window again for a new generation, while `still` (the
    /// generation word is still starting that generation). May run any
    /// number of times for one start.
    #[cold]
    pub(crate) fn restart(&self, still: &impl Fn() -> bool, folds: &Successes) {
        let mut c = Cursor(self.cursor.load(Ordering::SeqCst));
        // Still starting? (Loaded after `c`.)
        while still() {
            match self.cursor.compare_exchange_weak(c.0, c.restarted().0, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    folds.fold(c.successes());
                    return;
                }
                Err(actual) => c = Cursor(actual),
            }
        }
    }

    /// The totals over the last `n` calls (fewer if fewer were counted).
    pub(crate) fn totals(&self, n: u32, check: &impl Fn() -> Gen) -> Option<Totals> {
        let mut previous = None;
        'read: loop {
            let c = Cursor(self.cursor.load(Ordering::SeqCst));
            match check() {
                Gen::Counting => {}
                Gen::Retry => continue,
                Gen::Stale => return None,
            }
            let mut t = Totals::default();
            // The extra successes are the newest calls, then the chunk's.
            let extra = c.extra().min(n);
            t.calls += u64::from(extra);
            let mut left = n - extra;
            let calls = c.calls();
            let take = calls.min(left);
            t.add_marks(c.marks(), calls - take, calls);
            left -= take;
            let mut back = 1;
            while left > 0 && back <= c.filed() {
                let number = c.chunk().wrapping_sub(u64::from(back)) & NUMBER_MASK;
                let f = self.ring[(number as usize) & (CHUNKS - 1)].load(Ordering::SeqCst);
                // Refiled by a later chunk? The cursor moved on: read again.
                // (With the cursor unchanged, the ring is garbage: stop there.)
                if (f >> NUMBER_SHIFT) & NUMBER_MASK != number {
                    if previous != Some(c) {
                        previous = Some(c);
                        continue 'read;
                    }
                    break;
                }
                let take = CHUNK.min(left);
                t.add_marks(f, CHUNK - take, CHUNK);
                left -= take;
                back += 1;
            }
            return Some(t);
        }
    }

    /// The successes in the cursor: its chunk's and the extras.
    pub(crate) fn unfolded(&self) -> u64 {
        Cursor(self.cursor.load(Ordering::SeqCst)).successes()
    }

    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check windows; loom builds have none"))]
    pub(crate) fn is_valid(&self) -> bool {
        // Relaxed: see `Window::is_valid`.
        let c = Cursor(self.cursor.load(Ordering::Relaxed));
        let filed = (c.0 >> FILED_SHIFT) & FILED_MASK;
        // Any count may be found: a process that died after adding an extra
        // success leaves the cursor full; the next caller moves it on.
        let valid_cursor = filed <= CHUNKS as u64 && c.0 & MARKS_MASK & !span(0, c.calls()) == 0;
        // Relaxed: as above.
        valid_cursor && self.ring.iter().all(|w| w.load(Ordering::Relaxed) >> 48 == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn counting() -> Gen {
        Gen::Counting
    }

    fn folds() -> Successes {
        Successes { folded: AtomicU64::new(0), seen: AtomicU64::new(0) }
    }

    /// Counts a call as the breaker does: a plain success by `fetch_add`,
    /// anything else by `add`.
    fn record(w: &CountWindow, f: &Successes, (failed, slow): (bool, bool)) {
        let generation = AtomicU64::new(0);
        if !failed && !slow {
            assert!(w.try_add_success(&generation, 0, f));
        } else {
            assert!(w.add(mark(failed, slow), &counting, f));
        }
    }

    fn t(calls: u64, failures: u64, slow: u64) -> Totals {
        Totals { calls, failures, slow }
    }

    /// The last `n` of `calls` (failed, slow), counted by hand.
    fn reference(calls: &[(bool, bool)], n: usize) -> Totals {
        let last = &calls[calls.len().saturating_sub(n)..];
        t(
            last.len() as u64,
            last.iter().filter(|c| c.0).count() as u64,
            last.iter().filter(|c| c.1).count() as u64,
        )
    }

    #[test]
    fn holds_exactly_the_last_n_calls_across_chunks() {
        // Under miri a few sizes, each over twice its own span of chunks.
        let sizes: &[u32] = if cfg!(miri) {
            &[1, CHUNK + 1]
        } else {
            &[1, 5, CHUNK, CHUNK + 1, 3 * CHUNK - 1, 100, MAX_COUNT_WINDOW]
        };
        for &n in sizes {
            let (w, f) = (CountWindow::new(), folds());
            let mut calls = Vec::new();
            let rounds =
                if cfg!(miri) { 2 * (n + CHUNK) as usize + 37 } else { 2 * MAX_COUNT_WINDOW as usize + 37 };
            for i in 0..rounds {
                let c = (i % 3 == 0, i % 7 < 2);
                record(&w, &f, c);
                calls.push(c);
                assert_eq!(w.totals(n, &counting), Some(reference(&calls, n as usize)), "n {n}, call {i}");
            }
            let successes = calls.iter().filter(|c| !c.0).count() as u64;
            assert_eq!(f.folded.load(Ordering::Relaxed) + w.unfolded(), successes);
        }
    }

    /// Successes whose `fetch_add` found the chunk full, with their callers
    /// stalled before moving the cursor on: `extra` of them, then a failure.
    fn extras_then_a_failure(extra: u32) {
        let (w, f) = (CountWindow::new(), folds());
        let mut calls = Vec::new();
        for i in 0..CHUNK + 3 {
            let c = (i % 4 == 0, i % 5 == 0);
            record(&w, &f, c);
            calls.push(c);
        }
        // Fill the cursor's chunk, then add past it as stalled callers would.
        while Cursor(w.cursor.load(Ordering::Relaxed)).calls() < CHUNK {
            record(&w, &f, (false, false));
            calls.push((false, false));
        }
        for _ in 0..extra {
            w.cursor.fetch_add(ONE_CALL, Ordering::SeqCst);
            calls.push((false, false));
        }
        let n = 3 * CHUNK + 5;
        assert_eq!(w.totals(n, &counting), Some(reference(&calls, n as usize)), "extras {extra}, before");
        assert!(w.add(mark(true, false), &counting, &f));
        calls.push((true, false));
        assert_eq!(w.totals(n, &counting), Some(reference(&calls, n as usize)), "extras {extra}, after");
        let successes = calls.iter().filter(|c| !c.0).count() as u64;
        assert_eq!(f.folded.load(Ordering::Relaxed) + w.unfolded(), successes, "extras {extra}");
    }

    #[test]
    fn successes_added_past_a_full_chunk_come_before_the_next_call() {
        for extra in [1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 3] {
            extras_then_a_failure(extra);
        }
    }

    #[test]
    fn the_first_caller_past_a_full_chunk_moves_the_cursor_on() {
        let (w, f) = (CountWindow::new(), folds());
        for _ in 0..CHUNK {
            record(&w, &f, (true, false));
        }
        record(&w, &f, (false, false));
        let c = Cursor(w.cursor.load(Ordering::Relaxed));
        assert_eq!((c.chunk(), c.calls(), c.extra(), c.filed()), (1, 1, 0, 1));
        assert_eq!(w.totals(CHUNK + 1, &counting), Some(t(u64::from(CHUNK) + 1, u64::from(CHUNK), 0)));
    }

    #[test]
    fn extras_left_by_a_mover_that_died_are_moved_on_once_help_after_wait() {
        let (w, f) = (CountWindow::new(), folds());
        for _ in 0..CHUNK {
            record(&w, &f, (true, false));
        }
        // The mover's own extra and `HELP_AFTER - 2` others, their callers
        // gone before moving anything (a process that died).
        w.cursor.fetch_add(u64::from(HELP_AFTER - 1) * ONE_CALL, Ordering::SeqCst);
        assert!(w.is_valid(), "extras left by a dead caller are a state, not garbage");
        // The next finds fewer than HELP_AFTER waiting: it leaves them.
        record(&w, &f, (false, false));
        assert_eq!(Cursor(w.cursor.load(Ordering::Relaxed)).extra(), HELP_AFTER);
        // The one after finds HELP_AFTER: it moves the cursor on, carrying all.
        record(&w, &f, (false, false));
        let c = Cursor(w.cursor.load(Ordering::Relaxed));
        let carried = HELP_AFTER + 1;
        assert_eq!(c.filed(), 1 + carried / CHUNK, "the extras filled chunks of their own");
        assert_eq!((c.calls(), c.extra()), (carried % CHUNK, 0));
        let n = CHUNK + carried;
        assert_eq!(w.totals(n, &counting), Some(t(u64::from(n), u64::from(CHUNK), 0)));
        assert_eq!(f.folded.load(Ordering::Relaxed) + w.unfolded(), u64::from(carried));
    }

    #[test]
    fn a_restart_folds_the_extras_with_the_chunk() {
        let (w, f) = (CountWindow::new(), folds());
        for i in 0..CHUNK {
            record(&w, &f, (i == 0, false));
        }
        w.cursor.fetch_add(5 * ONE_CALL, Ordering::SeqCst);
        w.restart(&|| true, &f);
        assert_eq!(f.folded.load(Ordering::Relaxed), u64::from(CHUNK) - 1 + 5);
        assert_eq!(w.totals(100, &counting), Some(t(0, 0, 0)));
    }

    #[test]
    fn a_restart_forgets_every_call_before_it() {
        let (w, f) = (CountWindow::new(), folds());
        for _ in 0..3 * CHUNK + 5 {
            w.add(mark(true, true), &counting, &f);
        }
        w.restart(&|| true, &f);
        assert_eq!(w.totals(100, &counting), Some(t(0, 0, 0)));
        w.add(mark(false, false), &counting, &f);
        for _ in 0..CHUNK {
            w.add(mark(true, false), &counting, &f);
        }
        assert_eq!(w.totals(100, &counting), Some(t(u64::from(CHUNK) + 1, u64::from(CHUNK), 0)));
    }

    #[test]
    fn a_restart_while_no_longer_starting_does_nothing() {
        let (w, f) = (CountWindow::new(), folds());
        w.add(mark(true, false), &counting, &f);
        w.restart(&|| false, &f);
        assert_eq!(w.totals(10, &counting), Some(t(1, 1, 0)));
    }

    #[test]
    fn chunk_numbers_wrap_without_confusing_the_ring() {
        let (w, f) = (CountWindow::new(), folds());
        w.cursor.store(Cursor::new(0, 0, 0, NUMBER_MASK - 3).0, Ordering::Relaxed);
        let mut calls = Vec::new();
        for i in 0..20 * CHUNK as usize {
            let c = (i % 5 == 0, false);
            w.add(mark(c.0, c.1), &counting, &f);
            calls.push(c);
        }
        assert_eq!(w.totals(100, &counting), Some(reference(&calls, 100)));
    }

    #[test]
    fn a_stale_or_garbage_ring_never_hangs_a_reader() {
        let (w, f) = (CountWindow::new(), folds());
        for _ in 0..4 * CHUNK {
            w.add(mark(true, false), &counting, &f);
        }
        for slot in &w.ring {
            slot.store(u64::MAX >> 12, Ordering::Relaxed);
        }
        assert_eq!(w.totals(100, &counting), Some(t(u64::from(CHUNK), u64::from(CHUNK), 0)));
        w.cursor.store(u64::MAX, Ordering::Relaxed);
        assert!(!w.is_valid());
        assert!(w.add(mark(false, false), &counting, &f), "a garbage cursor reads as full, then moves on");
        assert!(w.totals(100, &counting).is_some());
    }

    #[test]
    fn stale_generations_stay_out() {
        let (w, f) = (CountWindow::new(), folds());
        assert!(!w.add(mark(true, false), &|| Gen::Stale, &f));
        assert_eq!(w.totals(10, &|| Gen::Stale), None);
        assert_eq!(w.totals(10, &counting), Some(t(0, 0, 0)));
    }
}
