//! `cargo run --release -p tripwire-demo`: an exchange outage, replayed
//! and measured. See `--help`.

use std::process::ExitCode;

use tripwire_demo::args;
use tripwire_demo::memory::CountingAlloc;
use tripwire_demo::{chart, table};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fn main() -> ExitCode {
    // `--help`, `--version` and bad flags: clap prints and exits (0 or 2).
    let config = args::parse(std::env::args_os()).unwrap_or_else(|e| e.exit());
    let c = &config;
    println!(
        "A simulated exchange on 127.0.0.1 goes down for {} min ({}); two clients poll it at {} req/s each.\n\
         Replayed {}x faster than real life; times below are on the scenario's clock.\n",
        c.outage.as_secs() / 60,
        c.pattern,
        c.rate,
        c.scale
    );
    let report = match tripwire_demo::run(config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let table = table::render(&report);
    println!("\n{table}");
    if let Some(dir) = &report.config.out {
        let written = std::fs::create_dir_all(dir)
            .and_then(|()| chart::render(&report))
            .and_then(|svg| std::fs::write(dir.join("outage.svg"), svg))
            .and_then(|()| std::fs::write(dir.join("table.md"), &table));
        match written {
            Ok(()) => println!(
                "Chart: {}\nTable: {}",
                dir.join("outage.svg").display(),
                dir.join("table.md").display()
            ),
            Err(e) => {
                eprintln!("error: writing to {}: {e}", dir.display());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
