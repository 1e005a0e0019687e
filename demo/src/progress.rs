//! The live display: one status line per client, redrawn in place on a
//! terminal, printed every few seconds otherwise.

use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use tripwire::NamedBreaker;

use crate::Shared;
use crate::clients::Kind;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Live {
    /// Redrawn in place when stdout is a terminal, plain lines otherwise.
    Auto,
    /// Plain lines every few seconds.
    Plain,
    /// Nothing.
    Off,
}

/// Shows progress until every thread in `threads` has finished.
pub fn show(shared: &Shared, breaker: &NamedBreaker, threads: &[JoinHandle<()>]) {
    let tty = match shared.config.live {
        Live::Off => return wait(threads),
        Live::Plain => false,
        Live::Auto => std::io::stdout().is_terminal(),
    };
    let every = if tty { Duration::from_millis(200) } else { Duration::from_secs(3) };
    let s = &shared.scenario;
    let mut out = std::io::stdout().lock();
    let mut last = (s.now(), [0u64; 2]);
    let mut drawn = false;
    while !threads.iter().all(JoinHandle::is_finished) {
        let step = Duration::from_millis(20);
        let mut slept = Duration::ZERO;
        while slept < every && !threads.iter().all(JoinHandle::is_finished) {
            std::thread::sleep(step);
            slept += step;
        }
        let now = s.now();
        let hits = [Kind::Naive, Kind::Tripwire].map(|k| shared.client(k).hits.load(Ordering::Relaxed));
        let secs = now.saturating_sub(last.0).as_secs_f64().max(1e-9);
        let phase = s.timeline.span_at(now.min(s.timeline.total())).phase;
        if tty && drawn {
            let _ = write!(out, "\x1b[2A");
        }
        for (i, kind) in [Kind::Naive, Kind::Tripwire].into_iter().enumerate() {
            let c = shared.client(kind);
            let state = if kind == Kind::Naive { "none" } else { breaker.state().as_str() };
            let rate = (hits[i] - last.1[i]) as f64 / secs;
            let line = format!(
                "{clock} {phase:<15} {name:<8} breaker {state:<9} to exchange {rate:>6.1}/s  in flight {fl:>4}  waiting {w:>4}",
                clock = clock(now),
                phase = phase.name(),
                name = kind.name(),
                fl = c.in_flight.load(Ordering::Relaxed),
                w = c.waiting.load(Ordering::Relaxed),
            );
            let _ = if tty { writeln!(out, "\r\x1b[K{line}") } else { writeln!(out, "{line}") };
        }
        let _ = out.flush();
        drawn = true;
        last = (now, hits);
    }
}

fn wait(threads: &[JoinHandle<()>]) {
    while !threads.iter().all(JoinHandle::is_finished) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `mm:ss` on the scenario's clock.
pub fn clock(t: Duration) -> String {
    let s = t.as_secs();
    format!("{:02}:{:02}", s / 60, s % 60)
}
