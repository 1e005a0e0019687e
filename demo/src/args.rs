//! The command line, declared with clap: every flag with its default, and
//! a parser per value that says what is wrong with a bad one.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

use crate::Config;
use crate::progress::Live;
use crate::timeline::Pattern;

/// An exchange outage, replayed on 127.0.0.1 and measured.
///
/// A simulated exchange goes down (maintenance answering 503, then accepting
/// connections and never answering) and comes back. A naive client (timeout
/// only) and one behind tripwire (timeout, bulkhead, breaker, retry with a
/// budget, stale order books) poll it side by side; the table and the chart
/// show what each did to the exchange and what its caller saw.
#[derive(Debug, Parser)]
#[command(
    name = "tripwire-demo",
    version,
    override_usage = "cargo run --release -p tripwire-demo -- [OPTIONS]\n       tripwire-demo [OPTIONS]"
)]
struct Args {
    /// Requests per second per client
    #[arg(long, value_name = "N", default_value = "10", value_parser = positive, allow_negative_numbers = true)]
    rate: f64,
    /// How long the exchange is down, e.g. 30m, 90s, 1h (a bare number is seconds)
    #[arg(long, value_name = "T", default_value = "30m", value_parser = duration)]
    outage: Duration,
    /// Replay X times faster than real life
    #[arg(long, value_name = "X", default_value = "72", value_parser = positive, allow_negative_numbers = true)]
    scale: f64,
    /// How the exchange fails while it is down
    #[arg(long, value_name = "P", value_enum, default_value_t = Pattern::Mixed)]
    pattern: Pattern,
    /// Where the chart (outage.svg) and the table (table.md) go
    #[arg(long, value_name = "DIR", default_value = "target/outage")]
    out: PathBuf,
    /// Seed of the random 503s and the backoff jitter
    #[arg(long, value_name = "N", default_value_t = 7)]
    seed: u64,
    /// Progress as plain lines every few seconds, never redrawn
    #[arg(long, overrides_with = "quiet")]
    plain: bool,
    /// No progress display
    #[arg(long, overrides_with = "plain")]
    quiet: bool,
}

/// Reads the command line (the program's name first, as in
/// `std::env::args_os`). `--help`, `--version` and every mistake come back
/// as a [`clap::Error`]: its `exit()` prints it where it belongs and exits
/// with the right code.
pub fn parse<I, T>(args: I) -> Result<Config, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let a = Args::try_parse_from(args)?;
    // Each client must not start more than a few thousand requests a second.
    if a.rate * a.scale > 5_000.0 {
        let msg = format!(
            "--rate {} at --scale {} is {:.0} requests per second per client in real time; keep it under 5000",
            a.rate,
            a.scale,
            a.rate * a.scale
        );
        return Err(Args::command().error(ErrorKind::ValueValidation, msg));
    }
    let live = match (a.plain, a.quiet) {
        (_, true) => Live::Off,
        (true, _) => Live::Plain,
        _ => Live::Auto,
    };
    Ok(Config {
        rate: a.rate,
        outage: a.outage,
        scale: a.scale,
        pattern: a.pattern,
        out: Some(a.out),
        seed: a.seed,
        live,
        ..Config::default()
    })
}

fn positive(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err("not a positive number".into()),
    }
}

/// `30m`, `90s`, `1h`, `1.5h`, `1800` (seconds). Written here rather than
/// taken from humantime, which rejects a bare number and a fraction.
fn duration(v: &str) -> Result<Duration, String> {
    let bad = || "not a duration such as 30m, 90s or 1h".to_owned();
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
        return Err("must be between 1s and 24h".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Config, String> {
        let argv = std::iter::once("tripwire-demo").chain(args.iter().copied());
        parse(argv).map_err(|e| e.to_string())
    }

    #[test]
    fn no_flags_is_the_default_config() {
        assert_eq!(run(&[]), Ok(Config::default()));
    }

    #[test]
    fn every_flag_sets_its_field() {
        let c = run(&["--rate", "5", "--outage=90s", "--pattern", "hang", "--seed", "3", "--quiet"]).unwrap();
        assert_eq!(
            (c.rate, c.outage, c.pattern, c.seed, c.live),
            (5.0, Duration::from_secs(90), Pattern::Hang, 3, Live::Off)
        );
        let c = run(&["--scale", "2.5", "--pattern=503", "--out", "/tmp/x", "--plain"]).unwrap();
        assert_eq!(
            (c.scale, c.pattern, c.out, c.live),
            (2.5, Pattern::Unavailable, Some(PathBuf::from("/tmp/x")), Live::Plain)
        );
        assert_eq!(run(&["--outage", "1h"]).unwrap().outage, Duration::from_secs(3600));
        assert_eq!(run(&["--outage", "1800"]).unwrap().outage, Duration::from_secs(1800));
        assert_eq!(run(&["--outage", "1.5m"]).unwrap().outage, Duration::from_secs(90));
        // The last of --plain and --quiet wins, as it always did.
        assert_eq!(run(&["--quiet", "--plain"]).unwrap().live, Live::Plain);
        assert_eq!(run(&["--plain", "--quiet"]).unwrap().live, Live::Off);
    }

    #[test]
    fn bad_values_name_the_flag_and_the_problem() {
        let err = |args: &[&str]| run(args).unwrap_err();
        assert!(err(&["--rate"]).contains("a value is required for '--rate <N>'"), "{}", err(&["--rate"]));
        assert!(
            err(&["--rate", "-1"]).contains("invalid value '-1' for '--rate <N>': not a positive number")
        );
        assert!(err(&["--scale", "inf"]).contains("'--scale <X>': not a positive number"));
        assert!(err(&["--pattern", "down"]).contains("[possible values: 503, hang, mixed]"));
        assert!(err(&["--outage", "3 weeks"]).contains("'--outage <T>': not a duration such as 30m"));
        assert!(err(&["--outage", "0s"]).contains("must be between 1s and 24h"));
        assert!(err(&["--seed", "x"]).contains("invalid value 'x' for '--seed <N>'"));
        assert!(err(&["--fast"]).contains("unexpected argument '--fast'"));
        assert!(err(&["--rate", "100", "--scale", "1000"]).contains("100000 requests per second"));
    }

    #[test]
    fn help_lists_every_flag_with_its_default() {
        let help = Args::command().render_long_help().to_string();
        for flag in
            ["--rate <N>", "--outage <T>", "--scale <X>", "--pattern <P>", "--out <DIR>", "--seed <N>"]
        {
            assert!(help.contains(flag), "{flag}\n{help}");
        }
        for text in ["--plain", "--quiet", "[default: 30m]", "[default: mixed]", "[default: target/outage]"] {
            assert!(help.contains(text), "{text}\n{help}");
        }
        assert!(help.contains("cargo run --release -p tripwire-demo -- [OPTIONS]"), "{help}");
        Args::command().debug_assert();
    }
}
