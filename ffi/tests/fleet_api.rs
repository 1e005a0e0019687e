//! `tw_fleet_*` called from Rust, as C would call it: NULL and bad
//! arguments, the messages, and (with `TRIPWIRE_TEST_REDIS`) two fleet
//! handles sharing a trip. Not under miri: the link's threads use sockets.
#![cfg(not(miri))]

use core::ffi::CStr;
use core::ptr::{null, null_mut};
use std::time::{Duration, Instant};

use tripwire_ffi::*;

const KEY: &[u8; 32] = b"0123456789abcdef0123456789abcdef";

fn last_error() -> String {
    // SAFETY: a NUL-terminated string valid until the next failing call.
    unsafe { CStr::from_ptr(tw_last_error_message()) }.to_str().unwrap().to_owned()
}

fn new_fleet(
    url: &CStr,
    ns: &CStr,
    key: &[u8],
    options: *const tw_fleet_options,
) -> Result<*mut tw_fleet, tw_status> {
    let mut f = null_mut();
    // SAFETY: every pointer is valid for the call.
    let status = unsafe { tw_fleet_new(url.as_ptr(), ns.as_ptr(), key.as_ptr(), key.len(), options, &mut f) };
    if status == tw_status::Ok { Ok(f) } else { Err(status) }
}

fn breaker() -> *mut tw_breaker {
    let mut c = core::mem::MaybeUninit::<tw_breaker_config>::uninit();
    let mut b = null_mut();
    // SAFETY: valid pointers; the config is fully written on success.
    unsafe {
        assert_eq!(tw_breaker_config_default(c.as_mut_ptr()), tw_status::Ok);
        let mut c = c.assume_init();
        c.failure_threshold = 1;
        c.open_timeout_ns = 5_000_000_000;
        assert_eq!(tw_breaker_new(&c, &mut b), tw_status::Ok, "{}", last_error());
    }
    b
}

fn stats(f: *const tw_fleet) -> tw_fleet_stats {
    let mut s = tw_fleet_stats::default();
    // SAFETY: a live handle and a writable struct.
    assert_eq!(unsafe { tw_fleet_snapshot(f, &mut s) }, tw_status::Ok);
    s
}

#[test]
fn bad_arguments_are_statuses_with_messages() {
    let (url, ns) = (c"redis://127.0.0.1:1", c"ffi");
    let mut f = null_mut();
    // SAFETY: NULL arguments are checked before use.
    let status = unsafe { tw_fleet_new(null(), ns.as_ptr(), KEY.as_ptr(), 32, null(), &mut f) };
    assert_eq!(status, tw_status::NullArgument);
    assert_eq!(last_error(), "tw_fleet_new: `url` is NULL");
    assert_eq!(new_fleet(url, ns, b"short", null()), Err(tw_status::InvalidArgument));
    assert_eq!(last_error(), "tw_fleet_new: fleet setting `key_len` = 5: must be at least 16 bytes");
    assert_eq!(new_fleet(url, ns, &[0u8; 16], null()), Err(tw_status::InvalidArgument));
    assert_eq!(
        last_error(),
        "tw_fleet_new: fleet setting `key` = 16 bytes of 0x00: must be random bytes, not one byte repeated \
         (as 16 zero bytes are)"
    );
    assert_eq!(new_fleet(c"http://nowhere", ns, KEY, null()), Err(tw_status::InvalidArgument));
    let bad_utf8 = [0xFFu8, 0];
    let options = tw_fleet_options {
        struct_size: size_of::<tw_fleet_options>() as u32,
        reserved: 0,
        username: bad_utf8.as_ptr().cast(),
        password: null(),
        lease_lead_ns: 0,
        probe_timeout_ns: 0,
        max_skew_ns: 0,
        connect_timeout_ns: 0,
        io_timeout_ns: 0,
    };
    assert_eq!(new_fleet(url, ns, KEY, &options), Err(tw_status::InvalidArgument));
    assert_eq!(last_error(), "tw_fleet_new: `options.username` is not UTF-8");
    let options = tw_fleet_options { username: null(), probe_timeout_ns: 1, ..options };
    assert_eq!(new_fleet(url, ns, KEY, &options), Err(tw_status::InvalidArgument));
    // The C field and the value given, not the Rust builder's setting.
    assert_eq!(
        last_error(),
        "tw_fleet_new: fleet setting `options.probe_timeout_ns` = 1: must be from 10 ms to 1 h"
    );
    for (options, field) in [
        (tw_fleet_options { probe_timeout_ns: 0, lease_lead_ns: u64::MAX, ..options }, "lease_lead_ns"),
        (tw_fleet_options { probe_timeout_ns: 0, max_skew_ns: 7, ..options }, "max_skew_ns"),
        (
            tw_fleet_options { probe_timeout_ns: 0, connect_timeout_ns: u64::MAX, ..options },
            "connect_timeout_ns",
        ),
        (tw_fleet_options { probe_timeout_ns: 0, io_timeout_ns: 999, ..options }, "io_timeout_ns"),
    ] {
        assert_eq!(new_fleet(url, ns, KEY, &options), Err(tw_status::InvalidArgument));
        let want = format!("tw_fleet_new: fleet setting `options.{field}` = ");
        assert!(last_error().starts_with(&want), "{}", last_error());
    }
    assert_eq!(new_fleet(url, c"no:colons", KEY, null()), Err(tw_status::InvalidArgument));
    assert!(
        last_error().starts_with("tw_fleet_new: fleet setting `ns` = \"no:colons\": must be"),
        "{}",
        last_error()
    );

    let f = new_fleet(url, ns, KEY, null()).unwrap();
    let b = breaker();
    // SAFETY: live handles; the breaker outlives the fleet (freed after).
    unsafe {
        assert_eq!(tw_fleet_join(f, c"exchange".as_ptr(), b), tw_status::Ok);
        assert_eq!(tw_fleet_join(f, c"exchange".as_ptr(), b), tw_status::InvalidArgument);
        assert!(last_error().contains("joined already"), "{}", last_error());
        assert_eq!(tw_fleet_join(f, c"".as_ptr(), b), tw_status::InvalidArgument);
        assert_eq!(tw_fleet_join(f, null(), b), tw_status::NullArgument);
        assert_eq!(tw_fleet_snapshot(f, null_mut()), tw_status::NullArgument);
        assert_eq!(stats(f).publisher_up, 0);
        tw_fleet_free(f);
        tw_fleet_free(null_mut());
        tw_breaker_free(b);
    }
}

#[test]
fn a_trip_through_one_handle_refuses_calls_through_another() {
    let Ok(url) = std::env::var("TRIPWIRE_TEST_REDIS") else {
        eprintln!("SKIPPED: set TRIPWIRE_TEST_REDIS (.ci/run does) to run the linked C ABI fleet test");
        return;
    };
    let url = std::ffi::CString::new(url).unwrap();
    let ns = std::ffi::CString::new(format!("ffi-{}", std::process::id())).unwrap();
    let (fa, fb) = (new_fleet(&url, &ns, KEY, null()).unwrap(), new_fleet(&url, &ns, KEY, null()).unwrap());
    let (a, b) = (breaker(), breaker());
    let wait = |f: &mut dyn FnMut() -> bool| {
        let start = Instant::now();
        while !f() {
            assert!(start.elapsed() < Duration::from_secs(5), "timed out");
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    // SAFETY: live handles; the breakers outlive the fleets (freed after).
    unsafe {
        assert_eq!(tw_fleet_join(fa, c"exchange".as_ptr(), a), tw_status::Ok);
        assert_eq!(tw_fleet_join(fb, c"exchange".as_ptr(), b), tw_status::Ok);
        wait(&mut || [fa, fb].iter().all(|&f| stats(f).publisher_up == 1 && stats(f).subscriber_up == 1));
        let mut ticket = core::mem::zeroed::<tw_ticket>();
        let mut rejection = core::mem::zeroed::<tw_rejection>();
        assert_eq!(tw_breaker_try_acquire(a, &mut ticket, &mut rejection), tw_status::Ok);
        assert_eq!(tw_breaker_record(a, ticket, tw_outcome::Failure as u32, null_mut()), tw_status::Ok);
        wait(&mut || {
            let mut state = tw_state::Closed;
            tw_breaker_state(b, &mut state);
            state == tw_state::Open
        });
        assert_eq!(tw_breaker_try_acquire(b, &mut ticket, &mut rejection), tw_status::Rejected);
        // The sender counts once Redis has answered its PUBLISH, which can
        // come after the listener has already applied the message.
        let counts = || (stats(fa).sent, stats(fb).received, stats(fb).applied);
        wait(&mut || counts() != (0, 1, 1));
        assert_eq!(counts(), (1, 1, 1));
        tw_fleet_free(fa);
        tw_fleet_free(fb);
        tw_breaker_free(a);
        tw_breaker_free(b);
    }
}

/// A server that accepts connections and never answers them, held open
/// until the returned flag is set.
fn silent_server() -> (u16, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = std::sync::Arc::new(AtomicU64::new(0));
    let n = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().map_while(Result::ok) {
            held.push(s);
            n.fetch_add(1, Ordering::SeqCst);
        }
    });
    (port, accepted)
}

#[test]
fn free_against_a_server_that_never_answers_takes_at_most_the_timeouts() {
    let (port, accepted) = silent_server();
    let url = std::ffi::CString::new(format!("redis://127.0.0.1:{port}")).unwrap();
    let mut o = core::mem::MaybeUninit::<tw_fleet_options>::uninit();
    // SAFETY: a writable struct, fully written on success.
    let mut o = unsafe {
        assert_eq!(tw_fleet_options_default(o.as_mut_ptr()), tw_status::Ok);
        o.assume_init()
    };
    o.connect_timeout_ns = 1_000_000_000;
    o.io_timeout_ns = 200_000_000;
    let f = new_fleet(&url, c"ffi-silent", KEY, &o).unwrap();
    let b = breaker();
    // SAFETY: live handles; the breaker outlives the fleet.
    assert_eq!(unsafe { tw_fleet_join(f, c"exchange".as_ptr(), b) }, tw_status::Ok);
    let deadline = Instant::now() + Duration::from_secs(2);
    while accepted.load(std::sync::atomic::Ordering::SeqCst) < 2 {
        assert!(Instant::now() < deadline, "both connections accepted");
        std::thread::sleep(Duration::from_millis(1));
    }
    let start = Instant::now();
    // SAFETY: a live handle, not used again.
    unsafe { tw_fleet_free(f) };
    let took = start.elapsed();
    // SAFETY: a live breaker, no longer joined.
    unsafe { tw_breaker_free(b) };
    // The header's bound: the longer of the two timeouts, and a poll.
    assert!(took <= Duration::from_millis(1150), "tw_fleet_free took {took:?}");
}

/// `tw_fleet_last_error`'s text, and `tw_fleet_connect_failures`.
fn why(f: *const tw_fleet) -> (String, u64) {
    let (mut buf, mut len, mut failures) = ([0u8; 512], 0usize, 0u64);
    // SAFETY: a live handle, a buffer of its length, writable outputs.
    unsafe {
        assert_eq!(tw_fleet_last_error(f, buf.as_mut_ptr().cast(), buf.len(), &mut len), tw_status::Ok);
        assert_eq!(tw_fleet_connect_failures(f, &mut failures), tw_status::Ok);
    }
    let text = CStr::from_bytes_until_nul(&buf).unwrap().to_str().unwrap().to_owned();
    assert_eq!(text.len(), len, "{text}");
    (text, failures)
}

/// Waits (at most 3 s) for a last error holding every one of `words`
/// and at least one failed attempt; returns the error.
fn wait_why(f: *const tw_fleet, words: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let (text, failures) = why(f);
        if failures >= 1 && words.iter().all(|w| text.contains(w)) {
            return text;
        }
        assert!(Instant::now() < deadline, "last error {text:?}, {failures} failures: no {words:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A redis-server of the test's own on a free port, with `args`; killed
/// when dropped.
struct OwnRedis(std::process::Child, u16);

impl OwnRedis {
    fn start(args: &[&str]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(args)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server on PATH");
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        Self(child, port)
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_misconfigured_link_says_why() {
    let Ok(url) = std::env::var("TRIPWIRE_TEST_REDIS") else {
        eprintln!("SKIPPED: set TRIPWIRE_TEST_REDIS (.ci/run does) to run the C ABI fleet error test");
        return;
    };
    let redis = OwnRedis::start(&["--requirepass", "s3cret"]);
    let mut o = core::mem::MaybeUninit::<tw_fleet_options>::uninit();
    // SAFETY: a writable struct, fully written on success.
    let mut o = unsafe {
        assert_eq!(tw_fleet_options_default(o.as_mut_ptr()), tw_status::Ok);
        o.assume_init()
    };
    o.password = c"guess".as_ptr();
    let own = std::ffi::CString::new(format!("redis://127.0.0.1:{}", redis.1)).unwrap();
    let wrong = new_fleet(&own, c"ffi-faults", KEY, &o).unwrap();
    let db99 = std::ffi::CString::new(format!("{}/99", url.trim_end_matches('/'))).unwrap();
    let select = new_fleet(&db99, c"ffi-faults", KEY, null()).unwrap();
    let refused = new_fleet(c"redis://127.0.0.1:1", c"ffi-faults", KEY, null()).unwrap();
    let text = wait_why(wrong, &["AUTH failed", "WRONGPASS"]);
    assert!(!text.contains("guess"), "{text}");
    wait_why(select, &["SELECT 99", "out of range"]);
    let text = wait_why(refused, &["connect", "refused"]);
    let (mut buf, mut len) = ([0xAAu8; 8], 0usize);
    // SAFETY: a live handle; buffers of the lengths given; NULLs checked.
    unsafe {
        // Cut to fit, NUL-terminated; the whole length reported.
        assert_eq!(tw_fleet_last_error(refused, buf.as_mut_ptr().cast(), 8, &mut len), tw_status::Ok);
        assert_eq!(
            (&buf[..8], len >= text.len()),
            (&[text.as_bytes()[..7].to_vec(), vec![0]].concat()[..], true)
        );
        assert_eq!(tw_fleet_last_error(refused, null_mut(), 0, &mut len), tw_status::Ok);
        assert!(len >= text.len());
        assert_eq!(tw_fleet_last_error(refused, null_mut(), 8, &mut len), tw_status::NullArgument);
        assert_eq!(last_error(), "tw_fleet_last_error: `buf` is NULL and `cap` = 8, not 0");
        assert_eq!(
            tw_fleet_last_error(refused, buf.as_mut_ptr().cast(), 8, null_mut()),
            tw_status::NullArgument
        );
        assert_eq!(
            tw_fleet_last_error(null(), buf.as_mut_ptr().cast(), 8, &mut len),
            tw_status::NullArgument
        );
        assert_eq!(tw_fleet_connect_failures(refused, null_mut()), tw_status::NullArgument);
        assert_eq!(tw_fleet_connect_failures(null(), &mut 0), tw_status::NullArgument);
        for f in [wrong, select, refused] {
            tw_fleet_free(f);
        }
    }
    // A link that never failed: the empty text, no failures.
    let fine = new_fleet(&std::ffi::CString::new(url).unwrap(), c"ffi-faults", KEY, null()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(stats(fine).publisher_up == 1 && stats(fine).subscriber_up == 1) {
        assert!(Instant::now() < deadline, "linked");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(why(fine), (String::new(), 0));
    // SAFETY: a live handle, not used again.
    unsafe { tw_fleet_free(fine) };
}
