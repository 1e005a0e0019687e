//! Reading a response's headers for the wait it asks for: the core's
//! `tripwire::http::retry_after_at`, for `tripwire.ccxt` and any Python
//! client that has the headers as a mapping.

use core::time::Duration;
use std::time::SystemTime;

use http::{HeaderMap, HeaderName, HeaderValue};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyMapping;

use crate::args::{seconds, type_name};

/// The wait `headers` ask for, in seconds: `Retry-After` (whole seconds or
/// an HTTP date), else `RateLimit-Reset`, else `X-RateLimit-Reset`
/// (seconds, or a Unix time when that large); None when no header says or
/// none can be read. `now`: the Unix time dates are measured from (default:
/// the wall clock). Names and values are taken with `str()`; a pair that is
/// no valid header is skipped, as an HTTP client would drop it.
#[pyfunction]
#[pyo3(name = "_retry_after", signature = (headers, now = None))]
pub(crate) fn retry_after(
    headers: &Bound<'_, PyAny>,
    now: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<f64>> {
    if headers.is_none() {
        return Ok(None);
    }
    let pairs = headers.cast::<PyMapping>().map_err(|_| {
        PyTypeError::new_err(format!(
            "headers must be a mapping of names to values, got {}",
            type_name(headers)
        ))
    })?;
    let mut map = HeaderMap::new();
    for item in pairs.items()?.iter() {
        let (name, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        let (name, value) = (name.str()?.to_cow()?.into_owned(), value.str()?.to_cow()?.into_owned());
        if let (Ok(name), Ok(value)) =
            (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(&value))
        {
            map.append(name, value);
        }
    }
    let now = match now.filter(|n| !n.is_none()) {
        None => SystemTime::now(),
        Some(n) => SystemTime::UNIX_EPOCH.checked_add(seconds("now", n)?).unwrap_or(SystemTime::UNIX_EPOCH),
    };
    Ok(tripwire::http::retry_after_at(&map, now).map(|d: Duration| d.as_secs_f64()))
}
