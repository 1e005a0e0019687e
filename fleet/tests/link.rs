//! The fleet's link in one process: several `Fleet` handles (each its own
//! host, with its own id and connections) on one Redis.

mod support;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use support::{AclUser, KEY, PrivateRedis, SilentServer, free_port, namespace, redis_url, wait_for};
use tripwire::{BreakerConfig, NamedBreaker, Outcome, State};
use tripwire_fleet::{Fleet, FleetConfig, FleetConfigBuilder, LinkState};

/// One test at a time: each starts hosts with link threads of their own,
/// and fourteen tests at once on two busy cores starved those threads past
/// the tests' waits (a close heard after 2 s, a count read before a
/// message came in).
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn breaker(open_timeout: Duration) -> Arc<NamedBreaker> {
    let config = BreakerConfig::builder().failure_threshold(1).open_timeout(open_timeout).build().unwrap();
    Arc::new(NamedBreaker::new("exchange", config))
}

fn host(b: FleetConfigBuilder, joined: &Arc<NamedBreaker>) -> Fleet {
    let fleet = Fleet::new(b.build().unwrap()).unwrap();
    fleet.join(joined).unwrap();
    assert!(fleet.wait_linked(Duration::from_secs(5)), "linked: {:?}", fleet.snapshot());
    fleet
}

fn trip(b: &NamedBreaker) {
    let t = b.try_acquire().expect("closed");
    b.record(t, Outcome::Failure);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_trip_on_one_host_holds_the_others_for_its_cool_down() {
    let _serial = one_at_a_time();
    let Some(url) = redis_url("a_trip_on_one_host_holds_the_others_for_its_cool_down") else { return };
    let ns = namespace("trip");
    let (a, b) = (breaker(Duration::from_secs(2)), breaker(Duration::from_secs(2)));
    let fa = host(FleetConfig::builder(&url, &ns, *KEY), &a);
    let fb = host(FleetConfig::builder(&url, &ns, *KEY), &b);
    trip(&a);
    let took = wait_for(Duration::from_secs(2), || b.state() == State::Open).expect("b opened");
    let left = b.try_acquire().unwrap_err().retry_after.unwrap();
    assert!(left <= Duration::from_secs(2) && left > Duration::from_millis(1500), "{left:?} after {took:?}");
    assert!(b.hold_left().is_some(), "the fleet's state is a hold on the receiver");
    // The link threads count after they act: a counter may trail the state
    // it counts by a moment.
    let counted = || (fa.snapshot().sent, fb.snapshot().received, fb.snapshot().applied) == (1, 1, 1);
    wait_for(Duration::from_secs(2), counted)
        .unwrap_or_else(|| panic!("{:?} {:?}", fa.snapshot(), fb.snapshot()));
    // The receiver's hold is the fleet's, not news: it is not echoed back.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!((fb.snapshot().sent, fa.snapshot().received), (0, 0));
    assert_eq!(fb.snapshot().rejected_total(), 0);
}

#[test]
fn a_hold_travels_with_its_length_and_a_close_ends_it_everywhere() {
    let _serial = one_at_a_time();
    let Some(url) = redis_url("a_hold_travels_with_its_length_and_a_close_ends_it_everywhere") else {
        return;
    };
    let ns = namespace("hold");
    let (a, b) = (breaker(Duration::from_secs(1)), breaker(Duration::from_secs(1)));
    let _fa = host(FleetConfig::builder(&url, &ns, *KEY), &a);
    let _fb = host(FleetConfig::builder(&url, &ns, *KEY), &b);
    a.open_for(Duration::from_secs(30));
    wait_for(Duration::from_secs(2), || b.state() == State::Open).expect("b held");
    let left = b.hold_left().unwrap();
    assert!(left > Duration::from_secs(29) && left <= Duration::from_secs(30), "{left:?}");
    a.reset();
    wait_for(Duration::from_secs(2), || b.state() == State::Closed).expect("b closed");
    assert!(b.try_acquire().is_ok());
}

#[test]
fn a_hold_from_the_fleet_is_capped_by_the_local_max_hold() {
    let _serial = one_at_a_time();
    let Some(url) = redis_url("a_hold_from_the_fleet_is_capped_by_the_local_max_hold") else { return };
    let ns = namespace("cap");
    let a = breaker(Duration::from_secs(1));
    // A host that accepts holds of at most 2 s, whatever the others ask.
    let config = BreakerConfig::builder()
        .failure_threshold(1)
        .open_timeout(Duration::from_secs(1))
        .max_hold(Duration::from_secs(2))
        .build()
        .unwrap();
    let b = Arc::new(NamedBreaker::new("exchange", config));
    let _fa = host(FleetConfig::builder(&url, &ns, *KEY), &a);
    let fb = host(FleetConfig::builder(&url, &ns, *KEY), &b);
    a.open_for(Duration::from_secs(60));
    wait_for(Duration::from_secs(2), || b.state() == State::Open).expect("b held");
    let left = b.hold_left().expect("a hold");
    assert!(left > Duration::from_secs(1) && left <= Duration::from_secs(2), "{left:?}");
    assert_eq!(b.snapshot().capped_holds, 1);
    // The link counts after it acts: the counter may trail the hold.
    wait_for(Duration::from_secs(2), || fb.snapshot().applied == 1)
        .unwrap_or_else(|| panic!("{:?}", fb.snapshot()));
    // a's own hold is its own: 60 s, under its default cap.
    assert!(a.hold_left().unwrap() > Duration::from_secs(58));
}

#[test]
fn a_late_joiner_learns_an_outage_in_progress_from_the_key() {
    let _serial = one_at_a_time();
    let Some(url) = redis_url("a_late_joiner_learns_an_outage_in_progress_from_the_key") else { return };
    let ns = namespace("late");
    let a = breaker(Duration::from_secs(3));
    let fa = host(FleetConfig::builder(&url, &ns, *KEY), &a);
    trip(&a);
    wait_for(Duration::from_secs(2), || fa.snapshot().sent == 1).expect("published");
    std::thread::sleep(Duration::from_millis(500));
    let c = breaker(Duration::from_secs(3));
    let fc = host(FleetConfig::builder(&url, &ns, *KEY), &c);
    wait_for(Duration::from_secs(2), || c.state() == State::Open).expect("c learned");
    let left = c.try_acquire().unwrap_err().retry_after.unwrap();
    // What was left of a's cool-down when c read the key, never more.
    assert!(left <= Duration::from_millis(2500) && left > Duration::from_millis(1500), "{left:?}");
    wait_for(Duration::from_secs(2), || (fc.snapshot().received, fc.snapshot().applied) == (1, 1))
        .unwrap_or_else(|| panic!("{:?}", fc.snapshot()));
}

#[test]
fn one_probe_for_the_fleet_when_a_cool_down_ends() {
    let _serial = one_at_a_time();
    let Some(url) = redis_url("one_probe_for_the_fleet_when_a_cool_down_ends") else { return };
    let ns = namespace("probe");
    let breakers: Vec<_> = (0..3).map(|_| breaker(Duration::from_millis(300))).collect();
    let fleets: Vec<_> = breakers
        .iter()
        .map(|b| host(FleetConfig::builder(&url, &ns, *KEY).probe_timeout(Duration::from_secs(2)), b))
        .collect();
    // The first trip reaches the others through Redis: a host the fleet
    // already holds open has nothing left to trip.
    for b in &breakers {
        if let Ok(t) = b.try_acquire() {
            b.record(t, Outcome::Failure);
        }
        assert_eq!(b.state(), State::Open);
    }
    // Every host calls as fast as it likes for 1.2 s; a probe fails.
    let start = Instant::now();
    let mut probes = Vec::new();
    while start.elapsed() < Duration::from_millis(1200) {
        for (i, b) in breakers.iter().enumerate() {
            if let Ok(t) = b.try_acquire() {
                assert!(t.is_probe(), "only probes while the exchange is down");
                probes.push((i, start.elapsed()));
                b.record(t, Outcome::Failure);
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // Cool-downs of 300 ms in 1.2 s: three or four probes, each alone in its cool-down.
    assert!((2..=4).contains(&probes.len()), "{probes:?}");
    for w in probes.windows(2) {
        assert!(w[1].1 - w[0].1 >= Duration::from_millis(250), "two probes in one cool-down: {probes:?}");
    }
    let won: u64 = fleets.iter().map(|f| f.snapshot().leases_won).sum();
    let lost: u64 = fleets.iter().map(|f| f.snapshot().leases_lost).sum();
    assert!(won >= probes.len() as u64 && lost >= 2, "won {won} lost {lost}");
}

#[test]
fn unlinked_each_host_is_a_plain_local_breaker() {
    let _serial = one_at_a_time();
    let b = breaker(Duration::from_millis(100));
    let nobody = format!("redis://127.0.0.1:{}", free_port());
    let fleet = Fleet::new(FleetConfig::builder(nobody, "alone", *KEY).build().unwrap()).unwrap();
    fleet.join(&b).unwrap();
    assert!(!fleet.wait_linked(Duration::from_millis(300)));
    assert_eq!(fleet.link_state(), LinkState::Down);
    for _ in 0..1000 {
        let t = b.try_acquire().unwrap();
        b.record(t, Outcome::Success);
    }
    trip(&b);
    std::thread::sleep(Duration::from_millis(150));
    let probe = b.try_acquire().expect("a local probe after the cool-down");
    b.record(probe, Outcome::Success);
    assert_eq!(b.state(), State::Closed);
    wait_for(Duration::from_secs(1), || fleet.snapshot().dropped >= 1).expect("the trip counted as dropped");
    let s = fleet.snapshot();
    assert_eq!((s.sent, s.received, s.publisher_up, s.subscriber_up), (0, 0, 0, 0), "{s:?}");
    let start = Instant::now();
    drop(fleet);
    assert!(start.elapsed() < Duration::from_secs(1), "stopped in {:?}", start.elapsed());
}

#[test]
fn password_and_acl_user_log_in_and_wrong_ones_stay_down() {
    let _serial = one_at_a_time();
    if redis_url("password_and_acl_user_log_in_and_wrong_ones_stay_down").is_none() {
        return;
    }
    let redis = PrivateRedis::start(&[
        "--requirepass",
        "s3cret",
        "--user",
        "bot",
        "on",
        ">wonderland",
        "~tripwire:*",
        "&tripwire:*",
        "+@all",
    ]);
    let ns = namespace("auth");
    let (a, b, c) =
        (breaker(Duration::from_secs(2)), breaker(Duration::from_secs(2)), breaker(Duration::from_secs(2)));
    let fa = host(FleetConfig::builder(redis.url(), &ns, *KEY).password("s3cret"), &a);
    let fb = host(FleetConfig::builder(redis.url(), &ns, *KEY).username("bot").password("wonderland"), &b);
    let wrong =
        Fleet::new(FleetConfig::builder(redis.url(), &ns, *KEY).password("guess").build().unwrap()).unwrap();
    wrong.join(&c).unwrap();
    trip(&a);
    wait_for(Duration::from_secs(2), || b.state() == State::Open).expect("the ACL user heard");
    assert!(!wrong.wait_linked(Duration::from_millis(500)));
    assert_eq!((wrong.link_state(), c.state()), (LinkState::Down, State::Closed));
    assert_eq!((fa.link_state(), fb.link_state()), (LinkState::Up, LinkState::Up));
}

#[test]
fn the_counters_are_exported_for_prometheus() {
    let _serial = one_at_a_time();
    let Some(url) = redis_url("the_counters_are_exported_for_prometheus") else { return };
    let ns = namespace("prom");
    let a = breaker(Duration::from_secs(2));
    let fa = host(FleetConfig::builder(&url, &ns, *KEY), &a);
    trip(&a);
    wait_for(Duration::from_secs(2), || fa.snapshot().sent == 1).expect("published");
    let text = fa.prometheus();
    for line in [
        format!(r#"tripwire_fleet_link_state{{fleet="{ns}",state="up"}} 1"#),
        format!(r#"tripwire_fleet_sent_total{{fleet="{ns}"}} 1"#),
        format!(r#"tripwire_fleet_rejected_total{{fleet="{ns}",reason="signature"}} 0"#),
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
}

#[test]
fn a_name_joins_once_and_fits_a_message() {
    let _serial = one_at_a_time();
    let fleet = Fleet::new(
        FleetConfig::builder(format!("redis://127.0.0.1:{}", free_port()), "names", *KEY).build().unwrap(),
    )
    .unwrap();
    let b = breaker(Duration::from_secs(1));
    fleet.join(&b).unwrap();
    assert!(fleet.join(&b).is_err());
    let long = Arc::new(NamedBreaker::new("n".repeat(256), BreakerConfig::default()));
    assert!(fleet.join(&long).is_err());
    assert!(Fleet::new(FleetConfig::builder("http://nowhere", "names", *KEY).build().unwrap()).is_err());
}

#[test]
fn a_core_breaker_without_listeners_joins_by_name_and_is_looked_at() {
    let _serial = one_at_a_time();
    let Some(url) = redis_url("a_core_breaker_without_listeners_joins_by_name_and_is_looked_at") else {
        return;
    };
    let ns = namespace("core");
    let config =
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_secs(2)).build().unwrap();
    let core = Arc::new(tripwire::Breaker::new(config));
    let fc = Fleet::new(FleetConfig::builder(&url, &ns, *KEY).build().unwrap()).unwrap();
    fc.join_core("exchange", core.clone(), tripwire::MonotonicClock).unwrap();
    assert!(fc.join_core("exchange", core.clone(), tripwire::MonotonicClock).is_err());
    assert!(fc.wait_linked(Duration::from_secs(5)));
    let named = breaker(Duration::from_secs(2));
    let fnamed = host(FleetConfig::builder(&url, &ns, *KEY), &named);
    // Its trip goes out though no listener hears it.
    let clock = tripwire::MonotonicClock;
    let t = core.try_acquire(&clock).unwrap();
    core.record(t, Outcome::Failure, &clock);
    wait_for(Duration::from_secs(2), || named.state() == State::Open).expect("the named breaker heard");
    wait_for(Duration::from_secs(2), || fc.snapshot().sent == 1)
        .unwrap_or_else(|| panic!("{:?}", fc.snapshot()));
    // The fleet's close comes back in, and is not echoed.
    named.reset();
    wait_for(Duration::from_secs(2), || core.state() == State::Closed).unwrap_or_else(|| {
        panic!("the core breaker stayed {:?}: {:?} {:?}", core.state(), fc.snapshot(), fnamed.snapshot())
    });
    wait_for(Duration::from_secs(2), || fnamed.snapshot().received == 1)
        .unwrap_or_else(|| panic!("{:?}", fnamed.snapshot()));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!((fc.snapshot().sent, fnamed.snapshot().received), (1, 1));
}

#[test]
fn a_user_without_channel_rights_is_never_linked() {
    let _serial = one_at_a_time();
    let Some(url) = redis_url("a_user_without_channel_rights_is_never_linked") else { return };
    // Keys and commands, but no channel: SUBSCRIBE (and PUBLISH) answer NOPERM.
    let nochan = AclUser::create(&url, "nochan", &["on", ">pw", "~*", "resetchannels", "+@all"]);
    let ns = namespace("deaf");
    let (a, b) = (breaker(Duration::from_secs(5)), breaker(Duration::from_secs(5)));
    let _fa = host(FleetConfig::builder(&url, &ns, *KEY), &a);
    let deaf = Fleet::new(
        FleetConfig::builder(&url, &ns, *KEY).username(&nochan.name).password("pw").build().unwrap(),
    )
    .unwrap();
    deaf.join(&b).unwrap();
    assert!(
        !deaf.wait_linked(Duration::from_millis(800)),
        "a refused SUBSCRIBE is no link: {:?}",
        deaf.snapshot()
    );
    trip(&a);
    for _ in 0..100 {
        assert_ne!(deaf.link_state(), LinkState::Up, "{:?}", deaf.snapshot());
        std::thread::sleep(Duration::from_millis(3));
    }
    assert_eq!((b.state(), deaf.snapshot().subscriber_up), (State::Closed, 0));
}

#[test]
fn dropping_a_fleet_whose_server_never_answers_takes_at_most_its_timeouts() {
    let _serial = one_at_a_time();
    let silent = SilentServer::start();
    let (connect, io) = (Duration::from_millis(1000), Duration::from_millis(200));
    let config = FleetConfig::builder(silent.url(), "silent", *KEY).connect_timeout(connect).io_timeout(io);
    let fleet = Fleet::new(config.build().unwrap()).unwrap();
    let b = breaker(Duration::from_secs(1));
    fleet.join(&b).unwrap();
    // Both threads are in their handshake with a server that never answers.
    wait_for(Duration::from_secs(2), || silent.accepted() >= 2).expect("both connections accepted");
    let start = Instant::now();
    drop(fleet);
    let took = start.elapsed();
    // The documented bound: the longer of the two timeouts, and a poll.
    assert!(took <= connect.max(io) + Duration::from_millis(150), "dropped in {took:?}");
    eprintln!("dropped in {took:?}");
}

#[test]
fn an_idle_host_never_takes_the_probe_lease_from_a_busy_one() {
    let _serial = one_at_a_time();
    let Some(url) = redis_url("an_idle_host_never_takes_the_probe_lease_from_a_busy_one") else { return };
    let ns = namespace("idle");
    let probe_timeout = Duration::from_secs(1);
    let (busy, idle) = (breaker(Duration::from_millis(300)), breaker(Duration::from_millis(300)));
    let fbusy = host(FleetConfig::builder(&url, &ns, *KEY).probe_timeout(probe_timeout), &busy);
    // The idle host asks first, if it asks at all: its lead is longer.
    let fidle = host(
        FleetConfig::builder(&url, &ns, *KEY)
            .probe_timeout(probe_timeout)
            .lease_lead(Duration::from_millis(250)),
        &idle,
    );
    trip(&busy);
    let tripped = Instant::now();
    wait_for(Duration::from_secs(2), || idle.state() == State::Open).expect("the idle host held");
    // Only the busy host has callers; its first probe succeeds.
    let probe = loop {
        if let Ok(t) = busy.try_acquire() {
            assert!(t.is_probe());
            busy.record(t, Outcome::Success);
            break tripped.elapsed();
        }
        assert!(
            tripped.elapsed() < Duration::from_secs(3),
            "no probe: {:?} {:?}",
            fbusy.snapshot(),
            fidle.snapshot()
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    // At the end of its cool-down, not after a lease taken by a host with
    // nothing to probe with (its lead and probe timeout, 1.25 s, and more).
    assert!(probe < Duration::from_millis(600), "probed after {probe:?}: {:?}", fidle.snapshot());
    assert_eq!(fidle.snapshot().leases_won, 0, "{:?}", fidle.snapshot());
    assert_eq!(fbusy.snapshot().leases_won, 1, "{:?}", fbusy.snapshot());
    // The close reaches the idle host, however it waited meanwhile.
    wait_for(Duration::from_secs(2), || idle.state() == State::Closed).unwrap_or_else(|| {
        panic!("the idle host stayed {:?}: {:?} {:?}", idle.state(), fidle.snapshot(), fbusy.snapshot())
    });
    assert!(idle.try_acquire().is_ok());
}

#[test]
fn a_capped_hold_read_again_from_its_key_is_taken_once() {
    let _serial = one_at_a_time();
    if redis_url("a_capped_hold_read_again_from_its_key_is_taken_once").is_none() {
        return;
    }
    // A server of its own: the test kills every subscribed connection on it.
    let redis = PrivateRedis::start(&[]);
    let ns = namespace("capped-again");
    let a = breaker(Duration::from_secs(1));
    let config = BreakerConfig::builder()
        .failure_threshold(1)
        .open_timeout(Duration::from_secs(1))
        .max_hold(Duration::from_secs(5))
        .build()
        .unwrap();
    let b = Arc::new(NamedBreaker::new("exchange", config));
    let _fa = host(FleetConfig::builder(redis.url(), &ns, *KEY), &a);
    let fb = host(FleetConfig::builder(redis.url(), &ns, *KEY), &b);
    a.open_for(Duration::from_secs(60));
    wait_for(Duration::from_secs(2), || fb.snapshot().applied == 1).expect("b held");
    // b reconnects and reads the key again: the same hold, cut to 5 s here.
    let mut raw = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
    let _: () = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("pubsub").query(&mut raw).unwrap();
    wait_for(Duration::from_secs(3), || fb.snapshot().reconnects >= 1 && fb.wait_linked(Duration::ZERO))
        .unwrap_or_else(|| panic!("b back: {:?}", fb.snapshot()));
    std::thread::sleep(Duration::from_millis(200));
    let s = fb.snapshot();
    assert_eq!((s.received, s.applied, b.snapshot().capped_holds), (1, 1, 1), "{s:?}");
}
