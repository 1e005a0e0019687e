//! The live display while the scenario runs: a progress bar of the
//! scenario's clock and one status line per client, drawn by indicatif on a
//! terminal (stderr), or plain lines every few seconds with `--plain`.
//!
//! indicatif redraws in place, cuts each line to the terminal's width (a
//! line that wrapped would break the redraw on a narrow terminal) and stays
//! silent when stderr is not a terminal.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tripwire::NamedBreaker;

use crate::Shared;
use crate::clients::Kind;
use crate::timeline::Phase;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Live {
    /// Redrawn in place when stderr is a terminal, nothing otherwise.
    Auto,
    /// Plain lines on stdout every few seconds.
    Plain,
    /// Nothing.
    Off,
}

/// Shows progress until every thread in `threads` has finished.
pub fn show(shared: &Shared, breaker: &NamedBreaker, threads: &[JoinHandle<()>]) {
    let s = &shared.scenario;
    let kinds = [Kind::Naive, Kind::Tripwire];
    let mut last = (s.now(), [0u64; 2]);
    // Relaxed loads: tallies for display, nothing is published through them.
    let mut sample = move || {
        let now = s.now();
        let hits = kinds.map(|k| shared.client(k).hits.load(Ordering::Relaxed));
        let secs = now.saturating_sub(last.0).as_secs_f64().max(1e-9);
        let lines = [0, 1].map(|i| {
            let c = shared.client(kinds[i]);
            line(
                kinds[i].name(),
                if kinds[i] == Kind::Naive { "none" } else { breaker.state().as_str() },
                hits[i].saturating_sub(last.1[i]) as f64 / secs,
                c.in_flight.load(Ordering::Relaxed),
                c.waiting.load(Ordering::Relaxed),
            )
        });
        last = (now, hits);
        Sample { now, phase: s.timeline.span_at(now.min(s.timeline.total())).phase, lines }
    };
    match shared.config.live {
        Live::Off => while wait(threads, Duration::from_millis(200)) {},
        Live::Plain => {
            let mut out = std::io::stdout().lock();
            while wait(threads, Duration::from_secs(3)) {
                let s = sample();
                for line in &s.lines {
                    let _ = writeln!(out, "{} {:<15} {line}", clock(s.now), s.phase.name());
                }
                let _ = out.flush();
            }
        }
        Live::Auto => {
            // Created here only: a bar dropped unfinished draws itself.
            let bars = Bars::new(ProgressDrawTarget::stderr(), s.timeline.total());
            let shown = !bars.multi.is_hidden();
            while wait(threads, Duration::from_millis(200)) {
                if shown {
                    bars.update(&sample());
                }
            }
            if shown {
                bars.update(&sample());
                bars.finish();
                // indicatif leaves the cursor at the end of the last line.
                eprintln!();
            }
        }
    }
}

/// Sleeps up to `every`, in short steps; whether the threads still run.
fn wait(threads: &[JoinHandle<()>], every: Duration) -> bool {
    let finished = || threads.iter().all(JoinHandle::is_finished);
    let step = Duration::from_millis(20);
    let mut slept = Duration::ZERO;
    while slept < every && !finished() {
        std::thread::sleep(step);
        slept += step;
    }
    !finished()
}

/// One look at the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// On the scenario's clock.
    pub now: Duration,
    /// What the exchange is doing.
    pub phase: Phase,
    /// The naive client's status line, then tripwire's (see [`line()`]).
    pub lines: [String; 2],
}

/// A client's status: its breaker's state, the requests per second it
/// sent the exchange since the last look, those in flight and the caller
/// requests waiting.
pub fn line(name: &str, state: &str, rate: f64, in_flight: u64, waiting: u64) -> String {
    format!(
        "{name:<8} breaker {state:<9} to exchange {rate:>6.1}/s  in flight {in_flight:>4}  waiting {waiting:>4}"
    )
}

/// The terminal display: the scenario's clock as a bar, then a line per
/// client.
#[derive(Debug)]
pub struct Bars {
    multi: MultiProgress,
    total: Duration,
    clock: ProgressBar,
    clients: [ProgressBar; 2],
}

impl Bars {
    /// The display on `target`, for a scenario `total` long.
    pub fn new(target: ProgressDrawTarget, total: Duration) -> Bars {
        let multi = MultiProgress::with_draw_target(target);
        let clock = multi.add(ProgressBar::new(total.as_secs().max(1)));
        // The templates are constants; `Bars`' test renders both.
        let style =
            |t: &str| ProgressStyle::with_template(t).unwrap_or_else(|_| ProgressStyle::default_bar());
        clock.set_style(
            style("{prefix} [{wide_bar:.cyan/blue}] {msg:<15} {eta:>3} left").progress_chars("=> "),
        );
        let clients = [(); 2].map(|()| {
            let bar = multi.add(ProgressBar::new(1));
            bar.set_style(style("{wide_msg}"));
            bar
        });
        Bars { multi, total, clock, clients }
    }

    /// Shows `s`.
    pub fn update(&self, s: &Sample) {
        let now = s.now.min(self.total);
        self.clock.set_prefix(format!("{} / {}", clock(now), clock(self.total)));
        self.clock.set_message(s.phase.name());
        self.clock.set_position(now.as_secs());
        for (bar, line) in self.clients.iter().zip(&s.lines) {
            bar.set_message(line.clone());
        }
    }

    /// Leaves the last picture on the screen.
    pub fn finish(&self) {
        self.clock.finish();
        for bar in &self.clients {
            bar.finish();
        }
    }
}

/// `mm:ss` on the scenario's clock.
pub fn clock(t: Duration) -> String {
    let s = t.as_secs();
    format!("{:02}:{:02}", s / 60, s % 60)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use indicatif::TermLike;

    use super::*;

    /// A terminal of a given width that wraps like a real one (indicatif
    /// pads each line to the width and lets the terminal wrap), keeping the
    /// visible text of each row. Colour escapes take no column.
    #[derive(Debug, Clone)]
    struct Screen {
        width: u16,
        state: Arc<Mutex<Cursor>>,
    }

    #[derive(Debug, Default)]
    struct Cursor {
        rows: Vec<String>,
        row: usize,
        col: usize,
    }

    impl Cursor {
        fn put(&mut self, s: &str, width: usize) {
            let mut chars = s.chars();
            while let Some(ch) = chars.next() {
                match ch {
                    '\x1b' => {
                        chars.by_ref().find(|&c| c == 'm');
                    }
                    '\r' => self.col = 0,
                    '\n' => (self.row, self.col) = (self.row + 1, 0),
                    _ => {
                        if self.col == width {
                            (self.row, self.col) = (self.row + 1, 0);
                        }
                        if self.rows.len() <= self.row {
                            self.rows.resize(self.row + 1, String::new());
                        }
                        let row = &mut self.rows[self.row];
                        row.truncate(self.col);
                        row.push(ch);
                        self.col += 1;
                    }
                }
            }
        }
    }

    impl Screen {
        fn new(width: u16) -> Screen {
            Screen { width, state: Arc::default() }
        }

        /// The rows with text, trailing blanks cut.
        fn rows(&self) -> Vec<String> {
            let c = self.state.lock().unwrap();
            c.rows.iter().map(|r| r.trim_end().to_owned()).filter(|r| !r.is_empty()).collect()
        }

        fn cursor(&self, f: impl FnOnce(&mut Cursor)) -> std::io::Result<()> {
            f(&mut self.state.lock().unwrap());
            Ok(())
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            self.width
        }
        fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
            self.cursor(|c| c.row = c.row.saturating_sub(n))
        }
        fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
            self.cursor(|c| c.row += n)
        }
        fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
            self.cursor(|c| c.col += n)
        }
        fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
            self.cursor(|c| c.col = c.col.saturating_sub(n))
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            let w = self.width.into();
            self.cursor(|c| {
                c.put(s, w);
                c.put("\n", w);
            })
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            let w = self.width.into();
            self.cursor(|c| c.put(s, w))
        }
        fn clear_line(&self) -> std::io::Result<()> {
            self.cursor(|c| {
                if let Some(row) = c.rows.get_mut(c.row) {
                    row.clear();
                }
                c.col = 0;
            })
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn sample() -> Sample {
        Sample {
            now: Duration::from_secs(168),
            phase: Phase::Hang,
            lines: [line("naive", "none", 10.0, 21, 21), line("tripwire", "half-open", 0.0, 1, 1)],
        }
    }

    #[test]
    fn each_line_keeps_its_row_on_a_narrow_terminal() {
        // A client line is wider than the terminal: cut, it keeps one row;
        // wrapped, it would take two and the redraw would drift.
        assert!(sample().lines[1].len() > 60);
        let screen = Screen::new(60);
        let bars =
            Bars::new(ProgressDrawTarget::term_like(Box::new(screen.clone())), Duration::from_secs(300));
        for _ in 0..3 {
            bars.update(&sample());
        }
        bars.finish();
        let rows = screen.rows();
        assert_eq!(rows.len(), 3, "{rows:#?}");
        assert!(rows[0].starts_with("02:48 / 05:00 [") && rows[0].contains("hanging"), "{rows:#?}");
        assert!(rows[1].starts_with("naive    breaker none      to exchange   10.0/s"), "{rows:#?}");
        assert!(rows[2].starts_with("tripwire breaker half-open to exchange    0.0/s"), "{rows:#?}");
    }
}
