// `.oneshot()` on a retry layer given `()` for its timer.
use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower::ServiceExt;
use tower_layer::Layer;
use tripwire::retry::RetryPolicy;
use tripwire::tower::RetryLayer;

async fn get() {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let svc = RetryLayer::new(RetryPolicy::builder().build().unwrap(), ()).layer(client);
    let _ = svc.oneshot(http::Request::new(Empty::new())).await;
}

fn main() {
    let _ = get();
}
