//! What decorating a plain function with a breaker returns: a callable
//! whose `__call__` admits, calls and records in one Rust call.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use pyo3::{PyTraverseError, PyVisit, intern};

// The one cycle in this crate: `Breaker.__call__` makes a `Guarded`, whose
// call runs `Breaker::guard`. See `breaker.rs`.
use crate::breaker::Breaker;

/// A function guarded by a breaker. It carries the wrapped function's
/// metadata (`functools.update_wrapper`: `__name__`, `__doc__`,
/// `__wrapped__`…), binds as a method when it is a class attribute, and
/// exposes its breaker as `.breaker`.
#[pyclass(module = "tripwire", frozen, dict, weakref)]
pub struct Guarded {
    breaker: Py<Breaker>,
    func: Py<PyAny>,
}

static UPDATE_WRAPPER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static METHOD_TYPE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

impl Guarded {
    /// `func` guarded by `breaker`, with `func`'s metadata.
    pub(crate) fn wrap<'py>(
        breaker: &Bound<'py, Breaker>,
        func: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = breaker.py();
        let g = Bound::new(py, Guarded { breaker: breaker.clone().unbind(), func: func.clone().unbind() })?;
        let update = UPDATE_WRAPPER
            .get_or_try_init(py, || py.import("functools")?.getattr("update_wrapper").map(Bound::unbind))?;
        update.bind(py).call1((&g, func))
    }
}

#[pymethods]
impl Guarded {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Breaker::guard(self.breaker.bind(py), self.func.bind(py), args, kwargs)
    }

    /// Binds like a function: `obj.method` is a bound method.
    fn __get__<'py>(
        slf: &Bound<'py, Self>,
        obj: Option<&Bound<'py, PyAny>>,
        owner: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = owner;
        let py = slf.py();
        match obj.filter(|o| !o.is_none()) {
            None => Ok(slf.clone().into_any()),
            Some(obj) => METHOD_TYPE
                .get_or_try_init(py, || py.import("types")?.getattr("MethodType").map(Bound::unbind))?
                .bind(py)
                .call1((slf, obj)),
        }
    }

    /// Pickles by reference, as functions do: the name under which the
    /// decorated function is found in its module (so that it can be passed
    /// to multiprocessing workers).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.getattr(intern!(slf.py(), "__qualname__"))
    }

    /// The breaker guarding the function.
    #[getter]
    fn breaker(&self, py: Python<'_>) -> Py<Breaker> {
        self.breaker.clone_ref(py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let f = self.func.bind(py);
        let name = f.getattr(intern!(py, "__qualname__")).or_else(|_| f.repr().map(Bound::into_any))?;
        Ok(format!("<guarded function {name} of {}>", self.breaker.bind(py).repr()?))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.breaker)?;
        visit.call(&self.func)
    }
}
