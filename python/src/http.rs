//! Responses through the core's `tripwire::http`: `_retry_after` reads the
//! wait headers ask for (`tripwire.ccxt`), `_raised_retry_after` the
//! pause a raised 5xx asks for (`tripwire.retry`), `_assess` classifies a
//! status and its headers, and `_settle` records an admitted call's response as
//! the core settles an assessment (`tripwire.http`). Any Python client
//! whose headers are a mapping (requests, httpx, aiohttp) goes through
//! here, so no binding classifies a response on its own.

use core::time::Duration;
use std::time::SystemTime;

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyInt, PyMapping, PyString};
use tripwire::{Assessment, Outcome};

use crate::args::{Secs, seconds, type_name};
use crate::breaker::Breaker;
use crate::ticket::HeldTicket;

/// `headers` (a mapping, or None for none) as a `HeaderMap`. A name or
/// value given as `bytes` or `bytearray` is taken as the bytes on the wire
/// (a raw client's headers); anything else with `str()`. A pair that is no
/// valid header is skipped, as an HTTP client would drop it. Names are
/// case-insensitive.
fn header_map(headers: &Bound<'_, PyAny>) -> PyResult<HeaderMap> {
    let mut map = HeaderMap::new();
    let Some(pairs) = check_mapping(headers)? else {
        return Ok(map);
    };
    for item in pairs.items()?.iter() {
        let (name, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        let (name, value) = (header_bytes(&name)?, header_bytes(&value)?);
        if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(&name), HeaderValue::from_bytes(&value)) {
            map.append(name, value);
        }
    }
    Ok(map)
}

/// A header name's or value's bytes: `bytes` and `bytearray` as they are
/// (`str()` of them is their repr, `b'30'`, which no header reads as 30),
/// anything else as its `str()` in UTF-8.
fn header_bytes(v: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = v.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    Ok(v.str()?.to_cow()?.as_bytes().to_vec())
}

/// `headers` as a mapping, None for None; `TypeError` for anything else.
fn check_mapping<'a, 'py>(headers: &'a Bound<'py, PyAny>) -> PyResult<Option<&'a Bound<'py, PyMapping>>> {
    if headers.is_none() {
        return Ok(None);
    }
    headers.cast::<PyMapping>().map(Some).map_err(|_| {
        PyTypeError::new_err(format!(
            "headers must be a mapping of names to values, got {}",
            type_name(headers)
        ))
    })
}

/// `now=`: the Unix time dates are measured from; the wall clock if None.
fn wall_clock(now: Option<&Bound<'_, PyAny>>) -> PyResult<SystemTime> {
    Ok(match now.filter(|n| !n.is_none()) {
        None => SystemTime::now(),
        Some(n) => SystemTime::UNIX_EPOCH.checked_add(seconds("now", n)?).unwrap_or(SystemTime::UNIX_EPOCH),
    })
}

/// `status=`: an int from 100 to 999, as HTTP has them.
fn status_code(status: &Bound<'_, PyAny>) -> PyResult<StatusCode> {
    if status.is_instance_of::<PyBool>() || !status.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("status must be an int, got {}", type_name(status))));
    }
    status.extract::<u16>().ok().and_then(|s| StatusCode::from_u16(s).ok()).ok_or_else(|| {
        let shown = status.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
        PyValueError::new_err(format!("status must be an HTTP status code from 100 to 999, got {shown}"))
    })
}

/// The core's assessment of `status` and `headers`, its wait read as of
/// `now` (the core's `assess` reads the wall clock itself). The headers
/// are read only for backpressure, the one verdict they carry a wait for:
/// copying every header of every 2xx into a `HeaderMap` would cost more
/// than the rest of the guarded call.
fn assessment(status: StatusCode, headers: &Bound<'_, PyAny>, now: SystemTime) -> PyResult<Assessment> {
    Ok(match tripwire::http::assess(status, &HeaderMap::new()) {
        Assessment::Backpressure(_) => {
            let map = header_map(headers)?;
            match tripwire::http::assess(status, &map) {
                Assessment::Backpressure(_) => {
                    Assessment::Backpressure(tripwire::http::retry_after_at(&map, now))
                }
                other => other,
            }
        }
        other => {
            // Still a mapping or None, for every status: a wrong type is
            // the caller's bug whatever the server answered.
            check_mapping(headers)?;
            other
        }
    })
}

fn verdict(a: Assessment) -> &'static str {
    match a {
        Assessment::Success => "success",
        Assessment::Failure => "failure",
        Assessment::Ignored => "ignored",
        Assessment::Backpressure(_) => "backpressure",
    }
}

/// The wait `headers` ask for, in seconds: `Retry-After` (whole seconds or
/// an HTTP date), else `RateLimit-Reset`, else `X-RateLimit-Reset`
/// (seconds, or a Unix time when that large); None when no header says or
/// none can be read. `now`: the Unix time dates are measured from (default:
/// the wall clock).
#[pyfunction]
#[pyo3(name = "_retry_after", signature = (headers, now = None))]
pub(crate) fn retry_after(
    headers: &Bound<'_, PyAny>,
    now: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<f64>> {
    let map = header_map(headers)?;
    Ok(tripwire::http::retry_after_at(&map, wall_clock(now)?).map(|d: Duration| d.secs()))
}

/// The core's verdict on a response: `("success" | "failure" | "ignored" |
/// "backpressure", wait)`, the wait (seconds) read from the headers for
/// backpressure only, None when they ask for none.
#[pyfunction]
#[pyo3(name = "_assess", signature = (status, headers, now = None))]
pub(crate) fn assess(
    status: &Bound<'_, PyAny>,
    headers: &Bound<'_, PyAny>,
    now: Option<&Bound<'_, PyAny>>,
) -> PyResult<(&'static str, Option<f64>)> {
    let status = status_code(status)?;
    let a = assessment(status, headers, wall_clock(now)?)?;
    let wait = match a {
        Assessment::Backpressure(w) => w.map(|d| d.secs()),
        _ => None,
    };
    Ok((verdict(a), wait))
}

/// A response's status and headers: `status_code` (requests, httpx) or
/// `status` (aiohttp), and `headers`; a `TypeError` saying what it got.
fn response_parts<'py>(response: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let py = response.py();
    let status = match response.getattr_opt(intern!(py, "status_code"))? {
        Some(s) if !s.is_none() => Some(s),
        _ => response.getattr_opt(intern!(py, "status"))?.filter(|s| !s.is_none()),
    };
    let headers = response.getattr_opt(intern!(py, "headers"))?;
    match (status, headers) {
        (Some(status), Some(headers)) => Ok((status, headers)),
        _ if response.hasattr(intern!(py, "__await__"))? => Err(PyTypeError::new_err(format!(
            "got an awaitable ({}), not a response: guard an async def function, or use call_async \
             (aiohttp's session.get is no async def)",
            type_name(response)
        ))),
        _ => Err(PyTypeError::new_err(format!(
            "expected an HTTP response (with `status_code` or `status`, and `headers`), got {}; \
             a guarded function must return its response",
            type_name(response)
        ))),
    }
}

/// The status and the headers of the response an HTTP client's own error
/// was raised for: requests' `HTTPError` and httpx's `HTTPStatusError`
/// (`exc.response`, with its `status_code` and `headers`), `tripwire.http`'s
/// `ResponseError` (`exc.response`, any client's: `status_code` or aiohttp's
/// `status`), aiohttp's `ClientResponseError` (`exc.status` and
/// `exc.headers`, beside its `request_info`). None for any other exception,
/// and for one that carries no error status (below 400): it is about
/// something else, which `failure_on` judges.
fn raised_parts<'py>(exc: &Bound<'py, PyAny>) -> Option<(StatusCode, Option<Bound<'py, PyAny>>)> {
    let py = exc.py();
    let (status, headers) = match attr(exc, intern!(py, "response")) {
        Some(response) => (
            attr(&response, intern!(py, "status_code")).or_else(|| attr(&response, intern!(py, "status"))),
            attr(&response, intern!(py, "headers")),
        ),
        None if attr(exc, intern!(py, "request_info")).is_some() => {
            (attr(exc, intern!(py, "status")), attr(exc, intern!(py, "headers")))
        }
        None => (None, None),
    };
    let status = status?;
    if status.is_instance_of::<PyBool>() {
        return None;
    }
    let status = StatusCode::from_u16(status.extract::<u16>().ok()?).ok()?;
    (status.as_u16() >= 400).then_some((status, headers))
}

/// The core's verdict on the response an HTTP client's own error was raised
/// for, by its status alone (see [`raised_parts`]); the wait of a
/// backpressure verdict is [`raised_wait`]'s to read.
pub(crate) fn raised_assessment(exc: &Bound<'_, PyAny>) -> Option<Assessment> {
    raised_parts(exc).map(|(status, _)| tripwire::http::assess(status, &HeaderMap::new()))
}

/// The wait the headers of a raised error's response ask for, as
/// `_retry_after` reads them (`Retry-After`, else the reset headers), as of
/// now; None when they ask for none, cannot be read, or there are none.
pub(crate) fn raised_wait(exc: &Bound<'_, PyAny>) -> Option<Duration> {
    let (_, headers) = raised_parts(exc)?;
    let map = header_map(&headers?).ok()?;
    tripwire::http::retry_after_at(&map, SystemTime::now())
}

/// The pause a raised error for a failure of the server (a 5xx, a 408)
/// asks for in its response's headers, in seconds: what `tripwire.retry`
/// waits before asking again, as a Rust retry does. None for any other
/// exception (backpressure is never retried: the hold answers it), and
/// when the headers ask for no wait.
#[pyfunction]
#[pyo3(name = "_raised_retry_after")]
pub(crate) fn raised_retry_after(exc: &Bound<'_, PyAny>) -> Option<f64> {
    match raised_assessment(exc)? {
        Assessment::Failure => raised_wait(exc).map(|d| d.secs()),
        _ => None,
    }
}

/// `on.name`, None when it is missing, None or cannot be read.
fn attr<'py>(on: &Bound<'py, PyAny>, name: &Bound<'py, PyString>) -> Option<Bound<'py, PyAny>> {
    on.getattr_opt(name).ok().flatten().filter(|v| !v.is_none())
}

/// [`assess`] for a response (requests, httpx, aiohttp).
#[pyfunction]
#[pyo3(name = "_assess_response", signature = (response, now = None))]
pub(crate) fn assess_response(
    response: &Bound<'_, PyAny>,
    now: Option<&Bound<'_, PyAny>>,
) -> PyResult<(&'static str, Option<f64>)> {
    let (status, headers) = response_parts(response)?;
    assess(&status, &headers, now)
}

/// Records an admitted call's `response` as the core settles an
/// assessment (`NamedBreaker::settle`): its outcome, then for backpressure
/// a hold for the server's wait, or the breaker's `open_timeout` when none
/// is given, capped at `max_hold`. Returns the verdict, the status and, for
/// backpressure, the seconds until a call may be admitted (the hold left,
/// which a longer hold already in place can make more than asked); None
/// otherwise. A response that cannot be read (no status, a status out of
/// range, headers that are no mapping) is recorded as ignored, giving the
/// ticket back, and raises `TypeError` / `ValueError`.
#[pyfunction]
#[pyo3(name = "_settle")]
pub(crate) fn settle(
    breaker: &Bound<'_, Breaker>,
    ticket: HeldTicket,
    response: &Bound<'_, PyAny>,
) -> PyResult<(&'static str, u16, Option<f64>)> {
    let ticket = ticket.0;
    let read = response_parts(response).and_then(|(status, headers)| {
        let status = status_code(&status)?;
        Ok((status, assessment(status, &headers, SystemTime::now())?))
    });
    let (status, a) = match read {
        Ok(read) => read,
        Err(e) => {
            Breaker::record(breaker, ticket, Outcome::Ignored);
            return Err(e);
        }
    };
    Breaker::record(breaker, ticket, a.outcome());
    let Assessment::Backpressure(asked) = a else {
        return Ok((verdict(a), status.as_u16(), None));
    };
    let config = breaker.get().core().config();
    let d = asked.unwrap_or_else(|| config.open_timeout());
    // The core caps the hold at `max_hold`, and counts it when it does.
    Breaker::open_for(breaker, d);
    // A hold that was not placed (`force_open()`, a zero wait): the wait
    // that was asked, capped as a hold would have been.
    let left = breaker.get().hold_left_secs().unwrap_or(d.min(config.max_hold()).secs());
    Ok((verdict(a), status.as_u16(), Some(left)))
}
