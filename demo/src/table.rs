//! The table printed at the end (Markdown, so it can be pasted as is).

use std::fmt::Write;
use std::time::Duration;

use crate::stats::FAST;
use crate::{Report, Summary};

/// The results of both clients side by side.
pub fn render(r: &Report) -> String {
    let c = &r.config;
    let mut t = String::new();
    let head =
        format!("{} min outage ({}), {} req/s", fmt_num(c.outage.as_secs() / 60), c.pattern, trim(c.rate));
    let _ = writeln!(t, "| {head} | naive (timeout only) | tripwire |");
    let _ = writeln!(t, "| --- | ---: | ---: |");
    let mut row = |name: &str, f: &dyn Fn(&Summary) -> String| {
        let _ = writeln!(t, "| {name} | {} | {} |", f(&r.naive), f(&r.tripwire));
    };
    row("requests made by the caller", &|s| fmt_num(s.requests));
    row("requests that reached the exchange while it was down", &|s| fmt_num(s.hits_down));
    row(&format!("failures answered fast (< {} ms)", FAST.as_millis()), &|s| fmt_num(s.fast_failures));
    row("failures answered slowly", &|s| fmt_num(s.slow_failures));
    row("peak requests in flight to the exchange", &|s| fmt_num(s.peak_in_flight));
    row("peak caller requests waiting", &|s| fmt_num(s.peak_waiting));
    row("calls refused by the full bulkhead", &|s| fmt_num(s.bulkhead_full));
    row("peak heap of the client's runtime", &|s| s.peak_heap.map_or("not measured".into(), fmt_bytes));
    row("caller latency p50 / p99 / max", &|s| {
        format!("{} / {} / {}", fmt_dur(s.p50), fmt_dur(s.p99), fmt_dur(s.max))
    });
    row("order books served stale (oldest)", &|s| {
        if s.stale == 0 { "0".into() } else { format!("{} ({})", fmt_num(s.stale), fmt_dur(s.stale_max_age)) }
    });
    row("balances served stale", &|s| fmt_num(s.stale_balances));
    row("balance requests answered with an error", &|s| fmt_num(s.balance_errors));
    row("first success after the exchange came back", &|s| s.recovery.map_or("none".into(), fmt_dur));
    let _ = writeln!(
        t,
        "\nTimes are on the scenario's clock (the run is {}x faster than real life: {} of wall time). \
         Heap: bytes allocated and not yet freed by each client's own runtime thread (a counting \
         allocator), highest point above its start.",
        trim(c.scale),
        fmt_dur(r.wall)
    );
    t
}

fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// `12,345`.
pub fn fmt_num(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `850 µs`, `12 ms`, `2.0 s`, `4 min 10 s`.
pub fn fmt_dur(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-3 {
        format!("{:.0} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else if s < 60.0 {
        format!("{s:.1} s")
    } else {
        format!("{} min {:02} s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

/// `1.2 MiB`, `640 KiB`.
pub fn fmt_bytes(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / f64::from(1 << 20))
    } else {
        format!("{} KiB", b / 1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(
            (fmt_num(0), fmt_num(999), fmt_num(18_000), fmt_num(1_234_567)),
            ("0".into(), "999".into(), "18,000".into(), "1,234,567".into())
        );
        assert_eq!(fmt_dur(Duration::from_micros(3)), "3 µs");
        assert_eq!(fmt_dur(Duration::from_millis(2000)), "2.0 s");
        assert_eq!(fmt_dur(Duration::from_secs(250)), "4 min 10 s");
        assert_eq!(fmt_bytes(3 << 19), "1.5 MiB");
        assert_eq!(trim(72.0), "72");
    }
}
