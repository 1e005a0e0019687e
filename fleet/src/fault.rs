//! The link's last error, in words: why a connection could not be made
//! (refused, `AUTH`, `SELECT`, TLS), why one was dropped, or that messages
//! keep failing the signature check. Kept until the next error, and
//! logged with `tracing` at the `tripwire` target (feature `tracing`):
//! once for each new reason of each connection, not once per attempt,
//! and bad signatures at the 1st, 2nd, 4th, 8th...
//!
//! Its mutex is taken by the link's threads when something fails or a
//! connection is made, and by whoever reads the error; never on a call's
//! path.

use std::string::String;
use std::sync::{Mutex, PoisonError};

use crate::counters::Conn;

/// The last error of one link.
#[derive(Debug, Default)]
pub(crate) struct LastError(Mutex<Errors>);

#[derive(Debug, Default)]
struct Errors {
    /// The last error of either connection, or of the messages.
    last: Option<String>,
    /// Each connection's last error logged since it was last up.
    logged: [Option<String>; 2],
}

impl LastError {
    /// Keeps `"{conn}: {why}"` as the last error of the fleet `namespace`,
    /// and logs it unless it is what `conn` last logged since it was up (a
    /// server that stays wrong is logged once, not once per attempt).
    pub(crate) fn set(&self, namespace: &str, conn: Conn, why: &str) {
        let text = std::format!("{}: {why}", conn.as_str());
        // A panic while holding the lock cannot leave an `Errors` half
        // written (each change is one assignment), so a poisoned lock is
        // usable.
        let mut e = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let logged = &mut e.logged[conn as usize];
        if logged.as_deref() != Some(text.as_str()) {
            log(namespace, &text);
            *logged = Some(text.clone());
        }
        e.last = Some(text);
    }

    /// `conn` is up: its next error is logged, whatever it is.
    pub(crate) fn connected(&self, conn: Conn) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).logged[conn as usize] = None;
    }

    /// `n` messages (or stored values) in all have failed the signature
    /// check: the last error says so, and the log at the 1st, 2nd, 4th,
    /// 8th... (a host with another key sends on, and is not logged per
    /// message).
    pub(crate) fn bad_signatures(&self, namespace: &str, n: u64) {
        let s = if n == 1 { "" } else { "s" };
        let text = std::format!("{n} message{s} with a bad signature: is the key the same on every host?");
        if n.is_power_of_two() {
            log(namespace, &text);
        }
        self.0.lock().unwrap_or_else(PoisonError::into_inner).last = Some(text);
    }

    /// The last error, if there was one.
    pub(crate) fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).last.clone()
    }
}

/// A `tracing` warning for a link error (feature `tracing`; nothing without).
pub(crate) fn log(namespace: &str, text: &str) {
    #[cfg(feature = "tracing")]
    tracing::warn!(target: "tripwire", fleet = namespace, error = text, "fleet link error");
    #[cfg(not(feature = "tracing"))]
    let _ = (namespace, text);
}
