//! The shared bulkhead's protocol: a table of `max` slot words, each free
//! (0) or owned by one [`Holder`], taken and freed by compare-and-swap.
//!
//! # Why a table, not a counter
//! A counter cannot tell whose slots it counts: when a process holding
//! slots is killed, its slots stay counted for good. Each slot here names
//! its holder, so a reclaim pass can free exactly the slots whose holder
//! process is gone, and a release can free exactly the slot its receipt
//! names. The cap is the table's length: `max` slots, so never more than
//! `max` holders, not even for an instant.
//!
//! # The rules, one word at a time
//! - acquire: a CAS of one slot from 0 to the holder's word; the first free
//!   slot from the hint onwards wins. Lock-free: a failed CAS means another
//!   caller took that slot.
//! - release: a CAS of the receipt's slot from the receipt's word to 0,
//!   after a CAS of the slot's release count from the receipt's count to
//!   the next. Refused (nothing changes) when the slot holds another word
//!   (freed already, reclaimed, or taken again by another process or
//!   another nonce of the same one), and when its release count has moved
//!   on since the receipt's acquire: the slot was released and taken
//!   again, with the same word once the process's 16-bit nonce has come
//!   round. The count is 64 bits: it never comes round.
//! - reclaim: for each held slot whose holder the caller's liveness check
//!   calls dead, a CAS from the word it read to 0. If the slot was freed and
//!   taken again meanwhile, its word differs and the CAS leaves the new
//!   holder alone; two reclaim passes racing over one dead slot free it
//!   once. A dead process writes nothing, so its word cannot come back.
//!   A reclaim leaves the release count alone: the receipt it outdates is
//!   a dead process's, which nobody presents.
//!
//! # The release count
//! Each slot has a count of the releases that freed it, beside its word.
//! An acquire reads it after its CAS takes the slot and puts it in the
//! receipt; a release claims it (a CAS from the receipt's count to the
//! next) before it frees the word, so of two releases of one receipt
//! exactly one frees the slot, and a receipt of an acquire that was
//! released is refused for good, whatever word the slot holds later. The
//! count only moves while the word is the holder's: between an acquire's
//! CAS and its read of the count nobody holding another receipt of this
//! slot can claim it (theirs names an older count).
//!
//! # Orderings
//! - The CAS that takes a slot is `Acquire` on success; every CAS that
//!   frees one (release, reclaim) is `Release`: the `Acquire` pairs with the
//!   `Release` of whoever freed the slot last, so whatever the previous
//!   holder did happens before the next holder starts, as with any
//!   semaphore.
//! - Loads that only pick which slot to try, and every failed CAS, are
//!   `Relaxed`: the CAS that acts re-checks the word.
//! - The release count is `Relaxed` throughout: a release claims it before
//!   its `Release` CAS frees the word, and the next holder reads it after
//!   its `Acquire` CAS took the word, which pairs with that one; so the
//!   read sees the claim (or a later value).
//! - The hint, the reclaim gate and the statistics order nothing and are
//!   `Relaxed`: any value of them is safe (the hint is taken modulo `max`,
//!   the gate only spaces passes out).

use core::fmt;

use crate::bulkhead::BulkheadFull;
use crate::shared_bulkhead::holder::Holder;
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// The region's header (see `SharedBulkheadRegion`'s layout table).
#[repr(C, align(64))]
pub(crate) struct Header {
    pub(crate) magic: AtomicU64,
    pub(crate) version: u32,
    pub(crate) max: u32,
    pub(crate) size: u64,
    pub(crate) acquired: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) reclaimed: AtomicU64,
    pub(crate) gate: AtomicU64,
    pub(crate) hint: AtomicU32,
    pub(crate) reserved: u32,
}

impl Header {
    /// A header for `max` slots, as `init_in` writes it (magic aside).
    pub(crate) fn new(magic: u64, version: u32, max: u32, size: u64) -> Header {
        Header {
            magic: AtomicU64::new(magic),
            version,
            max,
            size,
            acquired: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            reclaimed: AtomicU64::new(0),
            gate: AtomicU64::new(0),
            hint: AtomicU32::new(0),
            reserved: 0,
        }
    }
}

/// The receipt for one slot of a [`SharedBulkhead`]: which slot, and the
/// holder word it was taken with. Give it back to
/// [`SharedBulkhead::release`] exactly once; a receipt released twice, or
/// after its slot was reclaimed, is refused.
///
/// Plain data (`Copy`): a C caller keeps it in a `tw_shared_slot`.
#[must_use = "a slot not released stays held until its process dies and a reclaim pass frees it"]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SharedSlot {
    index: u32,
    holder: Holder,
    releases: u64,
}

impl SharedSlot {
    /// A receipt from its parts (as a C caller hands them back).
    pub const fn from_parts(index: u32, holder: Holder, releases: u64) -> SharedSlot {
        SharedSlot { index, holder, releases }
    }

    /// Which slot of the table.
    pub const fn index(self) -> u32 {
        self.index
    }

    /// The word the slot holds while this receipt's acquire owns it.
    pub const fn holder(self) -> Holder {
        self.holder
    }

    /// How many releases had freed the slot when this receipt's acquire
    /// took it: what tells it from a later acquire with the same word.
    pub const fn releases(self) -> u64 {
        self.releases
    }
}

/// A shared bulkhead's counters at one moment (each read separately).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SharedBulkheadSnapshot {
    /// The cap: the table's length.
    pub max: u32,
    /// Slots held now (a scan of the table).
    pub held: u32,
    /// Slots handed out since the region was made, by every process.
    pub acquired: u64,
    /// Acquires refused.
    pub rejected: u64,
    /// Slots of dead processes freed by reclaim passes.
    pub reclaimed: u64,
}

/// A bulkhead whose slots live in memory shared by several processes: one
/// cap for all of them, and slots that a dead process held come back.
///
/// A view (`Copy`) of a region made by `SharedBulkheadRegion` (or of a
/// [`SlotTable`]); the protocol is in this module's docs. The core takes
/// the [`Holder`] word and the liveness check from its caller; with
/// feature `std`, `try_acquire_here` and `reclaim_dead` supply this
/// process's and `kill`/`/proc`'s.
#[derive(Clone, Copy)]
pub struct SharedBulkhead<'a> {
    header: &'a Header,
    slots: &'a [AtomicU64],
    /// Each slot's release count (module docs), as long as `slots`.
    releases: &'a [AtomicU64],
}

impl fmt::Debug for SharedBulkhead<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBulkhead").field("max", &self.max()).field("held", &self.held()).finish()
    }
}

impl<'a> SharedBulkhead<'a> {
    /// A view of `header`, its table and the table's release counts
    /// (each `header.max` long).
    pub(crate) fn new(header: &'a Header, slots: &'a [AtomicU64], releases: &'a [AtomicU64]) -> Self {
        debug_assert_eq!(slots.len(), header.max as usize);
        debug_assert_eq!(releases.len(), header.max as usize);
        SharedBulkhead { header, slots, releases }
    }

    /// The cap on slots held at once.
    pub fn max(&self) -> u32 {
        self.header.max
    }

    /// Slots held now: a scan of the table, each word read separately (so
    /// a snapshot, exact only when nobody acquires or releases meanwhile).
    pub fn held(&self) -> u32 {
        // Relaxed: a report, ordering nothing else.
        self.slots.iter().filter(|s| s.load(Ordering::Relaxed) != 0).count() as u32
    }

    /// Slots free now: `max - held`.
    pub fn available(&self) -> u32 {
        self.max() - self.held()
    }

    /// Who holds slot `index` now, if anyone.
    pub fn holder_of(&self, index: u32) -> Option<Holder> {
        // Relaxed: a report.
        self.slots.get(index as usize).and_then(|s| Holder::from_raw(s.load(Ordering::Relaxed)))
    }

    /// Slot `index`'s word (0 when free); `index` is below `max`.
    #[cfg(not(loom))]
    pub(crate) fn raw_slot(&self, index: u32) -> u64 {
        // Relaxed: a check of the word's shape, ordering nothing.
        self.slots[index as usize].load(Ordering::Relaxed)
    }

    /// The counters at this moment.
    pub fn snapshot(&self) -> SharedBulkheadSnapshot {
        // Relaxed: statistics (see the module's Orderings).
        SharedBulkheadSnapshot {
            max: self.max(),
            held: self.held(),
            acquired: self.header.acquired.load(Ordering::Relaxed),
            rejected: self.header.rejected.load(Ordering::Relaxed),
            reclaimed: self.header.reclaimed.load(Ordering::Relaxed),
        }
    }

    /// Takes a free slot for `holder`, without waiting: the receipt, or
    /// [`BulkheadFull`] when every slot was seen held.
    ///
    /// Each slot is looked at once, from the hint onwards, so under churn a
    /// slot freed behind the scan is missed: a refusal means every slot was
    /// held at some moment during the call, not all at one moment.
    /// Allocation-free; lock-free (a failed CAS means another caller took
    /// the slot); at most `max` words read.
    #[inline]
    pub fn try_acquire(&self, holder: Holder) -> Result<SharedSlot, BulkheadFull> {
        let max = self.slots.len();
        if max > 0 {
            // Relaxed: a hint (see the module's Orderings); any value is safe.
            let start = self.header.hint.load(Ordering::Relaxed) as usize % max;
            for i in (start..max).chain(0..start) {
                if self.take(i, holder) {
                    let next = if i + 1 == max { 0 } else { i + 1 };
                    // Relaxed: statistics and the hint order nothing.
                    self.header.hint.store(next as u32, Ordering::Relaxed);
                    self.header.acquired.fetch_add(1, Ordering::Relaxed);
                    // Relaxed: after the Acquire CAS of `take` (module's Orderings).
                    let releases = self.releases[i].load(Ordering::Relaxed);
                    return Ok(SharedSlot { index: i as u32, holder, releases });
                }
            }
        }
        // Relaxed: statistics.
        self.header.rejected.fetch_add(1, Ordering::Relaxed);
        Err(BulkheadFull { max: self.max() })
    }

    /// Tries slot `i` once: `true` if `holder` now owns it.
    #[inline]
    fn take(&self, i: usize, holder: Holder) -> bool {
        let slot = &self.slots[i];
        // Relaxed: only decides whether to try; the CAS re-checks.
        let mut w = slot.load(Ordering::Relaxed);
        loop {
            // Is this slot free?
            if w != 0 {
                return false;
            }
            // Acquire pairs with the Release CAS of the release or reclaim
            // that freed the slot. Relaxed on failure: the loop re-checks.
            match slot.compare_exchange_weak(0, holder.raw(), Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(actual) => w = actual,
            }
        }
    }

    /// Frees the slot `slot` names if it still holds `slot`'s acquire:
    /// `true` if this call freed it; `false` (nothing changed) for an index
    /// out of range, a slot already freed or reclaimed, or one taken again
    /// since, with another word or the same one (module docs).
    #[inline]
    pub fn release(&self, slot: SharedSlot) -> bool {
        let i = slot.index as usize;
        let (Some(cell), Some(count)) = (self.slots.get(i), self.releases.get(i)) else { return false };
        // Does the slot hold this receipt's word? (Relaxed: only decides
        // whether to claim; the word's CAS in `free` re-checks.)
        if cell.load(Ordering::Relaxed) != slot.holder.raw() {
            return false;
        }
        // Is this still the receipt's acquire, and not released already?
        // Strong: a one-shot claim. Relaxed: see the module's Orderings.
        let next = slot.releases.wrapping_add(1);
        if count.compare_exchange(slot.releases, next, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return false;
        }
        free(cell, slot.holder.raw())
    }

    /// One pass over the table: frees every slot whose holder `is_dead`
    /// says is dead, and returns how many it freed. `is_dead` is asked
    /// about each held slot's holder (it may cache per process); it must
    /// never call a live process dead.
    ///
    /// Safe to race with acquires, releases and other passes: a slot freed
    /// and taken again while `is_dead` decides holds a new word, and is left
    /// alone (module docs).
    pub fn reclaim(&self, mut is_dead: impl FnMut(Holder) -> bool) -> u32 {
        let mut freed = 0;
        for cell in self.slots {
            // Relaxed: the word is only a name here; the CAS re-checks it.
            let w = cell.load(Ordering::Relaxed);
            // Is the slot held, and is its holder gone?
            let Some(holder) = Holder::from_raw(w) else { continue };
            if is_dead(holder) && free(cell, w) {
                freed += 1;
            }
        }
        if freed > 0 {
            // Relaxed: statistics.
            self.header.reclaimed.fetch_add(u64::from(freed), Ordering::Relaxed);
        }
        freed
    }

    /// [`reclaim`](Self::reclaim), at most once per `every` nanoseconds
    /// across every process (`now` from a clock they all share): `None`
    /// when another pass started less than `every` ago. For callers that
    /// reclaim whenever they are refused, so that a full bulkhead of live
    /// holders does not cost every refusal a liveness check per slot.
    ///
    /// A gate further ahead of `now` than `every` (garbage in the region,
    /// or a clock that went back) counts as passed: it never stops passes
    /// for longer than `every`.
    pub fn reclaim_gated(&self, now: u64, every: u64, is_dead: impl FnMut(Holder) -> bool) -> Option<u32> {
        // Relaxed: the gate only spaces passes out (module's Orderings).
        let gate = self.header.gate.load(Ordering::Relaxed);
        // Did a pass start less than `every` ago?
        if now < gate && gate - now <= every {
            return None;
        }
        // Strong: a one-shot claim of this interval, not a loop; a spurious
        // failure would skip the pass. Relaxed: as above.
        let next = now.saturating_add(every);
        if self.header.gate.compare_exchange(gate, next, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return None;
        }
        Some(self.reclaim(is_dead))
    }
}

/// Frees `cell` if it holds `word`: `true` if this call freed it.
#[inline]
fn free(cell: &AtomicU64, word: u64) -> bool {
    // Relaxed: only decides whether to try; the CAS re-checks.
    let mut w = cell.load(Ordering::Relaxed);
    loop {
        // Does the slot still hold this word?
        if w != word {
            return false;
        }
        // Release pairs with the Acquire CAS of the next holder's take.
        // Relaxed on failure: the loop re-checks.
        match cell.compare_exchange_weak(word, 0, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(actual) => w = actual,
        }
    }
}

/// A shared bulkhead's layout as a Rust value, for a bulkhead of up to `N`
/// slots in ordinary memory: the same header and table as a region, built
/// without raw memory (tests, models, one process with many threads).
///
/// # Examples
/// ```
/// use tripwire::shared::{Holder, SlotTable};
///
/// let table = SlotTable::<4>::new(2).expect("2 <= 4");
/// let b = table.bulkhead();
/// let me = Holder::new(42, 1, 0).unwrap();
/// let slot = b.try_acquire(me)?;
/// assert_eq!(b.available(), 1);
/// assert!(b.release(slot));
/// assert!(!b.release(slot), "released once already");
/// # Ok::<(), tripwire::BulkheadFull>(())
/// ```
#[repr(C)]
pub struct SlotTable<const N: usize> {
    header: Header,
    slots: [AtomicU64; N],
    releases: [AtomicU64; N],
}

impl<const N: usize> SlotTable<N> {
    /// A table capped at `max` slots; `None` if `max > N`.
    pub fn new(max: u32) -> Option<Self> {
        if max as usize > N {
            return None;
        }
        Some(SlotTable {
            header: Header::new(0, 0, max, 0),
            slots: core::array::from_fn(|_| AtomicU64::new(0)),
            releases: core::array::from_fn(|_| AtomicU64::new(0)),
        })
    }

    /// The bulkhead over this table.
    pub fn bulkhead(&self) -> SharedBulkhead<'_> {
        let max = self.header.max as usize;
        SharedBulkhead::new(&self.header, &self.slots[..max], &self.releases[..max])
    }
}

impl<const N: usize> fmt::Debug for SlotTable<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.bulkhead().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pid: u32, nonce: u16) -> Holder {
        Holder::new(pid, 1, nonce).unwrap()
    }

    #[test]
    fn never_more_than_max_and_a_release_frees_one() {
        let t = SlotTable::<4>::new(3).unwrap();
        let b = t.bulkhead();
        let slots: [_; 3] = core::array::from_fn(|i| b.try_acquire(h(1, i as u16)).unwrap());
        assert_eq!(b.try_acquire(h(2, 0)).unwrap_err(), BulkheadFull { max: 3 });
        assert_eq!(b.available(), 0);
        assert!(b.release(slots[1]));
        let again = b.try_acquire(h(2, 0)).unwrap();
        assert_eq!(again.index(), slots[1].index());
        assert_eq!(
            b.snapshot(),
            SharedBulkheadSnapshot { max: 3, held: 3, acquired: 4, rejected: 1, reclaimed: 0 }
        );
    }

    #[test]
    fn a_release_of_a_slot_not_held_is_refused() {
        let t = SlotTable::<2>::new(1).unwrap();
        let b = t.bulkhead();
        let mine = b.try_acquire(h(1, 0)).unwrap();
        // Someone else's receipt for the same slot, an index out of range.
        assert!(!b.release(SharedSlot::from_parts(0, h(2, 0), mine.releases())));
        assert!(!b.release(SharedSlot::from_parts(1, h(1, 0), 0)));
        assert!(!b.release(SharedSlot::from_parts(u32::MAX, h(1, 0), 0)));
        assert!(b.release(mine));
        // The same process takes the slot again: the old receipt is stale.
        let next = b.try_acquire(h(1, 1)).unwrap();
        assert_eq!(next.index(), mine.index());
        assert!(!b.release(mine), "a stale receipt must not free the new acquire");
        assert_eq!(b.held(), 1);
        assert!(b.release(next));
    }

    /// A process's 16-bit nonce wraps after 65,536 acquires: the slot is
    /// then taken with the very word an old receipt names. The old receipt
    /// must still be refused, and the new one free the slot.
    #[test]
    fn a_receipt_from_before_the_nonce_wrapped_is_refused() {
        let t = SlotTable::<1>::new(1).unwrap();
        let b = t.bulkhead();
        let old = b.try_acquire(h(1, 0)).unwrap();
        assert!(b.release(old));
        let pairs = if cfg!(miri) { 0 } else { u16::MAX };
        for nonce in 1..=pairs {
            assert!(b.release(b.try_acquire(h(1, nonce)).unwrap()));
        }
        let nonce = if cfg!(miri) { 0 } else { pairs.wrapping_add(1) };
        let cur = b.try_acquire(h(1, nonce)).unwrap();
        assert_eq!((cur.index(), cur.holder()), (old.index(), old.holder()), "the same slot and word");
        assert!(!b.release(old), "a stale receipt freed the slot taken again");
        assert_eq!(b.held(), 1);
        assert!(b.release(cur));
        assert_eq!(b.held(), 0);
    }

    #[test]
    fn reclaim_frees_the_dead_only_and_counts_them() {
        let t = SlotTable::<4>::new(4).unwrap();
        let b = t.bulkhead();
        let dead = [b.try_acquire(h(7, 0)).unwrap(), b.try_acquire(h(7, 1)).unwrap()];
        let live = b.try_acquire(h(8, 0)).unwrap();
        let mut asked = 0;
        let freed = b.reclaim(|x| {
            asked += 1;
            x.pid() == 7
        });
        assert_eq!((freed, asked), (2, 3));
        assert!(!b.release(dead[0]), "reclaimed already");
        assert!(b.release(live));
        assert_eq!(b.snapshot().reclaimed, 2);
        assert_eq!(b.reclaim(|_| true), 0, "nothing held");
    }

    #[test]
    fn zero_slots_refuse_everything() {
        let t = SlotTable::<0>::new(0).unwrap();
        assert_eq!(t.bulkhead().try_acquire(h(1, 0)).unwrap_err(), BulkheadFull { max: 0 });
        assert!(SlotTable::<1>::new(2).is_none());
    }

    #[test]
    fn a_garbage_hint_is_taken_modulo_max() {
        let t = SlotTable::<3>::new(3).unwrap();
        t.header.hint.store(u32::MAX, Ordering::Relaxed);
        let b = t.bulkhead();
        let s = b.try_acquire(h(1, 0)).unwrap();
        assert_eq!(s.index(), u32::MAX % 3);
    }

    #[test]
    fn the_gate_spaces_passes_and_ignores_a_gate_far_ahead() {
        let t = SlotTable::<1>::new(1).unwrap();
        let b = t.bulkhead();
        assert_eq!(b.reclaim_gated(1_000, 100, |_| true), Some(0));
        assert_eq!(b.reclaim_gated(1_050, 100, |_| true), None, "within the interval");
        assert_eq!(b.reclaim_gated(1_100, 100, |_| true), Some(0));
        t.header.gate.store(u64::MAX, Ordering::Relaxed);
        assert_eq!(b.reclaim_gated(5, 100, |_| true), Some(0), "garbage gate counts as passed");
        assert_eq!(b.reclaim_gated(u64::MAX, 100, |_| true), Some(0), "saturates, no overflow");
    }
}
