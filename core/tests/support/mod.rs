//! A loopback HTTP server that can be told to fail, and a real client.
#![allow(dead_code, reason = "each test file uses part of the support")]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

/// How the server answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// 200 with a body.
    Up,
    /// 503.
    Unavailable,
    /// Never answers.
    Hang,
    /// 429 with this `Retry-After` value.
    TooMany(String),
    /// 200, after this long.
    Slow(Duration),
    /// This status, with no body.
    Status(u16),
    /// 503 up to and including the request that is this hit number (the
    /// count of [`Server::hits`], from 1), 200 after it.
    UnavailableUntil(u64),
    /// `status`, with this `Retry-After` value if any, up to and including
    /// hit number `last`; 200 after it.
    StatusUntil { status: u16, retry_after: Option<String>, last: u64 },
    /// 200 with a body and this header (name, value).
    UpWith(&'static str, String),
}

/// A server on 127.0.0.1, on a port the OS chose; it stops with the runtime.
pub struct Server {
    pub addr: SocketAddr,
    mode: Arc<Mutex<Mode>>,
    hits: Arc<AtomicU64>,
    /// When each request arrived, in the order of their hit numbers.
    arrivals: Arc<Mutex<Vec<Instant>>>,
}

impl Server {
    pub async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mode = Arc::new(Mutex::new(Mode::Up));
        let hits = Arc::new(AtomicU64::new(0));
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let (m, h, a) = (mode.clone(), hits.clone(), arrivals.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let (m, h, a) = (m.clone(), h.clone(), a.clone());
                tokio::spawn(async move {
                    let svc = service_fn(move |req| answer(m.clone(), h.clone(), a.clone(), req));
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
                });
            }
        });
        Server { addr, mode, hits, arrivals }
    }

    pub fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    /// Requests that reached the server.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::SeqCst)
    }

    /// Waits until `n` requests have reached the server.
    pub async fn reached(&self, n: u64) {
        while self.hits() < n {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// The time between the arrivals of hit numbers `from` and `to` (from
    /// 1), if both came.
    pub fn gap(&self, from: u64, to: u64) -> Option<Duration> {
        let arrivals = self.arrivals.lock().unwrap();
        let at = |hit: u64| arrivals.get(usize::try_from(hit.checked_sub(1)?).ok()?).copied();
        at(to)?.checked_duration_since(at(from)?)
    }

    pub fn url(&self, path: &str) -> hyper::Uri {
        format!("http://{}{path}", self.addr).parse().unwrap()
    }
}

async fn answer(
    mode: Arc<Mutex<Mode>>,
    hits: Arc<AtomicU64>,
    arrivals: Arc<Mutex<Vec<Instant>>>,
    _req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let hit = {
        // One lock for both, so that the arrivals stay in hit order.
        let mut arrivals = arrivals.lock().unwrap();
        arrivals.push(Instant::now());
        hits.fetch_add(1, Ordering::SeqCst) + 1
    };
    let mode = mode.lock().unwrap().clone();
    let response = match mode {
        Mode::Up => Response::new(Full::new(Bytes::from_static(b"bids/asks"))),
        Mode::Unavailable => status(StatusCode::SERVICE_UNAVAILABLE),
        Mode::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            status(StatusCode::GATEWAY_TIMEOUT)
        }
        Mode::Slow(after) => {
            tokio::time::sleep(after).await;
            Response::new(Full::new(Bytes::from_static(b"bids/asks")))
        }
        Mode::Status(code) => status(StatusCode::from_u16(code).unwrap()),
        Mode::UnavailableUntil(last) if hit <= last => status(StatusCode::SERVICE_UNAVAILABLE),
        Mode::UnavailableUntil(_) => Response::new(Full::new(Bytes::from_static(b"bids/asks"))),
        Mode::StatusUntil { status: code, retry_after, last } if hit <= last => {
            let mut r = status(StatusCode::from_u16(code).unwrap());
            if let Some(after) = retry_after {
                r.headers_mut().insert("retry-after", after.parse().unwrap());
            }
            r
        }
        Mode::StatusUntil { .. } => Response::new(Full::new(Bytes::from_static(b"bids/asks"))),
        Mode::UpWith(name, value) => {
            let mut r = Response::new(Full::new(Bytes::from_static(b"bids/asks")));
            r.headers_mut().insert(name, value.parse().unwrap());
            r
        }
        Mode::TooMany(after) => {
            let mut r = status(StatusCode::TOO_MANY_REQUESTS);
            r.headers_mut().insert("retry-after", after.parse().unwrap());
            r
        }
    };
    Ok(response)
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = code;
    r
}

pub type Client = HyperClient<HttpConnector, Empty<Bytes>>;

pub fn client() -> Client {
    HyperClient::builder(TokioExecutor::new()).build_http()
}

/// GETs `uri`: the response with its body read, whatever its status, or
/// the client's error.
pub async fn get(client: &Client, uri: hyper::Uri) -> Result<Response<String>, String> {
    let response = client.get(uri).await.map_err(|e| e.to_string())?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok(Response::from_parts(parts, String::from_utf8_lossy(&body).into_owned()))
}

/// GETs `uri`; any status but 2xx is an error naming it.
pub async fn get_ok(client: &Client, uri: hyper::Uri) -> Result<String, String> {
    let reply = get(client, uri).await?;
    if reply.status().is_success() { Ok(reply.into_body()) } else { Err(format!("HTTP {}", reply.status())) }
}
