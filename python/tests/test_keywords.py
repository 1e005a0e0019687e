"""The stub's keyword arguments of `Breaker(...)` and `Breaker.shared` are
the extension's. Both take `**kwargs` at runtime, read by one Rust table,
which also gives `Breaker` its `__signature__`; `mypy.stubtest` checks
`__new__` against that, but `shared` has no signature to check: this test
reads the stub and holds both to it, in order."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import tripwire
from tripwire import _tripwire

KEYWORDS = list(inspect.signature(tripwire.Breaker).parameters)


def _stub_keywords(method: str) -> list[str]:
    """The keys of the TypedDict that `Breaker.<method>` unpacks into
    `**kwargs`, its bases' first (as a type checker orders them)."""
    tree = ast.parse(Path(_tripwire.__file__).with_name("_tripwire.pyi").read_text())
    classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
    func = next(f for f in classes["Breaker"].body if isinstance(f, ast.FunctionDef) and f.name == method)
    assert func.args.kwarg is not None, f"Breaker.{method} takes no **kwargs in the stub"
    unpack = func.args.kwarg.annotation
    assert isinstance(unpack, ast.Subscript) and ast.unparse(unpack.value) == "Unpack", ast.unparse(unpack)

    def keys(name: str) -> list[str]:
        typed_dict = classes[name]
        inherited = [k for b in typed_dict.bases if ast.unparse(b) in classes for k in keys(ast.unparse(b))]
        own = [s.target.id for s in typed_dict.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        return inherited + own

    return keys(ast.unparse(unpack.slice))


def test_the_stub_gives_breaker_every_keyword_the_extension_reads():
    assert _stub_keywords("__new__") == KEYWORDS


def test_the_stub_gives_shared_every_keyword_but_clock():
    assert _stub_keywords("shared") == [k for k in KEYWORDS if k != "clock"]


def test_the_signature_is_every_keyword_the_breaker_takes_none_by_default():
    parameters = inspect.signature(tripwire.Breaker).parameters.values()
    assert {(p.kind, p.default) for p in parameters} == {(inspect.Parameter.KEYWORD_ONLY, None)}
    breaker = tripwire.Breaker(**dict.fromkeys(KEYWORDS))
    assert (breaker.failure_threshold, breaker.name, breaker.clock) == (5, None, None)


def test_a_keyword_breaker_does_not_take_is_refused_as_python_words_it():
    with pytest.raises(TypeError) as info:
        tripwire.Breaker(fail_max=5)  # type: ignore[call-arg]
    assert str(info.value) == "Breaker.__new__() got an unexpected keyword argument 'fail_max'"
    with pytest.raises(TypeError) as positional:
        tripwire.Breaker(5)  # type: ignore[misc]
    assert str(positional.value) == "Breaker.__new__() takes 0 positional arguments but 1 was given"
