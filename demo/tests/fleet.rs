//! Several client processes on one fleet: one probe per cool-down for the
//! whole fleet, where processes alone send one each; and without Redis,
//! a clear message and a failure.

use std::process::Command;
use std::time::Duration;

use tripwire_demo::fleet::{self, FleetDemo, redis};

const PROGRAM: &str = env!("CARGO_BIN_EXE_fleet");

/// Whether a Redis can be had: named, or a redis-server on the PATH.
fn redis_available() -> bool {
    redis::VARS.iter().any(|v| std::env::var(v).is_ok_and(|u| !u.is_empty()))
        || Command::new("redis-server").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn the_fleet_sends_one_probe_per_cool_down_where_lone_processes_send_one_each() {
    if !redis_available() {
        eprintln!("SKIPPED: no redis-server on the PATH and none of {:?} set", redis::VARS);
        return;
    }
    let demo = FleetDemo { outage: Duration::from_secs(6), ..FleetDemo::new(PROGRAM.into()) };
    let r = fleet::run(demo.clone()).unwrap();
    let report = fleet::render(&r);
    let (f, a) = (&r.fleet, &r.alone);
    let n = demo.hosts as u64;
    let probes = |g: &fleet::Group| g.probe_bursts().iter().sum::<u64>();

    // Before its breaker opens a process sends at most the threshold.
    let trip_bound = n * u64::from(demo.threshold);
    assert!(f.bursts[0] <= trip_bound && a.bursts[0] <= trip_bound, "{report}");

    // The claim: at most one probe per cool-down, fleet-wide, and probing
    // went on through the outage (about one a cool-down: 5 in 6 s; a
    // loaded machine may stretch a few cool-downs).
    assert!(f.most_probes() <= 1, "{:?}\n{report}", f.bursts);
    assert!(probes(f) >= 3, "{:?}\n{report}", f.bursts);

    // Alone, every process probes each cool-down: about n a burst. A
    // process delayed past half a cool-down by load makes a burst of its
    // own, so the bound is on the total, not on each burst.
    assert!(a.most_probes() >= 2, "{:?}\n{report}", a.bursts);
    assert!(probes(a) >= 2 * probes(f), "{report}");
    assert!(f.hits_down() < a.hits_down(), "{report}");

    // Every process of both groups called the exchange again once it was
    // back, within the run's last two cool-downs.
    assert!(f.recovery.is_some() && a.recovery.is_some(), "{report}");
    assert_eq!((f.hosts.len(), a.hosts.len()), (demo.hosts, demo.hosts));
    assert!(f.hosts.iter().all(|h| h.counts.refused > 0), "each fleet process refused calls\n{report}");
    assert!(report.contains("| one fleet over Redis |"), "{report}");
}

#[test]
fn without_redis_it_says_how_to_get_it_and_fails() {
    let out = Command::new(PROGRAM)
        .args(["--outage", "2"])
        .env("PATH", "/nonexistent")
        .env_remove(redis::VARS[0])
        .env_remove(redis::VARS[1])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    for text in ["redis-server could not be started", "apt-get install redis-server", "TRIPWIRE_DEMO_REDIS="]
    {
        assert!(err.contains(text), "{text} in\n{err}");
    }
}
