//! The fleet demo's exchange: plain HTTP/1.1 on 127.0.0.1, up (200) or
//! down (503 at once, as in maintenance), logging every request with the
//! client that sent it.
//!
//! Clients name themselves in the path, `/<group>/<host>`: the log says
//! how many calls each process sent to the dead exchange.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One request the exchange received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// From a host of the fleet (`/fleet/…`), or from one alone (`/alone/…`).
    pub fleet: bool,
    /// The host's index in its group.
    pub host: usize,
    /// When, since the exchange started.
    pub at: Duration,
    /// Whether the exchange was down (and answered 503).
    pub down: bool,
}

struct State {
    started: Instant,
    down: AtomicBool,
    stop: AtomicBool,
    log: Mutex<Vec<Hit>>,
}

/// A running exchange; stopped when dropped.
pub struct Exchange {
    /// The port it listens on.
    pub port: u16,
    state: Arc<State>,
    thread: Option<JoinHandle<()>>,
}

impl Exchange {
    /// Starts one, up, on a free loopback port.
    pub fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(State {
            started: Instant::now(),
            down: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            log: Mutex::new(Vec::new()),
        });
        let s = state.clone();
        let thread = std::thread::Builder::new().name("exchange".into()).spawn(move || {
            for conn in listener.incoming() {
                // Relaxed: a flag with no data behind it; `drop` connects
                // once more after setting it.
                if s.stop.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(conn) = conn {
                    let s = s.clone();
                    std::thread::spawn(move || serve(&s, conn));
                }
            }
        })?;
        Ok(Self { port, state, thread: Some(thread) })
    }

    /// Takes it down (503 to every request) or brings it back; returns the
    /// time since it started.
    pub fn set_down(&self, down: bool) -> Duration {
        // Relaxed: requests in flight as it changes may see either state,
        // and are logged with the one they were answered with.
        self.state.down.store(down, Ordering::Relaxed);
        self.state.started.elapsed()
    }

    /// Every request so far, in the order they arrived.
    pub fn hits(&self) -> Vec<Hit> {
        let mut hits = self.state.log.lock().unwrap_or_else(PoisonError::into_inner).clone();
        hits.sort_by_key(|h| h.at);
        hits
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        // Relaxed: see the accept loop.
        self.state.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request (at most 4 KiB of head), logs it, answers it.
fn serve(s: &State, mut conn: TcpStream) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let mut head = Vec::with_capacity(256);
    let mut buf = [0u8; 512];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 4096 {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    // Relaxed: see `set_down`.
    let down = s.down.load(Ordering::Relaxed);
    let at = s.started.elapsed();
    if let Some((fleet, host)) = client(&head) {
        s.log.lock().unwrap_or_else(PoisonError::into_inner).push(Hit { fleet, host, at, down });
    }
    let reply: &[u8] = if down {
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 11\r\nConnection: close\r\n\r\nmaintenance"
    } else {
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    };
    let _ = conn.write_all(reply);
}

/// The client a request names: `GET /fleet/3 …` is host 3 of the fleet.
fn client(head: &[u8]) -> Option<(bool, usize)> {
    let line = std::str::from_utf8(head.split(|&b| b == b'\r').next()?).ok()?;
    let path = line.strip_prefix("GET /")?.split(' ').next()?;
    let (group, host) = path.split_once('/')?;
    let fleet = match group {
        "fleet" => true,
        "alone" => false,
        _ => return None,
    };
    Some((fleet, host.parse().ok()?))
}

/// One GET of `/<group>/<host>` with `timeout`: whether it was answered 200.
pub fn get(port: u16, fleet: bool, host: usize, timeout: Duration) -> bool {
    let attempt = || -> std::io::Result<bool> {
        let mut c = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), timeout)?;
        c.set_read_timeout(Some(timeout))?;
        c.set_write_timeout(Some(timeout))?;
        let group = if fleet { "fleet" } else { "alone" };
        write!(c, "GET /{group}/{host} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")?;
        let mut status = [0u8; 12];
        c.read_exact(&mut status)?;
        Ok(&status[9..12] == b"200")
    };
    attempt().unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_names_its_client() {
        assert_eq!(client(b"GET /fleet/3 HTTP/1.1\r\n\r\n"), Some((true, 3)));
        assert_eq!(client(b"GET /alone/0 HTTP/1.1\r\n\r\n"), Some((false, 0)));
        for bad in [&b"GET / HTTP/1.1\r\n"[..], b"GET /other/1 HTTP/1.1", b"GET /fleet/x HTTP/1.1", b"\xff"] {
            assert_eq!(client(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn it_answers_and_logs_up_and_down() {
        let ex = Exchange::start().unwrap();
        let t = Duration::from_secs(2);
        assert!(get(ex.port, true, 1, t));
        ex.set_down(true);
        assert!(!get(ex.port, false, 2, t));
        let hits = ex.hits();
        assert_eq!(hits.len(), 2);
        assert_eq!((hits[0].fleet, hits[0].host, hits[0].down), (true, 1, false));
        assert_eq!((hits[1].fleet, hits[1].host, hits[1].down), (false, 2, true));
    }
}
