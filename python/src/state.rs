//! A breaker state's name as a Python string: the core's
//! [`State::as_str`](tripwire::State::as_str), interned once per state.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;
use tripwire::State;

static NAMES: PyOnceLock<[Py<PyString>; State::ALL.len()]> = PyOnceLock::new();

/// The state's name as an interned Python string.
#[inline]
pub(crate) fn state_name(py: Python<'_>, state: State) -> Bound<'_, PyString> {
    let names = NAMES.get_or_init(py, || State::ALL.map(|s| PyString::intern(py, s.as_str()).unbind()));
    // `State::ALL` is in discriminant order, so a state indexes its name.
    names[state as usize].bind(py).clone()
}
