//! Breakers in a memory-mapped file, shared by every process that opens
//! the same path: `Breaker.shared(path, ...)`.
//!
//! The region's layout, its initialisation race and its validation are the
//! core's (`tripwire::shared::SharedRegion`); this module only makes the mapping.
//! A new file is created empty and extended with zeros to the region's
//! size, which is the unclaimed state `open_in` expects; of several
//! processes racing to set it up, exactly one initialises it and the others
//! attach, and a process asking for another config is refused.

use std::fs::OpenOptions;
use std::path::Path;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use memmap2::{MmapOptions, MmapRaw};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use tripwire::{
    BreakerConfig,
    shared::{RegionError, SharedRegion},
};

/// How long to wait for another process that is initialising the region.
const INIT_WAIT: Duration = Duration::from_secs(1);

/// A breaker living in a shared mapping, and the mapping that keeps it.
#[derive(Debug)]
pub(crate) struct Mapping {
    breaker: NonNull<tripwire::Breaker>,
    /// Unmapped on drop, after every reference to `breaker` is gone (the
    /// breaker is only reached through `&self`).
    _map: MmapRaw,
}

// SAFETY:
// - `breaker` points into `_map`, which lives as long as `self`, and is
//   only turned into shared references, whose lifetime is bounded by
//   `&self`.
// - `tripwire::Breaker` is `Sync` (atomics and plain data); sharing a
//   reference to it between threads is what it is made for, and other
//   processes touch it only through the same atomics.
unsafe impl Send for Mapping {}
// SAFETY: as for `Send`.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Opens (creating it if need be) the region at `path` holding a
    /// breaker made with `config`.
    pub(crate) fn open(py: Python<'_>, path: &Path, config: BreakerConfig) -> PyResult<Self> {
        let (needed, _align) = SharedRegion::layout();
        let (breaker, map) = map_region(py, path, needed, |mem, len| {
            // SAFETY:
            // - `mem` is a shared read-write mapping of `len` bytes,
            //   page-aligned, valid for as long as the map `map_region`
            //   returns; the reference is kept next to it and never
            //   outlives it.
            // - The region's bytes are only accessed through the core's
            //   shared-region functions and the breaker they return, in
            //   this process and (by contract of the file) in every other
            //   one; the file is never truncated by this code.
            unsafe { SharedRegion::open_in(mem, len, config) }.map(NonNull::from)
        })
        .map_err(|e| match e {
            Opened::Region(RegionError::ConfigMismatch) => PyValueError::new_err(format!(
                "{}: the shared breaker there was made with another config",
                path.display()
            )),
            e => e.into_py(path),
        })?;
        Ok(Self { breaker, _map: map })
    }

    #[inline]
    pub(crate) fn breaker(&self) -> &tripwire::Breaker {
        // SAFETY: see the `Send` impl: valid while `self` is.
        unsafe { self.breaker.as_ref() }
    }
}

/// Why a region could not be opened: the file, or the region in it.
pub(crate) enum Opened {
    Os(PyErr),
    Region(RegionError),
}

impl Opened {
    /// The error Python sees: the `OSError` of the file, or a `ValueError`
    /// naming the path and what is wrong with the region.
    pub(crate) fn into_py(self, path: &Path) -> PyErr {
        match self {
            Opened::Os(e) => e,
            Opened::Region(e) => PyValueError::new_err(format!("{}: {e}", path.display())),
        }
    }
}

/// Maps the file at `path` (created with mode 0600 if need be, and
/// extended with zeros to `needed` bytes when new: the unclaimed state),
/// and opens the region in it with `open`, waiting up to [`INIT_WAIT`] for
/// another process that is initialising it. Returns what `open` made, and
/// the mapping it lives in, which must outlive it.
pub(crate) fn map_region<T>(
    py: Python<'_>,
    path: &Path,
    needed: usize,
    open: impl Fn(*mut u8, usize) -> Result<T, RegionError>,
) -> Result<(T, MmapRaw), Opened> {
    let os_err = |e: std::io::Error| Opened::Os(os_error(path, &e));
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(path).map_err(os_err)?;
    // A new file is empty: extend it with zeros, the unclaimed state.
    // Racing creators all extend it to the same size, which changes
    // nothing for the one that got there first.
    if file.metadata().map_err(os_err)?.len() == 0 {
        file.set_len(needed as u64).map_err(os_err)?;
    }
    let map = MmapOptions::new().map_raw(&file).map_err(os_err)?;
    let deadline = Instant::now() + INIT_WAIT;
    loop {
        match open(map.as_mut_ptr(), map.len()) {
            Ok(made) => return Ok((made, map)),
            Err(RegionError::Initialising { .. }) if Instant::now() < deadline => {
                py.detach(|| std::thread::sleep(Duration::from_millis(1)));
            }
            Err(e) => return Err(Opened::Region(e)),
        }
    }
}

/// `e` as the `OSError` Python's own `open(path)` raises: built from the
/// errno, the message and the path, so that it is the subclass for the
/// errno (`FileNotFoundError`, `PermissionError`, ...) with `errno`,
/// `strerror` and `filename` set. An error without an errno keeps the
/// path in its message.
fn os_error(path: &Path, e: &std::io::Error) -> PyErr {
    let shown = path.display().to_string();
    match e.raw_os_error() {
        Some(errno) => {
            // The message without Rust's " (os error N)" suffix, as
            // Python's strerror reads.
            let message = e.to_string();
            let strerror =
                message.strip_suffix(&format!(" (os error {errno})")).unwrap_or(&message).to_owned();
            PyOSError::new_err((errno, strerror, shown))
        }
        None => PyOSError::new_err(format!("{shown}: {e}")),
    }
}
