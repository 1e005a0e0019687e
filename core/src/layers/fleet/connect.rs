//! Opening connections to Redis: the URL, the ACL user and password that
//! override it, TLS (feature `fleet-tls`), and the timeouts that keep every
//! command of the link bounded.

use std::string::ToString;

use redis::{Client, Connection, IntoConnectionInfo, RedisResult};

use super::config::{FleetConfig, FleetError};

/// A client for the configured server; connects nothing yet.
pub(crate) fn client(config: &FleetConfig) -> Result<Client, FleetError> {
    let redis_err = |e: redis::RedisError| FleetError::Redis(e.to_string());
    let info = config.url.as_str().into_connection_info().map_err(redis_err)?;
    let mut settings = info.redis_settings().clone();
    if let Some(user) = &config.username {
        settings = settings.set_username(user);
    }
    if let Some(password) = &config.password {
        settings = settings.set_password(password);
    }
    let info = info.set_redis_settings(settings);
    #[cfg(feature = "fleet-tls")]
    if let Some(pem) = &config.tls_root_cert {
        let certs = redis::TlsCertificates { client_tls: None, root_cert: Some(pem.clone()) };
        return Client::build_with_tls(info, certs).map_err(redis_err);
    }
    Client::open(info).map_err(redis_err)
}

/// A connection whose every read and write gives up after the configured
/// time.
pub(crate) fn open(client: &Client, config: &FleetConfig) -> RedisResult<Connection> {
    let conn = client.get_connection_with_timeout(config.connect_timeout)?;
    conn.set_read_timeout(Some(config.io_timeout))?;
    conn.set_write_timeout(Some(config.io_timeout))?;
    Ok(conn)
}
