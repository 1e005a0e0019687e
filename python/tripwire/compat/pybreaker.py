"""pybreaker's public API on tripwire's lock-free breaker.

Moving over is one changed import::

    # import pybreaker
    from tripwire.compat import pybreaker

    db_breaker = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=60)

    @db_breaker
    def update_customer(cust): ...

What is the same: ``CircuitBreaker(fail_max, reset_timeout,
success_threshold, exclude, listeners, name, throw_new_error_on_trip)``,
``call``, use as a decorator, ``calling()``, ``open()`` / ``close()`` /
``half_open()``, ``fail_counter``, ``success_counter``, ``current_state``,
``state.name``, ``STATE_CLOSED`` / ``STATE_OPEN`` / ``STATE_HALF_OPEN``,
``CircuitBreakerError``, and ``CircuitBreakerListener`` with
``before_call``, ``state_change``, ``failure`` and ``success``. Excluded
errors (classes or predicates) count as successes, as in pybreaker, and
the failure that trips the breaker raises ``CircuitBreakerError`` (from
the original error) unless ``throw_new_error_on_trip=False``.

Where tripwire deliberately differs:

- No lock. pybreaker holds a lock across the whole guarded call, so
  threads sharing a breaker run their calls one at a time; here admission
  and recording are atomic operations and calls run in parallel. Counters
  that pybreaker reads under its lock (``fail_counter``,
  ``success_counter``) are best-effort here when threads race.
- Only ``Exception`` subclasses count as failures. pybreaker counts any
  ``BaseException``; here ``KeyboardInterrupt``, ``SystemExit``,
  ``GeneratorExit`` and ``asyncio.CancelledError`` leave the breaker as it
  was.
- Half-open admits ``success_threshold`` probes at once and rejects other
  calls until they finish (pybreaker lets every caller through).
- ``open()`` forces the breaker open until ``close()``: it does not
  recover after ``reset_timeout`` on its own. ``half_open()`` cannot force
  a half-open state (tripwire has none to force): it closes the breaker,
  so that calls are let through and failures count again from zero.
- ``call_async`` and decorated ``async def`` functions use asyncio (not
  Tornado); ``state_storage`` (e.g. Redis) is not supported — use
  ``tripwire.Breaker.shared`` across processes on one host.
- ``CircuitBreakerError`` derives from ``tripwire.TripwireError``; the
  breaker's own ``CircuitOpenError`` is its ``__cause__``, with
  ``retry_after``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from typing import Any, Awaitable, Callable, Iterable, Iterator, List, Optional, Sequence, TypeVar, Union

from .._errors import CircuitOpenError, TripwireError
from .._tripwire import Breaker, ManualClock

__all__ = [
    "STATE_CLOSED",
    "STATE_HALF_OPEN",
    "STATE_OPEN",
    "CircuitBreaker",
    "CircuitBreakerError",
    "CircuitBreakerListener",
    "CircuitBreakerState",
]

T = TypeVar("T")

STATE_CLOSED = "closed"
STATE_OPEN = "open"
STATE_HALF_OPEN = "half-open"

#: tripwire's state names → pybreaker's.
_NAMES = {
    "closed": STATE_CLOSED,
    "open": STATE_OPEN,
    "half_open": STATE_HALF_OPEN,
    "forced_open": STATE_OPEN,
    "disabled": STATE_CLOSED,
}

Exclusion = Union[type, Callable[[BaseException], bool]]


class CircuitBreakerError(TripwireError):
    """Raised when the breaker rejects a call, or when a failure trips it."""


class CircuitBreakerState:
    """A state as pybreaker's listeners and ``CircuitBreaker.state`` see it:
    compare its ``name`` with ``STATE_CLOSED``, ``STATE_OPEN`` or
    ``STATE_HALF_OPEN``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CircuitBreakerState):
            return self.name == other.name
        return self.name == other

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"CircuitBreakerState({self.name!r})"


class CircuitBreakerListener:
    """Subclass and override what you need; register with ``listeners=`` or
    ``add_listener``."""

    def before_call(self, cb: CircuitBreaker, func: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Called before each call the breaker guards."""

    def state_change(
        self, cb: CircuitBreaker, old_state: Optional[CircuitBreakerState], new_state: CircuitBreakerState
    ) -> None:
        """Called after the breaker changed state."""

    def failure(self, cb: CircuitBreaker, exc: BaseException) -> None:
        """Called after a call failed."""

    def success(self, cb: CircuitBreaker) -> None:
        """Called after a call succeeded."""


class CircuitBreaker:
    """pybreaker's ``CircuitBreaker`` on a ``tripwire.Breaker`` (the
    ``breaker`` attribute)."""

    def __init__(
        self,
        fail_max: int = 5,
        reset_timeout: float = 60,
        success_threshold: int = 1,
        exclude: Optional[Iterable[Exclusion]] = None,
        listeners: Optional[Sequence[CircuitBreakerListener]] = None,
        state_storage: Any = None,
        name: Optional[str] = None,
        throw_new_error_on_trip: bool = True,
        *,
        clock: Optional[ManualClock] = None,
    ) -> None:
        if state_storage is not None:
            raise TypeError("state_storage is not supported; use tripwire.Breaker.shared across processes")
        self._excluded: List[Exclusion] = list(exclude or ())
        self._listeners: List[CircuitBreakerListener] = list(listeners or ())
        self._throw_new_error_on_trip = throw_new_error_on_trip
        self._fail_counter = 0
        self._success_counter = 0
        self.breaker = Breaker(
            failure_threshold=fail_max,
            open_timeout=reset_timeout,
            half_open_max=success_threshold,
            half_open_successes=success_threshold,
            name=name,
            on_state_change=self._on_state_change,
            clock=clock,
        )

    # -- configuration ------------------------------------------------------

    @property
    def fail_max(self) -> int:
        return self.breaker.failure_threshold

    @property
    def reset_timeout(self) -> float:
        return self.breaker.open_timeout

    @property
    def success_threshold(self) -> int:
        return self.breaker.half_open_successes

    @property
    def name(self) -> Optional[str]:
        return self.breaker.name

    @property
    def excluded_exceptions(self) -> tuple[Exclusion, ...]:
        return tuple(self._excluded)

    def add_excluded_exception(self, exception: Exclusion) -> None:
        self._excluded.append(exception)

    def add_excluded_exceptions(self, *exceptions: Exclusion) -> None:
        self._excluded.extend(exceptions)

    def remove_excluded_exception(self, exception: Exclusion) -> None:
        self._excluded.remove(exception)

    @property
    def listeners(self) -> tuple[CircuitBreakerListener, ...]:
        return tuple(self._listeners)

    def add_listener(self, listener: CircuitBreakerListener) -> None:
        self._listeners.append(listener)

    def add_listeners(self, *listeners: CircuitBreakerListener) -> None:
        self._listeners.extend(listeners)

    def remove_listener(self, listener: CircuitBreakerListener) -> None:
        self._listeners.remove(listener)

    # -- state --------------------------------------------------------------

    @property
    def current_state(self) -> str:
        """``"closed"``, ``"open"`` or ``"half-open"``."""
        return _NAMES[self.breaker.state]

    @property
    def state(self) -> CircuitBreakerState:
        return CircuitBreakerState(self.current_state)

    @property
    def fail_counter(self) -> int:
        """Consecutive failures since the last success or close."""
        return self._fail_counter

    @property
    def success_counter(self) -> int:
        """Successful trial calls in the current half-open state."""
        return self._success_counter

    def open(self) -> bool:
        """Opens the breaker until ``close()`` (see the module's notes)."""
        self.breaker.force_open()
        return True

    def close(self) -> None:
        """Closes the breaker with fresh counts."""
        self.breaker.reset()

    def half_open(self) -> None:
        """Lets calls through again: closes the breaker (see the module's notes)."""
        self.breaker.reset()

    def _on_state_change(self, _breaker: Breaker, old: str, new: str) -> None:
        if new in ("closed", "disabled"):
            self._fail_counter = 0
        self._success_counter = 0
        old_name, new_name = _NAMES[old], _NAMES[new]
        if old_name == new_name:
            return
        for listener in self._listeners:
            listener.state_change(self, CircuitBreakerState(old_name), CircuitBreakerState(new_name))

    # -- calls --------------------------------------------------------------

    def is_system_error(self, exception: BaseException) -> bool:
        """Whether ``exception`` counts as a failure (it is not excluded)."""
        for excluded in self._excluded:
            if isinstance(excluded, type):
                if isinstance(exception, excluded):
                    return False
            elif excluded(exception):
                return False
        return True

    def _admit(self, func: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        for listener in self._listeners:
            listener.before_call(self, func, *args, **kwargs)
        try:
            return self.breaker._acquire()
        except CircuitOpenError as e:
            raise CircuitBreakerError("Timeout not elapsed yet, circuit breaker still open") from e

    def _succeeded(self, ticket: Any) -> None:
        self.breaker._record(ticket, "success")
        self._fail_counter = 0
        if self.breaker.state == "half_open":
            self._success_counter += 1
        for listener in self._listeners:
            listener.success(self)

    def _failed(self, ticket: Any, exc: BaseException) -> None:
        """Records how a call that raised ``exc`` ended; raises
        ``CircuitBreakerError`` if this failure tripped the breaker."""
        if not isinstance(exc, Exception):
            self.breaker._record(ticket, "ignored")
            return
        if not self.is_system_error(exc):
            self._succeeded(ticket)
            return
        generation = self.breaker.generation
        self._fail_counter += 1
        self.breaker._record(ticket, "failure")
        for listener in self._listeners:
            listener.failure(self, exc)
        tripped = self.breaker.state == "open" and self.breaker.generation != generation
        if tripped and self._throw_new_error_on_trip:
            raise CircuitBreakerError("Failures threshold reached, circuit breaker opened") from exc

    def call(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Calls ``func(*args, **kwargs)`` under the breaker."""
        ticket = self._admit(func, args, kwargs)
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:
            self._failed(ticket, exc)
            raise
        self._succeeded(ticket)
        return result

    async def call_async(self, func: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Awaits ``func(*args, **kwargs)`` under the breaker (asyncio)."""
        ticket = self._admit(func, args, kwargs)
        try:
            result = await func(*args, **kwargs)
        except BaseException as exc:
            self._failed(ticket, exc)
            raise
        self._succeeded(ticket)
        return result

    @contextlib.contextmanager
    def calling(self) -> Iterator[None]:
        """``with breaker.calling(): ...`` guards the block."""
        ticket = self._admit(self.calling, (), {})
        try:
            yield
        except BaseException as exc:
            self._failed(ticket, exc)
            raise
        self._succeeded(ticket)

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """Decorates a plain or ``async def`` function."""
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                return await self.call_async(func, *args, **kwargs)

            return guarded_async

        @functools.wraps(func)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            return self.call(func, *args, **kwargs)

        return guarded
