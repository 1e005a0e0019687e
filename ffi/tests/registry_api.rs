//! `tw_registry_*`: named C breakers exported as Prometheus text, the same
//! text a Rust `Registry` gives, into a caller's buffer by the `snprintf`
//! convention; bad pointers and names get a status and a message. Runs
//! under miri too.

use core::ffi::{CStr, c_char};
use core::ptr::{null, null_mut};

use tripwire::{BreakerConfig, Outcome, registry::Registry};
use tripwire_ffi::*;

fn last_error() -> String {
    // SAFETY:
    // - A NUL-terminated string valid until the next failing call on this
    //   thread; copied at once.
    unsafe { CStr::from_ptr(tw_last_error_message()) }.to_str().unwrap().to_owned()
}

fn config(failure_threshold: u32) -> tw_breaker_config {
    let mut c = core::mem::MaybeUninit::<tw_breaker_config>::uninit();
    // SAFETY: `c` is writable; on `TW_STATUS_OK` it is fully written.
    let c = unsafe {
        assert_eq!(tw_breaker_config_default(c.as_mut_ptr()), tw_status::Ok);
        c.assume_init()
    };
    tw_breaker_config { failure_threshold, ..c }
}

fn breaker(failure_threshold: u32) -> *mut tw_breaker {
    let mut b = null_mut();
    // SAFETY: valid pointers.
    assert_eq!(unsafe { tw_breaker_new(&config(failure_threshold), &mut b) }, tw_status::Ok);
    b
}

fn registry() -> *mut tw_registry {
    let mut r = null_mut();
    // SAFETY: a writable out-pointer.
    assert_eq!(unsafe { tw_registry_new(&mut r) }, tw_status::Ok);
    assert!(!r.is_null());
    r
}

/// The whole text, through a buffer exactly as large as asked for.
fn export(r: *const tw_registry) -> String {
    let mut len = usize::MAX;
    // SAFETY: a live handle; `cap` 0 with a NULL buffer asks for the length.
    assert_eq!(unsafe { tw_registry_prometheus(r, null_mut(), 0, &mut len) }, tw_status::Ok);
    let mut buf = vec![0x55u8; len + 1];
    let mut again = 0;
    // SAFETY: `buf` holds `len + 1` writable bytes.
    let status =
        unsafe { tw_registry_prometheus(r, buf.as_mut_ptr().cast::<c_char>(), buf.len(), &mut again) };
    assert_eq!(status, tw_status::Ok);
    assert_eq!(again, len, "the counters did not move in between");
    assert_eq!(buf[len], 0, "NUL-terminated");
    String::from_utf8(buf[..len].to_vec()).unwrap()
}

#[test]
fn the_text_is_a_rust_registrys_for_the_same_breakers() {
    // In C: one breaker tripped by a failure, then refusing a call; one
    // with a name that needs escaping, untouched.
    let orders = breaker(1);
    let weird = breaker(5);
    let r = registry();
    let mut t = tw_ticket { started_at: 0, generation: 0, flags: 0 };
    // SAFETY: live handles; valid strings; `t` is writable.
    unsafe {
        assert_eq!(tw_registry_add_breaker(r, c"we\"ird\\\nname".as_ptr(), weird), tw_status::Ok);
        assert_eq!(tw_registry_add_breaker(r, c"binance/orders".as_ptr(), orders), tw_status::Ok);
        assert_eq!(tw_breaker_try_acquire_at(orders, 1, &mut t, null_mut()), tw_status::Ok);
        assert_eq!(tw_breaker_record_at(orders, 1, t, tw_outcome::Failure as u32, null_mut()), tw_status::Ok);
        assert_eq!(tw_breaker_try_acquire_at(orders, 2, &mut t, null_mut()), tw_status::Rejected);
    }
    // In Rust: the same breakers, the same calls.
    let rust = Registry::new();
    let b = rust.breaker("binance/orders", || BreakerConfig::builder().failure_threshold(1).build().unwrap());
    rust.breaker("we\"ird\\\nname", BreakerConfig::default);
    b.record(b.try_acquire().unwrap(), Outcome::Failure);
    assert!(b.try_acquire().is_err());

    let text = export(r);
    assert_eq!(text, rust.prometheus());
    // Not vacuous: both breakers are in it, the tripped one open.
    assert!(text.contains("tripwire_breaker_state{breaker=\"binance/orders\",state=\"open\"} 1\n"), "{text}");
    assert!(text.contains("tripwire_breaker_rejected_total{breaker=\"binance/orders\"} 1\n"), "{text}");
    assert!(text.contains("{breaker=\"we\\\"ird\\\\\\nname\",state=\"closed\"} 1\n"), "{text}");
    // SAFETY: live handles, each freed once; the registry first.
    unsafe {
        tw_registry_free(r);
        tw_breaker_free(orders);
        tw_breaker_free(weird);
    }
}

#[test]
fn the_buffer_is_filled_as_snprintf_fills_it() {
    let b = breaker(5);
    let r = registry();
    // SAFETY: live handles, valid string.
    assert_eq!(unsafe { tw_registry_add_breaker(r, c"b".as_ptr(), b) }, tw_status::Ok);
    let whole = export(r);
    let n = whole.len();
    assert!(n > 100, "{whole}");
    for cap in [1, 2, 10, n - 1, n, n + 1, n + 50] {
        let mut buf = vec![0x55u8; n + 64];
        let mut len = 0;
        // SAFETY: `buf` holds at least `cap` writable bytes.
        let status = unsafe { tw_registry_prometheus(r, buf.as_mut_ptr().cast(), cap, &mut len) };
        assert_eq!(status, tw_status::Ok, "{cap}");
        assert_eq!(len, n, "the length needed, whatever the cap ({cap})");
        let kept = n.min(cap - 1);
        assert_eq!(&buf[..kept], &whole.as_bytes()[..kept], "{cap}");
        assert_eq!(buf[kept], 0, "NUL after the text kept ({cap})");
        assert!(buf[kept + 1..].iter().all(|&x| x == 0x55), "written past the NUL ({cap})");
        assert!(buf[cap..].iter().all(|&x| x == 0x55), "written past cap ({cap})");
    }
    // cap 0: nothing written, even with a buffer.
    let mut buf = [0x55u8; 4];
    let mut len = 0;
    // SAFETY: `cap` 0: the buffer is not touched.
    assert_eq!(unsafe { tw_registry_prometheus(r, buf.as_mut_ptr().cast(), 0, &mut len) }, tw_status::Ok);
    assert_eq!((len, buf), (n, [0x55; 4]));
    // SAFETY: live handles, each freed once; the registry first.
    unsafe {
        tw_registry_free(r);
        tw_breaker_free(b);
    }
}

#[test]
fn an_empty_registry_gives_the_empty_text() {
    let r = registry();
    let mut buf = [0x55u8; 4];
    let mut len = 7;
    // SAFETY: a live handle; 4 writable bytes.
    assert_eq!(unsafe { tw_registry_prometheus(r, buf.as_mut_ptr().cast(), 4, &mut len) }, tw_status::Ok);
    assert_eq!((len, buf), (0, [0, 0x55, 0x55, 0x55]));
    // SAFETY: a live handle, freed once; NULL does nothing.
    unsafe {
        tw_registry_free(r);
        tw_registry_free(null_mut());
    }
}

#[test]
fn bad_pointers_and_names_get_a_status_and_a_message() {
    let b = breaker(5);
    let r = registry();
    let mut len = 0;
    let mut buf = [0u8; 8];
    // SAFETY: every non-null pointer is valid; the NULL ones are refused
    // before use.
    unsafe {
        assert_eq!(tw_registry_new(null_mut()), tw_status::NullArgument);
        assert_eq!(last_error(), "tw_registry_new: `out` is NULL");
        assert_eq!(tw_registry_add_breaker(null(), c"a".as_ptr(), b), tw_status::NullArgument);
        assert_eq!(last_error(), "tw_registry_add_breaker: `registry` is NULL");
        assert_eq!(tw_registry_add_breaker(r, null(), b), tw_status::NullArgument);
        assert_eq!(last_error(), "tw_registry_add_breaker: `name` is NULL");
        assert_eq!(tw_registry_add_breaker(r, c"a".as_ptr(), null()), tw_status::NullArgument);
        assert_eq!(last_error(), "tw_registry_add_breaker: `breaker` is NULL");
        assert_eq!(tw_registry_add_breaker(r, c"".as_ptr(), b), tw_status::InvalidArgument);
        assert_eq!(last_error(), "tw_registry_add_breaker: `name` is empty");
        let bad_utf8 = [0xFFu8, 0];
        assert_eq!(tw_registry_add_breaker(r, bad_utf8.as_ptr().cast(), b), tw_status::InvalidArgument);
        assert_eq!(last_error(), "tw_registry_add_breaker: `name` is not UTF-8");
        assert_eq!(tw_registry_add_breaker(r, c"a".as_ptr(), b), tw_status::Ok);
        assert_eq!(tw_registry_add_breaker(r, c"a".as_ptr(), b), tw_status::InvalidArgument);
        assert_eq!(last_error(), "tw_registry_add_breaker: a breaker named \"a\" is registered already");
        assert_eq!(
            tw_registry_prometheus(null(), buf.as_mut_ptr().cast(), 8, &mut len),
            tw_status::NullArgument
        );
        assert_eq!(last_error(), "tw_registry_prometheus: `registry` is NULL");
        assert_eq!(
            tw_registry_prometheus(r, buf.as_mut_ptr().cast(), 8, null_mut()),
            tw_status::NullArgument
        );
        assert_eq!(last_error(), "tw_registry_prometheus: `len` is NULL");
        len = 7;
        assert_eq!(tw_registry_prometheus(r, null_mut(), 8, &mut len), tw_status::NullArgument);
        assert_eq!(last_error(), "tw_registry_prometheus: `buf` is NULL and `cap` = 8, not 0");
        assert_eq!(len, 7, "*len written on failure");
        tw_registry_free(r);
        tw_breaker_free(b);
    }
}

#[test]
fn registries_are_shared_between_threads() {
    let b = breaker(5);
    let r = registry();
    /// The handles, sent to the threads (both are thread-safe).
    #[derive(Clone, Copy)]
    struct Handles(*const tw_registry, *const tw_breaker);
    // SAFETY: the registry's and the breaker's functions used here are
    // thread-safe, and both outlive the scope.
    unsafe impl Send for Handles {}
    let handles = Handles(r, b);
    let threads = if cfg!(miri) { 2 } else { 4 };
    std::thread::scope(|s| {
        for i in 0..threads {
            s.spawn(move || {
                // The whole value, not its fields (a closure would capture
                // the raw pointers apart, which are not `Send`).
                let h = handles;
                let Handles(rp, bp) = h;
                let name = std::ffi::CString::new(format!("b{i}")).unwrap();
                // SAFETY: live handles for the whole scope; a thread-safe call.
                unsafe {
                    assert_eq!(tw_registry_add_breaker(rp, name.as_ptr(), bp), tw_status::Ok);
                }
                let mut len = 0;
                // SAFETY: as above; `cap` 0 asks for the length only.
                let status = unsafe { tw_registry_prometheus(rp, null_mut(), 0, &mut len) };
                assert_eq!(status, tw_status::Ok);
                assert!(len > 0);
            });
        }
    });
    let text = export(r);
    for i in 0..threads {
        assert!(
            text.contains(&format!("tripwire_breaker_state{{breaker=\"b{i}\",state=\"closed\"}} 1\n")),
            "{text}"
        );
    }
    // SAFETY: live handles, each freed once; the registry first.
    unsafe {
        tw_registry_free(r);
        tw_breaker_free(b);
    }
}
