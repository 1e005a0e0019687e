//! Headers from fuzz input, for the targets that read them.

use http::header::{HeaderMap, HeaderName, HeaderValue};

/// The headers `data` holds as (name selector, length, value bytes), until
/// it runs out: a selector below `names.len()` (modulo `spread`) picks
/// that name; one above names the header by the value's own bytes (often
/// invalid, then skipped). A value that is no header value is skipped.
pub fn headers(mut data: &[u8], names: &[&'static str], spread: usize) -> HeaderMap {
    let mut headers = HeaderMap::new();
    while let [selector, len, tail @ ..] = data {
        let n = usize::from(*len).min(tail.len());
        let (value, tail) = tail.split_at(n);
        data = tail;
        let name = match names.get(usize::from(*selector) % spread) {
            Some(known) => HeaderName::from_static(known),
            None => match HeaderName::from_bytes(value) {
                Ok(name) => name,
                Err(_) => continue,
            },
        };
        if let Ok(value) = HeaderValue::from_bytes(value) {
            headers.append(name, value);
        }
    }
    headers
}
