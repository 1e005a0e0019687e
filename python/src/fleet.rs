//! `tripwire.Fleet`: the fleet link of the Rust `tripwire-fleet` crate, for
//! Python breakers. Everything it does is the Rust implementation's: this
//! file turns arguments into its settings and its counters into a dict.

use core::mem::ManuallyDrop;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use tripwire_fleet::{AsBreaker, FleetConfig, RejectReason};

use crate::args::seconds;
use crate::breaker::Breaker;
use crate::core_breaker::CoreBreaker;

impl AsBreaker for CoreBreaker {
    fn as_breaker(&self) -> &tripwire::Breaker {
        self.breaker()
    }
}

/// A link from this process's breakers to the other hosts of a fleet,
/// through Redis: `Fleet(url, namespace, key, ...)`, then `join(breaker)`.
#[pyclass(module = "tripwire", frozen)]
pub struct Fleet {
    /// Taken out only by `drop`, to be dropped without the GIL.
    inner: ManuallyDrop<tripwire_fleet::Fleet>,
}

impl Drop for Fleet {
    /// Stopping the link waits for its threads (up to the longer of the
    /// connect and I/O timeouts against a server that never answers):
    /// done without the GIL, so that other threads' calls through their
    /// breakers go on meanwhile. The object is unreachable by then.
    fn drop(&mut self) {
        // SAFETY:
        // - `drop` runs once, and `inner` is not used after it: it is
        //   taken exactly once, here.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        let mut inner = Some(inner);
        // Not attached (the interpreter shutting down): dropped as it is.
        let _ = Python::try_attach(|py| {
            let inner = inner.take();
            py.detach(move || drop(inner));
        });
        drop(inner);
    }
}

fn config_error(e: tripwire_fleet::FleetError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pymethods]
impl Fleet {
    #[new]
    #[pyo3(signature = (
        url, namespace, key, *,
        username = None, password = None,
        lease_lead = None, probe_timeout = None, max_skew = None,
        connect_timeout = None, io_timeout = None,
    ))]
    #[allow(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn new(
        url: &str,
        namespace: &str,
        key: &Bound<'_, PyAny>,
        username: Option<&str>,
        password: Option<&str>,
        lease_lead: Option<&Bound<'_, PyAny>>,
        probe_timeout: Option<&Bound<'_, PyAny>>,
        max_skew: Option<&Bound<'_, PyAny>>,
        connect_timeout: Option<&Bound<'_, PyAny>>,
        io_timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let key: Vec<u8> = if let Ok(b) = key.cast::<PyBytes>() {
            b.as_bytes().to_vec()
        } else if let Ok(s) = key.cast::<PyString>() {
            s.to_cow()?.as_bytes().to_vec()
        } else {
            return Err(PyTypeError::new_err(format!("key must be bytes or str, got {}", key.repr()?)));
        };
        let mut b = FleetConfig::builder(url, namespace, key);
        if let Some(u) = username {
            b = b.username(u);
        }
        if let Some(p) = password {
            b = b.password(p);
        }
        let given = |arg, v: Option<&Bound<'_, PyAny>>| {
            v.filter(|v| !v.is_none()).map(|v| seconds(arg, v)).transpose()
        };
        if let Some(d) = given("lease_lead", lease_lead)? {
            b = b.lease_lead(d);
        }
        if let Some(d) = given("probe_timeout", probe_timeout)? {
            b = b.probe_timeout(d);
        }
        if let Some(d) = given("max_skew", max_skew)? {
            b = b.max_skew(d);
        }
        if let Some(d) = given("connect_timeout", connect_timeout)? {
            b = b.connect_timeout(d);
        }
        if let Some(d) = given("io_timeout", io_timeout)? {
            b = b.io_timeout(d);
        }
        let inner = tripwire_fleet::Fleet::new(b.build().map_err(config_error)?).map_err(config_error)?;
        Ok(Self { inner: ManuallyDrop::new(inner) })
    }

    /// Joins a named breaker: its trips, holds and closes go to the fleet
    /// (looked at every 5 ms), and the fleet's come into it (reaching none
    /// of its listeners).
    fn join(&self, py: Python<'_>, breaker: &Bound<'_, Breaker>) -> PyResult<()> {
        let (core, clock, name) = breaker.get().joinable(py);
        let name = name.bind(py);
        let Ok(name) = name.cast::<PyString>() else {
            return Err(PyValueError::new_err("a breaker joins a fleet by its name: make it with name=..."));
        };
        self.inner.join_core(&name.to_cow()?, core, clock).map_err(config_error)
    }

    /// "up", "partial" (one of the two connections) or "down".
    #[getter]
    fn link_state(&self) -> &'static str {
        self.inner.link_state().as_str()
    }

    /// Why the link last failed, or None: the connection, the step and the
    /// reason ("subscriber: AUTH failed: WRONGPASS ..."), the Rust
    /// `Fleet::last_error`.
    #[getter]
    fn last_error(&self) -> Option<String> {
        self.inner.last_error()
    }

    /// Waits (without the GIL) until the link is up, at most `timeout`
    /// seconds; returns whether it is.
    fn wait_linked(&self, py: Python<'_>, timeout: &Bound<'_, PyAny>) -> PyResult<bool> {
        let timeout = seconds("timeout", timeout)?;
        Ok(py.detach(|| self.inner.wait_linked(timeout)))
    }

    /// The link's counters: sent, received, dropped, applied, leases_won,
    /// leases_lost, reconnects, connect_failures, and `rejected_<reason>`
    /// for each reason.
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.snapshot();
        let d = PyDict::new(py);
        for (k, v) in [
            ("sent", s.sent),
            ("received", s.received),
            ("dropped", s.dropped),
            ("applied", s.applied),
            ("leases_won", s.leases_won),
            ("leases_lost", s.leases_lost),
            ("reconnects", s.reconnects),
            ("connect_failures", s.connect_failures),
        ] {
            d.set_item(k, v)?;
        }
        for r in RejectReason::ALL {
            d.set_item(format!("rejected_{}", r.as_str()), s.rejected(r))?;
        }
        Ok(d)
    }

    /// The counters in the Prometheus text format (`tripwire_fleet_*`).
    fn prometheus(&self) -> String {
        self.inner.prometheus()
    }

    fn __repr__(&self) -> String {
        format!(
            "Fleet(namespace={:?}, link={})",
            self.inner.config().namespace(),
            self.inner.link_state().as_str()
        )
    }
}
