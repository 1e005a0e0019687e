"""tripwire.compat.pybreaker: pybreaker's API, one import away."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import tripwire
from conftest import Boom
from tripwire.compat import pybreaker


class Recorder(pybreaker.CircuitBreakerListener):
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def before_call(self, cb, func, *args, **kwargs):
        self.events.append(("before", args))

    def state_change(self, cb, old_state, new_state):
        self.events.append(("state", old_state.name, new_state.name))

    def failure(self, cb, exc):
        self.events.append(("failure", type(exc).__name__))

    def success(self, cb):
        self.events.append(("success",))


def boom() -> None:
    raise Boom


def test_module_surface():
    assert (pybreaker.STATE_CLOSED, pybreaker.STATE_OPEN, pybreaker.STATE_HALF_OPEN) == (
        "closed",
        "open",
        "half-open",
    )
    assert issubclass(pybreaker.CircuitBreakerError, tripwire.TripwireError)
    cb = pybreaker.CircuitBreaker()
    assert (cb.fail_max, cb.reset_timeout, cb.success_threshold, cb.name) == (5, 60, 1, None)
    assert cb.current_state == "closed" and cb.state.name == pybreaker.STATE_CLOSED
    assert cb.state == pybreaker.STATE_CLOSED


def test_trip_raises_circuit_breaker_error_from_the_failure_then_rejects(clock):
    listener = Recorder()
    cb = pybreaker.CircuitBreaker(fail_max=2, reset_timeout=10, listeners=[listener], name="db", clock=clock)
    with pytest.raises(Boom):
        cb.call(boom)
    assert cb.fail_counter == 1
    with pytest.raises(pybreaker.CircuitBreakerError) as info:
        cb.call(boom)
    assert isinstance(info.value.__cause__, Boom)
    assert cb.current_state == "open"
    with pytest.raises(pybreaker.CircuitBreakerError) as info:
        cb.call(lambda: pytest.fail("not called"))
    assert info.value.__cause__.retry_after == pytest.approx(10.0)
    assert listener.events == [
        ("before", ()),
        ("failure", "Boom"),
        ("before", ()),
        ("state", "closed", "open"),
        ("failure", "Boom"),
        ("before", ()),
    ]


def test_throw_new_error_on_trip_false_reraises_the_original(clock):
    cb = pybreaker.CircuitBreaker(fail_max=1, throw_new_error_on_trip=False, clock=clock)
    with pytest.raises(Boom):
        cb.call(boom)
    assert cb.current_state == "open"


def test_recovers_through_half_open_after_reset_timeout(clock):
    listener = Recorder()
    cb = pybreaker.CircuitBreaker(fail_max=1, reset_timeout=5, success_threshold=2, clock=clock)
    cb.add_listener(listener)
    with pytest.raises(pybreaker.CircuitBreakerError):
        cb.call(boom)
    clock.advance(5)
    assert cb.call(lambda: 1) == 1
    assert cb.current_state == "half-open" and cb.success_counter == 1
    assert cb.call(lambda: 2) == 2
    assert cb.current_state == "closed" and cb.fail_counter == 0
    states = [e[1:] for e in listener.events if e[0] == "state"]
    assert states == [("closed", "open"), ("open", "half-open"), ("half-open", "closed")]


def test_excluded_errors_count_as_successes(clock):
    class NotFound(Exception):
        pass

    cb = pybreaker.CircuitBreaker(fail_max=2, exclude=[NotFound, lambda e: isinstance(e, KeyError)], clock=clock)
    with pytest.raises(Boom):
        cb.call(boom)
    for exc in (NotFound(), KeyError("k")):
        with pytest.raises(type(exc)):
            cb.call(_raiser(exc))
        assert cb.fail_counter == 0
    assert not cb.is_system_error(NotFound()) and cb.is_system_error(Boom())
    cb.add_excluded_exception(Boom)
    cb.add_excluded_exceptions(ValueError)
    assert cb.excluded_exceptions[-2:] == (Boom, ValueError)
    cb.remove_excluded_exception(Boom)
    assert Boom not in cb.excluded_exceptions
    assert cb.current_state == "closed"


def _raiser(exc):
    def f():
        raise exc

    return f


def test_interrupts_are_not_failures(clock):
    cb = pybreaker.CircuitBreaker(fail_max=1, clock=clock)
    with pytest.raises(KeyboardInterrupt):
        cb.call(_raiser(KeyboardInterrupt()))
    assert cb.current_state == "closed"


def test_decorator_calling_and_manual_states(clock):
    cb = pybreaker.CircuitBreaker(fail_max=1, clock=clock)

    @cb
    def add(x, y):
        """Adds."""
        return x + y

    assert add(1, 2) == 3 and add.__doc__ == "Adds."
    with cb.calling():
        pass
    with pytest.raises(pybreaker.CircuitBreakerError):
        with cb.calling():
            raise Boom
    cb.close()
    assert cb.current_state == "closed"
    assert cb.open() is True
    assert cb.current_state == "open"
    clock.advance(1000)
    with pytest.raises(pybreaker.CircuitBreakerError):
        add(1, 1)
    cb.half_open()
    assert add(2, 2) == 4


def test_async(clock):
    cb = pybreaker.CircuitBreaker(fail_max=1, clock=clock)

    @cb
    async def fetch():
        await asyncio.sleep(0)
        return "ok"

    assert asyncio.run(fetch()) == "ok"
    assert asyncio.run(cb.call_async(fetch.__wrapped__)) == "ok"


def test_listener_management():
    a, b = Recorder(), Recorder()
    cb = pybreaker.CircuitBreaker(listeners=[a])
    cb.add_listeners(b)
    assert cb.listeners == (a, b)
    cb.remove_listener(a)
    assert cb.listeners == (b,)
    with pytest.raises(TypeError, match="state_storage"):
        pybreaker.CircuitBreaker(state_storage=object())


def test_threads_are_not_serialised():
    cb = pybreaker.CircuitBreaker()

    @cb
    def io():
        time.sleep(0.001)

    def worker():
        for _ in range(50):
            io()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.perf_counter() - start < 0.25
