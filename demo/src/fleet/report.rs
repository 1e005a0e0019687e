//! The fleet demo's table: per process and in total, the calls that
//! reached the dead exchange, with the fleet and without; then the probes
//! per cool-down, fleet-wide.

use std::fmt::Write;

use super::{Group, Report};

/// The report as Markdown tables, with a line of explanation each.
pub fn render(r: &Report) -> String {
    let d = &r.demo;
    let mut out = String::new();
    let hosts = d.hosts;
    // Writing to a `String` cannot fail.
    let _ = (|| -> std::fmt::Result {
        writeln!(
            out,
            "{hosts} client processes joined to one fleet over Redis, and {hosts} alone, poll one exchange at \
             {} req/s each; it is down (503) for {} s. Breakers trip after {} failures; cool-down {} ms.\n",
            d.rate,
            d.outage.as_secs_f64(),
            d.threshold,
            d.cool_down.as_millis()
        )?;
        write!(out, "| calls that reached the dead exchange |")?;
        for i in 1..=hosts {
            write!(out, " process {i} |")?;
        }
        writeln!(out, " total |")?;
        writeln!(out, "|---{}|---|", "|---".repeat(hosts))?;
        for (name, g) in [("each process alone", &r.alone), ("one fleet over Redis", &r.fleet)] {
            write!(out, "| {name} |")?;
            for h in &g.hosts {
                write!(out, " {} |", h.hits_down)?;
            }
            writeln!(out, " **{}** |", g.hits_down())?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "| fleet-wide, per cool-down | trip | probes per cool-down (each one) | most | back after the return |"
        )?;
        writeln!(out, "|---|---|---|---|---|")?;
        for (name, g) in [("each process alone", &r.alone), ("one fleet over Redis", &r.fleet)] {
            let probes: Vec<String> = g.probe_bursts().iter().map(u64::to_string).collect();
            writeln!(
                out,
                "| {name} | {} | {} | **{}** | {} |",
                g.bursts.first().copied().unwrap_or(0),
                if probes.is_empty() { "none".into() } else { probes.join(" ") },
                g.most_probes(),
                recovery(g)
            )?;
        }
        let leases: (u64, u64) = r
            .fleet
            .hosts
            .iter()
            .fold((0, 0), |(w, l), h| (w + h.counts.leases_won, l + h.counts.leases_lost));
        writeln!(
            out,
            "\nThe fleet's probe leases: {} won, {} lost to another process (each lost one held that \
             process's breaker until the winner's probe answered).",
            leases.0, leases.1
        )
    })();
    out
}

fn recovery(g: &Group) -> String {
    match g.recovery {
        Some(t) => format!("{} ms", t.as_millis()),
        None => "not back".into(),
    }
}
