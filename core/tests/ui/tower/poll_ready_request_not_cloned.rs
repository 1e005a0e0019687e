// `svc.poll_ready(cx)` (`Service`'s own method, which rustc reports as E0599
// listing the failing bounds) on a retry layer around a service whose
// requests cannot be cloned, so no attempt after the first could be sent.
use std::future::{Ready, poll_fn, ready};
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;
use tripwire::tower::RetryLayer;
use tripwire::{retry::RetryPolicy, timeout::TokioTimer};

/// A request whose body is read once, like hyper's `Incoming`.
struct Streamed;

#[derive(Clone)]
struct Upload;

impl Service<http::Request<Streamed>> for Upload {
    type Response = http::Response<String>;
    type Error = std::io::Error;
    type Future = Ready<Result<http::Response<String>, std::io::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<Streamed>) -> Self::Future {
        ready(Ok(http::Response::new(String::new())))
    }
}

async fn upload() {
    let mut svc = RetryLayer::new(RetryPolicy::builder().build().unwrap(), TokioTimer).layer(Upload);
    let _ = poll_fn(|cx| svc.poll_ready(cx)).await;
}

fn main() {
    let _ = upload();
}
