"""pybreaker's public API on tripwire's lock-free breaker.

Moving over is one changed import::

    # import pybreaker
    from tripwire.compat import pybreaker

    db_breaker = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=60)

    @db_breaker
    def update_customer(cust): ...

As in pybreaker 1.4.1: ``CircuitBreaker(fail_max, reset_timeout,
success_threshold, exclude, listeners, state_storage, name,
throw_new_error_on_trip)`` and the setters of ``fail_max``,
``reset_timeout``, ``success_threshold`` and ``name``; ``call``, use as a
decorator with or without parentheses, ``calling()``; generator functions
guarded until the generator ends (an exception while iterating is a
failure); ``open()`` (open for ``reset_timeout``, then a trial call),
``half_open()``, ``close()``, ``state = "open"`` and the like;
``fail_counter``, ``success_counter``, ``current_state``, ``state.name``;
``STATE_CLOSED`` / ``STATE_OPEN`` / ``STATE_HALF_OPEN``;
``CircuitBreakerError`` with pybreaker's messages; ``CircuitBreakerListener``
whose ``before_call`` runs only for calls let through, whose
``state_change`` comes after the ``failure`` that caused it and before the
``success`` that closed it; excluded errors (classes or predicates) count
as successes; ``CircuitMemoryStorage``; ``CircuitRedisStorage`` on
tripwire's fleet link.

Where tripwire deliberately differs (see also python/README.md):

- No lock. pybreaker holds a lock across the whole guarded call, so
  threads sharing a breaker run their calls one at a time; here admission
  and recording are atomic operations and calls run in parallel. The
  counters pybreaker reads under its lock (``fail_counter``,
  ``success_counter``) are best-effort here when threads race; the
  breaker's decisions are exact.
- Only ``Exception`` subclasses count as failures. pybreaker counts any
  ``BaseException``; here ``KeyboardInterrupt``, ``SystemExit``,
  ``GeneratorExit`` (a generator closed early) and
  ``asyncio.CancelledError`` leave the breaker as it was.
- After ``reset_timeout``, half-open admits ``success_threshold`` trial
  calls at once and rejects other calls until they finish (pybreaker
  runs every caller, one at a time under its lock). A manual
  ``half_open()`` lets every call through, as pybreaker does.
- ``call_async`` and decorated ``async def`` functions use asyncio (not
  Tornado).
- ``state_storage``: ``CircuitMemoryStorage`` sets the initial state and
  counts and mirrors them afterwards; a breaker that starts open stays
  open a full ``reset_timeout`` from its creation (pybreaker counts from
  the storage's ``opened_at``). Two breakers on one storage do not share
  a state: ``tripwire.Breaker.shared`` does that across processes.
- ``CircuitRedisStorage(state, redis_object, namespace, ...)`` maps onto
  ``tripwire.Fleet``; it needs the fleet's signing key (``key=`` or
  ``TRIPWIRE_FLEET_KEY``). pybreaker's reads and writes Redis on every
  call; here no call touches Redis, and only the transitions travel (see
  python/README.md, "pybreaker's CircuitRedisStorage", for every
  difference).
- Changing ``fail_max``, ``reset_timeout``, ``success_threshold`` or
  ``name`` rebuilds the tripwire breaker: an open breaker starts its
  cool-down again, and calls in flight at that moment are not counted.
  ``fail_max`` below 0 or above 65535, ``success_threshold`` below 0 or
  above 10 and ``reset_timeout`` below 0 or above 7 days are a
  ``ValueError`` naming the argument; a refused setting changes nothing.
- ``open()`` and a failed manual trial open the tripwire breaker by
  recording ``fail_max`` failures, which its metrics count.
- ``CircuitBreakerError`` derives from ``tripwire.TripwireError``; the
  failure that tripped the breaker is its ``__cause__`` (pybreaker: its
  ``__context__``); a rejection's ``__cause__`` is tripwire's
  ``CircuitOpenError`` with ``retry_after``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
import threading
import types
from datetime import datetime, timezone
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    Generator,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

from .._errors import CircuitOpenError, TripwireError
from .._tripwire import Breaker, Fleet, ManualClock, Ticket

__all__ = [
    "STATE_CLOSED",
    "STATE_HALF_OPEN",
    "STATE_OPEN",
    "CircuitBreaker",
    "CircuitBreakerError",
    "CircuitBreakerListener",
    "CircuitBreakerState",
    "CircuitBreakerStorage",
    "CircuitMemoryStorage",
    "CircuitRedisStorage",
]

T = TypeVar("T")

STATE_CLOSED = "closed"
STATE_OPEN = "open"
STATE_HALF_OPEN = "half-open"
_STATES = (STATE_CLOSED, STATE_OPEN, STATE_HALF_OPEN)

#: tripwire's state names → pybreaker's.
_NAMES = {
    "closed": STATE_CLOSED,
    "open": STATE_OPEN,
    "half_open": STATE_HALF_OPEN,
    "forced_open": STATE_OPEN,
    "disabled": STATE_CLOSED,
}

Exclusion = Union[type, Callable[[BaseException], bool]]

#: The shortest cool-down the core accepts (seconds).
_SHORTEST = 1e-6

_REJECTED = "Timeout not elapsed yet, circuit breaker still open"
_TRIALS_BUSY = "Trial calls in progress, circuit breaker half-open"
_TRIPPED = "Failures threshold reached, circuit breaker opened"
_TRIAL_FAILED = "Trial call failed, circuit breaker opened"


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
        """Called before each call the breaker lets through."""

    def state_change(
        self, cb: CircuitBreaker, old_state: Optional[CircuitBreakerState], new_state: CircuitBreakerState
    ) -> None:
        """Called after the breaker changed state."""

    def failure(self, cb: CircuitBreaker, exc: BaseException) -> None:
        """Called after a call failed."""

    def success(self, cb: CircuitBreaker) -> None:
        """Called after a call succeeded."""


# -- storage -------------------------------------------------------------------


class CircuitBreakerStorage:
    """pybreaker's storage interface: a state, the failure and success
    counters and the time the breaker last opened. tripwire reads the
    initial state and counters from it and keeps it up to date; the
    decisions are the tripwire breaker's."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def state(self) -> str:
        raise NotImplementedError

    @state.setter
    def state(self, state: str) -> None:
        raise NotImplementedError

    def increment_counter(self) -> None:
        raise NotImplementedError

    def reset_counter(self) -> None:
        raise NotImplementedError

    def increment_success_counter(self) -> None:
        raise NotImplementedError

    def reset_success_counter(self) -> None:
        raise NotImplementedError

    @property
    def counter(self) -> int:
        raise NotImplementedError

    @property
    def success_counter(self) -> int:
        raise NotImplementedError

    @property
    def opened_at(self) -> Optional[datetime]:
        raise NotImplementedError

    @opened_at.setter
    def opened_at(self, value: datetime) -> None:
        raise NotImplementedError


class _LocalStorage(CircuitBreakerStorage):
    """A state, counters and ``opened_at`` in this process's memory."""

    def __init__(self, name: str, state: str) -> None:
        super().__init__(name)
        self._state = state
        self._fail_counter = 0
        self._success_counter = 0
        self._opened_at: Optional[datetime] = None

    @property
    def state(self) -> str:
        return self._state

    @state.setter
    def state(self, state: str) -> None:
        self._state = state

    def increment_counter(self) -> None:
        self._fail_counter += 1

    def reset_counter(self) -> None:
        self._fail_counter = 0

    def increment_success_counter(self) -> None:
        self._success_counter += 1

    def reset_success_counter(self) -> None:
        self._success_counter = 0

    @property
    def counter(self) -> int:
        return self._fail_counter

    @property
    def success_counter(self) -> int:
        return self._success_counter

    @property
    def opened_at(self) -> Optional[datetime]:
        return self._opened_at

    @opened_at.setter
    def opened_at(self, value: datetime) -> None:
        self._opened_at = value


class CircuitMemoryStorage(_LocalStorage):
    """The state and counters in this process's memory (pybreaker's
    default)."""

    def __init__(self, state: str) -> None:
        super().__init__("memory", state)


#: The environment variable a ``CircuitRedisStorage`` reads its signing key
#: from when it is given no ``key=``.
KEY_ENV = "TRIPWIRE_FLEET_KEY"

#: The fleet namespace (one Redis channel and one set of keys) of every
#: ``CircuitRedisStorage``; the breakers in it are told apart by name.
FLEET_NAMESPACE = "pybreaker"


class CircuitRedisStorage(_LocalStorage):
    """pybreaker's ``CircuitRedisStorage(state, redis_object, namespace,
    fallback_circuit_state, cluster_mode)`` on ``tripwire.Fleet``: the
    breakers of every process and host that use the same Redis and the same
    ``namespace`` share their trips, holds and closes, and one of them
    probes per cool-down.

    Unlike pybreaker's, nothing here touches Redis on a call's path: the
    state, the counters and ``opened_at`` are this process's (as in
    ``CircuitMemoryStorage``), each decision is the local breaker's, and the
    fleet link carries its transitions through Redis in the background. See
    the module's doc for what differs.

    ``redis_object``: a ``redis.Redis`` client (its host, port, db,
    username, password and TLS are read; no command is sent through it) or
    a ``redis://`` URL. ``namespace``: the breaker's name in the fleet
    (pybreaker's key prefix); None is pybreaker's "pybreaker". ``key``: the
    fleet's signing key (bytes or str, at least 16 bytes, the same on every
    host), else the ``TRIPWIRE_FLEET_KEY`` environment variable.
    ``fleet_options``: ``tripwire.Fleet``'s keyword arguments
    (``lease_lead``, ``probe_timeout``, ``max_skew``, ``connect_timeout``,
    ``io_timeout``). ``fallback_circuit_state`` is checked and kept
    (``fallback_circuit_state`` attribute) but never needed: without Redis
    each process goes on as a plain local breaker, in the state it has.
    ``cluster_mode=True`` raises ``NotImplementedError``: the link speaks to
    one Redis server.
    """

    BASE_NAMESPACE = FLEET_NAMESPACE

    def __init__(
        self,
        state: str,
        redis_object: Any,
        namespace: Optional[str] = None,
        fallback_circuit_state: str = STATE_CLOSED,
        cluster_mode: bool = False,
        *,
        key: Union[bytes, str, None] = None,
        **fleet_options: Any,
    ) -> None:
        state = str(state)
        if state not in _STATES:
            raise ValueError(f"Unknown state {state!r}, valid states: {', '.join(_STATES)}")
        if fallback_circuit_state not in _STATES:
            raise ValueError(
                f"Unknown fallback_circuit_state {fallback_circuit_state!r}, valid states: {', '.join(_STATES)}"
            )
        if cluster_mode:
            raise NotImplementedError(
                "cluster_mode is not supported: the fleet link speaks to one Redis server; "
                "give it the URL of one node (every host the same)"
            )
        if namespace is not None and (not isinstance(namespace, str) or not namespace):
            raise ValueError(f"namespace must be a non-empty str or None, got {namespace!r}")
        super().__init__("redis", state)
        self.fallback_circuit_state = fallback_circuit_state
        self._breaker_name = namespace if namespace is not None else FLEET_NAMESPACE
        url, credentials = _redis_location(redis_object)
        if key is None:
            env = os.environ.get(KEY_ENV)
            if not env:
                raise ValueError(
                    "CircuitRedisStorage needs the fleet's signing key: pass key=... (bytes or str, at least "
                    f"16 bytes, the same on every host) or set {KEY_ENV}; the fleet's messages are signed "
                    "so that a client of the Redis without it cannot open every breaker"
                )
            key = env
        self._fleet_args: Tuple[Tuple[Any, ...], Dict[str, Any]] = (
            (url, FLEET_NAMESPACE, key),
            {**credentials, **fleet_options},
        )
        args, kwargs = self._fleet_args
        self._fleet: Fleet = Fleet(*args, **kwargs)
        self._joined = False

    @property
    def namespace(self) -> str:
        """The breaker's name in the fleet (and its ``tripwire.Breaker``'s)."""
        return self._breaker_name

    @property
    def fleet(self) -> Fleet:
        """The ``tripwire.Fleet`` link: ``link_state``, ``wait_linked``,
        ``snapshot()``."""
        return self._fleet

    def _join(self, breaker: Breaker) -> None:
        """Joins the breaker a ``CircuitBreaker`` made; a rebuilt one (a
        setter changed its config) gets a fresh link, as a name joins once."""
        if self._joined:
            args, kwargs = self._fleet_args
            self._fleet = Fleet(*args, **kwargs)
        self._fleet.join(breaker)
        self._joined = True


def _redis_location(redis_object: Any) -> Tuple[str, Dict[str, Any]]:
    """A ``redis://`` URL and the credentials for ``tripwire.Fleet``, from
    a URL or a redis-py client (read, never used)."""
    if isinstance(redis_object, str):
        if not redis_object.startswith(("redis://", "rediss://")):
            raise ValueError(f"redis_object must be a redis:// or rediss:// URL or a redis.Redis, got {redis_object!r}")
        return redis_object, {}
    pool = getattr(redis_object, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", None)
    if not isinstance(kwargs, dict):
        raise TypeError(
            "redis_object must be a redis.Redis client (with a connection pool) or a redis:// URL, "
            f"got {type(redis_object).__name__}"
        )
    if kwargs.get("path"):
        raise ValueError(
            f"redis_object connects through the Unix socket {kwargs['path']!r}; the fleet link needs "
            "a TCP address: give a redis:// URL or a client made with host= and port="
        )
    host = str(kwargs.get("host") or "localhost")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    scheme = "rediss" if "SSL" in getattr(getattr(pool, "connection_class", None), "__name__", "") else "redis"
    url = f"{scheme}://{host}:{int(kwargs.get('port') or 6379)}/{int(kwargs.get('db') or 0)}"
    credentials = {k: kwargs[k] for k in ("username", "password") if kwargs.get(k) is not None}
    return url, credentials


#: The tripwire.Breaker arguments the pybreaker ones become, for messages.
_PYBREAKER_ARG = {
    "failure_threshold": "fail_max",
    "open_timeout": "reset_timeout",
    "half_open_max": "success_threshold",
    "half_open_successes": "success_threshold",
}
_PYBREAKER_NAMES = re.compile(r"\b(" + "|".join(_PYBREAKER_ARG) + r")\b")


def _count(arg: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{arg} must be an int >= 0, got {value!r}")
    return value


def _rejection(e: CircuitOpenError) -> CircuitBreakerError:
    return CircuitBreakerError(_TRIALS_BUSY if e.state == "half_open" else _REJECTED)


class _Pending(threading.local):
    """The tripwire breaker's transitions that this thread's last call
    caused, kept until pybreaker's order says they are due."""

    def __init__(self) -> None:
        self.events: List[Tuple[str, str]] = []


# -- the breaker -----------------------------------------------------------------


class CircuitBreaker:
    """pybreaker's ``CircuitBreaker`` on a ``tripwire.Breaker`` (the
    ``breaker`` attribute). ``clock``: a ``tripwire.ManualClock`` for tests."""

    def __init__(
        self,
        fail_max: int = 5,
        reset_timeout: float = 60,
        success_threshold: int = 1,
        exclude: Optional[Iterable[Exclusion]] = None,
        listeners: Optional[Sequence[CircuitBreakerListener]] = None,
        state_storage: Optional[CircuitBreakerStorage] = None,
        name: Optional[str] = None,
        throw_new_error_on_trip: bool = True,
        *,
        clock: Optional[ManualClock] = None,
    ) -> None:
        if getattr(state_storage, "name", None) == "redis" and not isinstance(state_storage, CircuitRedisStorage):
            raise TypeError(
                "this state_storage is pybreaker's own CircuitRedisStorage, which reads Redis on every call; "
                "use tripwire.compat.pybreaker.CircuitRedisStorage (same arguments, plus the fleet's key=)"
            )
        storage = state_storage if state_storage is not None else CircuitMemoryStorage(STATE_CLOSED)
        initial = next((s for s in _STATES if s == storage.state), None)
        if initial is None:
            raise ValueError(f"Unknown state {storage.state!r}, valid states: {', '.join(_STATES)}")
        self._state_storage = storage
        self._fail_max = _count("fail_max", fail_max)
        self._reset_timeout = reset_timeout
        self._success_threshold = _count("success_threshold", success_threshold)
        self._name = name
        self._clock = clock
        self._excluded: List[Exclusion] = list(exclude or ())
        self._listeners: List[CircuitBreakerListener] = list(listeners or ())
        self._throw_new_error_on_trip = throw_new_error_on_trip
        self._pending = _Pending()
        #: A manual ``half_open()``: the tripwire breaker is closed and the
        #: next call is the trial.
        self._half_open = False
        self._state = CircuitBreakerState(initial)
        self.breaker = self._make_breaker()
        self._restore(initial, storage.counter)
        self._link()

    # -- the tripwire breaker ------------------------------------------------

    def _make_breaker(self) -> Breaker:
        trials = max(self._success_threshold, 1)
        try:
            return Breaker(
                failure_threshold=max(self._fail_max, 1),
                # pybreaker's 0 ("a trial at once") is the shortest the core takes.
                open_timeout=_SHORTEST if self._reset_timeout == 0 else self._reset_timeout,
                half_open_max=trials,
                half_open_successes=trials,
                name=self._state_storage.namespace if isinstance(self._state_storage, CircuitRedisStorage) else self._name,
                on_state_change=self._on_change,
                clock=self._clock,
            )
        except (TypeError, ValueError) as e:
            # The message under the argument the caller wrote.
            raise type(e)(_PYBREAKER_NAMES.sub(lambda m: _PYBREAKER_ARG[m[0]], str(e))) from None

    def _on_change(self, breaker: Breaker, old: str, new: str) -> None:
        # Runs inside the tripwire breaker's call that made the transition;
        # the listeners hear of it when pybreaker's order says (`_flush`).
        if breaker is self.breaker:
            self._pending.events.append((_NAMES[old], _NAMES[new]))

    def _flush(self) -> Optional[str]:
        """Reports the transitions this thread's calls caused; returns the
        state a trip came from, if one opened the breaker."""
        events = self._pending.events
        tripped_from = None
        while events:
            old, new = events.pop(0)
            if new == STATE_OPEN and old != STATE_OPEN:
                tripped_from = old
            self._enter(old, new)
        return tripped_from

    @contextlib.contextmanager
    def _quiet(self) -> Iterator[None]:
        """Drops the transitions made inside (manual moves report their own)."""
        try:
            yield
        finally:
            self._pending.events.clear()

    def _enter(self, old: str, new: str, manual: bool = False) -> None:
        """Mirrors a transition into the storage and tells the listeners
        (pybreaker reports a manual move to the same state too)."""
        storage = self._state_storage
        if new == STATE_OPEN:
            storage.opened_at = datetime.now(timezone.utc)
        elif new == STATE_CLOSED:
            storage.reset_counter()
        storage.reset_success_counter()
        storage.state = new
        if old == new and not manual:
            return
        previous, self._state = self._state, CircuitBreakerState(new)
        for listener in self._listeners:
            listener.state_change(self, previous, self._state)

    def _open_now(self) -> None:
        """Opens the tripwire breaker for a full ``reset_timeout`` from now,
        by failures recorded until it trips (inside ``_quiet``)."""
        b = self.breaker
        b.reset()
        for _ in range(4 * b.failure_threshold + 4):
            if b.state == "open":
                return
            try:
                ticket = b._acquire()
            except CircuitOpenError:
                return
            b._record(ticket, "failure")

    def _restore(self, state: str, failures: int) -> None:
        """Puts a fresh tripwire breaker into ``state`` with ``failures``
        consecutive failures counted."""
        with self._quiet():
            self._half_open = state == STATE_HALF_OPEN
            if state == STATE_OPEN:
                self._open_now()
            elif state == STATE_CLOSED:
                b = self.breaker
                for _ in range(min(failures, b.failure_threshold - 1)):
                    b._record(b._acquire(), "failure")

    def _reconfigure(self, attr: str, value: Any) -> None:
        state, failures = self.current_state, self.fail_counter
        old = getattr(self, attr)
        setattr(self, attr, value)
        try:
            with self._quiet():
                self.breaker = self._make_breaker()
        except (TypeError, ValueError):
            # Refused: the setting and the breaker stay as they were, and a
            # later setting is not refused for this one.
            setattr(self, attr, old)
            raise
        self._restore(state, failures)
        self._link()

    def _link(self) -> None:
        """Joins the tripwire breaker to the fleet of a Redis storage, once
        it is in its initial state: that state stays local (pybreaker's
        storage sets it only where Redis has none), and the fleet's current
        one, if any, comes in when the link reads it."""
        storage = self._state_storage
        if isinstance(storage, CircuitRedisStorage):
            storage._join(self.breaker)

    # -- configuration ------------------------------------------------------

    @property
    def fail_max(self) -> int:
        return self._fail_max

    @fail_max.setter
    def fail_max(self, number: int) -> None:
        self._reconfigure("_fail_max", _count("fail_max", number))

    @property
    def reset_timeout(self) -> float:
        return self._reset_timeout

    @reset_timeout.setter
    def reset_timeout(self, timeout: float) -> None:
        self._reconfigure("_reset_timeout", timeout)

    @property
    def success_threshold(self) -> int:
        return self._success_threshold

    @success_threshold.setter
    def success_threshold(self, threshold: int) -> None:
        self._reconfigure("_success_threshold", _count("success_threshold", threshold))

    @property
    def name(self) -> Optional[str]:
        return self._name

    @name.setter
    def name(self, name: Optional[str]) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {name!r}")
        self._reconfigure("_name", name)

    @property
    def excluded_exceptions(self) -> Tuple[Exclusion, ...]:
        return tuple(self._excluded)

    def add_excluded_exception(self, exception: Exclusion) -> None:
        self._excluded.append(exception)

    def add_excluded_exceptions(self, *exceptions: Exclusion) -> None:
        self._excluded.extend(exceptions)

    def remove_excluded_exception(self, exception: Exclusion) -> None:
        self._excluded.remove(exception)

    @property
    def listeners(self) -> Tuple[CircuitBreakerListener, ...]:
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
        return STATE_HALF_OPEN if self._half_open else _NAMES[self.breaker.state]

    @property
    def state(self) -> CircuitBreakerState:
        current = self.current_state
        if current != self._state.name:
            self._state = CircuitBreakerState(current)
        return self._state

    @state.setter
    def state(self, state: str) -> None:
        """``cb.state = "open"`` (or ``"closed"``, ``"half-open"``): as
        ``open()``, ``close()``, ``half_open()``."""
        moves = {STATE_OPEN: self.open, STATE_CLOSED: self.close, STATE_HALF_OPEN: self.half_open}
        move = moves.get(state) if isinstance(state, str) else None
        if move is None:
            raise ValueError(f"Unknown state {state!r}, valid states: {', '.join(_STATES)}")
        move()

    @property
    def fail_counter(self) -> int:
        """Consecutive failures since the last success or close."""
        return self._state_storage.counter

    @property
    def success_counter(self) -> int:
        """Successful trial calls in the current half-open state."""
        return self._state_storage.success_counter

    def open(self) -> bool:
        """Opens the breaker: calls are rejected until ``reset_timeout`` has
        passed, then a trial call decides. Returns
        ``throw_new_error_on_trip``, as pybreaker does."""
        previous = self.current_state
        with self._quiet():
            self._half_open = False
            self._open_now()
        self._enter(previous, STATE_OPEN, manual=True)
        return self._throw_new_error_on_trip

    def half_open(self) -> None:
        """Lets the next calls through as trials: a failure opens the
        breaker, ``success_threshold`` successes close it."""
        previous = self.current_state
        with self._quiet():
            self.breaker.reset()
            self._half_open = True
        self._enter(previous, STATE_HALF_OPEN, manual=True)

    def close(self) -> None:
        """Closes the breaker with fresh counts."""
        previous = self.current_state
        with self._quiet():
            self._half_open = False
            self.breaker.reset()
        self._enter(previous, STATE_CLOSED, manual=True)

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

    def _admit(self, func: Callable[..., Any], args: Any, kwargs: Any) -> Tuple[Breaker, Ticket | int, str]:
        """A ticket for a call, the breaker that issued it, and the state
        the call was let through in; or ``CircuitBreakerError``."""
        b = self.breaker
        state = self._state.name
        try:
            ticket = b._acquire()
        except CircuitOpenError as e:
            raise _rejection(e) from e
        if state != STATE_CLOSED or self._listeners:
            try:
                if self._pending.events:
                    self._flush()  # open -> half-open, before the trial's before_call
                for listener in self._listeners:
                    listener.before_call(self, func, *args, **kwargs)
            except BaseException:
                b._record(ticket, "ignored")
                raise
            state = self._state.name
        return b, ticket, state

    def _succeeded(self, b: Breaker, ticket: Ticket | int, state: str) -> None:
        """Records a success of a call let through in ``state``."""
        b._record(ticket, "success")
        storage = self._state_storage
        storage.reset_counter()
        if state != STATE_CLOSED:
            if self._half_open:
                storage.increment_success_counter()
                if storage.success_counter >= self._success_threshold:
                    self._half_open = False
                    self._enter(STATE_HALF_OPEN, STATE_CLOSED)
            elif self._pending.events:
                self._flush()  # half-open -> closed, before the success listeners
            elif state == STATE_HALF_OPEN:
                storage.increment_success_counter()
        for listener in self._listeners:
            listener.success(self)

    def _failed(self, b: Breaker, ticket: Ticket | int, state: str, exc: BaseException) -> None:
        """Records how a call let through in ``state`` that raised ``exc``
        ended; raises ``CircuitBreakerError`` if this failure opened the
        breaker."""
        if not isinstance(exc, Exception):
            b._record(ticket, "ignored")
            return
        if not self.is_system_error(exc):
            self._succeeded(b, ticket, state)
            return
        b._record(ticket, "failure")
        trial = self._half_open
        if trial:
            with self._quiet():
                self._half_open = False
                self._open_now()
        self._state_storage.increment_counter()
        for listener in self._listeners:
            listener.failure(self, exc)
        if trial:
            self._enter(STATE_HALF_OPEN, STATE_OPEN)
            tripped_from: Optional[str] = STATE_HALF_OPEN
        else:
            tripped_from = self._flush()
        if tripped_from is not None and self._throw_new_error_on_trip:
            raise CircuitBreakerError(_TRIAL_FAILED if tripped_from == STATE_HALF_OPEN else _TRIPPED) from exc

    def call(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Calls ``func(*args, **kwargs)`` under the breaker. A generator it
        returns is guarded until it ends."""
        b = self.breaker
        state = self._state.name
        if state == STATE_CLOSED and not self._listeners:
            # The common case, inline: no listener to tell.
            try:
                ticket = b._acquire()
            except CircuitOpenError as e:
                raise _rejection(e) from e
        else:
            b, ticket, state = self._admit(func, args, kwargs)
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:
            self._failed(b, ticket, state, exc)
            raise
        if isinstance(result, types.GeneratorType):
            return self._generator(b, ticket, state, result)  # type: ignore[return-value]
        if state == STATE_CLOSED and not self._listeners:
            b._record(ticket, "success")
            self._state_storage.reset_counter()
        else:
            self._succeeded(b, ticket, state)
        return result

    def _generator(
        self, b: Breaker, ticket: Ticket | int, state: str, gen: Generator[Any, Any, Any]
    ) -> Generator[Any, Any, Any]:
        """``gen``, with its end recorded: exhausted, a success; an
        exception raised while iterating, a failure."""
        try:
            result = yield from gen
        except BaseException as exc:
            self._failed(b, ticket, state, exc)
            raise
        self._succeeded(b, ticket, state)
        return result

    async def call_async(self, func: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Awaits ``func(*args, **kwargs)`` under the breaker (asyncio)."""
        b, ticket, state = self._admit(func, args, kwargs)
        try:
            result = await func(*args, **kwargs)
        except BaseException as exc:
            self._failed(b, ticket, state, exc)
            raise
        self._succeeded(b, ticket, state)
        return result

    @contextlib.contextmanager
    def calling(self) -> Iterator[None]:
        """``with breaker.calling(): ...`` guards the block."""
        b, ticket, state = self._admit(self.calling, (), {})
        try:
            yield
        except BaseException as exc:
            self._failed(b, ticket, state, exc)
            raise
        self._succeeded(b, ticket, state)

    def __call__(self, *call_args: Any, **call_kwargs: Any) -> Callable[..., Any]:
        """Decorates a plain, generator or ``async def`` function: ``@cb``,
        ``@cb()``, or ``cb(func)``. ``__pybreaker_call_async=True`` awaits
        what the function returns (asyncio, not Tornado)."""
        call_async = bool(call_kwargs.pop("__pybreaker_call_async", False))
        if call_kwargs:
            raise TypeError(f"unexpected keyword arguments {sorted(call_kwargs)}")

        def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
            if not callable(func):
                raise TypeError(f"a circuit breaker decorates a function; got {func!r}")
            if call_async or inspect.iscoroutinefunction(func):

                @functools.wraps(func)
                async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                    return await self.call_async(func, *args, **kwargs)

                return guarded_async

            @functools.wraps(func)
            def guarded(*args: Any, **kwargs: Any) -> Any:
                return self.call(func, *args, **kwargs)

            return guarded

        if not call_args:
            return decorate
        if len(call_args) > 1:
            raise TypeError(f"a circuit breaker decorates one function; got {len(call_args)} arguments")
        return decorate(call_args[0])

    def __repr__(self) -> str:
        return f"<CircuitBreaker name={self._name!r} state={self.current_state!r}>"
