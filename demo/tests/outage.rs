//! The whole scenario at a tiny scale: a 3-minute outage replayed in about
//! 3 seconds, and what each client did to the exchange and its caller.

use std::time::Duration;

use tripwire_demo::progress::Live;
use tripwire_demo::timeline::Pattern;
use tripwire_demo::{Config, chart, run, table};

#[test]
fn tripwire_stops_calling_a_dead_exchange_and_recovers_by_itself() {
    let config = Config {
        outage: Duration::from_secs(180),
        scale: 100.0,
        pattern: Pattern::Mixed,
        out: None,
        live: Live::Off,
        ..Config::default()
    };
    let r = run(config.clone()).unwrap();
    let (naive, guarded) = (&r.naive, &r.tripwire);
    let report = table::render(&r);

    // The naive client throws its whole rate at the dead exchange.
    let expected = config.rate * config.outage.as_secs_f64();
    assert!(naive.hits_down as f64 > 0.8 * expected, "{report}");
    assert_eq!(naive.fast_failures, 0, "every naive failure waited for the exchange\n{report}");

    // tripwire: before the trip at most the threshold plus what was in the
    // bulkhead, then about one probe per cool-down.
    let probes = (config.outage.as_secs_f64() / config.cool_down.as_secs_f64()).ceil() as u64;
    let bound = u64::from(config.failure_threshold + config.bulkhead) + probes + 1;
    assert!(guarded.hits_down <= bound, "{} > {bound}\n{report}", guarded.hits_down);
    assert!(guarded.fast_failures > 10 * guarded.slow_failures, "{report}");

    // Stale order books, never a stale balance.
    assert!(guarded.stale > 0 && guarded.stale_max_age <= config.stale_max, "{report}");
    assert_eq!(guarded.stale_balances, 0, "{report}");
    assert!(guarded.balance_errors > 0, "{report}");

    // Bounded in-flight work; the naive client's piles up.
    assert!(guarded.peak_in_flight <= u64::from(config.bulkhead), "{report}");
    assert!(naive.peak_in_flight >= 15, "{report}");
    assert!(naive.peak_in_flight >= 2 * guarded.peak_in_flight, "{report}");

    // Back through the first probe after the exchange's return, not a later
    // one: within a cool-down and a half (the scenario runs 100x fast, so a
    // loaded machine's lag of a few tens of ms shows as seconds here).
    let recovery = guarded.recovery.expect("a success after the recovery");
    assert!(recovery <= config.cool_down.mul_f64(1.5), "{recovery:?}\n{report}");

    // The chart draws every phase and the breaker's band.
    let svg = chart::render(&r).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    for phase in ["maintenance 503", "hanging", "recovered"] {
        assert!(svg.contains(phase), "{phase}");
    }
    assert!(r.transitions().len() >= 3, "{:?}", r.transitions());
}
