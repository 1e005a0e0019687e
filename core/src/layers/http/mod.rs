//! Classifying HTTP responses (feature `http`): what a status and its
//! headers say about the dependency.
//!
//! | response | [`Assessment`] |
//! | --- | --- |
//! | 1xx, 2xx, 3xx | success |
//! | 5xx | failure |
//! | 408 (the server timed out waiting for the request) | failure, as a client's own timeout is |
//! | 429, 418 (Binance's "banned for hammering") | backpressure until `Retry-After` or an equivalent reset header |
//! | other 4xx (unsigned, forbidden, malformed, unknown) | ignored: the caller's fault, not the dependency's |
//! | 600 to 999 (no HTTP status, which `StatusCode` still holds) | failure: a broken server |
//!
//! A timeout or a connection error is a failure; a call the caller
//! cancelled is ignored (the pipeline and the tower services do both).
//!
//! No header value panics: a number is digits only (no sign, no fraction)
//! or it is refused, one too large for a `u64` saturates, and every sum is
//! a saturating one on durations. A server may so ask for any wait up to
//! `u64::MAX` seconds; the breaker caps what it honours (see
//! `BreakerConfigBuilder::max_hold`).

use core::time::Duration;
use std::time::SystemTime;

use http::header::{HeaderMap, RETRY_AFTER};
use http::{Response, StatusCode};

use crate::assessment::Assessment;

pub use crate::layers::classify::HttpClassifier;

mod usage;
pub use usage::{Usage, UsageKind, Usages, usage};

/// How a response with this status and these headers ended, by the
/// module's table. A status `StatusCode` holds but HTTP does not define
/// (600 to 999) is a failure: no healthy server sends one.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use http::{HeaderMap, StatusCode};
/// use tripwire::Assessment;
/// use tripwire::http::assess;
///
/// let mut headers = HeaderMap::new();
/// assert_eq!(assess(StatusCode::OK, &headers), Assessment::Success);
/// assert_eq!(assess(StatusCode::SERVICE_UNAVAILABLE, &headers), Assessment::Failure);
/// assert_eq!(assess(StatusCode::NOT_FOUND, &headers), Assessment::Ignored);
/// assert_eq!(assess(StatusCode::REQUEST_TIMEOUT, &headers), Assessment::Failure);
/// assert_eq!(assess(StatusCode::from_u16(600)?, &headers), Assessment::Failure);
/// headers.insert("retry-after", "7".parse()?);
/// assert_eq!(
///     assess(StatusCode::TOO_MANY_REQUESTS, &headers),
///     Assessment::Backpressure(Some(Duration::from_secs(7)))
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn assess(status: StatusCode, headers: &HeaderMap) -> Assessment {
    match status.as_u16() {
        100..=399 => Assessment::Success,
        429 | 418 => Assessment::Backpressure(retry_after(headers)),
        408 => Assessment::Failure,
        400..=499 => Assessment::Ignored,
        // 5xx, and what no HTTP server sends: both say the server is broken.
        _ => Assessment::Failure,
    }
}

/// [`assess`] for a response.
pub fn assess_response<B>(response: &Response<B>) -> Assessment {
    assess(response.status(), response.headers())
}

/// [`assess_response`] for a client's result, as the pipeline's
/// `call_async_with` and the tower breaker take it: a response by its status
/// and headers, any error (connection refused, reset, timed out) a failure.
///
/// # Examples
/// ```
/// use tripwire::Assessment;
/// use tripwire::http::assess_result;
///
/// let busy: Result<_, std::io::Error> =
///     Ok(http::Response::builder().status(503).body(()).unwrap());
/// assert_eq!(assess_result(&busy), Assessment::Failure);
/// let refused: Result<http::Response<()>, _> =
///     Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
/// assert_eq!(assess_result(&refused), Assessment::Failure);
/// ```
pub fn assess_result<B, E>(result: &Result<Response<B>, E>) -> Assessment {
    match result {
        Ok(response) => assess_response(response),
        Err(_) => Assessment::Failure,
    }
}

/// The time a response asks the client to wait: `Retry-After` (delay in
/// seconds, or an HTTP date), else `RateLimit-Reset` (seconds, always a
/// delay), else
/// `X-RateLimit-Reset` / `X-Ratelimit-Reset` (seconds, or a Unix time in
/// seconds when the value is that large, as GitHub sends). `None` when no
/// header says, or none can be read.
///
/// A header sent on several lines counts with the first of them that can
/// be read, in the order they came: `Retry-After: soon` then
/// `Retry-After: 5` is 5 s. Lines that cannot be read are skipped; if no
/// `Retry-After` line can be, the reset headers are read the same way.
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use http::HeaderMap;
/// use tripwire::http::retry_after;
///
/// let mut headers = HeaderMap::new();
/// headers.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse()?);
/// assert_eq!(retry_after(&headers), Some(Duration::ZERO), "a date in the past: come back now");
/// headers.insert("retry-after", "120".parse()?);
/// assert_eq!(retry_after(&headers), Some(Duration::from_secs(120)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    // The wall clock is read only for a date or a Unix time.
    read_wait(headers, SystemTime::now)
}

/// [`retry_after`] as of the wall-clock time `now`, which dates and Unix
/// times are measured from (for replaying recorded responses, and for
/// bindings that take the time from their caller).
///
/// # Examples
/// ```
/// use core::time::Duration;
/// use std::time::SystemTime;
/// use http::HeaderMap;
/// use tripwire::http::retry_after_at;
///
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
/// let mut headers = HeaderMap::new();
/// headers.insert("x-ratelimit-reset", "1700000045".parse()?);
/// assert_eq!(retry_after_at(&headers, now), Some(Duration::from_secs(45)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    read_wait(headers, || now)
}

fn read_wait(headers: &HeaderMap, now: impl Fn() -> SystemTime) -> Option<Duration> {
    if let Some(d) = first_readable(headers, RETRY_AFTER.as_str(), |v| parse_retry_after(v, &now)) {
        return Some(d);
    }
    let seconds = |name: &'static str| first_readable(headers, name, whole_seconds);
    // The IETF header is always a delay, however large.
    if let Some(secs) = seconds("ratelimit-reset") {
        return Some(Duration::from_secs(secs));
    }
    // The older one is a delay or, when that large, a Unix time.
    seconds("x-ratelimit-reset").map(|secs| reset_in(secs, &now))
}

/// The first of the header's lines, in the order they came, that `read`
/// makes sense of. A line is one value: none of these headers is a list,
/// and an HTTP date has a comma of its own.
fn first_readable<T>(headers: &HeaderMap, name: &str, read: impl Fn(&str) -> Option<T>) -> Option<T> {
    headers.get_all(name).iter().find_map(|v| read(v.to_str().ok()?))
}

/// A `Retry-After` value: delay-seconds or an HTTP date.
fn parse_retry_after(v: &str, now: impl Fn() -> SystemTime) -> Option<Duration> {
    if let Some(secs) = whole_seconds(v) {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(v.trim()).ok()?;
    Some(at.duration_since(now()).unwrap_or(Duration::ZERO))
}

/// Whole seconds as HTTP writes them (`1*DIGIT`: no sign, no fraction),
/// saturating at `u64::MAX`: a number too large to hold is a very long
/// wait, which the breaker's `max_hold` caps, not an unreadable header.
fn whole_seconds(v: &str) -> Option<u64> {
    let v = v.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(v.parse().unwrap_or(u64::MAX))
}

/// Values this large are Unix times (after 2001), not delays.
const UNIX_TIME_FROM: u64 = 1_000_000_000;

/// A reset header's seconds: a delay, or a Unix time when that large.
///
/// Computed as durations since the epoch, never as a `SystemTime` (which
/// cannot hold every `u64` of seconds: adding one would panic): a time far
/// beyond what the host can represent is a very long wait, which the
/// breaker's `max_hold` then caps. `now` is read only for a Unix time.
fn reset_in(secs: u64, now: impl Fn() -> SystemTime) -> Duration {
    if secs < UNIX_TIME_FROM {
        return Duration::from_secs(secs);
    }
    let since_epoch = now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or(Duration::ZERO);
    Duration::from_secs(secs).saturating_sub(since_epoch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::HeaderName;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (HeaderName::from_static(k), v.parse().unwrap())).collect()
    }

    #[test]
    fn statuses_map_to_assessments() {
        let none = HeaderMap::new();
        for (code, want) in [
            (200, Assessment::Success),
            (304, Assessment::Success),
            (400, Assessment::Ignored),
            (404, Assessment::Ignored),
            (418, Assessment::Backpressure(None)),
            (429, Assessment::Backpressure(None)),
            (500, Assessment::Failure),
            (503, Assessment::Failure),
        ] {
            assert_eq!(assess(StatusCode::from_u16(code).unwrap(), &none), want, "{code}");
        }
    }

    #[test]
    fn retry_after_reads_seconds_dates_and_reset_headers() {
        assert_eq!(retry_after(&headers(&[("retry-after", " 30 ")])), Some(Duration::from_secs(30)));
        let in_a_minute = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(61));
        let d = retry_after(&headers(&[("retry-after", &in_a_minute)])).unwrap();
        assert!((Duration::from_secs(59)..=Duration::from_secs(61)).contains(&d), "{d:?}");
        assert_eq!(retry_after(&headers(&[("x-ratelimit-reset", "12")])), Some(Duration::from_secs(12)));
        assert_eq!(retry_after(&headers(&[("ratelimit-reset", "3")])), Some(Duration::from_secs(3)));
        // The IETF header is a delay even past the Unix-time threshold of
        // the X- one: a long wait (which max_hold caps), not "now".
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let ietf = headers(&[("ratelimit-reset", "1700000045")]);
        assert_eq!(retry_after_at(&ietf, now), Some(Duration::from_secs(1_700_000_045)));
        let x = headers(&[("x-ratelimit-reset", "1700000045")]);
        assert_eq!(retry_after_at(&x, now), Some(Duration::from_secs(45)));
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
        // Retry-After wins over a reset header.
        let both = headers(&[("retry-after", "5"), ("x-ratelimit-reset", "50")]);
        assert_eq!(retry_after(&both), Some(Duration::from_secs(5)));
    }

    /// Several lines of one header: the first readable value counts, in
    /// the order they came; unreadable lines are skipped, not taken for
    /// "no wait".
    #[test]
    fn of_several_lines_the_first_readable_value_counts() {
        let lines = |name: &'static str, values: &[&str]| {
            let mut h = HeaderMap::new();
            for v in values {
                h.append(HeaderName::from_static(name), v.parse().unwrap());
            }
            h
        };
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(retry_after(&lines("retry-after", &["soon", "5"])), Some(Duration::from_secs(5)));
        assert_eq!(retry_after(&lines("retry-after", &["5", "7"])), Some(Duration::from_secs(5)));
        assert_eq!(retry_after(&lines("retry-after", &["", "-1", "7"])), Some(Duration::from_secs(7)));
        let date = "Tue, 14 Nov 2023 22:14:00 GMT"; // 40 s after `now`
        assert_eq!(
            retry_after_at(&lines("retry-after", &["later", date]), now),
            Some(Duration::from_secs(40))
        );
        assert_eq!(retry_after(&lines("ratelimit-reset", &["x", "3"])), Some(Duration::from_secs(3)));
        assert_eq!(
            retry_after_at(&lines("x-ratelimit-reset", &["?", "1700000045"]), now),
            Some(Duration::from_secs(45))
        );
        // No readable Retry-After line: the reset headers speak.
        let mut h = lines("retry-after", &["soon", "later"]);
        h.insert("x-ratelimit-reset", "50".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(50)));
        assert_eq!(retry_after(&lines("retry-after", &["soon", "later"])), None);
        assert_eq!(
            assess(StatusCode::TOO_MANY_REQUESTS, &lines("retry-after", &["soon", "5"])),
            Assessment::Backpressure(Some(Duration::from_secs(5)))
        );
    }

    #[test]
    fn absurd_header_values_never_panic() {
        let absurd = [
            "9223372036854775808",  // 2^63
            "18446744073709551615", // u64::MAX
            "18446744073709551616", // u64::MAX + 1
            "99999999999",
            "-1",
            "-9223372036854775808",
            "1e400",
            "0x10",
            " ",
            "",
            "Fri, 31 Dec 9999 23:59:59 GMT",
            "Sat, 01 Jan 0000 00:00:00 GMT",
            "Thu, 01 Jan 1970 00:00:00 GMT",
        ];
        for status in [429, 418, 503, 200] {
            let status = StatusCode::from_u16(status).unwrap();
            for name in ["retry-after", "ratelimit-reset", "x-ratelimit-reset"] {
                for v in absurd {
                    let _ = assess(status, &headers(&[(name, v)]));
                }
                // Bytes that are no string at all.
                let mut h = HeaderMap::new();
                h.insert(
                    HeaderName::from_static(name),
                    http::HeaderValue::from_bytes(b"\xff\xfe 12").unwrap(),
                );
                assert_eq!(retry_after(&h), None);
            }
        }
        let secs = |v: &str, name: &'static str| retry_after(&headers(&[(name, v)]));
        assert_eq!(secs("99999999999", "retry-after"), Some(Duration::from_secs(99_999_999_999)));
        assert_eq!(secs("18446744073709551615", "retry-after"), Some(Duration::from_secs(u64::MAX)));
        let forever = Some(Duration::from_secs(u64::MAX));
        assert_eq!(secs("18446744073709551616", "retry-after"), forever, "beyond u64: as long as can be");
        assert_eq!(secs(&"9".repeat(400), "retry-after"), forever);
        // A reset that large is a Unix time: all of it that is still ahead.
        assert!(
            secs(&"9".repeat(400), "ratelimit-reset").unwrap() > Duration::from_secs(u64::MAX - (1 << 40))
        );
        for unreadable in ["-1", "+5", "1.5", "7 s", "0x10", "", " "] {
            for name in ["retry-after", "ratelimit-reset", "x-ratelimit-reset"] {
                assert_eq!(secs(unreadable, name), None, "{name}: {unreadable:?}");
            }
        }
        // Unix times far beyond what `SystemTime` holds: a very long wait, not a panic.
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(reset_in(1 << 63, || now), Duration::from_secs((1 << 63) - 1_700_000_000));
        assert_eq!(reset_in(u64::MAX, || now), Duration::from_secs(u64::MAX - 1_700_000_000));
        assert!(secs("9223372036854775808", "x-ratelimit-reset").unwrap() > Duration::from_secs(1 << 62));
    }

    #[test]
    fn large_reset_values_are_unix_times() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(reset_in(1_700_000_045, || now), Duration::from_secs(45));
        assert_eq!(reset_in(1_600_000_000, || now), Duration::ZERO);
        assert_eq!(reset_in(60, || now), Duration::from_secs(60));
    }
}
