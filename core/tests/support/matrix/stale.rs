//! The conformance matrix's stale rows: a [`StaleCache`] around each
//! integration, filled by one good answer, then read while the server is
//! down (503s) or while a 429 holds the breaker open.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tripwire::{
    Bulkhead, NamedBreaker,
    stale::{Served, StaleCache, StalePolicy},
};

use crate::cell::{Answer, Cell};
use crate::support::{Mode, Server};
use crate::{ATTEMPT, Call, Door, Got, got_text, send, send_with, sync_call};

/// What the server does once the cache holds a good answer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stale {
    /// 503 to every request.
    Outage,
    /// 429 with `Retry-After: 30`: the breaker is held open.
    Hold,
}

/// How each integration reads through the cache, written under the table.
pub(crate) const NOTE: &str = "\nIn the stale rows the sync and async pipelines read through `StaleCache::serve_by` / \
     `serve_async_by`, which give the call one attempt's deadline (200 ms here) when a stale value is at hand; \
     tower and the reqwest middleware take no deadline and read through `serve_async`. The hold is 30 s.\n";

const KEY: &str = "BTC-USDT";
const ACCEPTS: StalePolicy = StalePolicy::UpTo(Duration::from_secs(60));

impl Stale {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stale::Outage => "stale read during an outage",
            Stale::Hold => "stale read during a hold",
        }
    }
}

type Books = StaleCache<&'static str, u16>;

/// A 2xx is the fresh value (its status); anything else is the error the
/// cache answers with stale data.
fn fresh(got: Got) -> Result<u16, Got> {
    match got {
        Got::Status(s) if (200..300).contains(&s) => Ok(s),
        other => Err(other),
    }
}

/// One read through `cache`: what the caller got, the requests it sent and
/// how long it waited, coarsely (an attempt here is 200 ms, the hold 30 s).
async fn read(door: Door, cache: &Arc<Books>, breaker: &Arc<NamedBreaker>, server: &Server) -> String {
    let bulkhead = Arc::new(Bulkhead::new(1));
    let (before, start) = (server.hits(), Instant::now());
    let served = match door {
        Door::SyncPipeline(nesting) => {
            let (cache, breaker, addr) = (cache.clone(), breaker.clone(), server.addr);
            let read = tokio::task::spawn_blocking(move || {
                cache.serve_by(KEY, ACCEPTS, ATTEMPT, |deadline| {
                    fresh(sync_call(nesting, &breaker, &bulkhead, addr, Call { deadline, ..Call::plain() }))
                })
            });
            read.await.unwrap()
        }
        Door::AsyncPipeline(_) => {
            let fetch = |deadline| async move {
                fresh(send_with(door, breaker, &bulkhead, server, Call { deadline, ..Call::plain() }).await)
            };
            cache.serve_async_by(KEY, ACCEPTS, ATTEMPT, fetch).await
        }
        Door::Tower(_) | Door::ReqwestMiddleware => {
            cache
                .serve_async(KEY, ACCEPTS, async { fresh(send(door, breaker, &bulkhead, server).await) })
                .await
        }
    };
    let waited = if start.elapsed() < Duration::from_secs(1) { "< 1 s" } else { "≥ 1 s" };
    let got = match served {
        Ok(Served::Fresh(_)) => "fresh".into(),
        Ok(Served::Stale { .. }) => "stale".into(),
        Err(got) => got_text(got),
    };
    format!("{got} ({} sent, waited {waited})", server.hits() - before)
}

pub(crate) async fn run(door: Door, what: Stale) -> Answer {
    let server = Server::start().await;
    let (cache, breaker) = (Arc::new(Books::new()), crate::breaker());
    let filled = read(door, &cache, &breaker, &server).await;
    server.set(match what {
        Stale::Outage => Mode::Unavailable,
        Stale::Hold => Mode::TooMany("30".into()),
    });
    let during = read(door, &cache, &breaker, &server).await;
    let next = read(door, &cache, &breaker, &server).await;
    Answer::Cell(Cell(vec![
        ("filled", format!("first: {filled}")),
        ("during", format!("then: {during}")),
        ("next", format!("next caller: {next}")),
    ]))
}
