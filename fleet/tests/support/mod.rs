//! What the fleet tests share: the Redis to use, private Redis servers to
//! kill and restart, a loopback "exchange" that logs who calls it, and
//! child processes of the test binary that act as the fleet's hosts.
#![allow(dead_code, reason = "each test file uses part of the support")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The variable that names the Redis the tests use; `.ci/run` sets it.
pub const REDIS_VAR: &str = "TRIPWIRE_TEST_REDIS";

/// The shared test Redis, or `None` (with a message) when the variable is
/// unset: the test is then skipped.
pub fn redis_url(test: &str) -> Option<String> {
    match std::env::var(REDIS_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!(
                "SKIPPED {test}: set {REDIS_VAR}=redis://127.0.0.1:PORT (.ci/run does) to run the fleet tests"
            );
            None
        }
    }
}

/// A namespace no other test run uses.
pub fn namespace(test: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{test}-{}-{nanos}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// The key every host of the tests' fleets shares.
pub const KEY: &[u8; 32] = b"0123456789abcdef0123456789abcdef";

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A redis-server of the test's own, on 127.0.0.1, that it may kill and
/// start again on the same port; killed when dropped.
pub struct PrivateRedis {
    pub port: u16,
    args: Vec<String>,
    child: Option<Child>,
}

impl PrivateRedis {
    /// Starts one with these extra config arguments (e.g. `--requirepass`).
    pub fn start(args: &[&str]) -> Self {
        Self::start_on(free_port(), args)
    }

    /// Starts one that listens on `port` (for arguments that move the
    /// port, as TLS's do).
    pub fn start_on(port: u16, args: &[&str]) -> Self {
        let mut r = Self { port, args: args.iter().map(|s| s.to_string()).collect(), child: None };
        r.restart();
        r
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// SIGKILL: no goodbye to any client.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it (again), and waits until it answers (at most 5 s).
    pub fn restart(&mut self) {
        self.kill();
        let port = self.port.to_string();
        let child = Command::new("redis-server")
            .args(["--port", &port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (.ci/run installs it)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start on {}", self.port);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// How the exchange answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// 200.
    Up = 0,
    /// 500.
    Down = 1,
    /// The next request is never answered (its caller is to be killed);
    /// the ones after it get 500.
    HangNext = 2,
}

/// One request the exchange received: who sent it, and when.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    pub pid: u32,
    pub at: Instant,
    pub answered: Mode,
}

/// A loopback HTTP server standing in for the exchange: answers
/// `GET /call?pid=N` as its mode says and logs every request.
pub struct Exchange {
    pub port: u16,
    mode: Arc<AtomicU8>,
    hits: Arc<Mutex<Vec<Hit>>>,
    /// The pid of the request held by `HangNext`, once there is one.
    hung: Arc<Mutex<Option<u32>>>,
}

impl Exchange {
    pub fn start(mode: Mode) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let ex = Self {
            port,
            mode: Arc::new(AtomicU8::new(mode as u8)),
            hits: Arc::default(),
            hung: Arc::default(),
        };
        let (mode, hits, hung) = (ex.mode.clone(), ex.hits.clone(), ex.hung.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (mode, hits, hung) = (mode.clone(), hits.clone(), hung.clone());
                std::thread::spawn(move || serve(stream, &mode, &hits, &hung));
            }
        });
        ex
    }

    pub fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    pub fn hung(&self) -> Option<u32> {
        *self.hung.lock().unwrap()
    }
}

fn serve(mut stream: TcpStream, mode: &AtomicU8, hits: &Mutex<Vec<Hit>>, hung: &Mutex<Option<u32>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 512];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 8192 {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let pid = head
        .split("pid=")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let at = Instant::now();
    let mut m = mode.load(Ordering::SeqCst);
    if m == Mode::HangNext as u8 {
        if mode.compare_exchange(m, Mode::Down as u8, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            *hung.lock().unwrap() = Some(pid);
            hits.lock().unwrap().push(Hit { pid, at, answered: Mode::HangNext });
            // Held open until the caller is killed (bounded).
            let _ = stream.read(&mut chunk);
            return;
        }
        m = Mode::Down as u8;
    }
    let answered = if m == Mode::Up as u8 { Mode::Up } else { Mode::Down };
    hits.lock().unwrap().push(Hit { pid, at, answered });
    let status = if answered == Mode::Up { "200 OK" } else { "500 Internal Server Error" };
    let _ = write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
}

/// A call to the exchange from a child: `Ok` for a 200, `Err` otherwise.
pub fn call_exchange(port: u16) -> Result<(), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
    write!(s, "GET /call?pid={} HTTP/1.1\r\nHost: exchange\r\nConnection: close\r\n\r\n", std::process::id())
        .map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).map_err(|e| e.to_string())?;
    if line.starts_with("HTTP/1.1 200") { Ok(()) } else { Err(line) }
}

/// A host of the fleet: the test binary run again as `child_entry`, its
/// lines of output read on a thread.
pub struct Host {
    pub pid: u32,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Host {
    /// Starts the test binary's `entry` test, ignored in normal runs, with
    /// `env` set.
    pub fn spawn(entry: &str, env: &[(&str, String)]) -> Self {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", entry, "--ignored", "--nocapture", "--test-threads=1", "-q"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child =
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Self { pid: child.id(), child, stdin, lines }
    }

    /// Sends one command line.
    pub fn say(&mut self, line: &str) {
        let _ = writeln!(self.stdin, "{line}");
        let _ = self.stdin.flush();
    }

    /// The next line that starts with `prefix`, within `timeout`.
    pub fn expect(&mut self, prefix: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    panic!("host {}: no {prefix:?} line within {timeout:?}", self.pid)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("host {}: exited before a {prefix:?} line", self.pid)
                }
            }
        }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the child to exit (at most `timeout`, then kills it).
    pub fn finish(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill();
        panic!("host {} did not exit within {timeout:?}", self.pid);
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The value of `key=value` in a line of `key=value` words.
pub fn field(line: &str, key: &str) -> u64 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key}= in {line:?}"))
}

/// Polls `f` every millisecond until it holds, for at most `timeout`;
/// returns how long it took.
pub fn wait_for(timeout: Duration, mut f: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if f() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    f().then(|| start.elapsed())
}

/// A server that accepts connections and never answers, nor closes them:
/// a Redis that hangs. Its connections are held until it is dropped.
pub struct SilentServer {
    pub port: u16,
    accepted: Arc<AtomicU64>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl SilentServer {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let accepted = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (n, done) = (accepted.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !done.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((s, _)) => {
                        held.push(s);
                        n.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        Self { port, accepted, stop }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// An ACL user made on a Redis for one test, deleted when dropped.
pub struct AclUser {
    pub name: String,
    url: String,
}

impl AclUser {
    /// `ACL SETUSER <unique name> <rules…>` on the Redis at `url`.
    pub fn create(url: &str, prefix: &str, rules: &[&str]) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!("{prefix}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
        redis::cmd("ACL").arg("SETUSER").arg(&name).arg(rules).exec(&mut conn).unwrap();
        Self { name, url: url.to_string() }
    }
}

impl Drop for AclUser {
    fn drop(&mut self) {
        if let Ok(mut conn) = redis::Client::open(self.url.as_str()).and_then(|c| c.get_connection()) {
            let _ = redis::cmd("ACL").arg("DELUSER").arg(&self.name).exec(&mut conn);
        }
    }
}
