//! The timeline chart, drawn with plotters as SVG: requests reaching the
//! exchange per second, the breaker's state as a band, and how long the
//! caller waited for an answer on average, for both clients, with the
//! phases marked.
//!
//! plotters is built without a font backend: its SVG text is `<text>` that
//! the viewer lays out, so drawing needs no system font.

use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use tripwire::State;

use crate::Report;
use crate::stats::{Bucket, ClientStats};
use crate::table::fmt_num;
use crate::timeline::Phase;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<io::Error>>;

const W: u32 = 960;
const H: u32 = 610;
/// Room for the value labels left of every panel; the panels line up.
const LEFT: u32 = 70;
const RIGHT: u32 = 20;
const NAIVE: RGBColor = RGBColor(0xd9, 0x48, 0x0f);
const GUARDED: RGBColor = RGBColor(0x18, 0x64, 0xab);
const INK: RGBColor = RGBColor(0x33, 0x33, 0x33);
const MUTED: RGBColor = RGBColor(0x55, 0x55, 0x55);
const GRID: RGBColor = RGBColor(0xcc, 0xcc, 0xcc);
const CLOSED: RGBColor = RGBColor(0x2f, 0x9e, 0x44);
const OPEN: RGBColor = RGBColor(0xe0, 0x31, 0x31);
const HALF_OPEN: RGBColor = RGBColor(0xf5, 0x9f, 0x00);

/// The chart as an SVG document.
pub fn render(r: &Report) -> io::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        draw(r, &root)
            .and_then(|()| root.present())
            .map_err(|e| io::Error::other(format!("drawing the chart: {e}")))?;
    }
    Ok(svg)
}

/// A text style of `px` pixels (plotters writes 1/1.24 of its size into
/// the SVG).
fn font(px: f64) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", px * 1.24).into_font()).color(&INK)
}

fn bold(px: f64) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", px * 1.24, FontStyle::Bold).into_font()).color(&INK)
}

fn minutes(d: Duration) -> f64 {
    d.as_secs_f64() / 60.0
}

fn draw(r: &Report, root: &Area) -> DrawResult {
    root.fill(&WHITE)?;
    let c = &r.config;
    let title = format!("An exchange outage at {} req/s: naive client vs tripwire", c.rate);
    root.draw(&Text::new(title, (LEFT as i32, 10), bold(16.0)))?;
    let sub = format!(
        "{} min outage ({}), timeout {} s, cool-down {} s; scenario clock (replayed {}x faster)",
        c.outage.as_secs() / 60,
        c.pattern,
        c.timeout.as_secs_f64(),
        c.cool_down.as_secs_f64(),
        c.scale
    );
    root.draw(&Text::new(sub, (LEFT as i32, 32), font(12.0).color(&MUTED)))?;
    let (_, rest) = root.split_vertically(52);
    let (top, rest) = rest.split_vertically(210);
    let (band, rest) = rest.split_vertically(62);
    let (bottom, foot) = rest.split_vertically(240);

    let width = r.timeline.total().as_secs_f64() / r.shared.naive.buckets.len() as f64;
    let rate = |s: &ClientStats| -> Vec<f64> {
        s.buckets.iter().map(|b| b.hits.load(Ordering::Relaxed) as f64 / width).collect()
    };
    let series = [rate(&r.shared.naive), rate(&r.shared.tripwire)];
    let peak = series.iter().flatten().fold(1.0f64, |a, &b| a.max(b));
    Panel {
        title: "requests reaching the exchange per second",
        unit: "/s",
        y_max: nice(peak),
        series,
        phase_names: true,
        time_axis: false,
        mark: None,
    }
    .draw(&top, r)?;

    breaker_band(&band, r)?;

    let mean = |s: &ClientStats| -> Vec<f64> {
        let mean = |b: &Bucket| {
            let n = b.answered.load(Ordering::Relaxed).max(1);
            b.sum_latency.load(Ordering::Relaxed) as f64 / n as f64 / 1e9
        };
        s.buckets.iter().map(mean).collect()
    };
    let series = [mean(&r.shared.naive), mean(&r.shared.tripwire)];
    let timeout = c.timeout.as_secs_f64();
    let peak = series.iter().flatten().fold(timeout, |a, &b| a.max(b));
    Panel {
        title: "time the caller waited for an answer, mean per slice (s)",
        unit: "s",
        y_max: nice(peak),
        series,
        phase_names: false,
        time_axis: true,
        mark: Some((timeout, format!("timeout {} s", short(timeout)))),
    }
    .draw(&bottom, r)?;

    // Which line is which, with what each sent the exchange while it was down.
    let clients =
        [("naive (timeout only)", NAIVE, r.naive.hits_down), ("tripwire", GUARDED, r.tripwire.hits_down)];
    for (y, (name, color, hits)) in (0..).step_by(18).zip(clients) {
        let label = format!("{name}: {} requests reached the exchange while it was down", fmt_num(hits));
        let x = LEFT as i32;
        foot.draw(&PathElement::new(vec![(x, y + 10), (x + 24, y + 10)], color.stroke_width(3)))?;
        foot.draw(&Text::new(label, (x + 30, y + 4), font(12.0)))?;
    }
    Ok(())
}

/// One panel of lines over the timeline, on the phases' colours.
struct Panel {
    title: &'static str,
    unit: &'static str,
    y_max: f64,
    /// The naive client's, then tripwire's, one value per slice.
    series: [Vec<f64>; 2],
    /// Names the phases at the top.
    phase_names: bool,
    /// Labels the time axis below.
    time_axis: bool,
    /// A dashed level with its label.
    mark: Option<(f64, String)>,
}

impl Panel {
    fn draw(&self, area: &Area, r: &Report) -> DrawResult {
        let total = minutes(r.timeline.total());
        let y_max = self.y_max;
        area.draw(&Text::new(self.title, (LEFT as i32, 4), bold(12.0)))?;
        let mut chart = ChartBuilder::on(area)
            .margin_top(22)
            .margin_right(RIGHT)
            .y_label_area_size(LEFT)
            .x_label_area_size(if self.time_axis { 44 } else { 0 })
            .build_cartesian_2d(0f64..total, 0f64..y_max)?;

        let spans = r.timeline.spans();
        chart.draw_series(spans.iter().map(|s| {
            Rectangle::new([(minutes(s.start), 0.0), (minutes(s.end), y_max)], phase_fill(s.phase).filled())
        }))?;

        let ticks = |m: &f64| format!("{}:{:02}", m.floor() as u64, (m.fract() * 60.0).round() as u64);
        let values = |v: &f64| format!("{} {}", short(*v), self.unit);
        let mut mesh = chart.configure_mesh();
        mesh.bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .axis_style(MUTED)
            .x_labels(10)
            .x_label_formatter(&ticks)
            .y_labels(5)
            .y_label_formatter(&values)
            .label_style(font(12.0).color(&MUTED));
        if self.time_axis {
            mesh.x_desc("scenario time (min:s)").axis_desc_style(font(12.0).color(&MUTED));
        }
        mesh.draw()?;

        if self.phase_names {
            // A name only where it fits.
            for s in spans {
                let name = s.phase.name();
                let px = |t: Duration| chart.backend_coord(&(minutes(t), y_max)).0;
                let (text_w, _) = area.estimate_text_size(name, &font(12.0))?;
                if px(s.end) - px(s.start) >= text_w as i32 + 3 {
                    let at = (minutes(s.start), y_max);
                    chart
                        .plotting_area()
                        .draw(&(EmptyElement::at(at) + Text::new(name, (2, 4), font(12.0))))?;
                }
            }
        }

        if let Some((level, label)) = &self.mark {
            chart.draw_series(DashedLineSeries::new([(0.0, *level), (total, *level)], 6, 4, MUTED.into()))?;
            let right = font(11.0).color(&MUTED).pos(Pos::new(HPos::Right, VPos::Bottom));
            chart
                .plotting_area()
                .draw(&(EmptyElement::at((total, *level)) + Text::new(label.clone(), (-4, -3), right)))?;
        }

        let width = total / self.series[0].len().max(1) as f64;
        for (values, color) in self.series.iter().zip([NAIVE, GUARDED]) {
            let points = values.iter().enumerate().map(|(i, v)| ((i as f64 + 0.5) * width, *v));
            chart.draw_series(LineSeries::new(points, color.stroke_width(2)))?;
        }
        Ok(())
    }
}

fn phase_fill(phase: Phase) -> RGBColor {
    match phase {
        Phase::Healthy | Phase::Recovered => RGBColor(0xeb, 0xfb, 0xee),
        Phase::RateLimited => RGBColor(0xff, 0xf3, 0xbf),
        Phase::Maintenance => RGBColor(0xff, 0xe3, 0xe3),
        Phase::Hang => RGBColor(0xf3, 0xd9, 0xfa),
    }
}

fn state_fill(state: State) -> RGBColor {
    match state {
        State::Closed | State::Disabled => CLOSED,
        State::HalfOpen => HALF_OPEN,
        State::Open | State::ForcedOpen => OPEN,
    }
}

/// The breaker's state over the timeline, one colour per state. A
/// half-open stretch is at least a pixel wide, so every probe shows.
fn breaker_band(area: &Area, r: &Report) -> DrawResult {
    let bold = bold(12.0);
    area.draw(&Text::new("tripwire's breaker", (LEFT as i32, 4), bold))?;
    let mut x = LEFT as i32 + 160;
    for (name, fill) in [("closed", CLOSED), ("open", OPEN), ("half-open (probe)", HALF_OPEN)] {
        area.draw(&Rectangle::new([(x, 5), (x + 10, 15)], fill.filled()))?;
        area.draw(&Text::new(name, (x + 14, 4), font(12.0)))?;
        x += 130;
    }
    let total = minutes(r.timeline.total());
    let chart = ChartBuilder::on(area)
        .margin_top(24)
        .margin_bottom(14)
        .margin_right(RIGHT)
        .y_label_area_size(LEFT)
        .build_cartesian_2d(0f64..total, 0f64..1f64)?;
    let mut states = vec![(Duration::ZERO, State::Closed)];
    states.extend(r.transitions());
    let px = |m: f64| chart.backend_coord(&(m, 0.0)).0;
    let height = chart.plotting_area().dim_in_pixel().1 as i32;
    let stretches: Vec<(f64, f64, State)> = states
        .iter()
        .enumerate()
        .map(|(i, &(at, state))| (minutes(at), states.get(i + 1).map_or(total, |n| minutes(n.0)), state))
        .collect();
    // Half-open last, so that a one-pixel probe is not covered by its neighbours.
    let (probes, rest): (Vec<_>, Vec<_>) = stretches.into_iter().partition(|s| s.2 == State::HalfOpen);
    for (from, to, state) in rest.into_iter().chain(probes) {
        let w = (px(to) - px(from)).max(1);
        let rect = Rectangle::new([(0, 0), (w, height)], state_fill(state).filled());
        chart.plotting_area().draw(&(EmptyElement::at((from, 1.0)) + rect))?;
    }
    Ok(())
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
