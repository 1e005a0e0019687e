//! The count-based window: the last N calls, however long ago they were
//! made (resilience4j's `COUNT_BASED` window), exactly.
//!
//! # Successes on stripes, the rest in order
//! Successes are interchangeable: what the window needs of them is how
//! many came between two other calls. So a plain success is one
//! `fetch_add` on the counter of its thread's *stripe* ([`STRIPES`] (4)
//! counters, a cache line each, a thread on the same one every time): no
//! line another thread writes. Failures and slow calls take their place in
//! one order, the *cursor* and the ring of chunks it files; before one
//! takes its place it *places* every success counted on the stripes so
//! far, as calls with no bits set, in the same CAS or in the CASes just
//! before it. A stripe's successes not placed yet are the newest calls,
//! and every reader counts them so.
//!
//! So the order is exact: a success that happened before a failure (its
//! `fetch_add` is visible to the failure's thread) is placed before it,
//! and one not placed yet came after every call in order, or raced it.
//! Nothing is traded for the stripes.
//!
//! What a stripe has placed is kept *in the cursor*, as its counter's value
//! modulo [`PLACED_MOD`] (32), so that placing successes and counting them
//! placed are one CAS: a success is always either placed or waiting on its
//! stripe, never both, never neither. A stripe's waiting successes are
//! its counter minus the cursor's value, modulo 32; that is exact while
//! fewer than 32 wait. Successes are placed in batches of [`BATCH`] (8) as
//! well, by the thread whose success fills one (its own stripe's only, so
//! that it reads no other thread's line), so that a window with no
//! failures keeps fewer than 8 waiting on each stripe. More than 31 wait
//! only if three batch placements on one stripe are each left undone:
//! their threads stalled, or died in a shared region, between the success
//! that filled the batch and the CAS; any later batch or any failure
//! places all that wait. A thread whose placement stalls makes no
//! successes meanwhile, so this needs three threads on one stripe (more
//! than four threads, or several processes).
//!
//! # The order: chunks, cursor and ring
//! A chunk holds up to [`CAP`] (255) calls in order: its first [`CHUNK`]
//! (8) calls have two bits each (failed, slow), and the calls after them
//! are successes, only counted. So any number of successes is placed in
//! one CAS (a count), and a chunk is moved past when a call with bits finds
//! its 8 places taken, or successes find it at [`CAP`]. The chunk being
//! filled lives in the cursor, with the stripes' placed values. A chunk
//! moved past is first *filed* in a ring of [`CHUNKS`] (128) words, at the
//! slot of its number, by whichever caller moves it. The last N calls are
//! then the waiting successes, the cursor's calls, and the newest ones of
//! the chunks filed before it; the trip check reads at most ⌈N / 8⌉ + 1
//! words of the ring, and the four stripes.
//!
//! N ranges over 1 to [`MAX_COUNT_WINDOW`] (1000): a filed chunk holds at
//! least 8 calls, so the window needs at most ⌈N / 8⌉ chunks before the
//! cursor's, all in the ring at once and apart from the slot the cursor
//! files into next: N ≤ 127 × 8. The ring is 1 KiB and the stripes four
//! cache lines inside the breaker (plain data, no allocation).
//!
//! # What a success costs
//! A `fetch_add` on a line its own thread wrote last, and one CAS on the
//! cursor every 8 successes of the stripe. Two threads on one count window
//! write a shared line on one call in 8 (`benches/RESULTS.md` puts them
//! next to two threads on one `fetch_add`). A failure or a slow call reads
//! the four stripes and places what waits, usually in the CAS that counts
//! it.
//!
//! # A success racing a new generation
//! A failure enters the window only through a CAS on a cursor loaded before
//! the generation word (see [the window](super)), so no failure of an older
//! generation ever counts in a newer window. A success's `fetch_add` comes
//! after its load of the generation word: a success whose thread stalls
//! between the two while its generation ends and the next Closed
//! generation's window starts waits on its stripe in that newer window.
//! That is at most one success per thread that was recording at that
//! moment; it is counted once in the snapshot either way, and it can only
//! delay a trip by one call, never cause one. A restart sets every
//! stripe's placed value to its counter, in the CAS that empties the
//! window, so the successes that waited are dropped with the old window.
//!
//! # Bit layouts
//!
//! Cursor:
//!
//! | bits    | field    | meaning |
//! | ------- | -------- | ------- |
//! | 0..16   | `marks`  | call `i < 8` of the chunk at bit `2i` (failed) and `2i + 1` (slow) |
//! | 16..24  | `calls`  | calls in the chunk, 0 to `CAP` |
//! | 24..31  | `filed`  | chunks filed since the window started, saturating at `CHUNKS - 1` |
//! | 31..44  | `chunk`  | the chunk's number, wrapping at 2^13; its slot is `chunk % CHUNKS` |
//! | 44..64  | `placed` | stripe `j`'s successes placed, modulo 32, at bits `44 + 5j` |
//!
//! Ring word (a filed chunk):
//!
//! | bits    | field    | meaning |
//! | ------- | -------- | ------- |
//! | 0..16   | `marks`  | as in the cursor |
//! | 16..24  | `calls`  | as in the cursor |
//! | 24..37  | `number` | the chunk's number |
//! | 37..64  | —        | reserved, 0 |
//!
//! Stripe: one `u64`, the successes counted on it, wrapping.
//!
//! # Filing
//! A cursor `c` is only ever replaced by the next chunk by a caller that
//! first made sure chunk `c` is in its slot: it loads the slot, then the
//! cursor, and, if the cursor is still `c`, CASes the slot from what it
//! loaded to `c`'s chunk; then it CASes the cursor from `c`. Everything it
//! writes comes from `c`, so any number of callers may do this at once,
//! and the last to file before the cursor moves on files the value it
//! moves from. One that stalls gets the slot wrong only if its CAS succeeds
//! after the cursor changed, which needs the slot unchanged since it was
//! loaded; but the cursor moves past chunk `c` only once that slot holds
//! `c`'s chunk as last seen (a change, unless it held exactly those bits
//! already), and the slot is next written for chunk `c + CHUNKS` (a change
//! of number, for 64 turns of the ring).
//!
//! # Reading
//! `totals` takes a cursor, then the stripes (so that a success placed in
//! between is counted as waiting, once), then for each chunk it needs
//! checks the slot's number: a slot refiled by a later chunk means the
//! cursor has moved on since, and it starts over. A chunk is filed before
//! the cursor passes it, so each slot read holds the chunk expected. Only
//! chunks filed since the window started count (`filed`), which is how a
//! new generation starts with an empty window without touching the ring:
//! [`restart`](CountWindow::restart) moves the cursor to a new, empty
//! chunk with `filed` at 0.
//!
//! # Orderings
//! See [the window's](super); every access here is `SeqCst`, the stripes'
//! included.

use crossbeam_utils::CachePadded;

use super::{Gen, Successes, Totals};
use crate::breaker::config::MAX_COUNT_WINDOW;
use crate::sync::{AtomicU64, Ordering};

/// Calls per chunk with bits of their own: two each in the cursor's 16
/// bits of marks. Successes after them are counted, up to [`CAP`].
#[cfg(not(loom))]
const CHUNK: u32 = 8;
/// The most calls a chunk holds: its marked calls, then successes.
#[cfg(not(loom))]
const CAP: u32 = 255;
/// Slots of the ring of filed chunks.
#[cfg(not(loom))]
const CHUNKS: usize = 128;
/// Counters that successes are counted on, a thread on one of them.
#[cfg(not(loom))]
const STRIPES: usize = 4;
/// Successes of a stripe placed at once by the thread that counts the last.
#[cfg(not(loom))]
const BATCH: u64 = 8;

// Under loom: small enough that models cross chunks and batches in a few
// calls, with a stripe for each of two threads.
#[cfg(loom)]
const CHUNK: u32 = 2;
#[cfg(loom)]
const CAP: u32 = 3;
#[cfg(loom)]
const CHUNKS: usize = 4;
#[cfg(loom)]
const STRIPES: usize = 2;
#[cfg(loom)]
const BATCH: u64 = 2;

/// The modulus of a stripe's placed value in the cursor.
const PLACED_MOD: u64 = 32;

// A filed chunk holds at least CHUNK calls: the window's chunks fit.
const _: () = assert!(MAX_COUNT_WINDOW <= (CHUNKS as u32 - 1) * CHUNK);
const _: () = assert!(CHUNK <= 8 && CHUNK <= CAP && CAP <= 255);
const _: () = assert!(CHUNKS <= 128 && CHUNKS.is_power_of_two());
const _: () = assert!(STRIPES <= 4 && STRIPES.is_power_of_two());
// Three batches of a stripe left unplaced still leave fewer than 32 waiting.
const _: () = assert!(4 * BATCH <= PLACED_MOD);

const MARKS_MASK: u64 = (1 << 16) - 1;
const CALLS_SHIFT: u32 = 16;
const CALLS_MASK: u64 = 0xFF;
const FILED_SHIFT: u32 = 24;
const FILED_MASK: u64 = 0x7F;
const CHUNK_SHIFT: u32 = 31;
const NUMBER_MASK: u64 = (1 << 13) - 1;
const PLACED_SHIFT: u32 = 44;
const PLACED_BITS: u32 = 5;
/// Ring word: where the chunk's number sits, after its marks and calls.
const NUMBER_SHIFT: u32 = 24;
const FAILED_BITS: u64 = 0x5555;
const SLOW_BITS: u64 = 0xAAAA;

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

/// The stripe this thread counts its successes on.
#[cfg(not(loom))]
#[inline(always)]
fn stripe() -> usize {
    crate::breaker::counters::stripe(STRIPES)
}

/// Under loom: from the model's thread number, the same in every run of a
/// model (its first two threads on different stripes).
#[cfg(loom)]
fn stripe() -> usize {
    let id = std::format!("{:?}", loom::thread::current().id());
    let n = id.bytes().filter(u8::is_ascii_digit).fold(0usize, |n, d| n * 10 + usize::from(d - b'0'));
    n % STRIPES
}

/// One value of the cursor. See the module docs for the layout.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Cursor(u64);

impl Cursor {
    #[inline]
    fn new(marks: u64, calls: u32, filed: u32, chunk: u64, placed: u64) -> Cursor {
        Cursor(
            (marks & MARKS_MASK)
                | ((u64::from(calls) & CALLS_MASK) << CALLS_SHIFT)
                | ((u64::from(filed) & FILED_MASK) << FILED_SHIFT)
                | ((chunk & NUMBER_MASK) << CHUNK_SHIFT)
                | (placed << PLACED_SHIFT),
        )
    }

    /// The marks of the chunk's marked calls.
    #[inline]
    fn marks(self) -> u64 {
        self.0 & MARKS_MASK & span(0, self.calls().min(CHUNK))
    }

    /// Calls in the chunk (a garbage count past [`CAP`] reads as [`CAP`]).
    #[inline]
    fn calls(self) -> u32 {
        (((self.0 >> CALLS_SHIFT) & CALLS_MASK) as u32).min(CAP)
    }

    /// Whether a call with bits of its own fits in the chunk.
    #[inline]
    fn can_mark(self) -> bool {
        self.calls() < CHUNK
    }

    /// Successes the chunk still holds.
    #[inline]
    fn room(self) -> u32 {
        CAP - self.calls()
    }

    #[inline]
    fn filed(self) -> u32 {
        ((self.0 >> FILED_SHIFT) & FILED_MASK) as u32
    }

    #[inline]
    fn chunk(self) -> u64 {
        (self.0 >> CHUNK_SHIFT) & NUMBER_MASK
    }

    #[inline]
    fn slot(self) -> usize {
        (self.chunk() as usize) & (CHUNKS - 1)
    }

    /// Every stripe's placed value, as stored.
    #[inline]
    fn placed_bits(self) -> u64 {
        self.0 >> PLACED_SHIFT
    }

    /// Stripe `j`'s successes placed, modulo [`PLACED_MOD`].
    #[inline]
    fn placed(self, j: usize) -> u64 {
        (self.placed_bits() >> (PLACED_BITS * j as u32)) & (PLACED_MOD - 1)
    }

    /// The successes waiting on each stripe whose counters read `made`
    /// (read after this cursor).
    #[inline]
    fn waiting(self, made: &[u64; STRIPES]) -> [u64; STRIPES] {
        core::array::from_fn(|j| made[j].wrapping_sub(self.placed(j)) & (PLACED_MOD - 1))
    }

    /// This chunk with one more call (it must have room for its bits).
    #[inline]
    fn with(self, mark: u64) -> Cursor {
        let calls = self.calls();
        Cursor::new(
            self.marks() | (mark << (2 * calls)),
            calls + 1,
            self.filed(),
            self.chunk(),
            self.placed_bits(),
        )
    }

    /// This chunk with as many of the `waiting` successes placed as it has
    /// room for, stripe by stripe.
    #[inline]
    fn with_placed(self, waiting: &[u64; STRIPES]) -> Cursor {
        let mut room = u64::from(self.room());
        let mut placed = self.placed_bits();
        let mut calls = self.calls();
        for (j, &w) in waiting.iter().enumerate() {
            let take = w.min(room);
            room -= take;
            calls += take as u32;
            let shift = PLACED_BITS * j as u32;
            let value = (self.placed(j) + take) & (PLACED_MOD - 1);
            placed = (placed & !((PLACED_MOD - 1) << shift)) | (value << shift);
        }
        Cursor::new(self.marks(), calls, self.filed(), self.chunk(), placed)
    }

    /// The next chunk, once this one is filed.
    #[inline]
    fn next(self) -> Cursor {
        let filed = (self.filed() + 1).min(CHUNKS as u32 - 1);
        Cursor::new(0, 0, filed, self.chunk() + 1, self.placed_bits())
    }

    /// A new, empty chunk with nothing filed before it and every stripe
    /// placed up to `made`: a window started again.
    #[inline]
    fn restarted(self, made: &[u64; STRIPES]) -> Cursor {
        let placed = made
            .iter()
            .enumerate()
            .fold(0, |p, (j, &m)| p | ((m & (PLACED_MOD - 1)) << (PLACED_BITS * j as u32)));
        Cursor::new(0, 0, 0, self.chunk() + 1, placed)
    }

    /// The successes among the chunk's calls.
    #[inline]
    fn chunk_successes(self) -> u64 {
        u64::from(self.calls()) - u64::from((self.marks() & FAILED_BITS).count_ones())
    }
}

/// The ring word of a filed chunk.
#[inline]
fn filed(c: Cursor) -> u64 {
    c.marks() | (u64::from(c.calls()) << CALLS_SHIFT) | (c.chunk() << NUMBER_SHIFT)
}

impl Totals {
    /// Adds the newest `take` of a chunk's `calls` calls, whose marked
    /// ones (the first [`CHUNK`]) have these marks.
    #[inline]
    fn add_newest(&mut self, marks: u64, calls: u32, take: u32) {
        self.calls += u64::from(take);
        let (from, to) = (calls - take, calls.min(CHUNK));
        if from < to {
            let marks = marks & span(from, to);
            self.failures += u64::from((marks & FAILED_BITS).count_ones());
            self.slow += u64::from((marks & SLOW_BITS).count_ones());
        }
    }
}

#[repr(C)]
#[derive(Debug)]
pub(crate) struct CountWindow {
    /// Written by failures, slow calls and batches of successes.
    cursor: CachePadded<AtomicU64>,
    /// Each written by the successes of the threads on it.
    stripes: [CachePadded<AtomicU64>; STRIPES],
    ring: [AtomicU64; CHUNKS],
}

impl CountWindow {
    #[inline]
    pub(crate) fn new() -> Self {
        Self {
            cursor: CachePadded::new(AtomicU64::new(Cursor::new(0, 0, 0, 0, 0).0)),
            stripes: core::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))),
            ring: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Counts a success that is not slow, inline, if the generation word
    /// says the window counts `counting`'s generation: one `fetch_add` on
    /// this thread's stripe (see the module docs). `false`: nothing was
    /// done; try `add`.
    #[inline(always)]
    pub(crate) fn try_add_success(&self, generation: &AtomicU64, counting: u64, folds: &Successes) -> bool {
        // SeqCst: see the window's Orderings. Unlike a CAS, this add is not
        // checked against a word loaded before the generation word: see
        // "A success racing a new generation".
        if generation.load(Ordering::SeqCst) != counting {
            return false;
        }
        let check = || if generation.load(Ordering::SeqCst) == counting { Gen::Counting } else { Gen::Stale };
        self.count_success(&check, folds);
        true
    }

    /// Counts a success on this thread's stripe; places the stripes'
    /// waiting successes if it fills a batch.
    #[inline(always)]
    fn count_success(&self, check: &impl Fn() -> Gen, folds: &Successes) {
        // SeqCst: see the window's Orderings.
        let j = stripe();
        let made = self.stripes[j].fetch_add(1, Ordering::SeqCst).wrapping_add(1);
        if made.is_multiple_of(BATCH) {
            self.place_batch(j, check, folds);
        }
    }

    #[cold]
    #[inline(never)]
    fn place_batch(&self, j: usize, check: &impl Fn() -> Gen, folds: &Successes) {
        self.place(None, Some(j), check, folds);
    }

    /// Counts a call with `mark`; `check` loads the generation word (see
    /// [the window](super)). Returns whether it was counted.
    #[inline]
    pub(crate) fn add(&self, mark: u64, check: &impl Fn() -> Gen, folds: &Successes) -> bool {
        if mark != 0 {
            return self.place(Some(mark), None, check, folds);
        }
        // A plain success: on its stripe, once the window counts its
        // generation.
        loop {
            match check() {
                Gen::Counting => break,
                Gen::Retry => continue,
                Gen::Stale => return false,
            }
        }
        self.count_success(check, folds);
        true
    }

    /// The stripes' counters, read after the cursor they are compared with.
    #[inline]
    fn made(&self) -> [u64; STRIPES] {
        // SeqCst: see the window's Orderings.
        core::array::from_fn(|j| self.stripes[j].load(Ordering::SeqCst))
    }

    /// Places the successes waiting on the stripes (on stripe `only`, if
    /// given), then `mark`'s call if there is one, in as many CASes as they
    /// take; returns whether it got to the end (not if the generation ended
    /// first).
    fn place(
        &self,
        mark: Option<u64>,
        only: Option<usize>,
        check: &impl Fn() -> Gen,
        folds: &Successes,
    ) -> bool {
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
            // What waits on the stripes (read after `c`), or on this
            // thread's only: a batch leaves the other threads' lines alone.
            let made = match only {
                None => self.made(),
                Some(j) => {
                    let mut made: [u64; STRIPES] = core::array::from_fn(|k| c.placed(k));
                    // SeqCst: see the window's Orderings.
                    made[j] = self.stripes[j].load(Ordering::SeqCst);
                    made
                }
            };
            let waiting = c.waiting(&made);
            let total = waiting.iter().sum::<u64>();
            // The next cursor, whether it moves past a chunk, and whether
            // it ends the placing.
            let (next, moves, done) = if total > 0 && c.room() > 0 {
                let placed = c.with_placed(&waiting);
                let all = total <= u64::from(c.room());
                match mark {
                    Some(mark) if all && placed.can_mark() => (placed.with(mark), false, true),
                    Some(_) => (placed, false, false),
                    None => (placed, false, all),
                }
            } else if total > 0 || mark.is_some_and(|_| !c.can_mark()) {
                // No room left for what comes: file the chunk and move on.
                self.file(c);
                (c.next(), true, false)
            } else if let Some(mark) = mark {
                (c.with(mark), false, true)
            } else {
                return true;
            };
            match self.cursor.compare_exchange_weak(c.0, next.0, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => {
                    if moves {
                        folds.fold(c.chunk_successes());
                    }
                    if done {
                        return true;
                    }
                    c = next;
                }
                Err(actual) => c = Cursor(actual),
            }
        }
    }

    /// Makes sure chunk `c`, about to be moved past, is in its slot. See
    /// the module's Filing.
    #[cold]
    #[inline(never)]
    fn file(&self, c: Cursor) {
        let word = &self.ring[c.slot()];
        let want = filed(c);
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
            let made = self.made();
            match self.cursor.compare_exchange_weak(
                c.0,
                c.restarted(&made).0,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => {
                    folds.fold(c.chunk_successes() + c.waiting(&made).iter().sum::<u64>());
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
            // The waiting successes are the newest calls, then the chunk's.
            let waiting: u64 = c.waiting(&self.made()).iter().sum();
            let newest = waiting.min(u64::from(n)) as u32;
            t.calls += u64::from(newest);
            let mut left = n - newest;
            let take = c.calls().min(left);
            t.add_newest(c.marks(), c.calls(), take);
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
                let calls = (((f >> CALLS_SHIFT) & CALLS_MASK) as u32).min(CAP);
                let take = calls.min(left);
                t.add_newest(f & MARKS_MASK, calls, take);
                left -= take;
                back += 1;
            }
            return Some(t);
        }
    }

    /// The successes not folded: the cursor's chunk's and those waiting on
    /// the stripes (read after it, so that none is counted twice).
    pub(crate) fn unfolded(&self) -> u64 {
        let c = Cursor(self.cursor.load(Ordering::SeqCst));
        c.chunk_successes() + c.waiting(&self.made()).iter().sum::<u64>()
    }

    #[cfg_attr(loom, allow(dead_code, reason = "only shared regions check windows; loom builds have none"))]
    pub(crate) fn is_valid(&self) -> bool {
        // Relaxed: see `Window::is_valid`.
        let c = Cursor(self.cursor.load(Ordering::Relaxed));
        let calls = ((c.0 >> CALLS_SHIFT) & CALLS_MASK) as u32;
        // Any stripe value may be found, and any placed value.
        let valid_cursor = calls <= CAP && c.0 & MARKS_MASK & !span(0, calls.min(CHUNK)) == 0;
        // Relaxed: as above.
        valid_cursor && self.ring.iter().all(|w| w.load(Ordering::Relaxed) >> (NUMBER_SHIFT + 13) == 0)
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

    /// `k` successes counted on stripe `j` by another thread, not placed.
    fn on_stripe(w: &CountWindow, j: usize, k: u64) {
        w.stripes[j].fetch_add(k, Ordering::SeqCst);
    }

    #[test]
    fn successes_waiting_on_every_stripe_come_before_the_next_failure() {
        let (w, f) = (CountWindow::new(), folds());
        let mut calls = Vec::new();
        for i in 0..CHUNK + 3 {
            let c = (i % 4 == 0, i % 5 == 0);
            record(&w, &f, c);
            calls.push(c);
        }
        // Other threads' successes, fewer than a batch on each stripe.
        for j in 0..STRIPES {
            on_stripe(&w, j, BATCH - 1 - j as u64);
            calls.extend((0..BATCH - 1 - j as u64).map(|_| (false, false)));
        }
        let n = 3 * CHUNK + 5;
        assert_eq!(w.totals(n, &counting), Some(reference(&calls, n as usize)), "waiting: the newest calls");
        assert!(w.add(mark(true, false), &counting, &f));
        calls.push((true, false));
        for n in [1, CHUNK, n, MAX_COUNT_WINDOW] {
            assert_eq!(
                w.totals(n, &counting),
                Some(reference(&calls, n as usize)),
                "n {n}, after the failure"
            );
        }
        let c = Cursor(w.cursor.load(Ordering::Relaxed));
        assert_eq!(c.waiting(&w.made()), [0; STRIPES], "the failure placed them all");
        let successes = calls.iter().filter(|c| !c.0).count() as u64;
        assert_eq!(f.folded.load(Ordering::Relaxed) + w.unfolded(), successes);
    }

    #[test]
    fn runs_of_successes_past_a_chunk_s_cap_are_counted_exactly() {
        let sizes: &[u32] = if cfg!(miri) { &[CAP + 1] } else { &[CAP - 1, CAP, CAP + 1, 3 * CAP + 5] };
        for &run in sizes {
            let (w, f) = (CountWindow::new(), folds());
            let mut calls = Vec::new();
            let add = |c: (bool, bool), calls: &mut Vec<(bool, bool)>| {
                record(&w, &f, c);
                calls.push(c);
            };
            add((true, false), &mut calls);
            for _ in 0..run {
                add((false, false), &mut calls);
            }
            for i in 0..CHUNK + 2 {
                add((true, i % 2 == 0), &mut calls);
                // Under miri two sizes: the chunk's marked calls, and past its cap.
                let sizes: &[u32] =
                    if cfg!(miri) { &[CHUNK, CAP + 2] } else { &[1, CHUNK, CAP, CAP + 2, MAX_COUNT_WINDOW] };
                for &n in sizes {
                    assert_eq!(
                        w.totals(n, &counting),
                        Some(reference(&calls, n as usize)),
                        "run {run}, n {n}"
                    );
                }
            }
            let successes = calls.iter().filter(|c| !c.0).count() as u64;
            assert_eq!(f.folded.load(Ordering::Relaxed) + w.unfolded(), successes, "run {run}");
        }
    }

    #[test]
    fn a_stripe_places_its_successes_when_a_batch_fills() {
        let (w, f) = (CountWindow::new(), folds());
        for _ in 0..BATCH - 1 {
            record(&w, &f, (false, false));
        }
        let c = Cursor(w.cursor.load(Ordering::Relaxed));
        assert_eq!((c.calls(), c.filed()), (0, 0), "a batch not full yet waits");
        assert_eq!(c.waiting(&w.made()).iter().sum::<u64>(), BATCH - 1);
        record(&w, &f, (false, false));
        let c = Cursor(w.cursor.load(Ordering::Relaxed));
        let placed = u64::from(c.filed()) * u64::from(CHUNK) + u64::from(c.calls());
        assert_eq!(placed, BATCH, "the batch is in order");
        assert_eq!(c.waiting(&w.made()), [0; STRIPES]);
        assert_eq!(w.totals(100, &counting), Some(t(BATCH, 0, 0)));
    }

    #[test]
    fn stripe_counters_wrap_without_confusing_the_placed_values() {
        let (w, f) = (CountWindow::new(), folds());
        for j in 0..STRIPES {
            w.stripes[j].store(u64::MAX - 5 - j as u64, Ordering::Relaxed);
        }
        let made = w.made();
        w.cursor.store(Cursor::new(0, 0, 0, 0, 0).restarted(&made).0, Ordering::Relaxed);
        let mut calls = Vec::new();
        let rounds = if cfg!(miri) { 2 * BATCH as usize + 3 } else { 4 * BATCH as usize + 7 };
        for i in 0..rounds {
            let c = (i % 6 == 0, false);
            record(&w, &f, c);
            calls.push(c);
            on_stripe(&w, i % STRIPES, 1);
            calls.push((false, false));
            assert_eq!(w.totals(50, &counting), Some(reference(&calls, 50)), "call {i}");
        }
    }

    #[test]
    fn a_restart_drops_the_waiting_successes_and_folds_them_with_the_chunk() {
        let (w, f) = (CountWindow::new(), folds());
        for i in 0..CHUNK - 1 {
            record(&w, &f, (i == 0, false));
        }
        on_stripe(&w, 0, 5);
        on_stripe(&w, STRIPES - 1, 3);
        w.restart(&|| true, &f);
        assert_eq!(f.folded.load(Ordering::Relaxed), u64::from(CHUNK) - 2 + 5 + 3);
        assert_eq!(w.unfolded(), 0);
        assert_eq!(w.totals(100, &counting), Some(t(0, 0, 0)));
        w.add(mark(true, false), &counting, &f);
        assert_eq!(w.totals(100, &counting), Some(t(1, 1, 0)), "no success of the old window came back");
    }

    /// Four threads (every stripe) count successes and failures at once;
    /// then this thread's failures. Every success reaches the snapshot
    /// once, and the window ends with the last N calls, all failures: no
    /// placement was lost or made twice.
    #[test]
    #[cfg_attr(miri, ignore = "thousands of calls on four threads")]
    fn threads_counting_at_once_lose_and_double_nothing() {
        let (w, f) = (CountWindow::new(), folds());
        let successes = core::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (w, f, successes) = (&w, &f, &successes);
                s.spawn(move || {
                    for i in 0..20_000u64 {
                        let failed = (i * 7 + t) % 11 == 0;
                        record(w, f, (failed, false));
                        if !failed {
                            successes.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        let n = MAX_COUNT_WINDOW;
        for _ in 0..n {
            assert!(w.add(mark(true, false), &counting, &f));
        }
        assert_eq!(w.totals(n, &counting), Some(t(u64::from(n), u64::from(n), 0)));
        assert_eq!(f.folded.load(Ordering::Relaxed) + w.unfolded(), successes.load(Ordering::Relaxed));
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
        w.cursor.store(Cursor::new(0, 0, 0, NUMBER_MASK - 3, 0).0, Ordering::Relaxed);
        let mut calls = Vec::new();
        for i in 0..20 * CHUNK as usize {
            let c = (i % 5 == 0, false);
            record(&w, &f, c);
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
            slot.store(u64::MAX >> 20, Ordering::Relaxed);
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
