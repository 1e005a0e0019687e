//! The timeline chart, written as SVG by hand: requests reaching the
//! exchange per second, the breaker's state as a band, and how long the
//! caller waited for an answer on average, for both clients, with the
//! phases marked.

use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tripwire::State;

use crate::Report;
use crate::stats::{Bucket, ClientStats};
use crate::timeline::Phase;

const W: f64 = 960.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const NAIVE: &str = "#d9480f";
const GUARDED: &str = "#1864ab";

/// The chart as an SVG document.
pub fn render(r: &Report) -> String {
    let total = r.timeline.total().as_secs_f64();
    let x = |t: f64| LEFT + (W - LEFT - RIGHT) * (t / total).clamp(0.0, 1.0);
    let mut svg = String::new();
    let h = 572.0;
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="{W}" height="{h}" fill="white"/>"#);
    let c = &r.config;
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="22" font-size="16" font-weight="bold">An exchange outage at {} req/s: naive client vs tripwire</text>"#,
        c.rate
    );
    let _ = writeln!(
        svg,
        r##"<text x="{LEFT}" y="40" fill="#555">{} min outage ({}), timeout {} s, cool-down {} s; scenario clock (replayed {}x faster)</text>"##,
        c.outage.as_secs() / 60,
        c.pattern,
        c.timeout.as_secs_f64(),
        c.cool_down.as_secs_f64(),
        c.scale
    );

    // Phases, behind every panel.
    let (top, bottom) = (52.0, 530.0);
    for span in r.timeline.spans() {
        let (x0, x1) = (x(span.start.as_secs_f64()), x(span.end.as_secs_f64()));
        let fill = match span.phase {
            Phase::Healthy | Phase::Recovered => "#ebfbee",
            Phase::RateLimited => "#fff3bf",
            Phase::Maintenance => "#ffe3e3",
            Phase::Hang => "#f3d9fa",
        };
        let _ = writeln!(
            svg,
            r#"<rect x="{x0:.1}" y="{top}" width="{:.1}" height="{}" fill="{fill}"/>"#,
            x1 - x0,
            bottom - top
        );
        // A label only where it fits.
        let name = span.phase.name();
        if x1 - x0 > 6.0 * name.len() as f64 + 4.0 {
            let _ =
                writeln!(svg, r##"<text x="{:.1}" y="{}" fill="#333">{name}</text>"##, x0 + 4.0, top + 14.0);
        }
    }

    let width = total / r.shared.naive.buckets.len() as f64;
    let rate = |s: &ClientStats| -> Vec<f64> {
        s.buckets.iter().map(|b| b.hits.load(Ordering::Relaxed) as f64 / width).collect()
    };
    let mean = |s: &ClientStats| -> Vec<f64> {
        let mean = |b: &Bucket| {
            let n = b.answered.load(Ordering::Relaxed).max(1);
            b.sum_latency.load(Ordering::Relaxed) as f64 / n as f64 / 1e9
        };
        s.buckets.iter().map(mean).collect()
    };
    let (n_rate, g_rate) = (rate(&r.shared.naive), rate(&r.shared.tripwire));
    let peak = nice(n_rate.iter().chain(&g_rate).fold(1.0f64, |a, &b| a.max(b)));
    panel(
        &mut svg,
        "requests reaching the exchange per second",
        100.0,
        160.0,
        peak,
        "/s",
        &[(&n_rate, NAIVE), (&g_rate, GUARDED)],
        width,
        &x,
    );

    // The breaker's state.
    let band = (310.0, 24.0);
    let _ = writeln!(svg, r##"<text x="{LEFT}" y="{}" fill="#333">tripwire's breaker</text>"##, band.0 - 6.0);
    let mut states = vec![(Duration::ZERO, State::Closed)];
    states.extend(r.transitions());
    for (i, (at, state)) in states.iter().enumerate() {
        let end = states.get(i + 1).map_or(total, |n| n.0.as_secs_f64());
        let (x0, x1) = (x(at.as_secs_f64()), x(end));
        let fill = match state {
            State::Closed | State::Disabled => "#2f9e44",
            State::HalfOpen => "#f59f00",
            State::Open | State::ForcedOpen => "#e03131",
        };
        let _ = writeln!(
            svg,
            r#"<rect x="{x0:.2}" y="{}" width="{:.2}" height="{}" fill="{fill}"/>"#,
            band.0,
            (x1 - x0).max(0.5),
            band.1
        );
    }
    let mut lx = LEFT + 160.0;
    for (name, fill) in [("closed", "#2f9e44"), ("open", "#e03131"), ("half-open (probe)", "#f59f00")] {
        let _ =
            writeln!(svg, r#"<rect x="{lx}" y="{}" width="10" height="10" fill="{fill}"/>"#, band.0 - 16.0);
        let _ = writeln!(svg, r#"<text x="{}" y="{}">{name}</text>"#, lx + 14.0, band.0 - 6.0);
        lx += 130.0;
    }

    let (n_mean, g_mean) = (mean(&r.shared.naive), mean(&r.shared.tripwire));
    let top_s = nice(n_mean.iter().chain(&g_mean).fold(c.timeout.as_secs_f64(), |a, &b| a.max(b)));
    panel(
        &mut svg,
        "time the caller waited for an answer, mean per slice (s)",
        380.0,
        140.0,
        top_s,
        "s",
        &[(&n_mean, NAIVE), (&g_mean, GUARDED)],
        width,
        &x,
    );

    // Time axis in minutes.
    let step = if total > 1200.0 {
        300.0
    } else if total > 300.0 {
        60.0
    } else {
        30.0
    };
    let mut t = 0.0;
    while t <= total + 1e-9 {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{}" text-anchor="middle" fill="#555">{}:{:02}</text>"##,
            x(t),
            bottom + 16.0,
            (t / 60.0) as u64,
            (t % 60.0) as u64
        );
        t += step;
    }
    let _ = writeln!(
        svg,
        r##"<text x="{}" y="{}" text-anchor="end" fill="#555">scenario time (min:s)</text>"##,
        W - RIGHT,
        bottom + 34.0
    );
    let mut lx = LEFT;
    for (name, color) in [("naive (timeout only)", NAIVE), ("tripwire", GUARDED)] {
        let _ = writeln!(
            svg,
            r#"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="{color}" stroke-width="3"/>"#,
            lx + 24.0,
            y = bottom + 30.0
        );
        let _ = writeln!(svg, r#"<text x="{}" y="{}">{name}</text>"#, lx + 30.0, bottom + 34.0);
        lx += 190.0;
    }
    svg.push_str("</svg>\n");
    svg
}

/// One line panel: series over the timeline, `top` to `top + height`.
#[allow(clippy::too_many_arguments, reason = "a private drawing helper called twice")]
fn panel(
    svg: &mut String,
    title: &str,
    top: f64,
    height: f64,
    y_max: f64,
    unit: &str,
    series: &[(&Vec<f64>, &str)],
    width: f64,
    x: &dyn Fn(f64) -> f64,
) {
    let y = |v: f64| top + height - height * (v / y_max).clamp(0.0, 1.0);
    let _ = writeln!(
        svg,
        r##"<text x="{LEFT}" y="{}" fill="#333" font-weight="bold">{title}</text>"##,
        top - 6.0
    );
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT}" y1="{}" x2="{}" y2="{}" stroke="#999"/>"##,
        top + height,
        W - RIGHT,
        top + height
    );
    for frac in [0.0, 0.5, 1.0] {
        let v = y_max * frac;
        let _ = writeln!(
            svg,
            r##"<text x="{}" y="{:.1}" text-anchor="end" fill="#555">{} {unit}</text>"##,
            LEFT - 6.0,
            y(v) + 4.0,
            short(v)
        );
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{:.1}" x2="{}" y2="{:.1}" stroke="#ddd"/>"##,
            y(v),
            W - RIGHT,
            y(v)
        );
    }
    for (values, color) in series {
        let mut points = String::new();
        for (i, v) in values.iter().enumerate() {
            let _ = write!(points, "{:.1},{:.1} ", x((i as f64 + 0.5) * width), y(*v));
        }
        let _ =
            writeln!(svg, r#"<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"/>"#);
    }
}

/// The smallest of 1, 2, 2.5 or 5 times a power of ten at or above `v`
/// (with a little room).
fn nice(v: f64) -> f64 {
    let p = 10f64.powf(v.max(1e-9).log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].into_iter().map(|m| m * p).find(|&n| n >= v * 1.05).unwrap_or(10.0 * p)
}

fn short(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}
