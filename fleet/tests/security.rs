//! What a process with write access to Redis but without the fleet's key
//! can do: nothing. Garbage, forged, unsigned, altered, replayed, stale and
//! future messages, and forged keys, are dropped and counted; no breaker
//! moves.
//!
//! The messages are written here from the format documented in the fleet's
//! `message` module, so that the test checks the documentation too.

mod support;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use redis::Commands;
use sha2::Sha256;
use support::{KEY, PrivateRedis, namespace, redis_url, wait_for};
use tripwire::{BreakerConfig, NamedBreaker, Outcome, State};
use tripwire_fleet::{Fleet, FleetConfig, FleetSnapshot, RejectReason};

const OPENED: u8 = 1;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// A message as the documented layout has it, signed with `key` over the
/// namespace and the bytes.
fn message(
    (key, ns): (&[u8], &str),
    kind: u8,
    sender: u64,
    seq: u64,
    sent_ms: u64,
    wait: Duration,
    name: &str,
) -> Vec<u8> {
    let mut b = b"tw\x01".to_vec();
    b.push(kind);
    for f in [sender, seq, sent_ms, wait.as_micros() as u64] {
        b.extend_from_slice(&f.to_be_bytes());
    }
    b.push(name.len() as u8);
    b.extend_from_slice(name.as_bytes());
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(b"tripwire fleet v1\0");
    mac.update(ns.as_bytes());
    mac.update(b"\0");
    mac.update(&b);
    b.extend_from_slice(&mac.finalize().into_bytes());
    b
}

fn breaker(open_timeout: Duration) -> Arc<NamedBreaker> {
    let config = BreakerConfig::builder().failure_threshold(1).open_timeout(open_timeout).build().unwrap();
    Arc::new(NamedBreaker::new("exchange", config))
}

fn host(url: &str, ns: &str, b: &Arc<NamedBreaker>) -> Fleet {
    let fleet = Fleet::new(FleetConfig::builder(url, ns, *KEY).build().unwrap()).unwrap();
    fleet.join(b).unwrap();
    assert!(fleet.wait_linked(Duration::from_secs(5)));
    fleet
}

/// Waits until the fleet has taken or refused `n` messages in all.
fn settle(fleet: &Fleet, n: u64) -> FleetSnapshot {
    let seen = |s: &FleetSnapshot| s.received + s.rejected_total();
    wait_for(Duration::from_secs(3), || seen(&fleet.snapshot()) >= n)
        .unwrap_or_else(|| panic!("{n} messages, saw {:?}", fleet.snapshot()));
    fleet.snapshot()
}

#[test]
fn garbage_forged_unsigned_altered_replayed_stale_and_future_messages_are_dropped_and_counted() {
    let Some(url) =
        redis_url("garbage_forged_unsigned_altered_replayed_stale_and_future_messages_are_dropped")
    else {
        return;
    };
    let ns = namespace("forged");
    let channel = format!("tripwire:fleet:{ns}");
    let b = breaker(Duration::from_secs(5));
    let fleet = host(&url, &ns, &b);
    let mut raw = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
    let mut publish = |bytes: &[u8]| {
        let _: i64 = raw.publish(&channel, bytes).unwrap();
    };
    let wait = Duration::from_secs(10);
    let sender = 0xBAD;

    for garbage in [&b""[..], b"hello", &[0xFF; 100], &[0; 70]] {
        publish(garbage);
    }
    publish(&message(
        (b"not the fleet's key, 32 bytes!!!", &ns),
        OPENED,
        sender,
        1,
        now_ms(),
        wait,
        "exchange",
    ));
    let mut unsigned = message((KEY, &ns), OPENED, sender, 1, now_ms(), wait, "exchange");
    let tag_at = unsigned.len() - 32;
    unsigned[tag_at..].fill(0);
    publish(&unsigned);
    let mut other_ns = message((KEY, "another-fleet"), OPENED, sender, 1, now_ms(), wait, "exchange");
    publish(&other_ns);
    // The wait stretched from 10 s to a day, the tag left as it was.
    other_ns = message((KEY, &ns), OPENED, sender, 1, now_ms(), wait, "exchange");
    other_ns[28..36].copy_from_slice(&86_400_000_000u64.to_be_bytes());
    publish(&other_ns);
    let s = settle(&fleet, 8);
    assert_eq!((s.rejected(RejectReason::Malformed), s.rejected(RejectReason::Signature)), (4, 4), "{s:?}");
    assert_eq!((s.received, s.applied, b.state()), (0, 0, State::Closed));

    // A genuine message is taken once; its replay is not.
    let genuine = message((KEY, &ns), OPENED, sender, 1, now_ms(), wait, "exchange");
    publish(&genuine);
    settle(&fleet, 9);
    assert_eq!((fleet.snapshot().applied, b.state()), (1, State::Open));
    b.reset();
    publish(&genuine);
    publish(&message((KEY, &ns), OPENED, sender, 2, now_ms() - 60_000, wait, "exchange"));
    publish(&message((KEY, &ns), OPENED, sender, 3, now_ms() + 60_000, wait, "exchange"));
    publish(&message((KEY, &ns), OPENED, sender, 4, u64::MAX, Duration::MAX, "exchange"));
    publish(&message((KEY, &ns), OPENED, sender, 5, 0, wait, "exchange"));
    let s = settle(&fleet, 14);
    assert_eq!(s.rejected(RejectReason::Replayed), 1, "{s:?}");
    assert_eq!((s.rejected(RejectReason::Stale), s.rejected(RejectReason::Future)), (2, 2), "{s:?}");
    assert_eq!((s.received, s.applied, b.state()), (1, 1, State::Closed));
    // Behind the sender's last number, though fresh: a replay too.
    publish(&message((KEY, &ns), OPENED, sender, 1, now_ms(), wait, "exchange"));
    let s = settle(&fleet, 15);
    assert_eq!((s.rejected(RejectReason::Replayed), b.state()), (2, State::Closed));
    assert!(b.try_acquire().is_ok());
}

#[test]
fn forged_state_keys_and_leases_hold_no_breaker() {
    let Some(url) = redis_url("forged_state_keys_and_leases_hold_no_breaker") else { return };
    let ns = namespace("keys");
    let mut raw = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
    let (state_key, lease_key) =
        (format!("tripwire:fleet:{ns}:state:exchange"), format!("tripwire:fleet:{ns}:lease:exchange"));
    // A stale opened message (a genuine one, an hour old) kept for a minute;
    // and a lease no host of the fleet wrote.
    let stale = message((KEY, &ns), OPENED, 7, 1, now_ms() - 3_600_000, Duration::from_secs(10), "exchange");
    let _: () = raw.pset_ex(&state_key, stale, 60_000).unwrap();
    let _: () = raw.pset_ex(&lease_key, b"mine, all mine", 60_000).unwrap();
    let b = breaker(Duration::from_millis(200));
    let fleet = host(&url, &ns, &b);
    wait_for(Duration::from_secs(2), || fleet.snapshot().rejected_total() >= 2)
        .expect("both keys read and refused");
    let s = fleet.snapshot();
    assert_eq!((s.rejected(RejectReason::Stale), s.rejected(RejectReason::Malformed)), (1, 1), "{s:?}");
    assert_eq!(b.state(), State::Closed);

    // The forged lease is refused at the cool-down's end too: this host is
    // held by no one and probes on its own.
    let t = b.try_acquire().unwrap();
    b.record(t, Outcome::Failure);
    let probe = wait_for(Duration::from_secs(2), || b.try_acquire().is_ok_and(|t| t.is_probe()));
    assert!(probe.is_some(), "a local probe after the cool-down: {:?}", fleet.snapshot());
    let s = fleet.snapshot();
    assert_eq!((s.leases_won, s.leases_lost), (0, 0), "{s:?}");
    // Counted by the link thread after it acts: wait for the count.
    wait_for(Duration::from_secs(2), || fleet.snapshot().rejected(RejectReason::Malformed) >= 2)
        .unwrap_or_else(|| panic!("{:?}", fleet.snapshot()));

    // A lease signed for another breaker's key is no lease for this one.
    b.reset();
    let moved = message((KEY, &ns), 4, 7, 1, now_ms(), Duration::from_secs(60), "another");
    let _: () = raw.pset_ex(&lease_key, moved, 60_000).unwrap();
    let t = b.try_acquire().unwrap();
    b.record(t, Outcome::Failure);
    let probe = wait_for(Duration::from_secs(2), || b.try_acquire().is_ok_and(|t| t.is_probe()));
    assert!(probe.is_some(), "a local probe: {:?}", fleet.snapshot());
    wait_for(Duration::from_secs(2), || fleet.snapshot().rejected(RejectReason::Malformed) >= 3)
        .unwrap_or_else(|| panic!("{:?}", fleet.snapshot()));
}

#[test]
fn a_replay_is_refused_by_a_host_that_never_saw_the_original() {
    let Some(url) = redis_url("a_replay_is_refused_by_a_host_that_never_saw_the_original") else { return };
    let ns = namespace("unseen");
    let channel = format!("tripwire:fleet:{ns}");
    let client = redis::Client::open(url.as_str()).unwrap();
    // An eavesdropper with access to the channel, and no key.
    let mut listener = client.get_connection().unwrap();
    let mut sub = listener.as_pubsub();
    sub.subscribe(&channel).unwrap();
    sub.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let a = breaker(Duration::from_secs(10));
    let fa = host(&url, &ns, &a);
    let t = a.try_acquire().unwrap();
    a.record(t, Outcome::Failure);
    let captured = sub.get_message().unwrap().get_payload_bytes().to_vec();
    // The trip is over: a's close goes out and its key is deleted.
    a.reset();
    wait_for(Duration::from_secs(2), || fa.snapshot().sent == 2).expect("the close published");
    drop(sub);
    // Past the bound (a round trip to Redis and 1 ms), a host that joins
    // now never saw the trip, and hears it replayed.
    std::thread::sleep(Duration::from_millis(50));
    let c = breaker(Duration::from_secs(10));
    let fc = host(&url, &ns, &c);
    let mut raw = client.get_connection().unwrap();
    let _: i64 = raw.publish(&channel, &captured).unwrap();
    let s = settle(&fc, 1);
    assert_eq!(s.rejected(RejectReason::Replayed), 1, "{s:?}");
    assert_eq!((s.received, s.applied, c.state()), (0, 0, State::Closed), "{s:?}");
}

#[test]
fn a_stored_state_older_than_a_close_this_host_saw_is_refused_on_resync() {
    if redis_url("a_stored_state_older_than_a_close_this_host_saw_is_refused_on_resync").is_none() {
        return;
    }
    // A server of its own: the test kills every subscribed connection on it.
    let redis = PrivateRedis::start(&[]);
    let ns = namespace("restored");
    let state_key = format!("tripwire:fleet:{ns}:state:exchange");
    let (a, b) = (breaker(Duration::from_secs(1)), breaker(Duration::from_secs(1)));
    let _fa = host(&redis.url(), &ns, &a);
    let fb = host(&redis.url(), &ns, &b);
    let mut raw = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
    a.open_for(Duration::from_secs(60));
    wait_for(Duration::from_secs(2), || b.state() == State::Open).expect("b held");
    let captured: Vec<u8> = raw.get(&state_key).unwrap();
    a.reset();
    wait_for(Duration::from_secs(2), || b.state() == State::Closed).expect("b closed");
    // The hold put back into the key, and the subscriber made to reconnect
    // and read the keys again.
    let _: () = raw.pset_ex(&state_key, &captured, 60_000).unwrap();
    let _: () = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("pubsub").query(&mut raw).unwrap();
    wait_for(Duration::from_secs(3), || fb.snapshot().reconnects >= 1 && fb.wait_linked(Duration::ZERO))
        .unwrap_or_else(|| panic!("b back: {:?}", fb.snapshot()));
    wait_for(Duration::from_secs(2), || fb.snapshot().rejected(RejectReason::Replayed) >= 1)
        .unwrap_or_else(|| panic!("the stored hold refused: {:?}, b {:?}", fb.snapshot(), b.state()));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(b.state(), State::Closed, "{:?}", fb.snapshot());
    assert_eq!(fb.snapshot().applied, 2, "the hold and the close only: {:?}", fb.snapshot());
}

#[test]
fn a_refused_key_read_again_is_counted_once() {
    if redis_url("a_refused_key_read_again_is_counted_once").is_none() {
        return;
    }
    // A server of its own: the test kills every subscribed connection on it.
    let redis = PrivateRedis::start(&[]);
    let ns = namespace("refused-again");
    let mut raw = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
    let (state_key, lease_key) =
        (format!("tripwire:fleet:{ns}:state:exchange"), format!("tripwire:fleet:{ns}:lease:exchange"));
    let stale = message((KEY, &ns), OPENED, 7, 1, now_ms() - 3_600_000, Duration::from_secs(10), "exchange");
    let _: () = raw.pset_ex(&state_key, stale, 60_000).unwrap();
    let _: () = raw.pset_ex(&lease_key, b"mine, all mine", 60_000).unwrap();
    let b = breaker(Duration::from_secs(5));
    let fleet = host(&redis.url(), &ns, &b);
    wait_for(Duration::from_secs(2), || fleet.snapshot().rejected_total() >= 2).expect("both keys refused");
    // Reconnected, the link reads both keys again: the same values, refused
    // and counted once.
    let _: () = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("pubsub").query(&mut raw).unwrap();
    wait_for(Duration::from_secs(3), || {
        fleet.snapshot().reconnects >= 1 && fleet.wait_linked(Duration::ZERO)
    })
    .unwrap_or_else(|| panic!("back: {:?}", fleet.snapshot()));
    std::thread::sleep(Duration::from_millis(200));
    let s = fleet.snapshot();
    assert_eq!((s.rejected(RejectReason::Stale), s.rejected(RejectReason::Malformed)), (1, 1), "{s:?}");
    assert_eq!(b.state(), State::Closed);
}
