// `.ready()` on a breaker around a service whose error is tower's
// `BoxError`, which is no `std::error::Error`.
use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::ServiceExt;
use tower_layer::Layer;
use tower_service::Service;
use tripwire::tower::BreakerLayer;
use tripwire::{BreakerConfig, NamedBreaker};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

struct Orders;

impl Service<http::Request<String>> for Orders {
    type Response = http::Response<String>;
    type Error = BoxError;
    type Future = Ready<Result<http::Response<String>, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<String>) -> Self::Future {
        ready(Ok(http::Response::new(String::new())))
    }
}

async fn order() {
    let breaker = Arc::new(NamedBreaker::new("orders", BreakerConfig::default()));
    let mut svc = BreakerLayer::new(breaker).layer(Orders);
    let _ = svc.ready().await;
}

fn main() {
    let _ = order();
}
