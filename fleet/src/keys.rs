//! The names the fleet uses in Redis, all under `tripwire:fleet:<namespace>`:
//!
//! | name | type | holds |
//! | --- | --- | --- |
//! | `tripwire:fleet:<ns>` | channel | every transition of every breaker of the namespace |
//! | `tripwire:fleet:<ns>:state:<breaker>` | string, TTL the wait | the last "opened" or "held" message, for hosts that join or reconnect |
//! | `tripwire:fleet:<ns>:lease:<breaker>` | string, TTL the lease | the probe lease: a signed message naming its holder |
//!
//! A namespace has no `:`, so no two namespaces share a name.

use std::string::String;

/// The channel and key names of one namespace.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    pub(crate) channel: String,
}

impl Keys {
    pub(crate) fn new(namespace: &str) -> Self {
        Self { channel: std::format!("tripwire:fleet:{namespace}") }
    }

    /// The key that keeps `breaker`'s last opened or held message.
    pub(crate) fn state(&self, breaker: &str) -> String {
        std::format!("{}:state:{breaker}", self.channel)
    }

    /// The key of `breaker`'s probe lease.
    pub(crate) fn lease(&self, breaker: &str) -> String {
        std::format!("{}:lease:{breaker}", self.channel)
    }
}
