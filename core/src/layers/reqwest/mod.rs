//! reqwest middleware (feature `reqwest`): [`GuardMiddleware`], a
//! `reqwest_middleware::Middleware` that puts a breaker, an optional
//! bulkhead, retries with a budget and the holds a server asks for around
//! every request of a `reqwest_middleware::ClientWithMiddleware`.
//!
//! # Per request
//! The layers nest as in the [`Pipeline`](crate::Pipeline): retry →
//! breaker → bulkhead → the rest of the chain. Each attempt asks the
//! breaker for a permit, then the bulkhead for a slot, then goes on down
//! the chain; its answer is judged once, by [`http::assess`](crate::http::assess)
//! on the response's status and headers, and that one judgement is both
//! what the breaker records and whether the retries go on:
//!
//! | answer | the breaker | retried |
//! | --- | --- | --- |
//! | 1xx, 2xx, 3xx | success | no |
//! | 5xx, 408, a status outside 100–599 | failure | yes, after the backoff's pause, or after the 5xx's own `Retry-After` (capped at the policy's [`max_retry_after`](crate::retry::RetryPolicy::max_retry_after), a minute by default); the last 5xx is the answer once the retries stop |
//! | 429, 418 | held open for the `Retry-After` (or an equivalent reset header; else the breaker's `open_timeout`), capped at its `max_hold` | no: the hold refuses the next attempts; the 429 is the answer |
//! | other 4xx | ignored: the caller's fault | no |
//! | a connection error, a timeout (the client's, or the attempt's own [`timeout`](GuardMiddleware::timeout), 30 s by default) | failure | yes |
//! | an inner middleware's refusal (see [`refusal`](crate::refusal)) | ignored | no |
//! | refused here: breaker open or held, bulkhead full | nothing: no call was made (a full bulkhead's permit is given back as ignored) | no |
//!
//! A refusal by tripwire is never a failure of the dependency. It comes
//! back as `reqwest_middleware::Error::Middleware` holding a [`Refused`];
//! [`tripwire::refusal`](crate::refusal) on the client's error says which
//! guard refused and for how long (a 429's hold: the time left of its
//! `Retry-After`).
//!
//! Retries follow a [`RetryPolicy`](crate::retry::RetryPolicy) (attempts, total
//! time, backoff) and, if given, a [`RetryBudget`](crate::retry::RetryBudget).
//! Only a request whose body can be sent twice
//! ([`reqwest::Request::try_clone`]) is retried: one with a streamed body
//! is sent once, whatever its answer. A refusal ends the retries and is
//! the answer (the breaker opened under them: its `retry_after` says more
//! than the last 5xx would). Across a pause only the head of the last
//! answer (status, headers, URL) is kept, for the case where the time runs
//! out during the pause: its body and connection are let go before it. The
//! bulkhead slot is held for one
//! attempt, not across the backoff; by default a full bulkhead refuses at
//! once, and [`GuardMiddleware::bulkhead_wait`] lets an attempt wait for a
//! slot.
//!
//! tripwire's own `reqwest` dependency enables no TLS backend and no
//! default feature: the application's `reqwest` chooses (for instance
//! `features = ["rustls"]`), and cargo builds the one `reqwest` with it.
//!
//! # Versions
//! Feature `reqwest` is reqwest 0.13 and reqwest-middleware 0.5: an
//! application must use those versions for the middleware to fit its
//! client. rustc takes other versions of the two crates for other crates,
//! and its error does not say "version" everywhere:
//!
//! | what the application does | what rustc says |
//! | --- | --- |
//! | `GuardMiddleware::client(reqwest_0_12_client)` | E0308 "mismatched types", and a note: "there are multiple different versions of crate `reqwest` in the dependency graph" |
//! | `reqwest_middleware_0_4::ClientBuilder::new(..).with(guard)` | E0277 "the trait bound `GuardMiddleware: reqwest_middleware::Middleware` is not satisfied", whose help names a `for<'a> Fn(reqwest::Request, ..)` that is "not implemented" (0.4's closures are middleware too); that help means the versions differ |
//!
//! [`GuardMiddleware::client`] is the way in that says so plainly.
//! `tests/ui/reqwest/` pins both messages.
//!
//! # Examples
//! ```
//! use std::sync::Arc;
//! use reqwest_middleware::ClientWithMiddleware;
//! use tripwire::reqwest::GuardMiddleware;
//! use tripwire::retry::{RetryBudget, RetryBudgetConfig, RetryPolicy};
//! use tripwire::{BreakerConfig, Bulkhead, NamedBreaker, RefusedBy};
//!
//! let breaker = Arc::new(NamedBreaker::new("kraken/rest", BreakerConfig::default()));
//! let guard = GuardMiddleware::new(breaker.clone())
//!     .bulkhead(Arc::new(Bulkhead::new(32)))
//!     .retry(RetryPolicy::builder().max_attempts(3).build()?)
//!     .budget(Arc::new(RetryBudget::new(RetryBudgetConfig::default())));
//! let client = guard.client(reqwest::Client::new());
//!
//! /// The ticker, or how long to stay away.
//! async fn ticker(client: &ClientWithMiddleware) -> Result<String, String> {
//!     match client.get("https://api.kraken.com/0/public/Ticker?pair=XBTUSD").send().await {
//!         Ok(response) => response.text().await.map_err(|e| e.to_string()),
//!         Err(e) => match tripwire::refusal(&e) {
//!             Some(RefusedBy::Breaker(r)) => Err(format!("not sent; come back in {:?}", r.retry_after)),
//!             Some(other) => Err(format!("not sent: {other}")),
//!             None => Err(format!("failed: {e}")),
//!         },
//!     }
//! }
//! # let _ = ticker(&client);
//! # Ok::<(), tripwire::ConfigError>(())
//! ```

mod middleware;
mod rate;
mod refused;

pub use middleware::GuardMiddleware;
pub use refused::Refused;
