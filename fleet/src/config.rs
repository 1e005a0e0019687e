//! How a fleet's link is set up: where Redis is, how to log in, the
//! namespace and key, and the link's timings; checked before any thread
//! starts.

use core::fmt;
use core::time::Duration;
use std::string::String;
use std::vec::Vec;

use tripwire::ConfigError;

use crate::message::MAX_NAME;
use crate::sign::MIN_KEY_LEN;

/// The longest namespace, in bytes.
pub const MAX_NAMESPACE: usize = 64;

/// What is wrong with a fleet's setup, or with a breaker that joins it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FleetError {
    /// A setting out of range: the core's one config error (config
    /// `"fleet"`), naming the setting as the builder does and what it must
    /// be, with its value if it is a duration.
    Config(ConfigError),
    /// The Redis URL or the TLS settings do not parse.
    Redis(String),
    /// A breaker cannot join: its name, and why.
    Join {
        /// The breaker's name.
        name: String,
        /// Why it cannot join.
        reason: &'static str,
    },
    /// The link's threads could not be started.
    Spawn(String),
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "{e}"),
            Self::Redis(e) => write!(f, "fleet Redis settings: {e}"),
            Self::Join { name, reason } => write!(f, "breaker {name:?} cannot join the fleet: {reason}"),
            Self::Spawn(e) => write!(f, "fleet link threads: {e}"),
        }
    }
}

impl core::error::Error for FleetError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            _ => None,
        }
    }
}

/// A fleet's settings; made by [`FleetConfig::builder`].
#[derive(Clone)]
pub struct FleetConfig {
    pub(crate) url: String,
    pub(crate) namespace: String,
    pub(crate) key: Vec<u8>,
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
    pub(crate) connect_timeout: Duration,
    pub(crate) io_timeout: Duration,
    pub(crate) reconnect_min: Duration,
    pub(crate) reconnect_max: Duration,
    pub(crate) lease_lead: Duration,
    pub(crate) probe_timeout: Duration,
    pub(crate) max_skew: Duration,
    #[cfg(feature = "tls")]
    pub(crate) tls_root_cert: Option<Vec<u8>>,
}

impl fmt::Debug for FleetConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetConfig")
            .field("namespace", &self.namespace)
            .field("key", &"<redacted>")
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("io_timeout", &self.io_timeout)
            .field("lease_lead", &self.lease_lead)
            .field("probe_timeout", &self.probe_timeout)
            .field("max_skew", &self.max_skew)
            .finish_non_exhaustive()
    }
}

impl FleetConfig {
    /// Settings for the fleet `namespace` on the Redis at `url`
    /// (`redis://[user:password@]host:port[/db]`, or `rediss://` with the
    /// feature `tls`), signing with `key`, which every host of the
    /// fleet shares (at least 16 bytes, and not one byte repeated, as 16
    /// zero bytes are; 32 random bytes are right).
    pub fn builder(
        url: impl Into<String>,
        namespace: impl Into<String>,
        key: impl Into<Vec<u8>>,
    ) -> FleetConfigBuilder {
        FleetConfigBuilder {
            config: FleetConfig {
                url: url.into(),
                namespace: namespace.into(),
                key: key.into(),
                username: None,
                password: None,
                connect_timeout: Duration::from_millis(500),
                io_timeout: Duration::from_millis(500),
                reconnect_min: Duration::from_millis(50),
                reconnect_max: Duration::from_secs(5),
                lease_lead: Duration::from_millis(100),
                probe_timeout: Duration::from_secs(10),
                max_skew: Duration::from_secs(5),
                #[cfg(feature = "tls")]
                tls_root_cert: None,
            },
        }
    }

    /// The namespace: one channel, and one set of keys, per namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// How long before a cool-down ends the link asks for the probe lease.
    pub fn lease_lead(&self) -> Duration {
        self.lease_lead
    }

    /// How long a probe may take before another host may probe instead.
    pub fn probe_timeout(&self) -> Duration {
        self.probe_timeout
    }

    /// How old (or how far ahead) a message's stamp may be.
    pub fn max_skew(&self) -> Duration {
        self.max_skew
    }

    fn validate(&self) -> Result<(), FleetError> {
        let bad = |field, expected| Err(FleetError::Config(ConfigError::invalid("fleet", field, expected)));
        let ns = &self.namespace;
        if ns.is_empty() || ns.len() > MAX_NAMESPACE || !ns.bytes().all(|b| b.is_ascii_graphic() && b != b':')
        {
            return bad("namespace", "1 to 64 printable ASCII characters, no spaces and no `:`");
        }
        if self.key.len() < MIN_KEY_LEN {
            return bad("key", "at least 16 bytes");
        }
        // Long enough but no secret: 16 zero bytes, or any one byte
        // repeated (a buffer never filled, a placeholder).
        if self.key.iter().all(|&b| b == self.key[0]) {
            return bad("key", "random bytes, not one byte repeated (as 16 zero bytes are)");
        }
        let ms = Duration::from_millis;
        let checks: [(&'static str, Duration, Duration, Duration, &'static str); 6] = [
            ("connect_timeout", self.connect_timeout, ms(1), ms(60_000), "from 1 ms to 60 s"),
            ("io_timeout", self.io_timeout, ms(1), ms(60_000), "from 1 ms to 60 s"),
            ("reconnect_min", self.reconnect_min, ms(1), ms(60_000), "from 1 ms to 60 s"),
            ("lease_lead", self.lease_lead, ms(1), ms(60_000), "from 1 ms to 60 s"),
            ("probe_timeout", self.probe_timeout, ms(10), ms(3_600_000), "from 10 ms to 1 h"),
            ("max_skew", self.max_skew, ms(10), ms(3_600_000), "from 10 ms to 1 h"),
        ];
        let duration = |field, expected, v| {
            Err(FleetError::Config(ConfigError::invalid("fleet", field, expected).with_duration(v)))
        };
        for (field, v, lo, hi, expected) in checks {
            if v < lo || v > hi {
                return duration(field, expected, v);
            }
        }
        if self.reconnect_max < self.reconnect_min || self.reconnect_max > ms(600_000) {
            return duration("reconnect_max", "at least reconnect_min, at most 10 min", self.reconnect_max);
        }
        // A PEM of no certificate (garbage, an empty file) is an empty root
        // store to the client: every handshake would fail, in silence.
        #[cfg(feature = "tls")]
        if let Some(pem) = &self.tls_root_cert {
            use rustls::pki_types::CertificateDer;
            use rustls::pki_types::pem::PemObject;
            let mut certs = CertificateDer::pem_slice_iter(pem);
            if !matches!(certs.next(), Some(Ok(_))) || certs.any(|c| c.is_err()) {
                return bad(
                    "tls_root_cert",
                    "PEM certificates (`-----BEGIN CERTIFICATE-----`), one at least",
                );
            }
        }
        Ok(())
    }
}

/// Builds a [`FleetConfig`]; every setting has a default but the URL,
/// namespace and key.
#[derive(Debug, Clone)]
#[must_use]
pub struct FleetConfigBuilder {
    config: FleetConfig,
}

impl FleetConfigBuilder {
    /// The ACL user to log in as (Redis 6 and later); overrides the URL's.
    pub fn username(mut self, user: impl Into<String>) -> Self {
        self.config.username = Some(user.into());
        self
    }

    /// The password (`AUTH`); overrides the URL's.
    pub fn password(mut self, password: impl Into<String>) -> Self {
        self.config.password = Some(password.into());
        self
    }

    /// How long opening a connection may take (default 500 ms).
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.config.connect_timeout = d;
        self
    }

    /// How long one command may take before the connection is dropped and
    /// made again (default 500 ms).
    pub fn io_timeout(mut self, d: Duration) -> Self {
        self.config.io_timeout = d;
        self
    }

    /// The waits between attempts to connect: from `min`, doubling, up to
    /// `max`, with full jitter (defaults 50 ms and 5 s).
    pub fn reconnect(mut self, min: Duration, max: Duration) -> Self {
        self.config.reconnect_min = min;
        self.config.reconnect_max = max;
        self
    }

    /// How long before a cool-down ends the link asks Redis for the probe
    /// lease (default 100 ms): a Redis slower than that to answer lets this
    /// host probe on its own.
    pub fn lease_lead(mut self, d: Duration) -> Self {
        self.config.lease_lead = d;
        self
    }

    /// How long the lease lasts past the cool-down's end (default 10 s): the
    /// longest a probe may take. If the prober has published no result by
    /// then (it died, or its call hangs), another host probes.
    pub fn probe_timeout(mut self, d: Duration) -> Self {
        self.config.probe_timeout = d;
        self
    }

    /// How old a message may be (default 5 s): its time in transit and the
    /// error of the hosts' readings of Redis's clock, on which messages are
    /// stamped (hosts' own clocks need not agree). Messages stamped longer
    /// ago are stale, and those stamped later than this ahead of this
    /// host's reading are from the future; both are dropped.
    pub fn max_skew(mut self, d: Duration) -> Self {
        self.config.max_skew = d;
        self
    }

    /// The root certificate (PEM) that the server's certificate must chain
    /// to, in place of the system's (feature `tls`, `rediss://`).
    /// One that holds no certificate (garbage, an empty file) is an error
    /// of [`build`](Self::build) naming `tls_root_cert`.
    #[cfg(feature = "tls")]
    pub fn tls_root_cert(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.config.tls_root_cert = Some(pem.into());
        self
    }

    /// The settings, checked.
    pub fn build(self) -> Result<FleetConfig, FleetError> {
        self.config.validate()?;
        Ok(self.config)
    }
}

/// Checks a breaker's name for a message: 1 to 255 bytes.
pub(crate) fn check_name(name: &str) -> Result<(), FleetError> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(FleetError::Join { name: String::from(name), reason: "a name of 1 to 255 bytes" });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8; 32] = b"0123456789abcdef0123456789abcdef";

    fn builder() -> FleetConfigBuilder {
        FleetConfig::builder("redis://127.0.0.1:6379", "prod", *KEY)
    }

    #[test]
    fn defaults_pass() {
        let c = builder().build().unwrap();
        assert_eq!(c.namespace(), "prod");
        assert_eq!(c.lease_lead(), Duration::from_millis(100));
        let debug = std::format!("{:?}", builder().password("hunter2").build().unwrap());
        assert!(!debug.contains("hunter2") && debug.contains("<redacted>"), "{debug}");
    }

    #[test]
    fn each_bad_setting_is_named() {
        let field = |b: FleetConfigBuilder| match b.build() {
            Err(FleetError::Config(e)) => e.field(),
            other => panic!("{other:?}"),
        };
        assert_eq!(field(FleetConfig::builder("redis://x", "", *KEY)), "namespace");
        assert_eq!(field(FleetConfig::builder("redis://x", "a b", *KEY)), "namespace");
        assert_eq!(field(FleetConfig::builder("redis://x", "a:b", *KEY)), "namespace");
        assert_eq!(field(FleetConfig::builder("redis://x", "n".repeat(65), *KEY)), "namespace");
        assert_eq!(field(FleetConfig::builder("redis://x", "prod", [7u8; 15])), "key");
        // Long enough, and no secret: one byte repeated.
        assert_eq!(field(FleetConfig::builder("redis://x", "prod", [0u8; 16])), "key");
        assert_eq!(field(FleetConfig::builder("redis://x", "prod", [0xABu8; 64])), "key");
        let zeros = FleetConfig::builder("redis://x", "prod", [0u8; 32]).build().unwrap_err();
        assert_eq!(
            std::string::ToString::to_string(&zeros),
            "invalid fleet config: key, expected random bytes, not one byte repeated (as 16 zero bytes are)"
        );
        assert_eq!(field(builder().connect_timeout(Duration::ZERO)), "connect_timeout");
        assert_eq!(field(builder().io_timeout(Duration::MAX)), "io_timeout");
        assert_eq!(field(builder().lease_lead(Duration::from_secs(61))), "lease_lead");
        assert_eq!(field(builder().probe_timeout(Duration::from_millis(9))), "probe_timeout");
        assert_eq!(field(builder().max_skew(Duration::from_secs(3601))), "max_skew");
        assert_eq!(
            field(builder().reconnect(Duration::from_secs(2), Duration::from_secs(1))),
            "reconnect_max"
        );
        assert_eq!(field(builder().reconnect(Duration::ZERO, Duration::from_secs(1))), "reconnect_min");
        let msg =
            std::string::ToString::to_string(&builder().lease_lead(Duration::ZERO).build().unwrap_err());
        assert_eq!(msg, "invalid fleet config: lease_lead = 0ns, expected from 1 ms to 60 s");
    }

    #[test]
    #[cfg(feature = "tls")]
    fn a_root_certificate_that_holds_none_is_refused() {
        for pem in [&b"garbage"[..], b"", b"-----BEGIN CERTIFICATE-----\nno end"] {
            match builder().tls_root_cert(pem).build() {
                Err(FleetError::Config(e)) => assert_eq!(e.field(), "tls_root_cert"),
                other => panic!("{pem:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn names_fit_a_message() {
        assert!(check_name("binance/orderbook").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name(&"n".repeat(255)).is_ok());
        assert!(check_name(&"n".repeat(256)).is_err());
    }
}
