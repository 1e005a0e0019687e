//! A `reqwest::Client` as a tower service of `http` requests (features
//! `tower` and `reqwest`), so that it plugs into the layers as it is.

use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll};

use tower_service::Service;

use crate::layers::tower::call_patterns::call_patterns;

/// A `reqwest::Client` as a `Service<http::Request<B>>` answering
/// `http::Response<reqwest::Body>`, made by [`reqwest_service`].
///
/// With `http` types on both sides every tripwire layer fits it without a
/// `map_request` or `map_response`: the default
/// [`HttpClassifier`](crate::http::HttpClassifier) judges its responses (5xx
/// fail, 429/418 push back until `Retry-After`, other 4xx are ignored, a
/// `reqwest::Error` fails), the error is
/// `reqwest::Error` (an `std::error::Error`, as the breaker and the retries
/// ask), and a request with a cloneable body (`String`, `Vec<u8>`,
/// `bytes::Bytes`, `&'static str`) can be retried by
/// [`RetryLayer`](crate::tower::RetryLayer). A request whose URI reqwest
/// cannot take fails with reqwest's builder error, which the classifier
/// counts as a failure like any other error.
///
/// A plain `reqwest::Client` is a `Service<reqwest::Request>` already, and
/// [`HttpClassifier`](crate::http::HttpClassifier) judges its
/// `reqwest::Response`s too, so the breaker, bulkhead and timeout layers
/// wrap it as it is; only retries need this adapter, since a
/// `reqwest::Request` does not implement `Clone`.
///
/// # Examples
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use tower_layer::Layer;
/// use tower_service::Service;
/// use tripwire::tower::{BreakerLayer, RetryLayer, reqwest_service};
/// use tripwire::retry::RetryPolicy;
/// use tripwire::timeout::TokioTimer;
/// use tripwire::{BreakerConfig, NamedBreaker};
///
/// let breaker = Arc::new(NamedBreaker::new("bybit/rest", BreakerConfig::default()));
/// let retry = RetryLayer::new(RetryPolicy::builder().max_attempts(3).build()?, TokioTimer);
/// let mut svc = retry.layer(BreakerLayer::new(breaker).layer(reqwest_service(reqwest::Client::new())));
///
/// // Nothing listens on port 9 of this host: a connection error, retried, then the answer.
/// let request = http::Request::get("http://127.0.0.1:9/v5/market/tickers").body(String::new())?;
/// // (a service of every body type reqwest takes: say which one is meant)
/// std::future::poll_fn(|cx| Service::<http::Request<String>>::poll_ready(&mut svc, cx)).await?;
/// let failed = svc.call(request).await.unwrap_err();
/// assert_eq!(failed.attempts(), 3);
/// assert!(tripwire::refusal(&failed).is_none(), "the dependency's failure, not a refusal");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct ReqwestService {
    client: ::reqwest::Client,
}

/// `client` as a tower service of `http` requests; see [`ReqwestService`].
pub fn reqwest_service(client: ::reqwest::Client) -> ReqwestService {
    ReqwestService { client }
}

impl ReqwestService {
    /// The client.
    pub fn client(&self) -> &::reqwest::Client {
        &self.client
    }
}

impl<B: Into<::reqwest::Body>> Service<http::Request<B>> for ReqwestService {
    type Response = http::Response<::reqwest::Body>;
    type Error = ::reqwest::Error;
    type Future = ReqwestFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Service::<::reqwest::Request>::poll_ready(&mut self.client, cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        match ::reqwest::Request::try_from(req) {
            Ok(req) => ReqwestFuture { state: State::Sending { pending: self.client.call(req) } },
            Err(error) => ReqwestFuture { state: State::Invalid { error: Some(error) } },
        }
    }
}

type Pending = <::reqwest::Client as Service<::reqwest::Request>>::Future;

pin_project_lite::pin_project! {
    /// The response of a [`ReqwestService`].
    #[must_use = "futures do nothing unless polled"]
    pub struct ReqwestFuture {
        #[pin]
        state: State,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State {
        Sending { #[pin] pending: Pending },
        Invalid { error: Option<::reqwest::Error> },
    }
}

impl fmt::Debug for ReqwestFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReqwestFuture").finish_non_exhaustive()
    }
}

impl Future for ReqwestFuture {
    type Output = Result<http::Response<::reqwest::Body>, ::reqwest::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Sending { pending } => pending.poll(cx).map_ok(http::Response::from),
            StateProj::Invalid { error } => {
                Poll::Ready(Err(error.take().expect("ReqwestFuture polled after completion")))
            }
        }
    }
}

call_patterns!(ReqwestService);
