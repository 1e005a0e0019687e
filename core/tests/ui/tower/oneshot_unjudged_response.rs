// `.oneshot()` on a breaker whose default classifier cannot judge the
// inner service's responses (numbers, not `http::Response`s).
use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::ServiceExt;
use tower_layer::Layer;
use tower_service::Service;
use tripwire::tower::BreakerLayer;
use tripwire::{BreakerConfig, NamedBreaker};

struct Prices;

impl Service<&'static str> for Prices {
    type Response = f64;
    type Error = std::io::Error;
    type Future = Ready<Result<f64, std::io::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: &'static str) -> Self::Future {
        ready(Ok(97_000.0))
    }
}

async fn price() {
    let breaker = Arc::new(NamedBreaker::new("prices", BreakerConfig::default()));
    let svc = BreakerLayer::new(breaker).layer(Prices);
    let _ = svc.oneshot("BTC-USD").await;
}

fn main() {
    let _ = price();
}
