//! The Redis the demo's fleet links through: the one named by
//! `TRIPWIRE_DEMO_REDIS` (or `TRIPWIRE_TEST_REDIS`), else a redis-server of
//! the demo's own on a free loopback port, stopped when dropped.

use std::fmt;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The variables that name a Redis to use, in the order they are read.
pub const VARS: [&str; 2] = ["TRIPWIRE_DEMO_REDIS", "TRIPWIRE_TEST_REDIS"];

/// Why there is no Redis: what the user reads.
#[derive(Debug)]
pub struct NoRedis(String);

impl fmt::Display for NoRedis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.\nThe fleet demo needs a Redis server: install redis-server (Debian/Ubuntu: \
             `sudo apt-get install redis-server`; macOS: `brew install redis`) and run it again, \
             or point it at one with {}=redis://HOST:PORT.\n\
             (The main demo, `cargo run --release -p tripwire-demo`, needs no Redis.)",
            self.0, VARS[0]
        )
    }
}

impl std::error::Error for NoRedis {}

/// A Redis to link through.
pub struct Redis {
    /// Its URL.
    pub url: String,
    child: Option<Child>,
}

impl Redis {
    /// The Redis the environment names, or one started from `redis-server`
    /// on the `PATH`.
    pub fn find_or_start() -> Result<Self, NoRedis> {
        if let Some(url) = VARS.iter().filter_map(|v| std::env::var(v).ok()).find(|u| !u.is_empty()) {
            return Ok(Self { url, child: None });
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| NoRedis(format!("no free loopback port for redis-server: {e}")))?
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                NoRedis(format!("redis-server could not be started ({e}); none of {VARS:?} is set"))
            })?;
        let redis = Self { url: format!("redis://127.0.0.1:{port}"), child: Some(child) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err(NoRedis(format!("redis-server did not answer on port {port} within 5 s")));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(redis)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
