"""tripwire.compat.pybreaker: pybreaker's API, one import away.

The tests taking ``pb`` run against tripwire's module and, when it is
installed, against pybreaker 1.4.1 itself: the same body passing on both
is the proof that the behaviour is the same. The ones that do not take it
pin what tripwire does differently, on purpose (python/README.md lists it).
"""

from __future__ import annotations

import asyncio
import threading
import time
import traceback
from types import ModuleType
from typing import Any, Callable, Iterator, List, Tuple

import pytest

import tripwire
from conftest import Boom
from tripwire.compat import pybreaker as ours

try:
    from importlib.metadata import version

    import pybreaker as real

    REAL_VERSION = version("pybreaker")
except ImportError:  # pragma: no cover - ci.sh installs it
    real, REAL_VERSION = None, None

IMPLS = [
    pytest.param(ours, id="tripwire"),
    pytest.param(real, id="pybreaker-1.4.1", marks=pytest.mark.skipif(
        REAL_VERSION != "1.4.1", reason=f"compared with pybreaker 1.4.1; installed: {REAL_VERSION}")),
]
#: Short enough for tests; pybreaker reads the wall clock, so these sleep.
TIMEOUT = 0.05


@pytest.fixture(params=IMPLS)
def pb(request: pytest.FixtureRequest) -> ModuleType:
    return request.param  # type: ignore[no-any-return]


def recorder(pb: ModuleType) -> Any:
    """A listener that writes down every event, in order."""

    class Recorder(pb.CircuitBreakerListener):  # type: ignore[name-defined, misc]
        def __init__(self) -> None:
            self.events: List[Tuple[Any, ...]] = []

        def before_call(self, cb: Any, func: Any, *args: Any, **kwargs: Any) -> None:
            self.events.append(("before",))

        def state_change(self, cb: Any, old_state: Any, new_state: Any) -> None:
            self.events.append(("state", old_state.name if old_state else None, new_state.name))

        def failure(self, cb: Any, exc: BaseException) -> None:
            self.events.append(("failure", type(exc).__name__))

        def success(self, cb: Any) -> None:
            self.events.append(("success",))

    return Recorder()


def boom() -> None:
    raise Boom("down")


def ok() -> str:
    return "ok"


def raiser(exc: BaseException) -> Callable[[], None]:
    def f() -> None:
        raise exc

    return f


def trip(pb: ModuleType, cb: Any) -> None:
    for _ in range(cb.fail_max - 1):
        with pytest.raises(Boom):
            cb.call(boom)
    with pytest.raises(pb.CircuitBreakerError):
        cb.call(boom)
    assert cb.current_state == "open"


# -- the same on both ----------------------------------------------------------


def test_defaults(pb: ModuleType) -> None:
    cb = pb.CircuitBreaker()
    assert (cb.fail_max, cb.reset_timeout, cb.success_threshold, cb.name) == (5, 60, 1, None)
    assert (cb.fail_counter, cb.success_counter, cb.current_state) == (0, 0, "closed")
    assert cb.state.name == pb.STATE_CLOSED and cb.excluded_exceptions == () and cb.listeners == ()
    assert (pb.STATE_CLOSED, pb.STATE_OPEN, pb.STATE_HALF_OPEN) == ("closed", "open", "half-open")
    assert cb._state_storage.name == "memory"


def test_setters(pb: ModuleType) -> None:
    cb = pb.CircuitBreaker(name="a")
    cb.fail_max, cb.reset_timeout, cb.success_threshold, cb.name = 10, 30, 3, "b"
    assert (cb.fail_max, cb.reset_timeout, cb.success_threshold, cb.name) == (10, 30, 3, "b")


def test_a_lower_fail_max_trips_at_the_next_failure(pb: ModuleType) -> None:
    cb = pb.CircuitBreaker(fail_max=5)
    for _ in range(3):
        with pytest.raises(Boom):
            cb.call(boom)
    cb.fail_max = 3
    assert cb.current_state == "closed" and cb.fail_counter == 3
    with pytest.raises(pb.CircuitBreakerError, match="Failures threshold reached"):
        cb.call(boom)
    assert cb.current_state == "open" and cb.fail_counter == 4


def test_a_new_reset_timeout_and_success_threshold_take_effect(pb: ModuleType) -> None:
    cb = pb.CircuitBreaker(fail_max=1, reset_timeout=3600)
    cb.reset_timeout = TIMEOUT
    cb.success_threshold = 2
    trip(pb, cb)
    time.sleep(TIMEOUT * 2)
    assert cb.call(ok) == "ok"
    assert cb.current_state == "half-open" and cb.success_counter == 1
    assert cb.call(ok) == "ok"
    assert cb.current_state == "closed" and cb.success_counter == 0


def test_trip_reject_and_a_failed_trial(pb: ModuleType) -> None:
    cb = pb.CircuitBreaker(fail_max=2, reset_timeout=TIMEOUT)
    with pytest.raises(Boom):
        cb.call(boom)
    assert cb.fail_counter == 1 and cb.current_state == "closed"
    with pytest.raises(pb.CircuitBreakerError, match="^Failures threshold reached, circuit breaker opened$") as e:
        cb.call(boom)
    # The failure that tripped it is in the error's chain and its traceback.
    assert isinstance(e.value.__cause__ or e.value.__context__, Boom)
    assert "Boom" in "".join(traceback.format_exception(e.type, e.value, e.tb))
    assert cb.fail_counter == 2 and cb.current_state == "open"
    called: List[int] = []
    with pytest.raises(pb.CircuitBreakerError, match="^Timeout not elapsed yet, circuit breaker still open$"):
        cb.call(lambda: called.append(1))
    assert called == []
    time.sleep(TIMEOUT * 2)
    with pytest.raises(pb.CircuitBreakerError, match="^Trial call failed, circuit breaker opened$"):
        cb.call(boom)
    assert cb.current_state == "open" and cb.fail_counter == 3


def test_throw_new_error_on_trip_false_raises_the_original(pb: ModuleType) -> None:
    cb = pb.CircuitBreaker(fail_max=1, reset_timeout=TIMEOUT, throw_new_error_on_trip=False)
    with pytest.raises(Boom):
        cb.call(boom)
    assert cb.current_state == "open"
    with pytest.raises(pb.CircuitBreakerError):
        cb.call(ok)
    time.sleep(TIMEOUT * 2)
    with pytest.raises(Boom):
        cb.call(boom)
    assert cb.current_state == "open"
    assert cb.open() is False
    assert pb.CircuitBreaker().open() is True


def test_listeners_hear_pybreakers_order(pb: ModuleType) -> None:
    listener = recorder(pb)
    cb = pb.CircuitBreaker(fail_max=2, reset_timeout=TIMEOUT, listeners=[listener])
    cb.call(ok)
    for _ in range(2):
        with pytest.raises((Boom, pb.CircuitBreakerError)):
            cb.call(boom)
    # Rejected while open: no before_call.
    with pytest.raises(pb.CircuitBreakerError):
        cb.call(ok)
    time.sleep(TIMEOUT * 2)
    cb.call(ok)
    assert listener.events == [
        ("before",), ("success",),
        ("before",), ("failure", "Boom"),
        # The failure is reported before the state change it caused…
        ("before",), ("failure", "Boom"), ("state", "closed", "open"),
        # …and the way to half-open before the trial's before_call, the
        # close before the success that closed it.
        ("state", "open", "half-open"), ("before",), ("state", "half-open", "closed"), ("success",),
    ]


def test_a_failed_trial_reports_failure_then_the_change(pb: ModuleType) -> None:
    listener = recorder(pb)
    cb = pb.CircuitBreaker(fail_max=1, reset_timeout=TIMEOUT, listeners=[listener])
    with pytest.raises(pb.CircuitBreakerError):
        cb.call(boom)
    time.sleep(TIMEOUT * 2)
    listener.events.clear()
    with pytest.raises(pb.CircuitBreakerError, match="Trial call failed"):
        cb.call(boom)
    assert listener.events == [
        ("state", "open", "half-open"), ("before",), ("failure", "Boom"), ("state", "half-open", "open"),
    ]


def test_manual_moves(pb: ModuleType) -> None:
    listener = recorder(pb)
    cb = pb.CircuitBreaker(reset_timeout=TIMEOUT, listeners=[listener])
    cb.open()
    assert cb.current_state == "open"
    with pytest.raises(pb.CircuitBreakerError):
        cb.call(ok)
    cb.half_open()
    assert cb.current_state == "half-open"
    cb.close()
    assert cb.current_state == "closed"
    assert [e[1:] for e in listener.events if e[0] == "state"] == [
        ("closed", "open"), ("open", "half-open"), ("half-open", "closed"),
    ]
    # open() opens for reset_timeout, then lets a trial through.
    cb.open()
    time.sleep(TIMEOUT * 2)
    assert cb.call(ok) == "ok" and cb.current_state == "closed"


def test_manual_half_open_then_a_failure_or_a_success(pb: ModuleType) -> None:
    cb = pb.CircuitBreaker(fail_max=3)
    cb.half_open()
    assert cb.fail_counter == 0 and cb.current_state == "half-open"
    with pytest.raises(pb.CircuitBreakerError, match="^Trial call failed, circuit breaker opened$"):
        cb.call(boom)
    assert cb.fail_counter == 1 and cb.current_state == "open"
    cb.half_open()
    assert cb.call(ok) == "ok"
    assert cb.fail_counter == 0 and cb.current_state == "closed"


def test_close_resets_the_counts(pb: ModuleType) -> None:
    cb = pb.CircuitBreaker(fail_max=2)
    trip(pb, cb)
    cb.close()
    assert (cb.fail_counter, cb.current_state) == (0, "closed")
    with pytest.raises(Boom):
        cb.call(boom)
    assert cb.current_state == "closed"


def test_success_threshold(pb: ModuleType) -> None:
    cb = pb.CircuitBreaker(fail_max=1, reset_timeout=TIMEOUT, success_threshold=3)
    trip(pb, cb)
    time.sleep(TIMEOUT * 2)
    for n in (1, 2):
        assert cb.call(ok) == "ok"
        assert (cb.current_state, cb.success_counter) == ("half-open", n)
    with pytest.raises(pb.CircuitBreakerError, match="Trial call failed"):
        cb.call(boom)
    assert (cb.current_state, cb.success_counter) == ("open", 0)
    time.sleep(TIMEOUT * 2)
    for _ in range(3):
        cb.call(ok)
    assert (cb.current_state, cb.success_counter) == ("closed", 0)


def test_excluded_errors_count_as_successes(pb: ModuleType) -> None:
    class NotFound(Exception):
        pass

    cb = pb.CircuitBreaker(fail_max=2, exclude=[NotFound, lambda e: isinstance(e, KeyError) and e.args == ("k",)])
    for exc in (NotFound(), KeyError("k")):
        with pytest.raises(Boom):
            cb.call(boom)
        assert cb.fail_counter == 1
        with pytest.raises(type(exc)):
            cb.call(raiser(exc))
        assert cb.fail_counter == 0
    with pytest.raises(KeyError):
        cb.call(raiser(KeyError("other")))
    assert cb.fail_counter == 1
    assert not cb.is_system_error(NotFound()) and cb.is_system_error(Boom())
    cb.add_excluded_exception(Boom)
    cb.add_excluded_exceptions(ValueError, OSError)
    assert cb.excluded_exceptions[-3:] == (Boom, ValueError, OSError)
    cb.remove_excluded_exception(Boom)
    assert Boom not in cb.excluded_exceptions
    # In half-open, an excluded error is a successful trial.
    cb.half_open()
    with pytest.raises(NotFound):
        cb.call(raiser(NotFound()))
    assert cb.current_state == "closed"


def test_generators_are_guarded_while_they_run(pb: ModuleType) -> None:
    cb = pb.CircuitBreaker(fail_max=2)

    @cb
    def numbers(n: int) -> Iterator[int]:
        """Counts."""
        for i in range(n):
            yield i

    @cb
    def echo_then_fail() -> Iterator[Any]:
        got = yield "first"
        raise Boom(got)

    assert numbers.__doc__ == "Counts." and numbers.__name__ == "numbers"
    with pytest.raises(Boom):
        cb.call(boom)
    assert cb.fail_counter == 1
    gen = numbers(3)
    assert cb.fail_counter == 1, "not over until the generator ends"
    assert list(gen) == [0, 1, 2]
    assert cb.fail_counter == 0
    failing = echo_then_fail()
    assert next(failing) == "first"
    with pytest.raises(Boom, match="sent"):
        failing.send("sent")
    assert cb.fail_counter == 1 and cb.current_state == "closed"
    # The failure that trips it raises the breaker's error out of the loop.
    failing = echo_then_fail()
    next(failing)
    with pytest.raises(pb.CircuitBreakerError):
        failing.send("again")
    assert cb.current_state == "open"
    with pytest.raises(pb.CircuitBreakerError):
        numbers(1)


def test_decorator_with_and_without_parentheses(pb: ModuleType) -> None:
    cb = pb.CircuitBreaker(fail_max=1)

    @cb()
    def add(x: int, y: int = 0) -> int:
        """Adds."""
        return x + y

    @cb
    def sub(x: int, y: int) -> int:
        return x - y

    assert add(1, y=2) == 3 and add.__doc__ == "Adds." and add.__name__ == "add"
    assert sub(5, 3) == 2 and cb(lambda: 7)() == 7
    with pytest.raises(pb.CircuitBreakerError):
        cb(boom)()
    with pytest.raises(pb.CircuitBreakerError):
        add(1)


def test_calling_guards_a_block(pb: ModuleType) -> None:
    cb = pb.CircuitBreaker(fail_max=2, reset_timeout=TIMEOUT)
    with pytest.raises(Boom):
        with cb.calling():
            raise Boom
    with pytest.raises(pb.CircuitBreakerError):
        with cb.calling():
            raise Boom
    ran: List[int] = []
    with pytest.raises(pb.CircuitBreakerError):
        with cb.calling():
            ran.append(1)
    assert ran == [] and cb.fail_counter == 2
    time.sleep(TIMEOUT * 2)
    with cb.calling():
        ran.append(2)
    assert ran == [2] and (cb.fail_counter, cb.current_state) == (0, "closed")


def test_memory_storage_gives_the_initial_state_and_counts(pb: ModuleType) -> None:
    for state in (pb.STATE_OPEN, pb.STATE_CLOSED, pb.STATE_HALF_OPEN):
        storage = pb.CircuitMemoryStorage(state)
        storage.increment_counter()
        cb = pb.CircuitBreaker(state_storage=storage)
        assert cb.state.name == state and cb.current_state == state
        assert cb.fail_counter == 1 and cb._state_storage is storage


def test_memory_storage_follows_the_breaker(pb: ModuleType) -> None:
    storage = pb.CircuitMemoryStorage(pb.STATE_CLOSED)
    cb = pb.CircuitBreaker(fail_max=2, state_storage=storage)
    with pytest.raises(Boom):
        cb.call(boom)
    assert storage.counter == 1
    with pytest.raises(pb.CircuitBreakerError):
        cb.call(boom)
    assert storage.state == "open" and storage.opened_at is not None and storage.counter == 2
    cb.close()
    assert (storage.state, storage.counter) == ("closed", 0)


def test_a_fail_counter_carried_by_the_storage_counts_towards_the_trip(pb: ModuleType) -> None:
    storage = pb.CircuitMemoryStorage(pb.STATE_CLOSED)
    storage.increment_counter()
    storage.increment_counter()
    cb = pb.CircuitBreaker(fail_max=3, state_storage=storage)
    with pytest.raises(pb.CircuitBreakerError):
        cb.call(boom)
    assert cb.current_state == "open"


def test_the_state_setter_reports_the_move(pb: ModuleType) -> None:
    listener = recorder(pb)
    cb = pb.CircuitBreaker(listeners=[listener])
    cb.state = "open"
    assert listener.events[0] == ("state", "closed", "open")
    with pytest.raises(ValueError):
        cb.state = "sideways"


def test_a_listener_that_raises_in_before_call_stops_the_call(pb: ModuleType) -> None:
    class Veto(pb.CircuitBreakerListener):  # type: ignore[name-defined, misc]
        def before_call(self, cb: Any, func: Any, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("veto")

    cb = pb.CircuitBreaker(fail_max=1, listeners=[Veto()])
    called: List[int] = []
    with pytest.raises(RuntimeError, match="veto"):
        cb.call(lambda: called.append(1))
    assert called == [] and cb.current_state == "closed"


def test_interrupts_differ_on_purpose(pb: ModuleType) -> None:
    # pybreaker counts any BaseException; tripwire leaves the breaker as it was.
    cb = pb.CircuitBreaker(fail_max=5)
    with pytest.raises(KeyboardInterrupt):
        cb.call(raiser(KeyboardInterrupt()))
    assert cb.fail_counter == (0 if pb is ours else 1)


# -- tripwire's own -------------------------------------------------------------------


def test_the_state_setter_moves_the_breaker(clock: tripwire.ManualClock) -> None:
    # pybreaker only swaps its cached state object, which its storage undoes
    # on the next read; here the breaker really moves.
    cb = ours.CircuitBreaker(reset_timeout=10, clock=clock)
    cb.state = "open"
    assert cb.current_state == "open"
    with pytest.raises(ours.CircuitBreakerError) as e:
        cb.call(ok)
    assert e.value.__cause__.retry_after == pytest.approx(10.0)
    cb.state = "half-open"
    assert cb.current_state == "half-open"
    cb.state = "closed"
    assert cb.call(ok) == "ok"


def test_open_opens_for_reset_timeout_on_the_breakers_clock(clock: tripwire.ManualClock) -> None:
    cb = ours.CircuitBreaker(reset_timeout=30, clock=clock)
    cb.open()
    clock.advance(29)
    with pytest.raises(ours.CircuitBreakerError):
        cb.call(ok)
    clock.advance(1)
    assert cb.call(ok) == "ok" and cb.current_state == "closed"


def test_half_open_admits_success_threshold_trials_at_once(clock: tripwire.ManualClock) -> None:
    cb = ours.CircuitBreaker(fail_max=1, reset_timeout=5, success_threshold=2, clock=clock)
    with pytest.raises(ours.CircuitBreakerError):
        cb.call(boom)
    clock.advance(5)
    inner: List[str] = []

    def trial() -> str:
        # While two trials run, a third caller is turned away.
        if len(inner) < 1:
            inner.append("one")
            return cb.call(trial)
        with pytest.raises(ours.CircuitBreakerError, match="Trial calls in progress"):
            cb.call(ok)
        return "two"

    assert cb.call(trial) == "two"


def test_a_generator_closed_early_is_not_a_failure() -> None:
    cb = ours.CircuitBreaker(fail_max=1)

    @cb
    def forever() -> Iterator[int]:
        while True:
            yield 1

    gen = forever()
    next(gen)
    gen.close()
    assert cb.current_state == "closed" and cb.fail_counter == 0


def test_a_refused_setting_leaves_the_breaker_as_it_was_and_names_pybreakers_argument() -> None:
    cb = ours.CircuitBreaker(fail_max=3)
    with pytest.raises(ValueError, match=r"fail_max = 100000, expected 1 to 65535"):
        cb.fail_max = 100000
    assert cb.fail_max == 3 and cb.breaker.failure_threshold == 3
    with pytest.raises(ValueError, match=r"success_threshold = 50, expected 1 to 10"):
        cb.success_threshold = 50
    assert cb.success_threshold == 1
    # A good setting still takes: the refused one did not stay behind.
    cb.success_threshold = 2
    assert cb.success_threshold == 2 and cb.breaker.half_open_max == 2
    cb.fail_max = 4
    assert cb.breaker.failure_threshold == 4
    with pytest.raises(ValueError, match=r"^invalid breaker config: reset_timeout = 691200s"):
        ours.CircuitBreaker(reset_timeout=8 * 86400)
    with pytest.raises(ValueError, match=r"^reset_timeout must be a finite"):
        ours.CircuitBreaker(reset_timeout=float("nan"))


def test_bad_arguments_are_clear_errors() -> None:
    for kwargs in ({"fail_max": -1}, {"fail_max": 2.5}, {"success_threshold": -1}, {"fail_max": True}):
        with pytest.raises(ValueError):
            ours.CircuitBreaker(**kwargs)  # type: ignore[arg-type]
    for timeout in (-1, 8 * 86400):
        with pytest.raises(ValueError):
            ours.CircuitBreaker(reset_timeout=timeout)
    with pytest.raises(ValueError, match="Unknown state"):
        ours.CircuitBreaker(state_storage=ours.CircuitMemoryStorage("ajar"))
    cb = ours.CircuitBreaker()
    with pytest.raises(ValueError):
        cb.fail_max = -3
    with pytest.raises(ValueError):
        cb.reset_timeout = -1
    assert cb.reset_timeout == 60 and cb.fail_max == 5
    with pytest.raises(TypeError):
        cb.name = 7  # type: ignore[assignment]
    with pytest.raises(TypeError):
        cb(ok, ok)
    with pytest.raises(TypeError):
        cb(colour="red")


def test_rejections_carry_tripwires_error(clock: tripwire.ManualClock) -> None:
    cb = ours.CircuitBreaker(fail_max=1, reset_timeout=10, name="db", clock=clock)
    assert issubclass(ours.CircuitBreakerError, tripwire.TripwireError)
    with pytest.raises(ours.CircuitBreakerError) as e:
        cb.call(boom)
    assert isinstance(e.value.__cause__, Boom)
    clock.advance(4)
    with pytest.raises(ours.CircuitBreakerError) as e:
        cb.call(ok)
    assert isinstance(e.value.__cause__, tripwire.CircuitOpenError)
    assert e.value.__cause__.retry_after == pytest.approx(6.0) and e.value.__cause__.name == "db"


def test_reset_timeout_zero_means_a_trial_at_once() -> None:
    cb = ours.CircuitBreaker(fail_max=1, reset_timeout=0)
    with pytest.raises(ours.CircuitBreakerError):
        cb.call(boom)
    time.sleep(0.001)
    assert cb.call(ok) == "ok"


def test_async(clock: tripwire.ManualClock) -> None:
    cb = ours.CircuitBreaker(fail_max=1, clock=clock)

    @cb
    async def fetch() -> str:
        await asyncio.sleep(0)
        return "ok"

    @cb(__pybreaker_call_async=True)
    def legacy() -> Any:
        return fetch.__wrapped__()

    assert asyncio.run(fetch()) == "ok"
    assert asyncio.run(legacy()) == "ok"
    assert asyncio.run(cb.call_async(fetch.__wrapped__)) == "ok"

    async def fail() -> None:
        raise Boom

    with pytest.raises(ours.CircuitBreakerError):
        asyncio.run(cb.call_async(fail))
    assert cb.current_state == "open"


def test_threads_are_not_serialised() -> None:
    cb = ours.CircuitBreaker()

    @cb
    def io() -> None:
        time.sleep(0.001)

    def worker() -> None:
        for _ in range(50):
            io()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.perf_counter() - start < 0.25
