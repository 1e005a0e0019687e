//! The count-based window: the last N calls, however long ago they were
//! made (resilience4j's `COUNT_BASED` window), exactly.
//!
//! Calls are kept as two bits each (failed, slow) in chunks of [`CHUNK`]
//! (16) calls. The chunk being filled lives in one word, the *cursor*, so
//! counting a call is one CAS that shifts its two bits in; no clock is read.
//! A full chunk is *filed* in a ring of [`CHUNKS`] (64) words, at the slot of
//! its number, by whichever caller next finds the cursor full, and the same
//! CAS that moves the cursor to the next chunk counts that caller's call.
//! The last N calls are then the cursor's calls plus the newest ones of the
//! chunks filed before it; the trip check reads at most ⌈N / 16⌉ + 1 words.
//!
//! N ranges over 1 to [`MAX_COUNT_WINDOW`] (1000): the window needs the
//! ⌈N / 16⌉ chunks before the cursor's, all in the ring at once and apart
//! from the slot the cursor files into next, so N ≤ 63 × 16; the ring is
//! 512 bytes inside the breaker (plain data, no allocation), and the
//! success path is one CAS on the cursor (plus, once every 16 calls, the
//! CAS that files a chunk) whatever N is.
//!
//! # Bit layouts
//!
//! Cursor:
//!
//! | bits    | field   | meaning |
//! | ------- | ------- | ------- |
//! | 0..32   | `marks` | call `i` of the chunk at bit `2i` (failed) and `2i + 1` (slow) |
//! | 32..37  | `calls` | calls in the chunk, 0 to `CHUNK` |
//! | 37..44  | `filed` | chunks filed since the window started, saturating at `CHUNKS` |
//! | 44..64  | `chunk` | the chunk's number, wrapping at 2^20; its slot is `chunk % CHUNKS` |
//!
//! Ring word (a filed chunk):
//!
//! | bits    | field    | meaning |
//! | ------- | -------- | ------- |
//! | 0..32   | `marks`  | the chunk's calls, as in the cursor |
//! | 32..52  | `number` | the chunk's number |
//! | 52..64  | —        | reserved, 0 |
//!
//! # Filing
//! A full cursor `c` is only ever replaced by the next chunk, and only by a
//! caller that first made sure chunk `c` is in its slot: it loads the slot,
//! then the cursor, and, if the cursor is still `c`, CASes the slot from
//! what it loaded to `c`'s chunk. Everything it writes comes from `c`, so
//! any number of callers may do this at once. One that stalls gets the
//! slot wrong only if its CAS succeeds after the cursor moved on, which
//! needs the slot unchanged since it was loaded; but the cursor moves past
//! chunk `c` only once that slot holds `c`'s chunk (a change, unless it
//! held exactly those bits already), and the slot is next written for
//! chunk `c + CHUNKS` (a change of number). A cursor may come back to the
//! same bits 64 chunks later (all successes, say): a caller fooled by that
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

const CALLS_SHIFT: u32 = 32;
const CALLS_MASK: u64 = 0x1F;
const FILED_SHIFT: u32 = 37;
const FILED_MASK: u64 = 0x7F;
const CHUNK_SHIFT: u32 = 44;
const NUMBER_SHIFT: u32 = 32;
const NUMBER_MASK: u64 = (1 << 20) - 1;
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
                | (u64::from(calls) << CALLS_SHIFT)
                | (u64::from(filed) << FILED_SHIFT)
                | ((chunk & NUMBER_MASK) << CHUNK_SHIFT),
        )
    }

    #[inline]
    fn marks(self) -> u64 {
        self.0 & MARKS_MASK & span(0, self.calls())
    }

    /// Calls in the chunk, clamped (a garbage value reads as full).
    #[inline]
    fn calls(self) -> u32 {
        (((self.0 >> CALLS_SHIFT) & CALLS_MASK) as u32).min(CHUNK)
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

    /// This chunk with one more call (it must not be full).
    #[inline]
    fn with(self, mark: u64) -> Cursor {
        let calls = self.calls();
        Cursor::new(self.marks() | (mark << (2 * calls)), calls + 1, self.filed(), self.chunk())
    }

    /// The next chunk, empty, once this one is filed.
    #[inline]
    fn next(self) -> Cursor {
        Cursor::new(0, 0, (self.filed() + 1).min(CHUNKS as u32), self.chunk() + 1)
    }

    /// A new, empty chunk with nothing filed before it: a window started again.
    #[inline]
    fn restarted(self) -> Cursor {
        Cursor::new(0, 0, 0, self.chunk() + 1)
    }

    /// The successes among the chunk's calls.
    #[inline]
    fn successes(self) -> u64 {
        u64::from(self.calls()) - u64::from((self.marks() & FAILED_BITS).count_ones())
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

    /// The common case of [`add`](Self::add), inline: a call into a chunk
    /// with room, with nothing to start, and a CAS that succeeds at once.
    /// `counting` is the generation word's value for the call's
    /// generation. `false`: try `add`.
    #[inline(always)]
    pub(crate) fn try_add(&self, mark: u64, generation: &AtomicU64, counting: u64) -> bool {
        // SeqCst, and this order: as in `add`.
        let c = self.cursor.load(Ordering::SeqCst);
        let calls = (c >> CALLS_SHIFT) & CALLS_MASK;
        // The mark goes in with an OR (no carry, whatever bits a garbage
        // cursor holds), the count with an add below `CHUNK`.
        let next = (c | (mark << (2 * calls))) + (1 << CALLS_SHIFT);
        generation.load(Ordering::SeqCst) == counting
            && calls < u64::from(CHUNK)
            && self.cursor.compare_exchange(c, next, Ordering::SeqCst, Ordering::Relaxed).is_ok()
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
            // Is the chunk full? File it, then count this call in the next one.
            let full = c.calls() >= CHUNK;
            let next = if full {
                self.file(c);
                c.next().with(mark)
            } else {
                c.with(mark)
            };
            match self.cursor.compare_exchange_weak(c.0, next.0, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => {
                    if full {
                        folds.fold(c.successes());
                    }
                    return true;
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
            if self.cursor.load(Ordering::SeqCst) != c.0 {
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
            let calls = c.calls();
            let take = calls.min(n);
            t.add_marks(c.marks(), calls - take, calls);
            let mut left = n - take;
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

    /// The successes in the chunk being filled.
    pub(crate) fn unfolded(&self) -> u64 {
        Cursor(self.cursor.load(Ordering::SeqCst)).successes()
    }

    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check windows; loom builds have none"))]
    pub(crate) fn is_valid(&self) -> bool {
        // Relaxed: see `Window::is_valid`.
        let c = self.cursor.load(Ordering::Relaxed);
        let calls = (c >> CALLS_SHIFT) & CALLS_MASK;
        let filed = (c >> FILED_SHIFT) & FILED_MASK;
        let valid_cursor = calls <= u64::from(CHUNK)
            && filed <= CHUNKS as u64
            && c & MARKS_MASK & !span(0, calls as u32) == 0;
        // Relaxed: as above.
        valid_cursor && self.ring.iter().all(|w| w.load(Ordering::Relaxed) >> 52 == 0)
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
                assert!(w.add(mark(c.0, c.1), &counting, &f));
                calls.push(c);
                assert_eq!(w.totals(n, &counting), Some(reference(&calls, n as usize)), "n {n}, call {i}");
            }
            let successes = calls.iter().filter(|c| !c.0).count() as u64;
            assert_eq!(f.folded.load(Ordering::Relaxed) + w.unfolded(), successes);
        }
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
