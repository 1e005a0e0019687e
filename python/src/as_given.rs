//! Wrong values shown as the caller gave them. Each core checks its own
//! ranges and says so in one message per setting (`invalid breaker config:
//! half_open_max = 0, expected 1 to 10`). A value the core cannot even hold
//! (an int outside its `u32`, seconds past its 584 years) is passed on as
//! one every range refuses (`u32::MAX`, the longest duration), so that the
//! core still gives the range; [`AsGiven`] remembers what was written and
//! puts it back in the core's message in place of what the core saw.

use core::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};

use crate::args::{self, short_repr, type_name};

/// The arguments of one config that the core could not hold as given.
#[derive(Debug, Default)]
pub(crate) struct AsGiven {
    /// (argument, the value as written).
    unheld: Vec<(&'static str, String)>,
}

impl AsGiven {
    /// An `int` argument the core keeps as a `u32`: one outside it is
    /// `u32::MAX`, beyond every count's range, and remembered.
    pub(crate) fn count(&mut self, arg: &'static str, v: &Bound<'_, PyAny>) -> PyResult<u32> {
        if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
            return Err(PyTypeError::new_err(format!("{arg} must be an int, got {}", type_name(v))));
        }
        Ok(v.extract::<u32>().unwrap_or_else(|_| {
            self.unheld.push((arg, short_repr(v)));
            u32::MAX
        }))
    }

    /// A duration argument (`args::seconds`): one past what the core holds
    /// becomes its longest, beyond every duration's range, and is
    /// remembered in seconds as written.
    pub(crate) fn seconds(&mut self, arg: &'static str, v: &Bound<'_, PyAny>) -> PyResult<Duration> {
        let d = args::seconds(arg, v)?;
        if tripwire::clock::duration_ns(d) == u64::MAX {
            let shown = if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() {
                short_repr(v)
            } else {
                // A timedelta: its seconds, as `total_seconds()` gives them.
                v.call_method0("total_seconds")?.repr()?.to_string()
            };
            self.unheld.push((arg, format!("{shown}s")));
        }
        Ok(d)
    }

    /// The core's message `message` as a `ValueError` about `arg` (the
    /// argument that set the core's field), with the value as given if it
    /// is one the core could not hold. The core writes `<config>: <field> =
    /// <value>, expected <range>`; a message of another shape is kept.
    pub(crate) fn error(&self, arg: &str, message: &str) -> PyErr {
        let given = self.unheld.iter().find(|(a, _)| *a == arg).map(|(_, shown)| shown.as_str());
        let rewritten = (|| {
            let (config, rest) = message.split_once(": ")?;
            let (value, range) = rest.split_once(" = ")?.1.split_once(", expected ")?;
            Some(format!("{config}: {arg} = {}, expected {range}", given.unwrap_or(value)))
        })();
        PyValueError::new_err(rewritten.unwrap_or_else(|| message.to_owned()))
    }
}
