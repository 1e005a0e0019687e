//! What a tower service's result says about the dependency.

use crate::layers::assessment::Assessment;

/// Judges a service's result. Any `Fn(&Result<Res, Err>) -> Assessment +
/// Clone` is one; [`HttpClassifier`] is the default.
pub trait ClassifyResult<Res, Err> {
    /// The assessment of one result.
    fn classify(&self, result: &Result<Res, Err>) -> Assessment;
}

impl<Res, Err, F: Fn(&Result<Res, Err>) -> Assessment> ClassifyResult<Res, Err> for F {
    fn classify(&self, result: &Result<Res, Err>) -> Assessment {
        self(result)
    }
}

/// HTTP responses through [`http::assess_response`](crate::layers::http::assess_response)
/// (5xx fail, 429/418 hold the breaker open until `Retry-After`, other 4xx
/// are ignored); any `Err` (connection refused, reset, timed out) is a
/// failure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HttpClassifier;

impl<B, Err> ClassifyResult<http::Response<B>, Err> for HttpClassifier {
    fn classify(&self, result: &Result<http::Response<B>, Err>) -> Assessment {
        match result {
            Ok(response) => crate::layers::http::assess_response(response),
            Err(_) => Assessment::Failure,
        }
    }
}
