//! Who this process is, and whether another one still lives: the `std`
//! half of the shared bulkhead ([`SharedBulkhead`]), which takes both from
//! its caller.
//!
//! # What is recovered, and when
//! A slot is reclaimed only when its holder is known to be gone, never on a
//! guess:
//! - `kill(pid, 0)` fails with `ESRCH`: no process has that pid;
//! - `/proc/<pid>/stat` (Linux) shows a zombie (`Z`, `X`): killed or exited,
//!   not yet reaped by its parent;
//! - `/proc/<pid>/stat` shows another start time than the holder word's tag:
//!   the pid has been reused by a newer process;
//! - `/proc/<pid>/stat` vanished between the `kill` and the read.
//!
//! Not recovered: a slot whose holder lives on but never releases (a hung
//! or leaking worker: it still holds the slot, as it should); a dead
//! holder whose pid was reused by a process whose start time has the same
//! 24-bit tag (one in 2²⁴ − 1, recovered once that process exits too); on
//! systems without `/proc` (the BSDs, macOS), a dead holder whose pid has
//! been reused (recovered once the reusing process exits). When unsure, a
//! slot is left held: a live holder's slot is never freed under it.
//!
//! When: [`SharedBulkhead::try_acquire_here`] runs a reclaim pass when it
//! finds every slot held, at most once per [`RECLAIM_EVERY`] across all the
//! processes of a region (the region's gate), then tries once more; and
//! [`SharedBulkhead::reclaim_dead`] runs one at once, for a supervisor that
//! has just reaped a worker.
//!
//! Every process of a region must see the others' pids: one PID namespace
//! (not two containers with their own, sharing `/dev/shm`), or a live
//! holder's pid would look unused.
//!
//! # Orderings
//! The cached identity and the nonce counter are per process and order
//! nothing: `Relaxed`. A `fork` child's handler (which runs before any
//! code of the child) clears the cached identity, so the child computes
//! its own.

use core::fmt::Write as _;
use std::io::Read as _;
use std::sync::OnceLock;

use crate::bulkhead::BulkheadFull;
use crate::clock::Clock;
use crate::layers::clock::MonotonicClock;
use crate::shared_bulkhead::{Holder, SharedBulkhead, SharedSlot};
use crate::sync::{GlobalAtomicU64, Ordering};

/// The least time between two gated reclaim passes of one region, across
/// all its processes: 10 ms.
pub const RECLAIM_EVERY: u64 = 10_000_000;

/// This process's pid and start tag, as a holder word with nonce 0; 0 until
/// first computed (and again in a forked child).
static IDENTITY: GlobalAtomicU64 = GlobalAtomicU64::new(0);
/// This process's acquires so far: the holder words' nonces.
static NONCE: GlobalAtomicU64 = GlobalAtomicU64::new(0);

#[cfg(not(miri))]
extern "C" fn forget_identity_in_child() {
    // Relaxed: see the module's Orderings.
    IDENTITY.store(0, Ordering::Relaxed);
}

/// What `/proc/<pid>/stat` says of a process.
enum Stat {
    /// Its state letter and start time (clock ticks since boot).
    Found(u8, u64),
    /// No such file: the process is gone.
    Gone,
    /// Unreadable or unparsable: no answer.
    Unknown,
}

/// The start tag of a start time: 1 to 2²⁴ − 1 (0 is "unknown").
fn tag(start_time: u64) -> u32 {
    1 + (start_time % u64::from(Holder::MAX_START)) as u32
}

/// A fixed buffer to format a path into, without allocating.
struct PathBuf {
    buf: [u8; 32],
    len: usize,
}

impl core::fmt::Write for PathBuf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        self.buf.get_mut(self.len..end).ok_or(core::fmt::Error)?.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Reads `/proc/<pid>/stat` (`pid` 0: `/proc/self/stat`) into a stack
/// buffer: no allocation.
fn stat(pid: u32) -> Stat {
    // miri's isolation has no files: "no answer", as on a host without /proc.
    if cfg!(miri) {
        return Stat::Unknown;
    }
    let mut path = PathBuf { buf: [0; 32], len: 0 };
    let written = if pid == 0 { path.write_str("/proc/self/stat") } else { write!(path, "/proc/{pid}/stat") };
    let Some(path) = written.ok().and_then(|()| core::str::from_utf8(&path.buf[..path.len]).ok()) else {
        return Stat::Unknown;
    };
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Stat::Gone,
        Err(_) => return Stat::Unknown,
    };
    let mut buf = [0u8; 1024];
    let mut len = 0;
    while len < buf.len() {
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            // The process was reaped while the file was open.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Stat::Gone,
            Err(_) => return Stat::Unknown,
        }
    }
    parse_stat(&buf[..len]).map_or(Stat::Unknown, |(state, start)| Stat::Found(state, start))
}

/// The state letter and start time (field 22) of a `/proc/<pid>/stat` line.
/// The command name (field 2) is in parentheses and may hold spaces and
/// parentheses itself: the fields after it start after the last `)`.
fn parse_stat(line: &[u8]) -> Option<(u8, u64)> {
    let close = line.iter().rposition(|&b| b == b')')?;
    let rest = core::str::from_utf8(line.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    // Fields 4 to 21 lie between the state (3) and the start time (22).
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// This process as a holder word with nonce 0; `None` if its pid does not
/// fit (above 2²⁴ − 1: no Linux, BSD or macOS pid is).
fn identity() -> Option<Holder> {
    // Relaxed: see the module's Orderings.
    if let Some(me) = Holder::from_raw(IDENTITY.load(Ordering::Relaxed)) {
        return Some(me);
    }
    static HANDLER: OnceLock<()> = OnceLock::new();
    // miri runs no `fork` (nor `pthread_atfork`).
    #[cfg(not(miri))]
    HANDLER.get_or_init(|| {
        // SAFETY:
        // - `forget_identity_in_child` is an `extern "C" fn()` that lives
        //   for the whole program and does only an atomic store, which a
        //   child of a multi-threaded process may do.
        // - A failure (ENOMEM) leaves a forked child with its parent's
        //   identity until it computes none: its slots would be its
        //   parent's, released by the child's own receipts still.
        unsafe { libc::pthread_atfork(None, None, Some(forget_identity_in_child)) };
    });
    // SAFETY:
    // - `getpid` has no preconditions and cannot fail.
    let pid = unsafe { libc::getpid() };
    let start = match stat(0) {
        Stat::Found(_, start) => tag(start),
        Stat::Gone | Stat::Unknown => 0,
    };
    let me = Holder::new(u32::try_from(pid).ok()?, start, 0)?;
    // Relaxed: see the module's Orderings.
    IDENTITY.store(me.raw(), Ordering::Relaxed);
    Some(me)
}

impl Holder {
    /// This process's holder word for its next acquire (a fresh nonce);
    /// `None` if its pid does not fit in 24 bits, which no Linux, BSD or
    /// macOS pid does not. Feature `std`.
    pub fn this_process() -> Option<Holder> {
        let me = identity()?;
        // Relaxed: see the module's Orderings.
        let nonce = NONCE.fetch_add(1, Ordering::Relaxed) as u16;
        Holder::new(me.pid(), me.start(), nonce)
    }

    /// Whether the process that took this holder word is known to be gone
    /// (see the module docs for exactly when). Never true for this process,
    /// nor when in doubt. Feature `std`.
    pub fn is_dead(self) -> bool {
        if identity().is_some_and(|me| me.same_process(self)) {
            return false;
        }
        let Ok(pid) = libc::pid_t::try_from(self.pid()) else { return false };
        // SAFETY:
        // - Signal 0 sends nothing: it only checks that the pid exists.
        //   `pid` is positive (a holder's pid is never 0), so it names one
        //   process, not a group.
        if unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        {
            return true;
        }
        // It exists (or may not be signalled by us: EPERM). Is it the holder?
        match stat(self.pid()) {
            Stat::Found(state, start) => {
                matches!(state, b'Z' | b'X') || (self.start() != 0 && tag(start) != self.start())
            }
            // Gone since the `kill`, if this host has a /proc at all.
            Stat::Gone => identity().is_some_and(|me| me.start() != 0),
            Stat::Unknown => false,
        }
    }
}

/// [`Holder::is_dead`], asked once per process during one reclaim pass: a
/// pass meets each worker's slots over and over, and each question costs
/// system calls. Remembers the last few processes judged.
struct Judged {
    /// (the holder word with nonce 0, whether it is dead); 0: empty.
    seen: [(u64, bool); 8],
    next: usize,
}

impl Judged {
    fn new() -> Self {
        Judged { seen: [(0, false); 8], next: 0 }
    }

    fn is_dead(&mut self, holder: Holder) -> bool {
        let key = holder.raw() & !u64::from(u16::MAX);
        // Was this process judged already in this pass?
        if let Some(&(_, dead)) = self.seen.iter().find(|(k, _)| *k == key) {
            return dead;
        }
        let dead = holder.is_dead();
        self.seen[self.next] = (key, dead);
        self.next = (self.next + 1) % self.seen.len();
        dead
    }
}

impl SharedBulkhead<'_> {
    /// Takes a slot for this process ([`Holder::this_process`]), without
    /// waiting. When every slot is held, runs a reclaim pass (at most one
    /// per [`RECLAIM_EVERY`] for the region, across its processes; see the
    /// module docs) and, if it freed any, tries once more. Feature `std`.
    ///
    /// # Errors
    /// [`BulkheadFull`] when every slot stays held (and, on a system whose
    /// pids do not fit in 24 bits, always).
    pub fn try_acquire_here(&self) -> Result<SharedSlot, BulkheadFull> {
        let Some(me) = Holder::this_process() else { return Err(BulkheadFull { max: self.max() }) };
        match self.try_acquire(me) {
            Ok(slot) => Ok(slot),
            Err(full) => match self.reclaim_gated(MonotonicClock.now(), RECLAIM_EVERY, {
                let mut judged = Judged::new();
                move |h| judged.is_dead(h)
            }) {
                Some(freed) if freed > 0 => self.try_acquire(me),
                _ => Err(full),
            },
        }
    }

    /// One reclaim pass now, with [`Holder::is_dead`] (asked once per
    /// process): the number of slots of dead processes it freed. Feature
    /// `std`.
    pub fn reclaim_dead(&self) -> u32 {
        let mut judged = Judged::new();
        self.reclaim(|h| judged.is_dead(h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::SlotTable;

    #[test]
    fn a_stat_line_parses_past_a_command_with_parentheses_and_spaces() {
        let line = b"4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10\n";
        assert_eq!(parse_stat(line), Some((b'S', 987_654)));
        assert_eq!(parse_stat(b"4242 (x) Z 1 2"), None, "too short");
        assert_eq!(parse_stat(b"no parenthesis"), None);
    }

    #[test]
    #[cfg_attr(miri, ignore)] // reads /proc and calls kill
    fn this_process_lives_and_an_unused_pid_is_dead() {
        let me = Holder::this_process().unwrap();
        assert!(!me.is_dead());
        assert_ne!(me.nonce(), Holder::this_process().unwrap().nonce());
        // A pid above Linux's PID_MAX_LIMIT (2^22) names no process.
        let nobody = Holder::new((1 << 22) + 1, me.start(), 0).unwrap();
        assert!(nobody.is_dead());
        // Our pid with another start tag: a process that had our pid before.
        let before = Holder::new(me.pid(), me.start() % Holder::MAX_START + 1, 0).unwrap();
        assert!(before.is_dead() == (me.start() != 0), "a reused pid is told apart where /proc exists");
    }

    #[test]
    #[cfg_attr(miri, ignore)] // reads /proc and calls kill
    fn a_pass_judges_each_process_once() {
        let mut judged = Judged::new();
        let ghost = |nonce| Holder::new((1 << 22) + 9, 5, nonce).unwrap();
        assert!(judged.is_dead(ghost(0)));
        assert!(judged.is_dead(ghost(1)), "another slot of the same process");
        assert_eq!(judged.seen.iter().filter(|(k, _)| *k != 0).count(), 1);
        let me = Holder::this_process().unwrap();
        assert!(!judged.is_dead(me));
        for pid in 0..20 {
            judged.is_dead(Holder::new((1 << 22) + 100 + pid, 1, 0).unwrap());
        }
        assert!(!judged.is_dead(me), "still alive once pushed out of the table");
    }

    #[test]
    #[cfg_attr(miri, ignore)] // reads /proc and calls kill
    fn a_full_bulkhead_reclaims_a_dead_holders_slot_once_per_interval() {
        let table = SlotTable::<2>::new(1).unwrap();
        let b = table.bulkhead();
        let ghost = Holder::new((1 << 22) + 7, 1, 0).unwrap();
        let stale = b.try_acquire(ghost).unwrap();
        let mine = b.try_acquire_here().expect("the ghost's slot comes back");
        assert!(!b.release(stale));
        assert_eq!(b.snapshot().reclaimed, 1);
        // Held by a live process: refused, and the gate holds the next pass off.
        assert!(b.try_acquire_here().is_err());
        assert!(b.release(mine));
    }
}
