//! `tripwire.Breakers`: a breaker per key, the core's keyed map
//! (`tripwire::keyed::Breakers`) behind a Python mapping.
//!
//! The map is the core's: lookups, the capacity and its overflow breaker,
//! idle eviction and the counts are its own; this file only turns Python
//! keys into [`Key`]s and each key's core breaker into a Python `Breaker`
//! (made on the key's first lookup around its core breaker, with the
//! settings of the map's template `Breaker`, and kept in the core map's
//! slot beside that breaker: evicted with it).

use std::sync::{Arc, OnceLock};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyList, PyString, PyTuple};
use pyo3::{Borrowed, PyTraverseError, PyVisit, intern};
use tripwire::breaker::AnyWindow;
use tripwire::keyed::{DefaultHasher, KeyedRows};
use tripwire::{NamedBreaker, Outcome};

use crate::args::{seconds, type_name};
use crate::breaker::Breaker;
use crate::clock::ClockSource;
use crate::config::BreakerArgs;
use crate::core_breaker::CoreBreaker;
use crate::listeners::{self, Listeners};
use crate::registry;

mod key;

pub(crate) use key::Key;
use key::KeyRef;

/// The core map, on the template's clock, with each key's Python face.
type Map = tripwire::keyed::Breakers<Key, ClockSource, DefaultHasher, AnyWindow, Face>;

/// The Python `Breaker` of one of the map's breakers, made on its first
/// lookup. A `std` cell, not a `PyOnceLock`: the map's `__traverse__`
/// reads it without a `Python` token, and two threads that make a face at
/// once keep the first (`set` blocks nobody, so it cannot deadlock on the
/// interpreter's lock).
#[derive(Default)]
struct Face(OnceLock<Py<Breaker>>);

/// A breaker per key, made from one template the first time a key is used.
///
/// `breakers[key]` is the key's breaker, a `tripwire.Breaker` (a decorator,
/// a context manager, `call`, `call_async`); `breakers.call(key, func,
/// *args)` runs one call through it without making that object. Keys are
/// `str`, `int`, `bytes` or tuples of those (see [`Key`]). Bounded by
/// `capacity` (new keys past it share one overflow breaker); a Closed
/// breaker unused for `idle_after` seconds is evicted.
#[pyclass(module = "tripwire", frozen, weakref, generic)]
pub struct Breakers {
    map: Arc<Map>,
    /// The settings every key's breaker is made with.
    template: Py<Breaker>,
    /// The listeners of every key's breaker: one list.
    listeners: Listeners,
    /// `str` or `None`.
    name: Py<PyAny>,
}

impl Breakers {
    /// A call admitted by `core`, the key's breaker: the common case,
    /// admitted and recorded without a transition, runs without a Python
    /// `Breaker` object; anything else makes one.
    fn call_through<'py>(
        &self,
        py: Python<'py>,
        core: &Arc<NamedBreaker<ClockSource>>,
        slot: &Face,
        func: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let template = self.template.get();
        let clock = template.clock_source();
        let ticket = match core.breaker().try_acquire(clock) {
            Ok(ticket) => ticket,
            // Refused: the object's own path raises the refusal.
            Err(_) => return Breaker::guard(&self.face(py, core, slot)?, func, args, kwargs),
        };
        if let Some(t) = ticket.transition() {
            let face = self.face(py, core, slot)?;
            Breaker::notify(&face, t);
            return Self::finish(&face, ticket, func, args, kwargs);
        }
        match func.call(args, kwargs) {
            Ok(result) => match template.classifier().result(&result) {
                Ok(outcome) => {
                    if let Some(t) = core.breaker().record(ticket, outcome, clock) {
                        Breaker::notify(&self.face(py, core, slot)?, t);
                    }
                    Ok(result)
                }
                Err(e) => {
                    Breaker::record(&self.face(py, core, slot)?, ticket, Outcome::Ignored);
                    Err(e)
                }
            },
            Err(err) => {
                Breaker::record_error(&self.face(py, core, slot)?, ticket, &err);
                Err(err)
            }
        }
    }

    /// The rest of a call admitted with `ticket`, through `face`.
    fn finish<'py>(
        face: &Bound<'py, Breaker>,
        ticket: tripwire::Ticket,
        func: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match func.call(args, kwargs) {
            Ok(result) => {
                Breaker::record_result(face, ticket, &result)?;
                Ok(result)
            }
            Err(err) => {
                Breaker::record_error(face, ticket, &err);
                Err(err)
            }
        }
    }

    /// The Python `Breaker` of one of the map's core breakers, kept in its
    /// slot: one object per breaker, made on its first lookup.
    fn face<'py>(
        &self,
        py: Python<'py>,
        core: &Arc<NamedBreaker<ClockSource>>,
        slot: &Face,
    ) -> PyResult<Bound<'py, Breaker>> {
        if let Some(face) = slot.0.get() {
            return Ok(face.bind(py).clone());
        }
        // An unnamed map's core is named "": its breakers are "/<key>".
        let full = core.name();
        let name = if self.name.is_none(py) { full.strip_prefix('/').unwrap_or(full) } else { full };
        let name = PyString::new(py, name).into_any().unbind();
        let breaker =
            self.template.get().around(py, Arc::new(CoreBreaker::Keyed(core.clone())), name, &self.listeners);
        let made = Py::new(py, breaker)?;
        // Another thread may have set one first (the interpreter's lock is
        // let go between bytecodes): every caller gets the one kept.
        let _ = slot.0.set(made);
        Ok(slot.0.get().map_or_else(|| unreachable!("set above"), |face| face.bind(py).clone()))
    }

    /// The map's settings: `capacity`, `idle_after`, `label_cap`; None for
    /// the core's default.
    fn build(
        name: &str,
        template: &Breaker,
        capacity: Option<&Bound<'_, PyAny>>,
        idle_after: Option<&Bound<'_, PyAny>>,
        label_cap: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Map> {
        let config = *template.core().config();
        let mut b = tripwire::keyed::Breakers::<Key>::builder(name, config)
            .clock(template.clock_source().clone())
            .slot::<Face>();
        if let Some(v) = capacity.filter(|v| !v.is_none()) {
            b = b.capacity(whole("capacity", v)?);
        }
        if let Some(v) = idle_after.filter(|v| !v.is_none()) {
            b = b.idle_after(seconds("idle_after", v)?);
        }
        if let Some(v) = label_cap.filter(|v| !v.is_none()) {
            b = b.label_cap(whole("label_cap", v)?);
        }
        b.build().map_err(|e| PyValueError::new_err(e.to_string()))
    }
}

/// A whole number of things; the core checks its range.
fn whole(arg: &str, v: &Bound<'_, PyAny>) -> PyResult<usize> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("{arg} must be an int, got {}", type_name(v))));
    }
    // Out of `usize`'s range (negative, huge): the core's message for 0 or
    // `usize::MAX`, whichever side it is on.
    Ok(v.extract::<usize>().unwrap_or_else(|_| if v.lt(0).unwrap_or(false) { 0 } else { usize::MAX }))
}

#[pymethods]
impl Breakers {
    /// `template`: a `Breaker` whose settings every key's breaker takes
    /// (its config, classification, clock, timeout and, copied now, its
    /// listeners), or, instead of it, the keyword arguments of
    /// `Breaker(...)` but `name`. `name`: the map's (its breakers are
    /// `name/key`), exported to Prometheus while the map lives.
    #[new]
    #[pyo3(
        signature = (template = None, /, *, capacity = None, idle_after = None, label_cap = None, name = None, **kwargs),
        text_signature = "(template=None, /, *, capacity=10000, idle_after=600.0, label_cap=100, name=None, **kwargs)"
    )]
    fn new(
        py: Python<'_>,
        template: Option<&Bound<'_, PyAny>>,
        capacity: Option<&Bound<'_, PyAny>>,
        idle_after: Option<&Bound<'_, PyAny>>,
        label_cap: Option<&Bound<'_, PyAny>>,
        name: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let kwargs = kwargs.filter(|k| !k.is_empty());
        let template: Bound<'_, Breaker> = match (template.filter(|t| !t.is_none()), kwargs) {
            (Some(t), None) => t
                .cast::<Breaker>()
                .map_err(|_| {
                    PyTypeError::new_err(format!("template must be a tripwire.Breaker, got {}", type_name(t)))
                })?
                .clone(),
            (Some(_), Some(_)) => {
                return Err(PyTypeError::new_err(
                    "Breakers() takes a template Breaker or a breaker's keyword arguments, not both",
                ));
            }
            (None, kwargs) => {
                // Checked here so that the error names this callable; the
                // name is the map's, not the template's.
                BreakerArgs::from_kwargs("Breakers.__new__()", kwargs)?;
                py.get_type::<Breaker>().call((), kwargs)?.cast_into::<Breaker>()?
            }
        };
        let name: Bound<'_, PyAny> = match name.filter(|n| !n.is_none()) {
            None => py.None().into_bound(py),
            Some(n) => match n.cast::<PyString>() {
                Ok(s) if !s.to_cow()?.is_empty() => s.clone().into_any(),
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "name must be a non-empty str or None, got {}",
                        n.repr()?
                    )));
                }
            },
        };
        let core_name = match name.cast::<PyString>() {
            Ok(s) => s.to_cow()?.into_owned(),
            Err(_) => String::new(),
        };
        let map = Arc::new(Self::build(&core_name, template.get(), capacity, idle_after, label_cap)?);
        if !core_name.is_empty() {
            let rows: Arc<dyn KeyedRows> = map.clone();
            registry::register_keyed(&core_name, &rows);
        }
        let listeners = Listeners::new(template.get().listener_list(py));
        Ok(Self { map, template: template.unbind(), listeners, name: name.unbind() })
    }

    /// The breaker of `key`, made from the template if the key is new (or
    /// the overflow breaker while the map is full): the same object on
    /// every lookup until the key is evicted.
    fn __getitem__<'py>(&self, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Breaker>> {
        let py = key.py();
        KeyRef::with(key, |key| self.map.with_slot(key, |core, slot| self.face(py, core, slot)))?
    }

    /// Calls `func(*args, **kwargs)` through `key`'s breaker and returns its
    /// result: `breakers[key].call(func, ...)`, without making the object.
    ///
    /// The arguments come as one tuple, split here: a signature of
    /// `(key, func, /, *args)` makes pyo3 match them and build a second
    /// tuple for the rest on every call.
    #[pyo3(signature = (*args, **kwargs), text_signature = "($self, key, func, /, *args, **kwargs)")]
    fn call<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let (key, func, args) = key_and_func(args)?;
        KeyRef::with(&key, |key| {
            self.map.with_slot(key, |core, slot| self.call_through(py, core, slot, &func, &args, kwargs))
        })?
    }

    /// Awaits `func(*args, **kwargs)` through `key`'s breaker: a coroutine.
    #[pyo3(signature = (key, func, /, *args, **kwargs))]
    fn call_async<'py>(
        &self,
        key: &Bound<'py, PyAny>,
        func: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = key.py();
        let face = KeyRef::with(key, |key| self.map.with_slot(key, |core, slot| self.face(py, core, slot)))??;
        crate::aio::aio(py)?.getattr(intern!(py, "call_async"))?.call1((face, func, args, kwargs))
    }

    /// Keys with a breaker of their own now.
    fn __len__(&self) -> usize {
        self.map.len()
    }

    /// Whether `key` has a breaker of its own now. Asking makes no breaker
    /// and keeps no key from being evicted. A key of a type the map does
    /// not take is a `TypeError`, as in `breakers[key]`.
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        KeyRef::with(key, |key| self.map.contains_key(key))
    }

    /// The keys with a breaker of their own, as the map holds them when
    /// iteration begins (a list's iterator: keys made or evicted while it
    /// runs are not seen). Without it, Python would iterate by calling
    /// `breakers[0]`, `breakers[1]`, … for ever, making a breaker for each.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut keys = Vec::with_capacity(self.map.len());
        self.map.for_each(|key, _| keys.push(key.object(py)));
        PyList::new(py, keys)?.into_any().try_iter().map(Bound::into_any)
    }

    /// `{"live", "created", "evicted", "overflow_calls"}`: keys with a
    /// breaker of their own now, breakers made for new keys, evicted as
    /// idle, and lookups answered by the overflow breaker.
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.map.counts();
        let d = PyDict::new(py);
        d.set_item("live", c.live)?;
        d.set_item("created", c.created)?;
        d.set_item("evicted", c.evicted)?;
        d.set_item("overflow_calls", c.overflow_calls)?;
        Ok(d)
    }

    /// Runs a sweep if one is due (`idle_after` since the last): evicts the
    /// Closed breakers unused for at least `idle_after`; returns how many.
    /// New keys run it as they come; a map that takes no new keys and
    /// should shed idle ones can call it now and then.
    fn evict_idle(&self) -> usize {
        self.map.evict_idle()
    }

    /// The breaker new keys share while the map is full.
    #[getter]
    fn overflow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, Breaker>> {
        self.face(py, self.map.overflow(), self.map.overflow_slot())
    }

    /// The map's name, or None.
    #[getter]
    fn name(&self, py: Python<'_>) -> Py<PyAny> {
        self.name.clone_ref(py)
    }

    /// The most keys with a breaker of their own.
    #[getter]
    fn capacity(&self) -> usize {
        self.map.capacity()
    }

    /// The template whose settings every key's breaker takes.
    #[getter]
    fn template(&self, py: Python<'_>) -> Py<Breaker> {
        self.template.clone_ref(py)
    }

    /// Adds `listener`, called with `(breaker, from, to)` after every later
    /// transition of any key's breaker (`breaker.name` tells the key);
    /// returns it, so that it works as a decorator. A key's breaker's own
    /// `on_state_change` adds to this one list too.
    #[pyo3(signature = (listener, /))]
    fn on_state_change<'py>(&self, listener: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let f = listeners::listener("on_state_change", listener)?;
        self.listeners.add(listener.py(), f);
        Ok(listener.clone())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Breakers(name={}, len={}, capacity={})",
            self.name.bind(py).repr()?,
            self.map.len(),
            self.map.capacity()
        ))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.template)?;
        visit.call(&self.name)?;
        // The faces the map keeps for its keys.
        let mut visited = Ok(());
        self.map.for_each_slot(|_, _, slot| {
            if let (Ok(()), Some(face)) = (&visited, slot.0.get()) {
                visited = visit.call(face);
            }
        });
        visited?;
        self.listeners.traverse(&visit)
    }
}

/// `Breakers.call`'s `key` and `func`, and the arguments after them.
#[inline]
fn key_and_func<'a, 'py>(
    args: &'a Bound<'py, PyTuple>,
) -> PyResult<(Borrowed<'a, 'py, PyAny>, Borrowed<'a, 'py, PyAny>, Bound<'py, PyTuple>)> {
    let n = args.len();
    if n < 2 {
        let missing = if n == 0 { "arguments: 'key' and 'func'" } else { "argument: 'func'" };
        return Err(PyTypeError::new_err(format!(
            "Breakers.call() missing {} required positional {missing}",
            2 - n
        )));
    }
    let rest = if n == 2 { PyTuple::empty(args.py()) } else { args.get_slice(2, n) };
    Ok((args.get_borrowed_item(0)?, args.get_borrowed_item(1)?, rest))
}
