"""`Breaker(...)` and `Breaker.shared` take `**kwargs` at runtime, read by
one Rust table, which also gives `Breaker` its `__signature__` for `help()`
and `mypy.stubtest`."""

from __future__ import annotations

import inspect

import pytest

import tripwire

KEYWORDS = list(inspect.signature(tripwire.Breaker).parameters)


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
