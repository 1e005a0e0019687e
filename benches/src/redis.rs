//! The Redis the fleet benches link through: `TRIPWIRE_BENCH_REDIS` or
//! `TRIPWIRE_TEST_REDIS` if set, else a redis-server of their own on a free
//! loopback port, stopped when dropped.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Redis {
    pub url: String,
    child: Option<Child>,
}

impl Redis {
    /// The Redis to use, or `None` if none is set and redis-server will
    /// not start.
    pub fn find_or_start() -> Option<Self> {
        for var in ["TRIPWIRE_BENCH_REDIS", "TRIPWIRE_TEST_REDIS"] {
            if let Ok(url) = std::env::var(var) {
                return Some(Self { url, child: None });
            }
        }
        let port = TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let redis = Self { url: format!("redis://127.0.0.1:{port}"), child: Some(child) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(redis)
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
