//! The exchange's scripted day: healthy, maintenance (503), accepting
//! connections but never answering, healthy again; random 503s and a 429
//! with `Retry-After` on the healthy side.
//!
//! Times here are on the scenario's clock (the story's minutes); the run
//! replays them compressed by the time scale.

use std::fmt;
use std::time::Duration;

/// How the exchange fails while it is down. The command line names them
/// `503`, `hang` and `mixed` (the doc of each is its `--help` line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Pattern {
    /// Maintenance page: every request answered 503 at once
    #[value(name = "503")]
    Unavailable,
    /// Connections accepted, requests never answered
    Hang,
    /// The first half answers 503, the second half hangs
    Mixed,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pattern::Unavailable => "503",
            Pattern::Hang => "hang",
            Pattern::Mixed => "mixed",
        })
    }
}

/// What the exchange does during a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Answers, with an occasional random 503.
    Healthy,
    /// Rate-limited: 429 with `Retry-After`.
    RateLimited,
    /// Maintenance: 503.
    Maintenance,
    /// Accepts connections, never answers.
    Hang,
    /// Back after the outage.
    Recovered,
}

impl Phase {
    /// Whether the exchange is down (the outage proper).
    pub fn is_down(self) -> bool {
        matches!(self, Phase::Maintenance | Phase::Hang)
    }

    /// A short name for the progress line and the chart.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Healthy => "healthy",
            Phase::RateLimited => "429",
            Phase::Maintenance => "maintenance 503",
            Phase::Hang => "hanging",
            Phase::Recovered => "recovered",
        }
    }
}

/// One stretch of the timeline, on the scenario's clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// What happens.
    pub phase: Phase,
    /// When it starts.
    pub start: Duration,
    /// When it ends.
    pub end: Duration,
}

/// The whole script, on the scenario's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    spans: Vec<Span>,
    /// Chance of a random 503 on a healthy request.
    pub random_503: f64,
}

/// How long the 429 lasts (and the `Retry-After` it carries).
pub const RATE_LIMIT: Duration = Duration::from_secs(60);

impl Timeline {
    /// An outage of `outage` in the given pattern, with a healthy tenth of
    /// it before and after (at least a minute each). The healthy stretch
    /// before the outage holds a 429 burst when it is long enough.
    pub fn new(outage: Duration, pattern: Pattern) -> Timeline {
        let side = (outage / 10).max(Duration::from_secs(60));
        let mut spans = Vec::new();
        let mut at = Duration::ZERO;
        let mut push = |phase, len: Duration| {
            spans.push(Span { phase, start: at, end: at + len });
            at += len;
        };
        if side >= RATE_LIMIT * 3 {
            push(Phase::Healthy, side / 3);
            push(Phase::RateLimited, RATE_LIMIT);
            push(Phase::Healthy, side - side / 3 - RATE_LIMIT);
        } else {
            push(Phase::Healthy, side);
        }
        match pattern {
            Pattern::Unavailable => push(Phase::Maintenance, outage),
            Pattern::Hang => push(Phase::Hang, outage),
            Pattern::Mixed => {
                push(Phase::Maintenance, outage / 2);
                push(Phase::Hang, outage - outage / 2);
            }
        }
        push(Phase::Recovered, side);
        Timeline { spans, random_503: 0.02 }
    }

    /// The spans, in order.
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// The whole length.
    pub fn total(&self) -> Duration {
        self.spans.last().map_or(Duration::ZERO, |s| s.end)
    }

    /// The span at `t` (the last one past the end).
    pub fn span_at(&self, t: Duration) -> Span {
        *self
            .spans
            .iter()
            .find(|s| t < s.end)
            .unwrap_or_else(|| self.spans.last().expect("a timeline has spans"))
    }

    /// When the outage starts.
    pub fn down_at(&self) -> Duration {
        self.spans.iter().find(|s| s.phase.is_down()).map_or(Duration::ZERO, |s| s.start)
    }

    /// When the exchange is back.
    pub fn recovered_at(&self) -> Duration {
        self.spans.iter().find(|s| s.phase == Phase::Recovered).map_or(Duration::ZERO, |s| s.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_half_hour_mixed_outage_has_every_phase_in_order() {
        let t = Timeline::new(Duration::from_secs(1800), Pattern::Mixed);
        let phases: Vec<_> = t.spans().iter().map(|s| s.phase).collect();
        assert_eq!(
            phases,
            [
                Phase::Healthy,
                Phase::RateLimited,
                Phase::Healthy,
                Phase::Maintenance,
                Phase::Hang,
                Phase::Recovered
            ]
        );
        assert_eq!(t.total(), Duration::from_secs(180 + 1800 + 180));
        assert_eq!((t.down_at(), t.recovered_at()), (Duration::from_secs(180), Duration::from_secs(1980)));
        assert_eq!(t.span_at(Duration::from_secs(1000)).phase, Phase::Maintenance);
        assert_eq!(t.span_at(Duration::from_secs(1979)).phase, Phase::Hang);
        assert_eq!(t.span_at(Duration::from_secs(99_999)).phase, Phase::Recovered);
    }

    #[test]
    fn a_short_outage_has_no_429() {
        let t = Timeline::new(Duration::from_secs(120), Pattern::Hang);
        let phases: Vec<_> = t.spans().iter().map(|s| s.phase).collect();
        assert_eq!(phases, [Phase::Healthy, Phase::Hang, Phase::Recovered]);
    }

    #[test]
    fn a_pattern_prints_as_its_flag_value() {
        use clap::ValueEnum;
        for p in Pattern::value_variants() {
            assert_eq!(Some(p.to_string()), p.to_possible_value().map(|v| v.get_name().to_owned()));
        }
    }
}
