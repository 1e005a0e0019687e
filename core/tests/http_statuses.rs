//! Every status `http::StatusCode` can hold (100 to 999), judged by
//! `tripwire::http::assess`: the one table every binding (pipeline, tower,
//! reqwest, C's `tw_http_assess`, Python's `tripwire.http`) reads.
#![cfg(all(feature = "http", not(loom)))]

use http::{HeaderMap, StatusCode};
use tripwire::Assessment;
use tripwire::http::{assess, assess_result};

/// The table of `tripwire::http`'s doc, written out independently of it.
fn expected(code: u16) -> Assessment {
    match code {
        100..=399 => Assessment::Success,
        // A request timeout is the server giving up on the request: the
        // dependency's side, as a client's own timeout is.
        408 => Assessment::Failure,
        418 | 429 => Assessment::Backpressure(None),
        400..=499 => Assessment::Ignored,
        500..=599 => Assessment::Failure,
        // No HTTP status: a server that answers with one is broken.
        _ => Assessment::Failure,
    }
}

#[test]
fn every_status_is_judged_by_the_table() {
    let none = HeaderMap::new();
    for code in 100..=999u16 {
        let status = StatusCode::from_u16(code).unwrap();
        assert_eq!(assess(status, &none), expected(code), "{code}");
    }
}

#[test]
fn the_callers_mistakes_are_ignored_and_only_them() {
    let none = HeaderMap::new();
    // What a client gets for a request it got wrong: unsigned, forbidden,
    // malformed, unknown, too large.
    for code in [400, 401, 402, 403, 404, 405, 409, 410, 413, 414, 415, 422, 451] {
        assert_eq!(assess(StatusCode::from_u16(code).unwrap(), &none), Assessment::Ignored, "{code}");
    }
    let timed_out: Result<_, std::io::Error> = Ok(http::Response::builder().status(408).body(()).unwrap());
    assert_eq!(assess_result(&timed_out), Assessment::Failure);
}

#[test]
fn a_status_outside_http_is_no_success() {
    let none = HeaderMap::new();
    for code in [600, 700, 999] {
        let status = StatusCode::from_u16(code).unwrap();
        assert_eq!(assess(status, &none), Assessment::Failure, "{code}");
        let answered: Result<_, std::io::Error> =
            Ok(http::Response::builder().status(status).body(()).unwrap());
        assert_eq!(assess_result(&answered), Assessment::Failure, "{code}");
    }
}
