//! Rows that another crate adds to every export of breakers, and the
//! [`Sink`] they are written to.
//!
//! A crate whose objects belong with a process's breakers in a scrape (the
//! `tripwire-fleet` crate's links to Redis) implements [`RowSource`] and
//! hands it to [`add_source`] once. From then on a [`Registry`]'s
//! [`prometheus`](Registry::prometheus) and `publish_metrics`, and a
//! binding's export through [`write_sources`], write its families after
//! their own, given the breakers they export: the source writes the rows
//! that concern those breakers, and nothing for the others.
//!
//! A source writes each family once, to a [`Sink`]: [`Text`] makes it
//! Prometheus text, and `publish_metrics` hands the same calls to the
//! `metrics` recorder, so that both exports carry the same names, labels
//! and values.
//!
//! The list is process-wide and only grows; its mutex is taken when a
//! source is added and when an export runs, never on a call's path.
//!
//! [`Registry`]: crate::registry::Registry

use core::fmt::{self, Write};
use std::sync::{Mutex, PoisonError};
use std::vec::Vec;

use crate::breaker::Breaker;

use super::{head, series};

/// What a family counts: its `# TYPE` in the text format, and what the
/// `metrics` export makes of its samples (a gauge is set to the value, a
/// counter is given it as its absolute value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A count that only grows (`# TYPE … counter`).
    Counter,
    /// A value that goes up and down (`# TYPE … gauge`).
    Gauge,
}

impl Kind {
    /// The name the text format gives it: `"counter"`, `"gauge"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// Where families are written, one at a time: [`Text`], or the `metrics`
/// recorder in `Registry::publish_metrics`. What a [`RowSource`] writes to.
pub trait Sink {
    /// Begins a family: the samples that follow are its own.
    fn family(&mut self, name: &'static str, kind: Kind, help: &'static str) -> fmt::Result;
    /// One sample of the family begun last: its labels, in order, and its
    /// value.
    fn sample(&mut self, labels: &[(&str, &str)], value: u64) -> fmt::Result;
}

/// A [`Sink`] that writes the Prometheus text format (HELP and TYPE lines,
/// then one line per sample, label values escaped) into any
/// [`fmt::Write`], as this module's `write_*` functions do.
///
/// # Examples
/// ```
/// use tripwire::prometheus::{Kind, Sink, Text};
///
/// let mut out = String::new();
/// let mut text = Text::new(&mut out);
/// text.family("links_up", Kind::Gauge, "Links up now.")?;
/// text.sample(&[("link", "prod")], 1)?;
/// assert_eq!(out, "# HELP links_up Links up now.\n# TYPE links_up gauge\nlinks_up{link=\"prod\"} 1\n");
/// # Ok::<(), core::fmt::Error>(())
/// ```
#[derive(Debug)]
pub struct Text<'a, W: ?Sized> {
    out: &'a mut W,
    /// The family begun last.
    family: &'static str,
}

impl<'a, W: Write + ?Sized> Text<'a, W> {
    /// Writes into `out`.
    pub fn new(out: &'a mut W) -> Self {
        Self { out, family: "" }
    }
}

impl<W: Write + ?Sized> Sink for Text<'_, W> {
    fn family(&mut self, name: &'static str, kind: Kind, help: &'static str) -> fmt::Result {
        self.family = name;
        head(self.out, name, kind.as_str(), help)
    }

    fn sample(&mut self, labels: &[(&str, &str)], value: u64) -> fmt::Result {
        series(self.out, self.family, labels, value)
    }
}

/// Rows another crate adds to every export of breakers: `tripwire-fleet`
/// adds the counters of the fleet links those breakers joined.
///
/// Added once with [`add_source`], a source is asked for its rows by every
/// export from then on: a [`Registry`](crate::registry::Registry)'s
/// [`prometheus`](crate::registry::Registry::prometheus) and `publish_metrics`
/// (feature `metrics`), after the registry's own families, and a binding's
/// [`write_sources`]; each passes the breakers it exports, and the source
/// writes the rows that concern them. It writes each family once, to a
/// [`Sink`]: the text export and the `metrics` recorder then carry the same
/// names, labels and values.
///
/// # Examples
/// ```
/// use std::fmt;
/// use tripwire::prometheus::{self, Kind, RowSource, Sink};
/// use tripwire::registry::Registry;
/// use tripwire::{Breaker, BreakerConfig};
///
/// /// How many of the exported breakers are Open.
/// struct OpenCount;
///
/// impl RowSource for OpenCount {
///     fn write_rows(&self, breakers: &[&Breaker], out: &mut dyn Sink) -> fmt::Result {
///         if breakers.is_empty() {
///             return Ok(()); // no rows, no family
///         }
///         let open = breakers.iter().filter(|b| b.state() == tripwire::State::Open).count();
///         out.family("example_open_breakers", Kind::Gauge, "Open breakers in this export.")?;
///         out.sample(&[], open as u64)
///     }
/// }
///
/// static OPEN_COUNT: OpenCount = OpenCount;
/// prometheus::add_source(&OPEN_COUNT);
/// let registry = Registry::new();
/// registry.breaker("binance/orderbook", BreakerConfig::default);
/// assert!(registry.prometheus().contains("\nexample_open_breakers 0\n"));
/// ```
pub trait RowSource: Send + Sync {
    /// Writes its families for an export of `breakers`: the rows that
    /// concern them, and no family at all when none does (an empty family
    /// is left out, as the `write_*` functions leave it out).
    fn write_rows(&self, breakers: &[&Breaker], out: &mut dyn Sink) -> fmt::Result;
}

static SOURCES: Mutex<Vec<&'static dyn RowSource>> = Mutex::new(Vec::new());

/// Adds `source` to every export of breakers from now on, for the life of
/// the process. Add each source once (e.g. behind a
/// [`Once`](std::sync::Once)): added twice, its rows are written twice.
pub fn add_source(source: &'static dyn RowSource) {
    // A panic while holding the lock cannot leave the list inconsistent
    // (every change is one push), so a poisoned lock is usable.
    SOURCES.lock().unwrap_or_else(PoisonError::into_inner).push(source);
}

/// The sources added so far, in the order they were added.
pub(crate) fn sources() -> Vec<&'static dyn RowSource> {
    SOURCES.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// Every added source's rows for an export of `breakers`, as Prometheus
/// text: what [`Registry::prometheus`](crate::registry::Registry::prometheus) writes
/// after its own families, for a binding that keeps its own list of
/// breakers and writes their rows with [`write_breakers`](super::write_breakers).
pub fn write_sources(out: &mut impl Write, breakers: &[&Breaker]) -> fmt::Result {
    source_rows(&mut Text::new(out), breakers)
}

/// Every added source's rows for an export of `breakers`, to `sink`.
pub(crate) fn source_rows(sink: &mut impl Sink, breakers: &[&Breaker]) -> fmt::Result {
    for source in sources() {
        source.write_rows(breakers, sink)?;
    }
    Ok(())
}
