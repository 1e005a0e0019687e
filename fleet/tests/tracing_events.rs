//! With feature `tracing`, a link error is a `warn` event at the
//! `tripwire` target naming the fleet and the reason: once per new
//! reason, not once per attempt. The link's threads log, so the
//! subscriber is the process's global one: this file holds one test.
#![cfg(feature = "tracing")]

mod support;
#[path = "../../core/tests/support/tracing_log.rs"]
mod tracing_log;

use std::time::Duration;

use support::{KEY, free_port, namespace, redis_url, wait_for};
use tracing::Level;
use tracing_log::Log;
use tripwire_fleet::{Fleet, FleetConfig};

#[test]
fn a_link_error_is_logged_once_per_reason() {
    if redis_url("a_link_error_is_logged_once_per_reason").is_none() {
        return;
    }
    let log = Log::default();
    tracing::subscriber::set_global_default(log.clone()).unwrap();
    let ns = namespace("logged");
    let url = format!("redis://127.0.0.1:{}", free_port());
    let fleet = Fleet::new(FleetConfig::builder(url, &ns, *KEY).build().unwrap()).unwrap();
    wait_for(Duration::from_secs(3), || fleet.snapshot().connect_failures >= 6).expect("retried");
    let events = log.0.lock().unwrap().clone();
    let errors: Vec<&String> = events
        .iter()
        .filter(|(level, f)| *level == Level::WARN && f.contains(&ns) && f.contains("fleet link error"))
        .map(|(_, f)| f)
        .collect();
    // One per connection: the publisher's and the subscriber's.
    assert_eq!(errors.len(), 2, "{events:?}");
    assert!(errors.iter().all(|f| f.contains("connect: Connection refused")), "{errors:?}");
}
