//! What a tower service's result says about the dependency.

use crate::layers::assessment::Assessment;

/// Judges a service's result. Any `Fn(&Result<Res, Err>) -> Assessment +
/// Clone` is one; [`HttpClassifier`] is the default, for services that
/// answer with an [`http::Response`].
///
/// A guard's refusal from an inner layer (a full bulkhead, an inner
/// breaker's rejection: see [`refusal`](crate::refusal)) never reaches the
/// classifier: the breaker counts it as ignored.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot judge a `Result<{Res}, {Err}>`",
    label = "the inner service's results are `Result<{Res}, {Err}>`",
    note = "the default `HttpClassifier` judges `Result<http::Response<B>, E>` only; for other responses pass a closure `|r: &Result<{Res}, {Err}>| -> tripwire::Assessment` to the layer's `classify`"
)]
pub trait ClassifyResult<Res, Err> {
    /// The assessment of one result.
    fn classify(&self, result: &Result<Res, Err>) -> Assessment;
}

impl<Res, Err, F: Fn(&Result<Res, Err>) -> Assessment> ClassifyResult<Res, Err> for F {
    fn classify(&self, result: &Result<Res, Err>) -> Assessment {
        self(result)
    }
}

/// HTTP responses through [`http::assess_result`](crate::layers::http::assess_result)
/// (5xx fail, 429/418 hold the breaker open until `Retry-After`, other 4xx
/// are ignored); any `Err` (connection refused, reset, timed out) is a
/// failure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HttpClassifier;

impl<B, Err> ClassifyResult<http::Response<B>, Err> for HttpClassifier {
    fn classify(&self, result: &Result<http::Response<B>, Err>) -> Assessment {
        crate::layers::http::assess_result(result)
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
#[diagnostic::on_unimplemented(
    message = "the inner service's error `{Self}` does not implement `std::error::Error + 'static`",
    label = "tripwire's tower layers read this error's `source()` chain",
    note = "tower's `BoxError` (`Box<dyn Error + Send + Sync>`, from `tower::timeout`) is no `Error`: map it into a type that is (`tower::util::MapErr`)"
)]
pub trait ServiceError: core::error::Error + 'static {}

impl<E: core::error::Error + 'static> ServiceError for E {}
