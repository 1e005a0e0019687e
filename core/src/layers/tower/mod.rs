//! `tower` layers (feature `tower`): the breaker, the bulkhead, retries
//! with a budget and per-call timeouts around a
//! [`Service`](tower_service::Service), judging results with a
//! [`ClassifyResult`] ([`HttpClassifier`] by default).
//!
//! Admission happens in `call`, never in `poll_ready`: a service that was
//! made ready but never called holds no breaker permit and no bulkhead
//! slot, so nothing leaks.
//! The response future owns the permit: dropped before it completes (the
//! caller gave up, a timeout layer outside fired), it records the call as
//! ignored.
//!
//! # What the layers ask of the service they wrap
//! | layer | request | response | error |
//! | --- | --- | --- | --- |
//! | [`BulkheadLayer`] | any | any | any |
//! | [`BreakerLayer`], [`KeyedBreakerLayer`] | any (the keyed layer: what its key function reads) | what its classifier judges: `http::Response<_>` for [`HttpClassifier`], anything for a closure given to `classify` | [`ServiceError`]: `std::error::Error + 'static` |
//! | [`RetryLayer`] | [`RetryRequest`]: `Clone + Send + 'static` | as for the breaker, and `Send` | [`ServiceError`], and `Send` |
//! | [`TimeoutLayer`] | any | any | any |
//! | [`RateLimitLayer`] | what its cost function reads | any | any; the service is `Clone` (a call that waits is made by the clone made ready) |
//!
//! The retried service is also `Clone + Send + 'static` with `Send`
//! futures, and the retry layer's timer a [`Timer`](crate::timeout::Timer) such as
//! [`TokioTimer`](crate::timeout::TokioTimer). tower's `BoxError`
//! (`Box<dyn Error + Send + Sync>`, which `tower::timeout` yields) is not
//! an `Error` itself: map it into a type that is, or use [`TimeoutLayer`],
//! whose [`TimeoutError`] is one.
//!
//! # Diagnostics
//! A stack that misses a bound fails to compile with an error naming it
//! (`ServiceError`, `RetryRequest`, `ClassifyResult`, `Timer`) and the fix,
//! also through the call patterns of tower's guides: each service here has
//! inherent `ready` and `oneshot` methods that do what tower's
//! `ServiceExt::{ready, oneshot}` do. `ready` comes first wherever it is
//! called, with an `Unpin` future of its own ([`Ready`]); a
//! `use tower::ServiceExt` that served only `ready` then goes unused (a
//! warning, an error under `-D warnings`: drop the import). `oneshot`
//! borrows the service and comes after tower's, which takes it: with
//! `ServiceExt` in scope, tower's is the one called wherever it fits. Through tower's own methods rustc
//! would say only that the method's "trait bounds were not satisfied"
//! (E0599), naming `Service<_>` and not the bound inside it. `poll_ready`
//! is `Service`'s own method: there rustc's E0599 lists the bounds that
//! fail, without their notes. A stack whose outermost service is not one
//! of these (a `tower::util` wrapper, say) meets tower's methods, and that
//! E0599, again. `tests/ui/tower/` pins each message. [`RateLimitService`],
//! generic over its number of limits, has no such methods: tower's serve it.

//! # Clients that fit as they are
//! hyper-util's `legacy::Client` is a `Service<http::Request<B>>` with an
//! `std::error::Error`: every layer wraps it as it is (with a body that
//! clones, such as `Full<Bytes>` or `Empty<Bytes>`, for retries). A
//! `reqwest::Client` is a `Service<reqwest::Request>`, which the breaker,
//! bulkhead and timeout layers wrap as it is ([`HttpClassifier`] judges a
//! `reqwest::Response` too); with feature `reqwest`, `reqwest_service`
//! makes it a `Service<http::Request<B>>` answering `http::Response`s, whose
//! requests clone, so that retries fit too.
//!
//! # One judgement for the breaker and the retries
//! The breaker and the retry layer each judge a result with their
//! [`ClassifyResult`], the same one by default: a 503 (an `Ok` response)
//! is a failure, counted and retried; a 429 holds the breaker for its
//! `Retry-After` and is the answer at once, never retried, in either
//! nesting; a 400 is neither counted nor retried. A 503's pause is capped
//! at the policy's [`max_retry_after`](crate::retry::RetryPolicy::max_retry_after).
//! [`Assessment`](crate::Assessment) has the table, the same for every
//! integration.
//! [`BulkheadLayer::events`] and [`RetryLayer::events`] report refusals and
//! retries to an [`Events`](crate::events::Events).
//!
//! # Order of the layers
//! Outermost first: `a.layer(b.layer(call))` is a → b → call. A guard's refusal (an open breaker, a full bulkhead, a deadline
//! before any attempt) is never counted as a failure of the dependency,
//! in any order: a breaker counts an inner refusal as ignored, a retry
//! layer never retries one, and [`refusal`](crate::refusal) finds it in
//! any layer's error.
//!
//! | nesting | consequence |
//! | --- | --- |
//! | retry → breaker → bulkhead → call (the default, as in the [`Pipeline`](crate::Pipeline)) | each attempt is one outcome for the breaker; a refusal of the breaker or the bulkhead ends the retries at once ([`RetryError::Final`](crate::retry::RetryError::Final) holding it) |
//! | breaker → retry → … | one logical request is one outcome: a failure only once the retries ran out; an inner refusal that ended them is ignored. A probe runs as long as the retries do: bound them with a [`TimeoutLayer`] between the two, below the breaker's `probe_timeout`, or a slow probe is taken over |
//! | breaker → bulkhead | the breaker admits, then the bulkhead; an open breaker refuses without taking a slot; a full bulkhead's [`BulkheadError::Full`] comes back inside [`CallError::Inner`](crate::CallError::Inner) and counts as ignored |
//! | bulkhead → breaker | the bulkhead caps every call, including those the breaker refuses (a refusal frees its slot at once); a full bulkhead never reaches the breaker |
//! | breaker → timeout → call | a timed-out call is the inner [`TimeoutError::Elapsed`], judged by the classifier: a failure with [`HttpClassifier`], retried by a retry layer outside |
//! | timeout → breaker → call | a timeout outside drops the breaker's future: the call counts as ignored, not as a failure (put timeouts inside the breaker); around a retry layer, it bounds the whole request |
//! | breaker → rate limit → call | the limiter's wait comes after the breaker's admission, as in the pipeline; a wait longer than allowed is [`RateLimitError::Throttled`], counted as ignored; inside a retry layer, each attempt takes its units |

mod bounds;
mod breaker;
mod bulkhead;
pub(crate) mod call_patterns;
mod classify_fn;
mod keyed;
mod rate_limit;
#[cfg(feature = "reqwest")]
mod reqwest;
mod retry;
mod timeout;

pub use bounds::{RetryRequest, ServiceError};
pub use breaker::{BreakerLayer, BreakerService, ResponseFuture};
pub use bulkhead::{BulkheadError, BulkheadFuture, BulkheadLayer, BulkheadService};
pub use call_patterns::Ready;
// The classifier of every integration, also named here for tower stacks.
pub use crate::layers::classify::{ClassifyResult, HttpClassifier};
pub use classify_fn::ClassifyFn;
pub use keyed::{Host, KeyedBreakerLayer, KeyedBreakerService, host};
pub use rate_limit::{RateLimitError, RateLimitFuture, RateLimitLayer, RateLimitService};
#[cfg(feature = "reqwest")]
pub use reqwest::{ReqwestFuture, ReqwestService, reqwest_service};
pub use retry::{RetryLayer, RetryService};
pub use timeout::{TimeoutError, TimeoutFuture, TimeoutLayer, TimeoutService};
