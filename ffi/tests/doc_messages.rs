//! The library's messages as the C and C++ docs quote them: each quote of
//! a config error in `ffi/README.md` and `include/tripwire.hpp` is the
//! message `tw_breaker_new` gives for that setting today.

use core::ffi::CStr;
use core::ptr::null_mut;

use tripwire_ffi::*;

/// The message `tw_breaker_new` leaves for the default config with
/// `half_open_max` = 0.
fn half_open_max_zero_message() -> String {
    let mut c = core::mem::MaybeUninit::<tw_breaker_config>::uninit();
    let mut b = null_mut();
    // SAFETY:
    // - `c` is writable and fully written on OK; `b` is writable; the
    //   message is copied before the next call on this thread.
    unsafe {
        assert_eq!(tw_breaker_config_default(c.as_mut_ptr()), tw_status::Ok);
        let mut c = c.assume_init();
        c.half_open_max = 0;
        assert_eq!(tw_breaker_new(&c, &mut b), tw_status::InvalidConfig);
        CStr::from_ptr(tw_last_error_message()).to_str().unwrap().to_owned()
    }
}

/// The docs, built in: no file is read at run time.
const DOCS: [(&str, &str); 2] = [
    ("ffi/README.md", include_str!("../README.md")),
    ("include/tripwire.hpp", include_str!("../../include/tripwire.hpp")),
];

/// The text with comment markers dropped and every run of whitespace made
/// one space, so that a quote wrapped over lines reads as one.
fn flattened(text: &str) -> String {
    let text = text.replace("///", " ");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
#[cfg_attr(miri, ignore)] // text only, and 80 s under miri
fn the_docs_quote_the_half_open_max_message_as_the_library_gives_it() {
    let message = half_open_max_zero_message();
    let start = "tw_breaker_new: invalid breaker config: half_open_max = 0";
    assert!(message.starts_with(start), "{message}");
    for (path, text) in DOCS {
        let text = flattened(text);
        let quotes: Vec<&str> = text
            .match_indices(start)
            .map(|(at, _)| {
                let rest = &text[at..];
                &rest[..rest.find(['`', '"']).unwrap_or(rest.len())]
            })
            .collect();
        assert!(!quotes.is_empty(), "{path} no longer quotes the message");
        for quote in quotes {
            assert_eq!(quote, message, "{path} quotes it differently");
        }
    }
}
