//! A call's ticket as Python code holds it between admission and recording
//! (the asyncio helpers, `tripwire.http`): an `int` where that is enough,
//! a `Ticket` object otherwise.

use pyo3::prelude::*;
use pyo3::types::PyInt;

/// Proof that a call was admitted; hand it back with the outcome. Used by
/// the asyncio helpers; most code never sees one. A ticket without a start
/// time travels as an `int` instead (see [`HeldTicket`]).
#[pyclass(module = "tripwire", frozen)]
#[derive(Debug)]
pub struct Ticket {
    pub(crate) ticket: tripwire::Ticket,
}

/// A ticket on its way to Python and back: an `int` holding its generation
/// and, from bit 32, its flags when it carries no start time (every ticket
/// of a breaker that does not time its calls), a `Ticket` otherwise.
///
/// The `int` is the ticket's raw parts (`Ticket::from_raw` makes it again)
/// and costs no object of this module, where a `Ticket` is allocated and
/// freed for every awaited call (about a fifth of what the breaker adds to
/// one beyond the coroutine around it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeldTicket(pub(crate) tripwire::Ticket);

/// Where the flags sit in a ticket's `int`.
const FLAGS_SHIFT: u32 = 32;

impl<'py> IntoPyObject<'py> for HeldTicket {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    #[inline]
    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let t = self.0;
        if t.started_at() == 0 {
            let raw = u64::from(t.generation()) | u64::from(t.flags()) << FLAGS_SHIFT;
            Ok(raw.into_pyobject(py)?.into_any())
        } else {
            Ok(Bound::new(py, Ticket { ticket: t })?.into_any())
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for HeldTicket {
    type Error = PyErr;

    #[inline]
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyInt>() {
            let raw: u64 = obj.extract()?;
            // Truncation intended: the low 32 bits are the generation.
            let generation = raw as u32;
            let flags = u32::try_from(raw >> FLAGS_SHIFT)?;
            return Ok(HeldTicket(tripwire::Ticket::from_raw(0, generation, flags)));
        }
        Ok(HeldTicket(obj.cast::<Ticket>()?.get().ticket))
    }
}
