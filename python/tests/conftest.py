"""Shared fixtures: a manual clock and breakers that read it."""

from __future__ import annotations

from typing import Any, Callable

import pytest

import tripwire


class Boom(Exception):
    """The failure the tests' guarded functions raise."""


@pytest.fixture
def clock() -> tripwire.ManualClock:
    # Not at 0: the core takes a start time of 0 as "not measured".
    return tripwire.ManualClock(1000.0)


@pytest.fixture
def make_breaker(clock: tripwire.ManualClock) -> Callable[..., tripwire.Breaker]:
    """Breakers on the manual clock; keyword arguments as for Breaker."""

    def make(**kwargs: Any) -> tripwire.Breaker:
        kwargs.setdefault("clock", clock)
        return tripwire.Breaker(**kwargs)

    return make


def fail() -> None:
    raise Boom("down")


def trip(breaker: tripwire.Breaker, times: int | None = None) -> None:
    """Records `times` failures (default: the threshold)."""
    for _ in range(times if times is not None else breaker.failure_threshold):
        with pytest.raises(Boom):
            breaker.call(fail)
