//! What a call's result says about the dependency: the one classifier
//! trait the pipeline, the tower layers and the bindings judge with.

use crate::assessment::Assessment;

/// Judges a call's result, for the [`Pipeline`](crate::Pipeline)'s
/// `call_with` family and the [`tower`](crate::tower) layers:
/// [`HttpClassifier`] (feature `http`: an `http::Response` by its status,
/// and a 5xx's `Retry-After` as the pause before the retry), any closure
/// `Fn(&Result<Res, Err>) -> Assessment` (which names no pause), or a type
/// of your own. [`tower::ClassifyFn`](crate::tower::ClassifyFn) names a closure's type, as the tower
/// layers' `classify` does.
///
/// A guard's refusal from an inner layer (a full bulkhead, an inner
/// breaker's rejection: see [`refusal`](crate::refusal)) never reaches a
/// tower breaker's classifier: the breaker counts it as ignored.
///
/// # Examples
/// ```
/// use tripwire::{Assessment, ClassifyResult};
/// let by_code = |r: &Result<u32, std::io::Error>| match r {
///     Ok(500..) | Err(_) => Assessment::Failure,
///     Ok(_) => Assessment::Success,
/// };
/// assert_eq!(by_code.classify(&Ok(503)), Assessment::Failure);
/// assert_eq!(by_code.retry_after(&503), None, "a closure names no pause");
/// ```
/// [`HttpClassifier`] judges HTTP responses only; other results need a
/// classifier of their own, and the error says so:
/// ```compile_fail
/// use tripwire::http::HttpClassifier;
/// use tripwire::ClassifyResult;
/// fn judges<K: ClassifyResult<u32, std::io::Error>>(_: K) {}
/// judges(HttpClassifier); // error: `HttpClassifier` cannot judge a `Result<u32, std::io::Error>`
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot judge a `Result<{Res}, {Err}>`",
    label = "the calls' results are `Result<{Res}, {Err}>`",
    note = "`HttpClassifier` judges `Result<http::Response<B>, E>` only: judge with a closure whose argument's type is written out, `|r: &Result<{Res}, {Err}>| -> tripwire::Assessment {{ .. }}` (a tower layer takes it in `.classify(..)`)"
)]
pub trait ClassifyResult<Res, Err> {
    /// The assessment of one result.
    fn classify(&self, result: &Result<Res, Err>) -> Assessment;

    /// The HTTP status of a response, if this classifier knows how to read
    /// one, for a retry's [`RetryCause`](crate::events::RetryCause); `None` by
    /// default.
    fn status(&self, response: &Res) -> Option<u16> {
        let _ = response;
        None
    }

    /// The pause a response judged a failure asks for before the next
    /// attempt (a 503's `Retry-After`), if this classifier reads one; the
    /// retries wait it instead of their backoff, capped at the policy's
    /// [`max_retry_after`](crate::retry::RetryPolicy::max_retry_after). `None` by
    /// default. Backpressure names its pause in its [`Assessment`].
    fn retry_after(&self, response: &Res) -> Option<core::time::Duration> {
        let _ = response;
        None
    }
}

// `Fn` is `#[fundamental]`: no other crate may implement it for
// `tower::ClassifyFn` or `HttpClassifier`, so coherence lets their impls stand
// beside this one.
// Not recommended in diagnostics: a type that cannot judge a result is
// reported with `ClassifyResult`'s own note, not as "expected a closure".
#[diagnostic::do_not_recommend]
impl<Res, Err, F: Fn(&Result<Res, Err>) -> Assessment> ClassifyResult<Res, Err> for F {
    fn classify(&self, result: &Result<Res, Err>) -> Assessment {
        self(result)
    }
}

/// HTTP responses through [`http::assess_result`](crate::http::assess_result)
/// (5xx, 408 and statuses outside 100–599 fail, 429/418 hold the breaker
/// open until `Retry-After`, other 4xx are ignored); any `Err` (connection
/// refused, reset, timed out) is a failure. A failure's
/// [`http::retry_after`](crate::http::retry_after) is the pause before
/// its retry (feature `http`).
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use tripwire::http::HttpClassifier;
/// use tripwire::{Assessment, ClassifyResult};
///
/// let busy = http::Response::builder().status(503).header("retry-after", "1").body(())?;
/// let pause = ClassifyResult::<_, std::io::Error>::retry_after(&HttpClassifier, &busy);
/// assert_eq!(HttpClassifier.classify(&Ok::<_, std::io::Error>(busy)), Assessment::Failure);
/// assert_eq!(pause, Some(Duration::from_secs(1)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "http")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HttpClassifier;

#[cfg(feature = "http")]
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

/// A `reqwest::Response` judged by its status and headers, as an
/// `http::Response` is ([`http::assess`](crate::http::assess)); any error
/// is a failure.
#[cfg(feature = "reqwest")]
impl<Err> ClassifyResult<::reqwest::Response, Err> for HttpClassifier {
    fn classify(&self, result: &Result<::reqwest::Response, Err>) -> Assessment {
        match result {
            Ok(response) => crate::layers::http::assess(response.status(), response.headers()),
            Err(_) => Assessment::Failure,
        }
    }

    fn status(&self, response: &::reqwest::Response) -> Option<u16> {
        Some(response.status().as_u16())
    }

    fn retry_after(&self, response: &::reqwest::Response) -> Option<core::time::Duration> {
        crate::layers::http::retry_after(response.headers())
    }
}
