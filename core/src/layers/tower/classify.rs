//! What a tower service's result says about the dependency.

use crate::layers::assessment::Assessment;

/// Judges a service's result: [`HttpClassifier`] (the default, for
/// services that answer with an [`http::Response`]), a closure wrapped in
/// [`ClassifyFn`] (what the layers' `classify` does), or a type of your own.
///
/// A guard's refusal from an inner layer (a full bulkhead, an inner
/// breaker's rejection: see [`refusal`](crate::refusal)) never reaches the
/// breaker's classifier: the breaker counts it as ignored.
///
/// # Examples
/// The default classifier judges HTTP responses only; a service with other
/// responses needs its own, and the error says so:
/// ```compile_fail
/// use tripwire::tower::{ClassifyResult, HttpClassifier};
/// fn judges<K: ClassifyResult<u32, std::io::Error>>(_: K) {}
/// judges(HttpClassifier); // error: `HttpClassifier` cannot judge a `Result<u32, std::io::Error>`
/// ```
/// ```
/// use tripwire::Assessment;
/// use tripwire::tower::{ClassifyFn, ClassifyResult};
/// let by_code = ClassifyFn(|r: &Result<u32, std::io::Error>| match r {
///     Ok(500..) | Err(_) => Assessment::Failure,
///     Ok(_) => Assessment::Success,
/// });
/// assert_eq!(by_code.classify(&Ok(503)), Assessment::Failure);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot judge a `Result<{Res}, {Err}>`",
    label = "the inner service's results are `Result<{Res}, {Err}>`",
    note = "`HttpClassifier`, the default, judges `Result<http::Response<B>, E>` only: give the layer a closure, `.classify(|r: &Result<{Res}, {Err}>| -> tripwire::Assessment {{ .. }})`"
)]
pub trait ClassifyResult<Res, Err> {
    /// The assessment of one result.
    fn classify(&self, result: &Result<Res, Err>) -> Assessment;

    /// The HTTP status of a response, if this classifier knows how to read
    /// one, for the retry layer's [`RetryCause`](crate::RetryCause);
    /// `None` by default.
    fn status(&self, response: &Res) -> Option<u16> {
        let _ = response;
        None
    }

    /// The pause a response judged a failure asks for before the next
    /// attempt (a 503's `Retry-After`), if this classifier reads one, for
    /// the retry layer; `None` by default. Backpressure names its pause in
    /// its [`Assessment`].
    fn retry_after(&self, response: &Res) -> Option<core::time::Duration> {
        let _ = response;
        None
    }
}

/// A closure `Fn(&Result<Res, Err>) -> Assessment` as a [`ClassifyResult`].
#[derive(Clone, Copy)]
pub struct ClassifyFn<F>(pub F);

impl<F> core::fmt::Debug for ClassifyFn<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClassifyFn").finish_non_exhaustive()
    }
}

impl<Res, Err, F: Fn(&Result<Res, Err>) -> Assessment> ClassifyResult<Res, Err> for ClassifyFn<F> {
    fn classify(&self, result: &Result<Res, Err>) -> Assessment {
        (self.0)(result)
    }
}

/// HTTP responses through [`http::assess_result`](crate::layers::http::assess_result)
/// (5xx, 408 and statuses outside 100–599 fail, 429/418 hold the breaker
/// open until `Retry-After`, other 4xx are ignored); any `Err` (connection refused, reset, timed out) is a
/// failure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HttpClassifier;

impl<B, Err> ClassifyResult<http::Response<B>, Err> for HttpClassifier {
    fn classify(&self, result: &Result<http::Response<B>, Err>) -> Assessment {
        crate::layers::http::assess_result(result)
    }

    fn status(&self, response: &http::Response<B>) -> Option<u16> {
        Some(response.status().as_u16())
    }

    fn retry_after(&self, response: &http::Response<B>) -> Option<core::time::Duration> {
        crate::layers::http::retry_after(response.headers())
    }
}

/// What the tower layers ask of an inner service's error: a
/// [`std::error::Error`](core::error::Error) that is `'static`, so that a
/// guard's refusal in its [`source`](core::error::Error::source) chain is
/// found (see [`refusal`](crate::refusal)). Implemented for every such
/// error; it exists to name the missing bound when a stack does not fit.
///
/// tower's `BoxError` (`Box<dyn Error + Send + Sync>`, which
/// `tower::timeout` yields) is not an `Error` itself: map it into a type
/// that is (`tower::util::MapErr`), or time attempts out with tripwire's
/// [`timeout`](crate::timeout), whose [`Elapsed`](crate::Elapsed) is one.
///
/// # Examples
/// ```
/// use tripwire::tower::ServiceError;
/// fn readable<E: ServiceError>() {}
/// readable::<std::io::Error>();
/// ```
/// ```compile_fail
/// # use tripwire::tower::ServiceError;
/// # fn readable<E: ServiceError>() {}
/// // error: the inner service's error `Box<dyn Error + Send + Sync>` does not implement `std::error::Error + 'static`
/// readable::<Box<dyn std::error::Error + Send + Sync>>();
/// ```
#[diagnostic::on_unimplemented(
    message = "the inner service's error `{Self}` does not implement `std::error::Error + 'static`",
    label = "tripwire's tower layers read this error's `source()` chain",
    note = "tower's `BoxError` (`Box<dyn Error + Send + Sync>`, from `tower::timeout`) is no `Error`: map it into a type that is (`tower::util::MapErr`)"
)]
pub trait ServiceError: core::error::Error + 'static {}

// Not recommended: a type that misses the bound is reported as missing
// `ServiceError`, with its note, not as a `Sized` puzzle about `dyn Error`.
#[diagnostic::do_not_recommend]
impl<E: core::error::Error + 'static> ServiceError for E {}

/// What [`RetryLayer`](crate::tower::RetryLayer) asks of a request: each
/// attempt sends a clone, from a task of its own, so the request is
/// `Clone + Send + 'static`. Implemented for every such type; it exists to
/// name the missing bound when a stack does not fit.
///
/// # Examples
/// ```
/// use bytes::Bytes;
/// use http_body_util::Full;
/// use tripwire::tower::RetryRequest;
/// fn retryable<R: RetryRequest>() {}
/// retryable::<http::Request<Full<Bytes>>>(); // a buffered body clones
/// ```
/// ```compile_fail
/// # use tripwire::tower::RetryRequest;
/// # fn retryable<R: RetryRequest>() {}
/// struct Streamed; // a body read once, like hyper's `Incoming`
/// // error: the request `http::Request<Streamed>` cannot be retried
/// retryable::<http::Request<Streamed>>();
/// ```
#[diagnostic::on_unimplemented(
    message = "the request `{Self}` cannot be retried: `RetryLayer` sends a clone of it on each attempt",
    label = "a request that is `Clone + Send + 'static` is needed here",
    note = "a streamed body (hyper's `Incoming`) does not clone: buffer it first (e.g. into `http_body_util::Full<Bytes>`); a `reqwest::Client` takes `reqwest::Request`s, which do not clone either: wrap the client in `tripwire::tower::reqwest_service` (feature `reqwest`), whose `http::Request<B>`s do"
)]
pub trait RetryRequest: Clone + Send + 'static {}

// Not recommended: see `ServiceError`'s impl.
#[diagnostic::do_not_recommend]
impl<R: Clone + Send + 'static> RetryRequest for R {}
