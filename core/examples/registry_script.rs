//! Runs a script of breaker actions against a [`Registry`] and prints its
//! Prometheus text: `cargo run -p tripwire-breaker --example registry_script <
//! script`. The Python tests run the same script against the Python
//! registry and compare the two texts, so that both bindings are held to
//! one metric schema.
//!
//! One action a line, words separated by spaces (so names have none):
//!
//! | line | does |
//! | --- | --- |
//! | `new NAME N` | registers a breaker that trips after `N` consecutive failures |
//! | `success NAME`, `failure NAME`, `ignored NAME` | one admitted call with that outcome |
//! | `rejected NAME` | one call the breaker must refuse |
//! | `force_open NAME`, `disable NAME`, `reset NAME` | the manual modes |
//!
//! Blank lines and lines starting with `#` are skipped. A line that cannot
//! be carried out stops the script with its number, on stderr, and exit
//! status 2.

use std::io::Read;
use std::process::ExitCode;

use tripwire::{BreakerConfig, Outcome, Registry};

fn run(script: &str) -> Result<Registry, String> {
    let registry = Registry::new();
    for (i, line) in script.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |e: String| format!("line {}: {e}: {line:?}", i + 1);
        let words: Vec<&str> = line.split(' ').collect();
        let (action, name) = match words[..] {
            [action, name, ..] => (action, name),
            _ => return Err(at("expected an action and a name".into())),
        };
        if action == "new" {
            let [_, _, n] = words[..] else { return Err(at("expected `new NAME N`".into())) };
            let n: u32 = n.parse().map_err(|e| at(format!("failure threshold: {e}")))?;
            let config =
                BreakerConfig::builder().failure_threshold(n).build().map_err(|e| at(e.to_string()))?;
            registry.breaker(name, || config);
            continue;
        }
        if words.len() != 2 {
            return Err(at("expected `ACTION NAME`".into()));
        }
        let b = registry.get_breaker(name).ok_or_else(|| at("no such breaker (`new` it first)".into()))?;
        let outcome = match action {
            "success" => Outcome::Success,
            "failure" => Outcome::Failure,
            "ignored" => Outcome::Ignored,
            "rejected" => match b.try_acquire() {
                Err(_) => continue,
                Ok(_) => return Err(at("the breaker admitted the call".into())),
            },
            "force_open" => {
                b.force_open();
                continue;
            }
            "disable" => {
                b.disable();
                continue;
            }
            "reset" => {
                b.reset();
                continue;
            }
            _ => return Err(at("unknown action".into())),
        };
        let ticket = b.try_acquire().map_err(|r| at(format!("the breaker refused the call: {r:?}")))?;
        b.record(ticket, outcome);
    }
    Ok(registry)
}

fn main() -> ExitCode {
    let mut script = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut script) {
        eprintln!("registry_script: reading stdin: {e}");
        return ExitCode::from(2);
    }
    match run(&script) {
        Ok(registry) => {
            print!("{}", registry.prometheus());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("registry_script: {e}");
            ExitCode::from(2)
        }
    }
}
