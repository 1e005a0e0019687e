//! A Python key of a keyed map, as the core's map takes it.
//!
//! A key is a `str`, an `int` (a `bool` is the `int` it equals, and shows
//! as it), `bytes`,
//! or a tuple of those, tuples nested included: exactly those types, no
//! subclass, so that hashing and comparing a key runs no Python code of the
//! user's and can neither fail nor differ between two calls. Floats are
//! refused (`nan != nan`: a key must equal itself), as is everything else.
//!
//! The key is kept as the Python object itself, hashed and compared as a
//! `dict` hashes and compares it: `True` and `1` are one key, `"1"` and
//! `1` two. Looking a key up borrows the caller's object (no allocation,
//! no reference taken), and a `str` key's hash is the one Python caches in
//! the string. Its text (a breaker's name, the `key` label of the export)
//! is the `str` itself, else its `repr`: `1`, `b'x'`, `('BTC/USDT', '1m')`;
//! two keys may show alike (`"1"` and `1`), their breakers are two.

use core::borrow::Borrow;
use core::fmt;
use core::hash::{Hash, Hasher};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyInt, PyString, PyTuple};
use pyo3::{Borrowed, ffi};

use crate::args::type_name;

/// A key of a `tripwire.Breakers` map: see the module docs. Its Python
/// hash is taken once, when it is made, so that the map hashes and
/// compares a key without calling into the interpreter but for two keys
/// that are equal and not the same object.
///
/// It has the layout of [`KeyRef`] (a `Py` is one pointer), and lends
/// itself as one: the map is looked up with the caller's object borrowed,
/// and only a key that is new is kept, with a reference of its own.
#[repr(C)]
pub(crate) struct Key {
    key: Py<PyAny>,
    hash: isize,
}

/// A key as a lookup borrows it: the caller's object, without a reference
/// of its own, and its hash. Made only by [`KeyRef::with`], whose caller
/// holds the object for as long as the `&KeyRef` it lends lives.
#[repr(C)]
pub(crate) struct KeyRef {
    key: *mut ffi::PyObject,
    hash: isize,
}

impl KeyRef {
    /// Runs `f` with `key` borrowed as a map key, or a `TypeError` saying
    /// which keys a map takes. Takes no reference to the object.
    #[inline]
    pub(crate) fn with<R>(key: &Bound<'_, PyAny>, f: impl FnOnce(&KeyRef) -> R) -> PyResult<R> {
        if !is_key(key) {
            return Err(PyTypeError::new_err(format!(
                "a Breakers key must be a str, int, bytes or a tuple of those, got {}",
                type_name(key)
            )));
        }
        // A key type's hash cannot fail (nor run user code), but for a
        // `MemoryError`, which is raised.
        let hash = key.hash()?;
        // `True` finds the key `1`: one hash, and equal.
        Ok(f(&KeyRef { key: key.as_ptr(), hash }))
    }

    /// The borrowed object, for as long as the borrow of `self`.
    fn object<'a, 'py>(&'a self, py: Python<'py>) -> Borrowed<'a, 'py, PyAny> {
        // SAFETY: `with` made `self` from a live object that its caller
        // holds while `self` is lent, and a `Key`, lent as a `KeyRef`,
        // holds a reference of its own.
        unsafe { Borrowed::from_ptr(py, self.key) }
    }
}

impl ToOwned for KeyRef {
    type Owned = Key;

    /// The key the map keeps: a reference of its own to the object (a
    /// `bool` as the `int` it equals, so that the key shows as that).
    fn to_owned(&self) -> Key {
        Python::attach(|py| {
            let key = self.object(py);
            let key = match key.cast_exact::<PyBool>() {
                Ok(b) => PyInt::new(py, i64::from(b.is_true())).into_any().unbind(),
                Err(_) => key.to_owned().unbind(),
            };
            Key { key, hash: self.hash }
        })
    }
}

impl Borrow<KeyRef> for Key {
    #[inline]
    fn borrow(&self) -> &KeyRef {
        // SAFETY: both are `repr(C)` with two fields of one layout: a
        // `Py<PyAny>` is a `repr(transparent)` `NonNull<ffi::PyObject>`,
        // which is a `*mut ffi::PyObject` that is not null.
        // The object lives while `self` is borrowed, which holds it.
        unsafe { &*(self as *const Key).cast::<KeyRef>() }
    }
}

impl Key {
    /// The key's Python object (a `bool` key shows as the `int` it equals).
    pub(crate) fn object<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.key.bind(py).clone()
    }
}

/// Whether `v` is one of the key types, all the way down.
#[inline]
fn is_key(v: &Bound<'_, PyAny>) -> bool {
    v.is_exact_instance_of::<PyString>()
        || v.is_exact_instance_of::<PyInt>()
        || v.is_exact_instance_of::<PyBool>()
        || v.is_exact_instance_of::<PyBytes>()
        || v.cast_exact::<PyTuple>().is_ok_and(|t| t.iter().all(|item| is_key(&item)))
}

impl Hash for KeyRef {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_isize(self.hash);
    }
}

impl PartialEq for KeyRef {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        // The same object (the common case: a caller's own key, a string
        // the interpreter interned), or two objects with one hash that
        // Python calls equal. Comparing key types runs no user code.
        self.key == other.key
            || (self.hash == other.hash
                && Python::attach(|py| self.object(py).eq(other.object(py)).unwrap_or(false)))
    }
}

impl Eq for KeyRef {}

// As the `KeyRef` it lends, so that a lookup with one finds the other.
impl Hash for Key {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        Borrow::<KeyRef>::borrow(self).hash(state);
    }
}

impl PartialEq for Key {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        Borrow::<KeyRef>::borrow(self) == Borrow::<KeyRef>::borrow(other)
    }
}

impl Eq for Key {}

impl Clone for Key {
    fn clone(&self) -> Self {
        Python::attach(|py| Self { key: self.key.clone_ref(py), hash: self.hash })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never an error: the core writes it into a name with `format!`.
        // A lone surrogate shows as U+FFFD.
        Python::attach(|py| {
            let key = self.key.bind(py);
            match key.cast::<PyString>() {
                Ok(s) => f.write_str(&s.to_string_lossy()),
                Err(_) => match key.repr() {
                    Ok(r) => f.write_str(&r.to_string_lossy()),
                    Err(_) => f.write_str("?"),
                },
            }
        })
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}
