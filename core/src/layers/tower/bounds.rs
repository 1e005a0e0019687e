//! What the tower layers ask of the service they wrap and its requests.

/// What the tower layers ask of an inner service's error: a
/// [`std::error::Error`](core::error::Error) that is `'static`, so that a
/// guard's refusal in its [`source`](core::error::Error::source) chain is
/// found (see [`refusal`](crate::refusal)). Implemented for every such
/// error; it exists to name the missing bound when a stack does not fit.
///
/// tower's `BoxError` (`Box<dyn Error + Send + Sync>`, which
/// `tower::timeout` yields) is not an `Error` itself: map it into a type
/// that is (`tower::util::MapErr`), or time attempts out with tripwire's
/// [`timeout`](crate::timeout), whose [`Elapsed`](crate::timeout::Elapsed) is one.
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
