//! The simulated exchange: a hyper server on 127.0.0.1 (port 0) that
//! follows the timeline, on its own thread and runtime.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::Shared;
use crate::timeline::Phase;

/// How long the exchange takes to answer, on the scenario's clock.
pub const LATENCY: Duration = Duration::from_millis(20);

/// How long after the hang a request taken in during it is answered (503).
const FORGOTTEN: Duration = Duration::from_secs(60);

/// The header a client names itself with (`naive` or `tripwire`).
pub const CLIENT_HEADER: &str = "x-client";

/// A running exchange; stops when dropped.
#[derive(Debug)]
pub struct Exchange {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Exchange {
    /// Starts the exchange on a thread of its own.
    pub fn start(shared: Arc<Shared>, seed: u64) -> std::io::Result<Exchange> {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name("exchange".into()).spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return drop(addr_tx.send(Err(e))),
            };
            rt.block_on(async move {
                let listener = match TcpListener::bind("127.0.0.1:0").await {
                    Ok(l) => l,
                    Err(e) => return drop(addr_tx.send(Err(e))),
                };
                let _ = addr_tx.send(listener.local_addr());
                let dice = Arc::new(Dice(AtomicU64::new(seed)));
                tokio::select! {
                    () = serve(listener, shared, dice) => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime drops the requests still hanging.
        })?;
        let addr = addr_rx.recv().map_err(std::io::Error::other)??;
        Ok(Exchange { addr, stop: Some(stop), thread: Some(thread) })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(listener: TcpListener, shared: Arc<Shared>, dice: Arc<Dice>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        let (shared, dice) = (shared.clone(), dice.clone());
        tokio::spawn(async move {
            let svc = service_fn(move |req| answer(shared.clone(), dice.clone(), req));
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}

async fn answer(
    shared: Arc<Shared>,
    dice: Arc<Dice>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let s = &shared.scenario;
    let now = s.now();
    let span = s.timeline.span_at(now);
    let client = match req.headers().get(CLIENT_HEADER).map(|v| v.as_bytes()) {
        Some(b"naive") => Some(&shared.naive),
        Some(b"tripwire") => Some(&shared.tripwire),
        _ => None,
    };
    if let Some(c) = client {
        c.hit(s.fraction(now), span.phase.is_down());
    }
    let response = match span.phase {
        Phase::Healthy | Phase::Recovered => {
            tokio::time::sleep(s.real(LATENCY)).await;
            if dice.roll() < s.timeline.random_503 {
                status(StatusCode::SERVICE_UNAVAILABLE)
            } else {
                Response::new(Full::new(body(req.uri().path(), now)))
            }
        }
        Phase::RateLimited => {
            tokio::time::sleep(s.real(LATENCY)).await;
            // Retry-After counts whole seconds of real time.
            let left = s.real(span.end.saturating_sub(now)).as_secs_f64().ceil().max(1.0);
            let mut r = status(StatusCode::TOO_MANY_REQUESTS);
            r.headers_mut().insert("retry-after", (left as u64).into());
            r
        }
        Phase::Maintenance => {
            tokio::time::sleep(s.real(LATENCY)).await;
            status(StatusCode::SERVICE_UNAVAILABLE)
        }
        Phase::Hang => {
            // Accepted, never answered: the exchange drops what it took in
            // while hanging, long after every client has given up.
            tokio::time::sleep(s.real(span.end.saturating_sub(now) + FORGOTTEN)).await;
            status(StatusCode::SERVICE_UNAVAILABLE)
        }
    };
    Ok(response)
}

fn body(path: &str, now: Duration) -> Bytes {
    let t = now.as_millis();
    Bytes::from(if path.ends_with("/account") {
        format!(r#"{{"asset":"USDT","free":"1250.00","t":{t}}}"#)
    } else {
        format!(r#"{{"bids":[["97000.1","0.5"]],"asks":[["97000.2","0.4"]],"t":{t}}}"#)
    })
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = code;
    r
}

/// Seeded random numbers for the random 503s (splitmix64 over a counter).
#[derive(Debug)]
struct Dice(AtomicU64);

impl Dice {
    /// A number in `[0, 1)`.
    fn roll(&self) -> f64 {
        // Relaxed: each roll needs only a distinct counter value.
        let mut z = self.0.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}
