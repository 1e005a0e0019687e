//! `cargo run --release -p tripwire-demo --bin fleet`: several client
//! processes on one fleet, against one exchange that goes down. See
//! `--help`.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use tripwire_demo::fleet::{self, FleetDemo, host};

/// Client processes sharing one fleet over Redis, next to as many alone,
/// against one exchange that goes down: how many calls reach the dead
/// exchange, and how many probes per cool-down, fleet-wide.
///
/// Needs a redis-server: TRIPWIRE_DEMO_REDIS=redis://HOST:PORT, or
/// redis-server on the PATH (started on a free loopback port, and stopped).
#[derive(Debug, Parser)]
#[command(name = "fleet", override_usage = "cargo run --release -p tripwire-demo --bin fleet -- [OPTIONS]")]
struct Args {
    /// Client processes per group
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    hosts: u16,
    /// Seconds the exchange is down
    #[arg(long, value_name = "S", default_value_t = 10, value_parser = clap::value_parser!(u16).range(2..=600))]
    outage: u16,
    /// Requests per second per process
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=500))]
    rate: u16,
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--host") {
        return match host::HostArgs::parse(&argv[2..]).and_then(|a| host::run(&a)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("fleet host: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let a = Args::parse();
    let program = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: cannot find this program to start its hosts: {e}");
            return ExitCode::FAILURE;
        }
    };
    let demo = FleetDemo {
        hosts: a.hosts.into(),
        outage: Duration::from_secs(a.outage.into()),
        rate: a.rate.into(),
        ..FleetDemo::new(program)
    };
    println!(
        "{} + {} client processes, one exchange on 127.0.0.1 down for {} s; about {} s.\n",
        demo.hosts,
        demo.hosts,
        a.outage,
        a.outage + 4
    );
    match fleet::run(demo) {
        Ok(r) => {
            println!("{}", fleet::render(&r));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
