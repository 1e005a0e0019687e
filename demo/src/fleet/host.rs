//! One client process of the fleet demo: a breaker in front of the
//! exchange, joined to the fleet or alone, polling at a steady rate.
//!
//! It speaks to the demo over its standard streams: it prints `ready` once
//! linked, starts polling at `go`, stops at `stop` (or when its input
//! closes), then prints one `done` line with its counts.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tripwire::{BreakerConfig, NamedBreaker, Outcome};
use tripwire_fleet::{Fleet, FleetConfig};

use super::exchange;

/// The key every host of the demo's fleet signs with.
pub const KEY: &[u8; 32] = b"tripwire-demo-fleet-key-32-bytes";

/// What one host is told to do (its command line).
#[derive(Debug, Clone, PartialEq)]
pub struct HostArgs {
    /// Joined to the fleet, or alone.
    pub fleet: bool,
    /// Its index in its group.
    pub index: usize,
    /// The exchange's port.
    pub port: u16,
    /// Requests per second.
    pub rate: f64,
    /// Consecutive failures that trip the breaker.
    pub threshold: u32,
    /// The breaker's cool-down.
    pub cool_down: Duration,
    /// The Redis and the namespace of the fleet (fleet hosts only).
    pub link: Option<(String, String)>,
}

impl HostArgs {
    /// The arguments that [`parse`](Self::parse) reads back.
    pub fn to_args(&self) -> Vec<String> {
        let mut v = vec![
            if self.fleet { "fleet" } else { "alone" }.to_string(),
            self.index.to_string(),
            self.port.to_string(),
            self.rate.to_string(),
            self.threshold.to_string(),
            self.cool_down.as_millis().to_string(),
        ];
        if let Some((url, ns)) = &self.link {
            v.extend([url.clone(), ns.clone()]);
        }
        v
    }

    /// Reads the arguments [`to_args`](Self::to_args) wrote.
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let usage = "usage: --host fleet|alone INDEX PORT RATE THRESHOLD COOL_DOWN_MS [REDIS_URL NAMESPACE]";
        let arg = |i: usize, what: &str| args.get(i).ok_or_else(|| format!("{what} missing; {usage}"));
        let num = |i: usize, what: &str| -> Result<u64, String> {
            arg(i, what)?.parse().map_err(|_| format!("{what} must be a whole number; {usage}"))
        };
        let fleet = match arg(0, "the group")?.as_str() {
            "fleet" => true,
            "alone" => false,
            other => return Err(format!("the group must be fleet or alone, not {other:?}; {usage}")),
        };
        let rate: f64 = arg(3, "RATE")?.parse().map_err(|_| format!("RATE must be a number; {usage}"))?;
        if !(rate.is_finite() && rate > 0.0) {
            return Err(format!("RATE must be positive; {usage}"));
        }
        let link = match (fleet, args.get(6), args.get(7)) {
            (true, Some(url), Some(ns)) => Some((url.clone(), ns.clone())),
            (true, _, _) => return Err(format!("a fleet host needs REDIS_URL and NAMESPACE; {usage}")),
            (false, _, _) => None,
        };
        Ok(Self {
            fleet,
            index: usize::try_from(num(1, "INDEX")?).map_err(|e| e.to_string())?,
            port: u16::try_from(num(2, "PORT")?).map_err(|_| format!("PORT must be a port; {usage}"))?,
            rate,
            threshold: u32::try_from(num(4, "THRESHOLD")?).map_err(|e| e.to_string())?,
            cool_down: Duration::from_millis(num(5, "COOL_DOWN_MS")?),
            link,
        })
    }
}

/// What a host counted, as its `done` line says it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostCounts {
    /// Calls it sent to the exchange.
    pub sent: u64,
    /// Calls its breaker refused without calling.
    pub refused: u64,
    /// Calls it sent as a Half-Open probe.
    pub probes: u64,
    /// Probe leases it won, and lost to another host (fleet hosts only).
    pub leases_won: u64,
    /// See `leases_won`.
    pub leases_lost: u64,
}

impl HostCounts {
    /// The `done` line.
    pub fn line(&self) -> String {
        format!(
            "done sent={} refused={} probes={} won={} lost={}",
            self.sent, self.refused, self.probes, self.leases_won, self.leases_lost
        )
    }

    /// Reads a `done` line back.
    pub fn parse(line: &str) -> Option<Self> {
        let mut c = Self::default();
        let mut fields = line.trim().split(' ');
        if fields.next()? != "done" {
            return None;
        }
        for f in fields {
            let (k, v) = f.split_once('=')?;
            let v: u64 = v.parse().ok()?;
            match k {
                "sent" => c.sent = v,
                "refused" => c.refused = v,
                "probes" => c.probes = v,
                "won" => c.leases_won = v,
                "lost" => c.leases_lost = v,
                _ => return None,
            }
        }
        Some(c)
    }
}

/// Runs a host until `stop`: the body of `fleet --host …`.
pub fn run(a: &HostArgs) -> Result<(), String> {
    let config = BreakerConfig::builder()
        .failure_threshold(a.threshold)
        .open_timeout(a.cool_down)
        .build()
        .map_err(|e| e.to_string())?;
    let breaker = Arc::new(NamedBreaker::new("exchange", config));
    let fleet = match &a.link {
        Some((url, ns)) => {
            // Asking for the lease a quarter of a cool-down early leaves a
            // loaded machine room to answer before the wait ends.
            let config = FleetConfig::builder(url.as_str(), ns.as_str(), *KEY)
                .lease_lead(a.cool_down / 4)
                .build()
                .map_err(|e| e.to_string())?;
            let fleet = Fleet::new(config).map_err(|e| e.to_string())?;
            fleet.join(&breaker).map_err(|e| e.to_string())?;
            if !fleet.wait_linked(Duration::from_secs(10)) {
                return Err(format!("no link to {url} within 10 s: {:?}", fleet.snapshot()));
            }
            Some(fleet)
        }
        None => None,
    };
    let mut out = std::io::stdout().lock();
    let say = |out: &mut std::io::StdoutLock<'_>, s: &str| {
        writeln!(out, "{s}").and_then(|()| out.flush()).map_err(|e| e.to_string())
    };
    say(&mut out, "ready")?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map_err(|e| e.to_string())?;
    if line.trim() != "go" {
        return Err(format!("expected go, read {line:?}"));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    std::thread::spawn(move || {
        // `stop`, or the input closing: either ends the run.
        let _ = std::io::stdin().read_line(&mut String::new());
        // Relaxed: a flag with no data behind it.
        s.store(true, Ordering::Relaxed);
    });
    let mut c = HostCounts::default();
    let every = Duration::from_secs_f64(1.0 / a.rate);
    let timeout = Duration::from_millis(500);
    let mut next = Instant::now();
    // Relaxed: see the reader thread.
    while !stop.load(Ordering::Relaxed) {
        match breaker.try_acquire() {
            Ok(ticket) => {
                c.sent += 1;
                c.probes += u64::from(ticket.is_probe());
                let ok = exchange::get(a.port, a.fleet, a.index, timeout);
                breaker.record(ticket, if ok { Outcome::Success } else { Outcome::Failure });
            }
            Err(_) => c.refused += 1,
        }
        next += every;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            // Behind (a slow call, a loaded machine): no burst to catch up.
            next = now;
        }
    }
    if let Some(f) = &fleet {
        let s = f.snapshot();
        (c.leases_won, c.leases_lost) = (s.leases_won, s.leases_lost);
    }
    say(&mut out, &c.line())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_and_counts_read_back() {
        let a = HostArgs {
            fleet: true,
            index: 3,
            port: 8080,
            rate: 12.5,
            threshold: 3,
            cool_down: Duration::from_millis(750),
            link: Some(("redis://127.0.0.1:6379".into(), "demo-1".into())),
        };
        assert_eq!(HostArgs::parse(&a.to_args()), Ok(a.clone()));
        let alone = HostArgs { fleet: false, link: None, ..a };
        assert_eq!(HostArgs::parse(&alone.to_args()), Ok(alone.clone()));
        let c = HostCounts { sent: 5, refused: 90, probes: 2, leases_won: 1, leases_lost: 4 };
        assert_eq!(HostCounts::parse(&c.line()), Some(c));
        assert_eq!(HostCounts::parse("done sent=x"), None);
        assert_eq!(HostCounts::parse("ready"), None);
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let p = |v: &[&str]| HostArgs::parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert!(p(&[]).unwrap_err().contains("the group missing"));
        assert!(p(&["both"]).unwrap_err().contains("fleet or alone"));
        assert!(p(&["alone", "0", "99999", "1", "1", "1"]).unwrap_err().contains("PORT must be a port"));
        assert!(p(&["alone", "0", "80", "-1", "1", "1"]).unwrap_err().contains("RATE must be positive"));
        assert!(p(&["fleet", "0", "80", "1", "1", "1"]).unwrap_err().contains("needs REDIS_URL"));
    }
}
