//! The command line: a few flags, each with a default.

use std::path::PathBuf;
use std::time::Duration;

use crate::Config;
use crate::progress::Live;
use crate::timeline::Pattern;

/// The help text.
pub const HELP: &str = "\
tripwire-demo: an exchange outage, replayed on 127.0.0.1 and measured.

A simulated exchange goes down (maintenance answering 503, then accepting
connections and never answering) and comes back. A naive client (timeout
only) and one behind tripwire (timeout, bulkhead, breaker, retry with a
budget, stale order books) poll it side by side; the table and the chart
show what each did to the exchange and what its caller saw.

USAGE:
    cargo run --release -p tripwire-demo -- [FLAGS]

FLAGS:
    --rate <N>        requests per second per client      [default: 10]
    --outage <T>      how long the exchange is down,
                      e.g. 30m, 90s, 1h                   [default: 30m]
    --scale <X>       replay X times faster than real life [default: 72]
    --pattern <P>     503, hang or mixed                  [default: mixed]
    --out <DIR>       where the chart and table go        [default: target/outage]
    --seed <N>        seed of the random 503s and jitter  [default: 7]
    --plain           progress as plain lines, never redrawn
    --quiet           no progress display
    -h, --help        this text
";

/// What the command line asked for.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// Run with this config.
    Run(Config),
    /// Print [`HELP`].
    Help,
}

/// Reads the flags (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut c = Config::default();
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
            _ => (flag.clone(), None),
        };
        let mut value = || {
            inline.clone().or_else(|| args.next()).ok_or_else(|| format!("{name} needs a value (see --help)"))
        };
        match name.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--rate" => c.rate = positive(&name, &value()?)?,
            "--scale" => c.scale = positive(&name, &value()?)?,
            "--outage" => c.outage = duration(&value()?)?,
            "--pattern" => {
                let v = value()?;
                c.pattern =
                    Pattern::parse(&v).ok_or(format!("--pattern: {v:?} is not one of 503, hang, mixed"))?;
            }
            "--out" => c.out = Some(PathBuf::from(value()?)),
            "--seed" => {
                let v = value()?;
                c.seed = v.parse().map_err(|_| format!("--seed: {v:?} is not a whole number"))?;
            }
            "--plain" => c.live = Live::Plain,
            "--quiet" => c.live = Live::Off,
            other => return Err(format!("unknown flag {other:?} (see --help)")),
        }
    }
    // Each client must not start more than a few thousand requests a second.
    if c.rate * c.scale > 5_000.0 {
        return Err(format!(
            "--rate {} at --scale {} is {:.0} requests per second per client in real time; keep it under 5000",
            c.rate,
            c.scale,
            c.rate * c.scale
        ));
    }
    Ok(Command::Run(c))
}

fn positive(name: &str, v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("{name}: {v:?} is not a positive number")),
    }
}

/// `30m`, `90s`, `1h`, `1800` (seconds).
fn duration(v: &str) -> Result<Duration, String> {
    let bad = || format!("--outage: {v:?} is not a duration such as 30m, 90s or 1h");
    let (num, unit) = match v.find(|ch: char| !ch.is_ascii_digit() && ch != '.') {
        Some(i) => v.split_at(i),
        None => (v, "s"),
    };
    let n: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(bad()),
    };
    if !(1.0..=86_400.0).contains(&secs) {
        return Err(format!("--outage: {v:?} must be between 1s and 24h"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Config, String> {
        match parse(args.iter().map(|s| (*s).to_owned()))? {
            Command::Run(c) => Ok(c),
            Command::Help => Err("help".into()),
        }
    }

    #[test]
    fn defaults_flags_and_errors() {
        assert_eq!(run(&[]), Ok(Config::default()));
        let c = run(&["--rate", "5", "--outage=90s", "--pattern", "hang", "--seed", "3", "--quiet"]).unwrap();
        assert_eq!(
            (c.rate, c.outage, c.pattern, c.seed, c.live),
            (5.0, Duration::from_secs(90), Pattern::Hang, 3, Live::Off)
        );
        assert_eq!(run(&["--outage", "1h"]).unwrap().outage, Duration::from_secs(3600));
        assert_eq!(parse(["--help".to_owned()]), Ok(Command::Help));
        assert_eq!(run(&["--rate"]), Err("--rate needs a value (see --help)".into()));
        assert_eq!(run(&["--rate", "-1"]), Err("--rate: \"-1\" is not a positive number".into()));
        assert!(run(&["--pattern", "down"]).unwrap_err().contains("not one of 503, hang, mixed"));
        assert!(run(&["--outage", "3 weeks"]).unwrap_err().contains("not a duration"));
        assert_eq!(run(&["--fast"]), Err("unknown flag \"--fast\" (see --help)".into()));
        assert!(run(&["--rate", "100", "--scale", "1000"]).unwrap_err().contains("keep it under 5000"));
    }
}
