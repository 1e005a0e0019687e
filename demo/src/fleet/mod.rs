//! Several client processes on one fleet, against one exchange that goes
//! down: `cargo run --release -p tripwire-demo --bin fleet`.
//!
//! Two groups of `hosts` processes poll the same [`exchange`] at the same
//! rate, each through its own breaker: one group's breakers are joined to
//! one [`Fleet`](tripwire_fleet::Fleet) over Redis, the other's are alone
//! (each host trips on its own and probes on its own). The exchange logs
//! who called it while it was down; the [`Report`] gives, per process and
//! in total, the calls that reached the dead exchange, and the probes per
//! cool-down fleet-wide: the fleet sends one, the lone hosts one each.

pub mod exchange;
pub mod host;
pub mod redis;
mod report;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use exchange::{Exchange, Hit};
use host::{HostArgs, HostCounts};
pub use report::render;

/// The scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetDemo {
    /// Client processes per group.
    pub hosts: usize,
    /// Requests per second per process.
    pub rate: f64,
    /// Consecutive failures that trip a breaker.
    pub threshold: u32,
    /// A breaker's cool-down.
    pub cool_down: Duration,
    /// How long the exchange is up before the outage.
    pub up: Duration,
    /// How long the run goes on after the exchange's return: time for a
    /// probe to find it back and for every process to follow.
    pub after: Duration,
    /// How long it is down.
    pub outage: Duration,
    /// The program that runs a host (`fleet --host …`): this one.
    pub program: PathBuf,
}

impl FleetDemo {
    /// The defaults, run by `program`.
    pub fn new(program: PathBuf) -> Self {
        Self {
            hosts: 4,
            rate: 20.0,
            threshold: 3,
            cool_down: Duration::from_secs(1),
            up: Duration::from_secs(1),
            after: Duration::from_secs(2),
            outage: Duration::from_secs(10),
            program,
        }
    }
}

/// One process's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostReport {
    /// Calls that reached the exchange while it was down.
    pub hits_down: u64,
    /// What the process counted itself.
    pub counts: HostCounts,
}

/// One group's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Group {
    /// Per process, by index.
    pub hosts: Vec<HostReport>,
    /// The calls that reached the dead exchange in each burst, in order: the
    /// first is the trip (each host's failures before its breaker opened),
    /// each later one a cool-down's probes, fleet-wide. A burst is calls
    /// less than half a cool-down apart.
    pub bursts: Vec<u64>,
    /// From the exchange's return to the last process's first answered
    /// call (`None` if one never got one).
    pub recovery: Option<Duration>,
}

impl Group {
    /// Calls that reached the dead exchange, all processes.
    pub fn hits_down(&self) -> u64 {
        self.hosts.iter().map(|h| h.hits_down).sum()
    }

    /// The probe bursts: every burst after the trip.
    pub fn probe_bursts(&self) -> &[u64] {
        self.bursts.get(1..).unwrap_or(&[])
    }

    /// The most probes in one cool-down, fleet-wide.
    pub fn most_probes(&self) -> u64 {
        self.probe_bursts().iter().copied().max().unwrap_or(0)
    }
}

/// What the run measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// The scenario.
    pub demo: FleetDemo,
    /// The processes joined to one fleet.
    pub fleet: Group,
    /// The processes alone.
    pub alone: Group,
}

/// A child process of the demo.
struct HostProcess {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl HostProcess {
    fn spawn(program: &PathBuf, a: &HostArgs) -> std::io::Result<Self> {
        let mut child = Command::new(program)
            .arg("--host")
            .args(a.to_args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            unreachable!("both piped")
        };
        Ok(Self { child, stdin, stdout: BufReader::new(stdout) })
    }

    fn say(&mut self, s: &str) -> std::io::Result<()> {
        writeln!(self.stdin, "{s}").and_then(|()| self.stdin.flush())
    }

    fn line(&mut self) -> std::io::Result<String> {
        let mut l = String::new();
        if self.stdout.read_line(&mut l)? == 0 {
            let status = self.child.wait()?;
            return Err(std::io::Error::other(format!("a host exited early ({status})")));
        }
        Ok(l)
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        // A host stops when its input closes; one that does not, is killed.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the scenario: a Redis (found or started), the exchange, both
/// groups of processes, the outage.
pub fn run(demo: FleetDemo) -> Result<Report, Box<dyn std::error::Error>> {
    if demo.hosts == 0 || demo.hosts > 64 {
        return Err(format!("--hosts must be between 1 and 64, not {}", demo.hosts).into());
    }
    let redis = redis::Redis::find_or_start()?;
    let exchange = Exchange::start()?;
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let ns = format!("tripwire-demo-{}-{nanos}", std::process::id());
    let mut children = Vec::new();
    for fleet in [true, false] {
        for index in 0..demo.hosts {
            let a = HostArgs {
                fleet,
                index,
                port: exchange.port,
                rate: demo.rate,
                threshold: demo.threshold,
                cool_down: demo.cool_down,
                link: fleet.then(|| (redis.url.clone(), ns.clone())),
            };
            children.push(HostProcess::spawn(&demo.program, &a)?);
        }
    }
    for c in &mut children {
        let l = c.line()?;
        if l.trim() != "ready" {
            return Err(format!("a host said {l:?} instead of ready").into());
        }
    }
    for c in &mut children {
        c.say("go")?;
    }
    std::thread::sleep(demo.up);
    exchange.set_down(true);
    std::thread::sleep(demo.outage);
    let up_at = exchange.set_down(false);
    std::thread::sleep(demo.after);
    let mut counts = Vec::new();
    for c in &mut children {
        c.say("stop")?;
    }
    for c in &mut children {
        let l = c.line()?;
        counts.push(HostCounts::parse(&l).ok_or_else(|| format!("a host said {l:?}"))?);
    }
    drop(children);
    let hits = exchange.hits();
    let group = |fleet: bool, counts: &[HostCounts]| {
        let mine: Vec<Hit> = hits.iter().copied().filter(|h| h.fleet == fleet).collect();
        summarise(&mine, counts, up_at, demo.cool_down)
    };
    let (f, a) = counts.split_at(demo.hosts);
    Ok(Report { fleet: group(true, f), alone: group(false, a), demo })
}

/// One group's figures from the exchange's log of its calls.
fn summarise(hits: &[Hit], counts: &[HostCounts], up_at: Duration, cool: Duration) -> Group {
    let down: Vec<&Hit> = hits.iter().filter(|h| h.down).collect();
    let hosts = counts
        .iter()
        .enumerate()
        .map(|(i, c)| HostReport {
            hits_down: down.iter().filter(|h| h.host == i).count() as u64,
            counts: *c,
        })
        .collect();
    let mut bursts: Vec<u64> = Vec::new();
    let mut last: Option<Duration> = None;
    for h in &down {
        match last {
            Some(t) if h.at.saturating_sub(t) < cool / 2 => *bursts.last_mut().expect("one started") += 1,
            _ => bursts.push(1),
        }
        last = Some(h.at);
    }
    let back: Option<Vec<Duration>> = (0..counts.len())
        .map(|i| hits.iter().find(|h| h.host == i && !h.down && h.at > up_at).map(|h| h.at - up_at))
        .collect();
    Group { hosts, bursts, recovery: back.and_then(|v| v.into_iter().max()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(host: usize, ms: u64, down: bool) -> Hit {
        Hit { fleet: true, host, at: Duration::from_millis(ms), down }
    }

    #[test]
    fn calls_less_than_half_a_cool_down_apart_are_one_burst() {
        let hits = [
            hit(0, 900, false),
            hit(0, 1000, true),
            hit(1, 1040, true),
            hit(0, 1090, true),
            hit(1, 2100, true),
            hit(0, 3150, true),
            hit(2, 3600, true),
            hit(1, 5000, false),
            hit(0, 5100, false),
        ];
        let counts = [HostCounts::default(); 3];
        let cool = Duration::from_secs(1);
        let g = summarise(&hits, &counts, Duration::from_millis(4500), cool);
        assert_eq!(g.bursts, [3, 1, 2]);
        assert_eq!(g.most_probes(), 2);
        assert_eq!(g.hosts.iter().map(|h| h.hits_down).collect::<Vec<_>>(), [3, 2, 1]);
        assert_eq!(g.hits_down(), 6);
        // Host 2 never got an answer after the return.
        assert_eq!(g.recovery, None);
        let g = summarise(&hits, &counts[..2], Duration::from_millis(4500), cool);
        assert_eq!(g.recovery, Some(Duration::from_millis(600)));
    }
}
