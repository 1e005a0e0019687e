//! Opening connections to Redis: the URL, the ACL user and password that
//! override it, TLS (feature `tls`), and the timeouts that keep every
//! command of the link bounded.
//!
//! The log-in (`AUTH`, `SELECT`) is sent here, one command at a time,
//! each given what is left of the connect timeout, rather than by the
//! client's own set-up: that one gives every read of its pipeline the
//! whole timeout, so that a server that accepts and never answers held a
//! connection attempt for twice the timeout (and a fleet's drop with it).

use core::time::Duration;
use std::string::{String, ToString};
use std::time::Instant;

use redis::{Client, Connection, ErrorKind, IntoConnectionInfo, RedisError, RedisResult, Value};

use crate::clock::FleetClock;
use crate::config::{FleetConfig, FleetError};

/// How to reach the configured server: a client that connects without a
/// set-up of its own, and the log-in sent once connected.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    client: Client,
    username: Option<String>,
    password: Option<String>,
    db: i64,
}

/// The link for the configured server; connects nothing yet.
pub(crate) fn link(config: &FleetConfig) -> Result<Link, FleetError> {
    let redis_err = |e: RedisError| FleetError::Redis(e.to_string());
    let info = config.url.as_str().into_connection_info().map_err(redis_err)?;
    let settings = info.redis_settings();
    let username = config.username.clone().or_else(|| settings.username().map(String::from));
    let password = config.password.clone().or_else(|| settings.password().map(String::from));
    let db = settings.db();
    // No log-in and no `CLIENT SETINFO` in the client's set-up: `open`
    // sends the log-in under the connect deadline.
    let bare =
        redis::RedisConnectionInfo::default().set_protocol(settings.protocol()).set_skip_set_lib_name();
    let info = info.set_redis_settings(bare);
    #[cfg(feature = "tls")]
    if let Some(pem) = &config.tls_root_cert {
        let certs = redis::TlsCertificates { client_tls: None, root_cert: Some(pem.clone()) };
        let client = Client::build_with_tls(info, certs).map_err(redis_err)?;
        return Ok(Link { client, username, password, db });
    }
    let client = Client::open(info).map_err(redis_err)?;
    Ok(Link { client, username, password, db })
}

/// A logged-in connection, made within the connect timeout, whose every
/// read and write then gives up after the I/O timeout; and Redis's time,
/// read on it last (see [`FleetClock::read`]). Failed, the step that
/// failed and the server's or the system's reason, in words (`AUTH
/// failed: WRONGPASS ...`, `SELECT 99: ...`, `TLS handshake: ...`): the
/// link's last error. No password is ever in it.
pub(crate) fn open(
    link: &Link,
    config: &FleetConfig,
    clock: &FleetClock,
) -> Result<(Connection, u64), String> {
    let deadline = Instant::now() + config.connect_timeout;
    let mut conn =
        link.client.get_connection_with_timeout(config.connect_timeout).map_err(why("connect", false))?;
    let tls = matches!(link.client.get_connection_info().addr(), redis::ConnectionAddr::TcpTls { .. });
    // The first command makes the TLS handshake: an I/O error in it is
    // the handshake's.
    let mut handshake = tls;
    if let Some(password) = &link.password {
        let mut auth = redis::cmd("AUTH");
        if let Some(user) = &link.username {
            auth.arg(user);
        }
        auth.arg(password);
        within(&conn, deadline).map_err(why("AUTH", false))?;
        auth.exec(&mut conn).map_err(why("AUTH failed", handshake))?;
        handshake = false;
    }
    if link.db != 0 {
        let step = std::format!("SELECT {}", link.db);
        within(&conn, deadline).map_err(why(&step, false))?;
        redis::cmd("SELECT").arg(link.db).exec(&mut conn).map_err(why(&step, handshake))?;
        handshake = false;
    }
    // A connection that answers: without a log-in nothing has been sent
    // yet, and a TLS handshake (made on the first write) not tried.
    within(&conn, deadline).map_err(why("TIME", false))?;
    let redis_ms = clock.read(&mut conn).map_err(why("TIME", handshake))?;
    conn.set_read_timeout(Some(config.io_timeout)).map_err(why("TIME", false))?;
    conn.set_write_timeout(Some(config.io_timeout)).map_err(why("TIME", false))?;
    Ok((conn, redis_ms))
}

/// Words for an error of `step`: `"{step}: {error}"`; for an I/O error of
/// a command that makes the TLS handshake (`handshake`), or a TLS error
/// in any, `"TLS handshake: {error}"`. A timeout says so: the system's
/// words for it are "Resource temporarily unavailable".
fn why(step: &str, handshake: bool) -> impl Fn(RedisError) -> String + '_ {
    move |e| {
        #[cfg(feature = "tls")]
        if let Some(tls) = tls_error(&e) {
            return std::format!("TLS handshake: {tls}");
        }
        let words = if e.is_timeout() {
            std::format!("no answer within the connect timeout ({e})")
        } else {
            e.to_string()
        };
        if handshake && e.is_io_error() {
            return std::format!("TLS handshake: {words}: is the server TLS on this port?");
        }
        std::format!("{step}: {words}")
    }
}

/// The TLS error under a Redis error, if it is one: a rustls error, or an
/// I/O error that carries one.
#[cfg(feature = "tls")]
fn tls_error(e: &RedisError) -> Option<std::string::String> {
    let mut source = core::error::Error::source(e);
    while let Some(s) = source {
        if let Some(tls) = s.downcast_ref::<rustls::Error>() {
            return Some(tls.to_string());
        }
        // An I/O error's `source` skips the error it carries: look at it.
        if let Some(tls) = s.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref)
            && let Some(tls) = tls.downcast_ref::<rustls::Error>()
        {
            return Some(tls.to_string());
        }
        source = s.source();
    }
    None
}

/// Gives the connection's next command what is left until `deadline`, or
/// fails if nothing is.
fn within(conn: &Connection, deadline: Instant) -> RedisResult<()> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left < Duration::from_micros(1) {
        return Err(RedisError::from((ErrorKind::Io, "connect timeout: no time left to log in")));
    }
    conn.set_read_timeout(Some(left))?;
    conn.set_write_timeout(Some(left))
}

/// Subscribes `conn` to `channel` and checks the server's answer: an error
/// (an ACL user without the channel, `NOPERM`) is an error, not a
/// subscription. The client's own `subscribe` reads the answer and drops
/// it, which took a refused SUBSCRIBE for a working one.
pub(crate) fn subscribe(conn: &mut Connection, channel: &str) -> RedisResult<()> {
    conn.send_packed_command(&redis::cmd("SUBSCRIBE").arg(channel).get_packed_command())?;
    match conn.recv_response()? {
        Value::Array(items) | Value::Push { data: items, .. } if matches!(items.first(), Some(Value::BulkString(k)) if k.eq_ignore_ascii_case(b"subscribe")) => {
            Ok(())
        }
        Value::ServerError(e) => Err(RedisError::from(e)),
        other => Err(RedisError::from((
            ErrorKind::Client,
            "SUBSCRIBE answered with no subscription",
            std::format!("{other:?}"),
        ))),
    }
}
