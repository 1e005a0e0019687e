//! A misconfigured link says why it is down: a wrong password or ACL user,
//! a database the server does not have, `rediss://` to a plain server, a
//! port nothing listens on. Each shows as the fleet's last error, naming
//! the reason, within a few seconds, and the failed attempts are counted.
//! Hosts of one namespace whose keys differ are linked, and say so too.

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{KEY, PrivateRedis, free_port, namespace, redis_url, wait_for};
use tripwire::{BreakerConfig, NamedBreaker, Outcome};
use tripwire_fleet::RejectReason;
use tripwire_fleet::{Fleet, FleetConfig, FleetConfigBuilder, LinkState};

/// A joined fleet of `b`'s settings, never linked.
fn unlinked(b: FleetConfigBuilder) -> Fleet {
    let fleet = Fleet::new(b.build().unwrap()).unwrap();
    fleet.join(&Arc::new(NamedBreaker::new("exchange", BreakerConfig::default()))).unwrap();
    fleet
}

/// Waits (at most 3 s) for a last error holding every one of `words` and
/// for at least one failed attempt; returns the error.
fn reason(fleet: &Fleet, words: &[&str]) -> String {
    let seen = || fleet.last_error().is_some_and(|e| words.iter().all(|w| e.contains(w)));
    let ok = wait_for(Duration::from_secs(3), || seen() && fleet.snapshot().connect_failures >= 1);
    assert!(
        ok.is_some(),
        "last error {:?}, counters {:?}: no {words:?}",
        fleet.last_error(),
        fleet.snapshot()
    );
    assert_eq!(fleet.link_state(), LinkState::Down);
    fleet.last_error().unwrap()
}

#[test]
fn a_wrong_password_or_acl_user_is_the_last_error() {
    if redis_url("a_wrong_password_or_acl_user_is_the_last_error").is_none() {
        return;
    }
    let redis = PrivateRedis::start(&[
        "--requirepass",
        "s3cret",
        "--user",
        "bot",
        "on",
        ">wonderland",
        "~*",
        "&*",
        "+@all",
    ]);
    let ns = namespace("faults");
    let wrong = unlinked(FleetConfig::builder(redis.url(), &ns, *KEY).password("guess"));
    let e = reason(&wrong, &["AUTH failed", "WRONGPASS"]);
    assert!(!e.contains("guess"), "the password stays out of the text: {e}");
    let user = unlinked(FleetConfig::builder(redis.url(), &ns, *KEY).username("bot").password("alice"));
    reason(&user, &["AUTH failed", "WRONGPASS"]);
    let none = unlinked(FleetConfig::builder(redis.url(), &ns, *KEY));
    reason(&none, &["NOAUTH"]);
    let fine = unlinked(FleetConfig::builder(redis.url(), &ns, *KEY).username("bot").password("wonderland"));
    assert!(fine.wait_linked(Duration::from_secs(5)));
    assert_eq!((fine.last_error(), fine.snapshot().connect_failures), (None, 0));
}

#[test]
fn a_database_the_server_lacks_is_the_last_error() {
    let Some(url) = redis_url("a_database_the_server_lacks_is_the_last_error") else { return };
    let fleet = unlinked(FleetConfig::builder(
        format!("{}/99", url.trim_end_matches('/')),
        namespace("faults"),
        *KEY,
    ));
    reason(&fleet, &["SELECT 99", "out of range"]);
}

#[test]
fn a_port_nothing_listens_on_is_the_last_error() {
    if redis_url("a_port_nothing_listens_on_is_the_last_error").is_none() {
        return;
    }
    let url = format!("redis://127.0.0.1:{}", free_port());
    let fleet = unlinked(FleetConfig::builder(url, namespace("faults"), *KEY));
    reason(&fleet, &["connect", "refused"]);
    // Each connection retries with backoff, and each failure counts.
    wait_for(Duration::from_secs(3), || fleet.snapshot().connect_failures >= 4).expect("retried");
}

#[test]
#[cfg(feature = "tls")]
fn tls_to_a_plain_server_is_the_last_error() {
    let Some(url) = redis_url("tls_to_a_plain_server_is_the_last_error") else { return };
    let fleet =
        unlinked(FleetConfig::builder(url.replacen("redis://", "rediss://", 1), namespace("faults"), *KEY));
    reason(&fleet, &["TLS handshake"]);
}

#[test]
fn hosts_whose_keys_differ_say_so() {
    let Some(url) = redis_url("hosts_whose_keys_differ_say_so") else { return };
    let ns = namespace("faults");
    let config = BreakerConfig::builder().failure_threshold(1).build().unwrap();
    let (a, b) =
        (Arc::new(NamedBreaker::new("exchange", config)), Arc::new(NamedBreaker::new("exchange", config)));
    let fa = Fleet::new(FleetConfig::builder(&url, &ns, *KEY).build().unwrap()).unwrap();
    let fb =
        Fleet::new(FleetConfig::builder(&url, &ns, *b"fedcba9876543210fedcba9876543210").build().unwrap())
            .unwrap();
    fa.join(&a).unwrap();
    fb.join(&b).unwrap();
    assert!(fa.wait_linked(Duration::from_secs(5)) && fb.wait_linked(Duration::from_secs(5)));
    for _ in 0..3 {
        let t = a.try_acquire().unwrap();
        a.record(t, Outcome::Failure);
        a.reset();
        std::thread::sleep(Duration::from_millis(20));
    }
    let said = wait_for(Duration::from_secs(3), || {
        fb.last_error()
            .is_some_and(|e| e.contains("messages with a bad signature: is the key the same on every host?"))
    });
    assert!(said.is_some(), "{:?} {:?}", fb.last_error(), fb.snapshot());
    let n = fb.snapshot().rejected(RejectReason::Signature);
    assert!(fb.last_error().unwrap().starts_with(&format!("{n} messages")), "{:?}", fb.last_error());
    // Both links stay up: only the messages are refused.
    assert_eq!((fa.link_state(), fb.link_state()), (LinkState::Up, LinkState::Up));
}
