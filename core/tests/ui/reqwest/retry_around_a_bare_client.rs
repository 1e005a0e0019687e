// A retry layer around a `reqwest::Client` as it is: its requests do not
// clone, so the client needs `reqwest_service` first.
use tower::ServiceExt;
use tower_layer::Layer;
use tripwire::tower::RetryLayer;
use tripwire::{retry::RetryPolicy, timeout::TokioTimer};

async fn get() {
    let client = reqwest::Client::new();
    let request = client.get("http://127.0.0.1:1/").build().unwrap();
    let svc = RetryLayer::new(RetryPolicy::builder().build().unwrap(), TokioTimer).layer(client);
    let _ = svc.oneshot(request).await;
}

fn main() {
    let _ = get();
}
