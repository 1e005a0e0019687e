//! The fleet across processes: each host is this test binary run again as
//! `fleet_host` (a test ignored in normal runs), with a joined breaker
//! guarding calls to a loopback "exchange" that the parent runs and logs.

mod support;

use std::io::BufRead;
use std::sync::Arc;
use std::sync::mpsc::{TryRecvError, channel};
use std::time::{Duration, Instant};

use support::{
    Exchange, Host, KEY, Mode, PrivateRedis, call_exchange, field, namespace, redis_url, wait_for,
};
use tripwire::{BreakerConfig, Clock, MonotonicClock, NamedBreaker, Outcome, State};
use tripwire_fleet::{Fleet, FleetConfig};

/// Settings of one run of hosts.
struct Run {
    redis: String,
    ns: String,
    exchange: u16,
    open_ms: u64,
    probe_ms: u64,
}

impl Run {
    fn spawn(&self, n: usize) -> Vec<Host> {
        let env = [
            ("TRIPWIRE_FLEET_HOST", String::from("1")),
            ("TRIPWIRE_FLEET_REDIS", self.redis.clone()),
            ("TRIPWIRE_FLEET_NS", self.ns.clone()),
            ("TRIPWIRE_FLEET_EXCHANGE", self.exchange.to_string()),
            ("TRIPWIRE_FLEET_OPEN_MS", self.open_ms.to_string()),
            ("TRIPWIRE_FLEET_PROBE_MS", self.probe_ms.to_string()),
        ];
        let mut hosts: Vec<Host> = (0..n).map(|_| Host::spawn("fleet_host", &env)).collect();
        for h in &mut hosts {
            h.expect("ready", Duration::from_secs(10));
        }
        hosts
    }
}

fn env_u64(k: &str) -> u64 {
    std::env::var(k).unwrap().parse().unwrap()
}

/// One host of the fleet: runs when the parent says `go`, until `stop` or
/// 15 s, and reports on stdout. Commands on stdin: `go`, `hold MS`, `stop`.
#[test]
#[ignore = "a host process of the fleet tests, started by them"]
fn fleet_host() {
    if std::env::var("TRIPWIRE_FLEET_HOST").is_err() {
        return;
    }
    let exchange = env_u64("TRIPWIRE_FLEET_EXCHANGE") as u16;
    let config = BreakerConfig::builder()
        .failure_threshold(1)
        .open_timeout(Duration::from_millis(env_u64("TRIPWIRE_FLEET_OPEN_MS")))
        .build()
        .unwrap();
    let breaker = Arc::new(NamedBreaker::new("exchange", config));
    let fleet_config = FleetConfig::builder(
        std::env::var("TRIPWIRE_FLEET_REDIS").unwrap(),
        std::env::var("TRIPWIRE_FLEET_NS").unwrap(),
        *KEY,
    )
    .probe_timeout(Duration::from_millis(env_u64("TRIPWIRE_FLEET_PROBE_MS")))
    .reconnect(Duration::from_millis(20), Duration::from_millis(200))
    .build()
    .unwrap();
    let fleet = Fleet::new(fleet_config).unwrap();
    fleet.join(&breaker).unwrap();
    assert!(fleet.wait_linked(Duration::from_secs(5)));
    let (tx, commands) = channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // Watches the state before `go` too: a follower sees the fleet's open
    // without a call of its own.
    let mut saw_open = false;
    let watch = |b: &NamedBreaker, saw_open: &mut bool| {
        if !*saw_open && b.state() != State::Closed {
            *saw_open = true;
            println!("saw_open mono_ns={}", MonotonicClock.now());
        }
    };
    println!("ready pid={}", std::process::id());
    let wait_go = Instant::now();
    loop {
        watch(&breaker, &mut saw_open);
        match commands.try_recv() {
            Ok(c) if c == "go" => break,
            Ok(_) => {}
            Err(TryRecvError::Disconnected) => return,
            Err(TryRecvError::Empty) => {}
        }
        assert!(wait_go.elapsed() < Duration::from_secs(15), "no go");
        std::thread::sleep(Duration::from_millis(1));
    }
    let (mut calls, mut failed, mut refused, mut refused_before_open) = (0u64, 0u64, 0u64, 0u64);
    let mut guard_ns: Vec<u64> = Vec::new();
    let mut link = fleet.link_state();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(15) {
        match commands.try_recv() {
            Ok(c) if c == "stop" => break,
            Ok(c) if c.starts_with("hold ") => {
                breaker.open_for(Duration::from_millis(c[5..].parse().unwrap()));
            }
            Ok(_) | Err(TryRecvError::Empty) => {}
            Err(TryRecvError::Disconnected) => return,
        }
        watch(&breaker, &mut saw_open);
        // The guarded call's own cost: the breaker's admission and record.
        let t0 = Instant::now();
        let admitted = breaker.try_acquire();
        let mut spent = t0.elapsed();
        match admitted {
            Ok(ticket) => {
                calls += 1;
                let ok = call_exchange(exchange).is_ok();
                failed += u64::from(!ok);
                let t1 = Instant::now();
                breaker.record(ticket, if ok { Outcome::Success } else { Outcome::Failure });
                spent += t1.elapsed();
                if !ok && !saw_open {
                    println!("tripped mono_ns={}", MonotonicClock.now());
                }
            }
            Err(_) => {
                refused += 1;
                refused_before_open += u64::from(!saw_open);
            }
        }
        watch(&breaker, &mut saw_open);
        guard_ns.push(spent.as_nanos() as u64);
        let now = fleet.link_state();
        if now != link {
            link = now;
            println!("link state={}", now.as_str());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    guard_ns.sort_unstable();
    let p99 = guard_ns.get(guard_ns.len() * 99 / 100).copied().unwrap_or(0);
    let s = fleet.snapshot();
    println!(
        "done calls={calls} failed={failed} refused={refused} refused_before_open={refused_before_open} \
         max_guard_ns={} p99_guard_ns={p99} sent={} received={} applied={} won={} lost={} reconnects={} rejected={}",
        guard_ns.last().copied().unwrap_or(0),
        s.sent,
        s.received,
        s.applied,
        s.leases_won,
        s.leases_lost,
        s.reconnects,
        s.rejected_total()
    );
}

#[test]
fn one_host_trips_and_the_others_refuse_without_calling_the_exchange() {
    let Some(redis) = redis_url("one_host_trips_and_the_others_refuse_without_calling_the_exchange") else {
        return;
    };
    let exchange = Exchange::start(Mode::Down);
    let run =
        Run { redis, ns: namespace("refuse"), exchange: exchange.port, open_ms: 10_000, probe_ms: 2_000 };
    let mut hosts = run.spawn(3);
    hosts[0].say("go");
    let tripped = field(&hosts[0].expect("tripped", Duration::from_secs(5)), "mono_ns");
    let mut latencies = Vec::new();
    for h in &mut hosts[1..] {
        let seen = field(&h.expect("saw_open", Duration::from_secs(3)), "mono_ns");
        latencies.push(Duration::from_nanos(seen.saturating_sub(tripped)));
        h.say("go");
    }
    std::thread::sleep(Duration::from_millis(700));
    let mut done = Vec::new();
    for h in &mut hosts {
        h.say("stop");
        done.push(h.expect("done", Duration::from_secs(5)));
    }
    let hits = exchange.hits();
    assert_eq!(hits.iter().filter(|h| h.pid == hosts[0].pid).count(), 1, "the tripper's one call: {hits:?}");
    for (h, line) in hosts[1..].iter().zip(&done[1..]) {
        assert_eq!(hits.iter().filter(|x| x.pid == h.pid).count(), 0, "host {} called the exchange", h.pid);
        assert_eq!(field(line, "calls"), 0, "{line}");
        assert!(field(line, "refused") >= 100, "{line}");
        assert_eq!(field(line, "received"), 1, "{line}");
    }
    eprintln!("trip to refusal (1 ms polling): {latencies:?}");
}

#[test]
fn at_most_one_probe_per_cool_down_reaches_the_exchange_fleet_wide() {
    let Some(redis) = redis_url("at_most_one_probe_per_cool_down_reaches_the_exchange_fleet_wide") else {
        return;
    };
    let exchange = Exchange::start(Mode::Down);
    let run = Run { redis, ns: namespace("probes"), exchange: exchange.port, open_ms: 300, probe_ms: 2_000 };
    let mut hosts = run.spawn(3);
    for h in &mut hosts {
        h.say("go");
    }
    std::thread::sleep(Duration::from_millis(2500));
    exchange.set(Mode::Up);
    let up_at = Instant::now();
    std::thread::sleep(Duration::from_millis(1500));
    let mut done = Vec::new();
    for h in &mut hosts {
        h.say("stop");
        done.push(h.expect("done", Duration::from_secs(5)));
    }
    let hits = exchange.hits();
    let first = hits.first().expect("calls").at;
    // Each host may fail once on its own before it hears of the others.
    let probes: Vec<_> =
        hits.iter().filter(|h| h.at > first + Duration::from_millis(100) && h.at < up_at).collect();
    let gaps: Vec<_> = probes.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(hits.iter().filter(|h| h.at <= first + Duration::from_millis(100)).count() <= 3, "{hits:?}");
    assert!(probes.len() >= 4, "probing went on while down: {probes:?}");
    assert!(gaps.iter().all(|g| *g >= Duration::from_millis(200)), "two probes in one cool-down: {gaps:?}");
    // Once a probe succeeds, every host calls again.
    for h in &hosts {
        assert!(
            hits.iter().any(|x| x.pid == h.pid && x.answered == Mode::Up),
            "host {} back: {done:?}",
            h.pid
        );
    }
    let won: u64 = done.iter().map(|l| field(l, "won")).sum();
    // A probe per lease won; and every other host lost one at least.
    assert!(won >= probes.len() as u64, "won {won}: {done:?}");
    assert!(done.iter().filter(|l| field(l, "lost") >= 1).count() >= 2, "{done:?}");
}

#[test]
fn a_killed_prober_loses_its_lease_and_another_host_probes() {
    let Some(redis) = redis_url("a_killed_prober_loses_its_lease_and_another_host_probes") else { return };
    let exchange = Exchange::start(Mode::Down);
    let run = Run { redis, ns: namespace("killed"), exchange: exchange.port, open_ms: 300, probe_ms: 1_000 };
    let mut hosts = run.spawn(3);
    for h in &mut hosts {
        h.say("go");
    }
    std::thread::sleep(Duration::from_millis(400));
    exchange.set(Mode::HangNext);
    wait_for(Duration::from_secs(3), || exchange.hung().is_some()).expect("a probe");
    let prober = exchange.hung().unwrap();
    let i = hosts.iter().position(|h| h.pid == prober).expect("a host probed");
    hosts[i].kill();
    let killed_at = Instant::now();
    exchange.set(Mode::Up);
    let hung_at = exchange.hits().iter().find(|h| h.answered == Mode::HangNext).unwrap().at;
    wait_for(Duration::from_secs(4), || exchange.hits().iter().any(|h| h.at > hung_at))
        .expect("another probe");
    std::thread::sleep(Duration::from_millis(500));
    let hits = exchange.hits();
    let after: Vec<_> = hits.iter().filter(|h| h.at > hung_at).collect();
    let takeover = after[0];
    assert_ne!(takeover.pid, prober);
    let gap = takeover.at - hung_at;
    // Not before the lease (probe timeout, 1 s) ends; soon after it.
    assert!(
        gap >= Duration::from_millis(950) && gap < Duration::from_secs(3),
        "{gap:?}, killed after {:?}",
        killed_at - hung_at
    );
    assert_eq!(takeover.answered, Mode::Up);
    for (j, h) in hosts.iter().enumerate().filter(|(j, _)| *j != i) {
        assert!(after.iter().any(|x| x.pid == h.pid), "host {j} back: {after:?}");
    }
    for h in hosts.iter_mut().filter(|h| h.pid != prober) {
        h.say("stop");
        let line = h.expect("done", Duration::from_secs(5));
        assert!(field(&line, "lost") >= 1, "{line}");
    }
}

#[test]
fn redis_killed_mid_run_never_slows_or_fails_a_guarded_call_and_the_link_recovers() {
    if redis_url("redis_killed_mid_run_never_slows_or_fails_a_guarded_call_and_the_link_recovers").is_none() {
        return;
    }
    let mut redis = PrivateRedis::start(&[]);
    let exchange = Exchange::start(Mode::Up);
    let run = Run {
        redis: redis.url(),
        ns: namespace("outage"),
        exchange: exchange.port,
        open_ms: 1_000,
        probe_ms: 1_000,
    };
    let mut hosts = run.spawn(3);
    for h in &mut hosts {
        h.say("go");
    }
    std::thread::sleep(Duration::from_millis(400));
    redis.kill();
    for h in &mut hosts {
        h.expect("link state=down", Duration::from_secs(3));
    }
    std::thread::sleep(Duration::from_millis(800));
    redis.restart();
    for h in &mut hosts {
        h.expect("link state=up", Duration::from_secs(5));
    }
    // The link works again: a hold on one host reaches the others.
    hosts[0].say("hold 5000");
    for h in &mut hosts[1..] {
        h.expect("saw_open", Duration::from_secs(3));
    }
    for (j, h) in hosts.iter_mut().enumerate() {
        h.say("stop");
        let line = h.expect("done", Duration::from_secs(5));
        assert_eq!(field(&line, "failed"), 0, "host {j}: {line}");
        assert_eq!(field(&line, "refused_before_open"), 0, "no refusal while the exchange is up: {line}");
        // About 300 a host on a loaded 2-core machine, more on a quiet
        // one: the bound says the calls went on through the outage, not
        // how fast.
        assert!(field(&line, "calls") > 150, "calls went on: {line}");
        assert!(field(&line, "reconnects") >= 1, "{line}");
        // Never a wait for Redis: a blocked call would take its 500 ms
        // connect timeout or the outage's 800 ms.
        assert!(field(&line, "max_guard_ns") < 50_000_000, "{line}");
        eprintln!("host {j}: {line}");
    }
    let hits_before = exchange.hits().len();
    assert!(hits_before > 450, "{hits_before}");
}
