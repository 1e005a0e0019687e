"""Stubs of the Rust extension ``tripwire._tripwire``."""

import asyncio

from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping
from os import PathLike
from types import TracebackType
from typing import Any, Generic, Literal, TypedDict, TypeVar, final, overload

from typing_extensions import Concatenate, ParamSpec, Self, Unpack, disjoint_base

from ._types import ExceptionClasses, Seconds, StateName

_P = ParamSpec("_P")
_Q = ParamSpec("_Q")
_R = TypeVar("_R")
_S = TypeVar("_S")
_Listener = Callable[[Breaker, StateName, StateName], object]
_L = TypeVar("_L", bound=_Listener)
_Key = str | int | bytes | tuple["_Key", ...]
_K = TypeVar("_K", bound=_Key)

__version__: str
__all__ = [
    "Backoff",
    "Breaker",
    "Breakers",
    "Bulkhead",
    "BulkheadWait",
    "Fleet",
    "Guarded",
    "Limit",
    "ManualClock",
    "RateLimiter",
    "RetryBudget",
    "RetryPolicy",
    "RetryRun",
    "Snapshot",
    "StaleStats",
    "Ticket",
    "__version__",
    "_exception_classes",
    "_manual_clock",
    "_assess",
    "_assess_response",
    "_raised_retry_after",
    "_retry_after",
    "_settle",
    "_seconds_or_none",
    "breaker_names",
    "prometheus_text",
]

@final
class ManualClock:
    """A clock that only moves when told to: pass it as ``clock=`` to a Breaker.
    It counts nanoseconds in 64 bits: a time at or past 18446744073.709551615
    s (``start``, ``set``, or where ``advance`` would take it) is refused with
    ``ValueError`` and the clock stays where it was."""

    def __new__(cls, start: Seconds | None = None) -> Self: ...
    def advance(self, seconds: Seconds) -> None: ...
    def set(self, seconds: Seconds) -> None: ...
    def now(self) -> float: ...

@final
class Snapshot:
    """A breaker's counters at one moment, and its state."""

    @property
    def successes(self) -> int: ...
    @property
    def failures(self) -> int: ...
    @property
    def ignored(self) -> int: ...
    @property
    def rejected(self) -> int: ...
    @property
    def slow(self) -> int: ...
    @property
    def transitions(self) -> int: ...
    @property
    def capped_holds(self) -> int:
        """Holds longer than the breaker's ``max_hold``, cut to it."""
    @property
    def calls(self) -> int: ...
    @property
    def state(self) -> StateName: ...
    def as_dict(self) -> dict[str, int | str]: ...

@final
class Ticket:
    """Proof that a call was admitted (used by the asyncio helpers); one
    without a start time is an ``int`` instead."""

@final
class Guarded(Generic[_P, _R]):
    """A plain function guarded by a breaker (what ``@breaker`` returns)."""

    __wrapped__: Callable[_P, _R]
    __name__: str
    __qualname__: str
    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...
    @overload
    def __get__(self, obj: None, owner: type | None = None, /) -> Self: ...
    @overload
    def __get__(self: Guarded[Concatenate[_S, _Q], _R], obj: _S, owner: type | None = None, /) -> Callable[_Q, _R]: ...
    def __reduce__(self) -> str: ...
    @property
    def breaker(self) -> Breaker: ...

class _SharedBreakerKeywords(TypedDict, total=False):
    """The keyword arguments of ``Breaker.shared``: those of ``Breaker(...)``
    but ``clock``. None for any of them is its default."""

    failure_threshold: int | None
    open_timeout: Seconds | None
    open_timeout_max: Seconds | None
    open_timeout_growth: float | None
    open_timeout_jitter: float | None
    half_open_max: int | None
    half_open_successes: int | None
    window: tuple[int, Seconds] | None
    count_window: int | None
    min_calls: int | None
    failure_rate: float | None
    slow_call: Seconds | None
    slow_rate: float | None
    probe_timeout: Seconds | None
    max_hold: Seconds | None
    timeout: Seconds | None
    name: str | None
    failure_on: ExceptionClasses | None
    ignore_on: ExceptionClasses | None
    failure_if: Callable[[Any], object] | None
    on_state_change: _Listener | None
    listeners: Iterable[_Listener] | None

class _BreakerKeywords(_SharedBreakerKeywords, total=False):
    """The keyword arguments of ``Breaker(...)``, all keyword-only."""

    clock: ManualClock | None

@final
class Breaker:
    """A circuit breaker: a decorator, a context manager, or ``call``.

    Timeouts: give the breaker ``timeout=`` (seconds) rather than writing
    ``await asyncio.wait_for(guarded(), 2)``. A timeout from outside reaches
    the guarded call as a cancellation, which is not counted, so a hanging
    exchange never trips the breaker; ``timeout=`` runs inside the guard and
    counts as a failure (``TimeoutError``). It applies to decorated
    ``async def`` functions, ``call_async`` and ``async with`` blocks; a
    sync call or ``with`` block cannot be cut short (its I/O client owns its
    timeout) but counts as slow when it outlasts ``timeout``.
    """

    def __new__(cls, **kwargs: Unpack[_BreakerKeywords]) -> Self: ...
    @classmethod
    def shared(cls, path: str | PathLike[str], /, **kwargs: Unpack[_SharedBreakerKeywords]) -> Self: ...
    @property
    def name(self) -> str | None: ...
    @property
    def state(self) -> StateName: ...
    @property
    def generation(self) -> int: ...
    @property
    def failure_threshold(self) -> int: ...
    @property
    def open_timeout(self) -> float: ...
    @property
    def open_timeout_max(self) -> float: ...
    @property
    def probe_timeout(self) -> float: ...
    @property
    def max_hold(self) -> float: ...
    @property
    def half_open_max(self) -> int: ...
    @property
    def half_open_successes(self) -> int: ...
    @property
    def window(self) -> tuple[int, float]: ...
    @property
    def count_window(self) -> int | None: ...
    @property
    def min_calls(self) -> int: ...
    @property
    def failure_rate(self) -> float: ...
    @property
    def slow_call(self) -> float | None: ...
    @property
    def slow_rate(self) -> float: ...
    @property
    def timeout(self) -> float | None:
        """The longest an awaited call may take (seconds), or None. Cut
        short, it raises ``TimeoutError``, counted as a failure."""
    @property
    def clock(self) -> ManualClock | None: ...
    def snapshot(self) -> Snapshot: ...
    def hold(self, seconds: Seconds) -> bool:
        """Holds the breaker open for ``seconds`` (at most one hour), as a
        server's ``Retry-After`` asks: every call is refused with the time
        left, and the first call after the hold is a probe. True when this
        placed the hold or made it longer; False when a hold at least as
        long is in place, ``seconds`` is 0, or ``force_open()`` /
        ``disable()`` rules."""
    @property
    def hold_left(self) -> float | None:
        """Seconds left on the hold in place, or None."""
    def force_open(self) -> None: ...
    def disable(self) -> None: ...
    def reset(self) -> None:
        """Closes the breaker (the core's reset): consecutive failures, the
        window and a grown cool-down start afresh, and outcomes of calls
        admitted before are ignored. A transition like any other: listeners
        hear it, ``closed -> closed`` included, and ``transitions`` counts
        it; the other counters are totals since the breaker was made and
        are kept."""
    def on_state_change(self, listener: _L, /) -> _L:
        """Adds ``listener``, called with ``(breaker, from, to)`` after every
        later transition; returns it (a decorator)."""
    def call(self, func: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...
    def call_async(
        self, func: Callable[_P, Awaitable[_R]], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> Coroutine[Any, Any, _R]: ...
    @overload
    def __call__(  # type: ignore[overload-overlap]
        self, func: Callable[_P, Coroutine[Any, Any, _R]]
    ) -> Callable[_P, Coroutine[Any, Any, _R]]: ...
    @overload
    def __call__(self, func: Callable[_P, _R]) -> Guarded[_P, _R]: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        """Records the block's outcome; never swallows its exception."""
    def __aenter__(self) -> Awaitable[Self]: ...
    def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> Awaitable[None]: ...
    def _acquire(self) -> Ticket | int: ...
    def _record_result(self, ticket: Ticket | int, result: object) -> None: ...
    def _record_error(self, ticket: Ticket | int, exc: BaseException) -> None: ...
    def _record(self, ticket: Ticket | int, outcome: Literal["success", "failure", "ignored"]) -> None: ...
    def _abandon_block(self) -> None: ...

class _TemplateKeywords(TypedDict, total=False):
    """The keyword arguments of ``Breakers(...)`` that make its template:
    those of ``Breaker(...)`` but ``name`` (the map's own)."""

    failure_threshold: int | None
    open_timeout: Seconds | None
    open_timeout_max: Seconds | None
    open_timeout_growth: float | None
    open_timeout_jitter: float | None
    half_open_max: int | None
    half_open_successes: int | None
    window: tuple[int, Seconds] | None
    count_window: int | None
    min_calls: int | None
    failure_rate: float | None
    slow_call: Seconds | None
    slow_rate: float | None
    probe_timeout: Seconds | None
    max_hold: Seconds | None
    timeout: Seconds | None
    failure_on: ExceptionClasses | None
    ignore_on: ExceptionClasses | None
    failure_if: Callable[[Any], object] | None
    on_state_change: _Listener | None
    listeners: Iterable[_Listener] | None
    clock: ManualClock | None

@final
class Breakers(Generic[_K]):
    """A breaker per key, each made from one template the first time its
    key is used: ``breakers[key]`` is a ``Breaker``. Keys are ``str``,
    ``int``, ``bytes`` or tuples of those (``TypeError`` for others),
    compared as a dict compares them. At most ``capacity`` keys have a
    breaker of their own (new keys past it share ``overflow``); a Closed
    breaker unused for ``idle_after`` seconds is evicted."""

    @overload
    def __new__(
        cls,
        template: Breaker,
        /,
        *,
        capacity: int | None = 10000,
        idle_after: Seconds | None = 600.0,
        label_cap: int | None = 100,
        name: str | None = None,
    ) -> Self: ...
    @overload
    def __new__(
        cls,
        template: None = None,
        /,
        *,
        capacity: int | None = 10000,
        idle_after: Seconds | None = 600.0,
        label_cap: int | None = 100,
        name: str | None = None,
        **kwargs: Unpack[_TemplateKeywords],
    ) -> Self: ...
    def __getitem__(self, key: _K, /) -> Breaker:
        """The key's breaker: the same object on every lookup until the
        key is evicted."""
    def call(self, key: _K, func: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...
    def call_async(
        self, key: _K, func: Callable[_P, Awaitable[_R]], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> Coroutine[Any, Any, _R]: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: _K, /) -> bool:
        """Whether the key has a breaker of its own now; asking makes
        none and keeps no key from being evicted."""
    def __iter__(self) -> Iterator[_K]:
        """The keys with a breaker of their own when iteration begins."""
    def counts(self) -> dict[str, int]:
        """``live``, ``created``, ``evicted``, ``overflow_calls``."""
    def evict_idle(self) -> int:
        """Evicts the Closed breakers unused for ``idle_after``, if a sweep
        is due; how many."""
    @property
    def overflow(self) -> Breaker: ...
    @property
    def name(self) -> str | None: ...
    @property
    def capacity(self) -> int: ...
    @property
    def template(self) -> Breaker: ...
    def on_state_change(self, listener: _L, /) -> _L:
        """Adds ``listener`` to every key's breaker; returns it."""

@final
class Bulkhead:
    """A cap on the calls in flight to one dependency."""

    def __new__(cls, max_concurrent: int, *, max_wait: Seconds | None = None, name: str | None = None) -> Self: ...
    @property
    def max_concurrent(self) -> int: ...
    @property
    def max_wait(self) -> float | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def available(self) -> int: ...
    def snapshot(self) -> dict[str, int]: ...
    def try_acquire(self) -> bool: ...
    def release(self) -> None: ...
    def call(self, func: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...
    def call_async(
        self, func: Callable[_P, Awaitable[_R]], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> Coroutine[Any, Any, _R]: ...
    def __call__(self, func: Callable[_P, _R]) -> Callable[_P, _R]: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        """Records the block's outcome; never swallows its exception."""
    def __aenter__(self) -> Awaitable[Self]: ...
    def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> Awaitable[None]: ...
    def _full(self) -> BaseException: ...
    def _wait(self, event_loop: asyncio.AbstractEventLoop, /) -> BulkheadWait | None: ...

@final
class BulkheadWait:
    """A coroutine's wait for a bulkhead slot, woken by a release."""

    @property
    def future(self) -> asyncio.Future[bool]: ...
    def expire(self) -> None: ...
    def cancel(self) -> None: ...

@final
class StaleStats:
    """A stale cache's counters; named, exported by ``prometheus_text()``."""

    def __new__(cls, name: str | None = None) -> Self: ...
    def fresh(self) -> None: ...
    def stale(self) -> None: ...
    def refused(self) -> None: ...
    def snapshot(self) -> dict[str, int]: ...

@final
class Fleet:
    """A link from this process's named breakers to the other hosts of a fleet, through Redis.

    Dropped (its last reference gone), it stops the link without the GIL,
    within the longer of `connect_timeout` and `io_timeout`, plus 0.1 s.
    """

    def __new__(
        cls,
        url: str,
        namespace: str,
        key: bytes | str,
        *,
        username: str | None = None,
        password: str | None = None,
        lease_lead: Seconds | None = None,
        probe_timeout: Seconds | None = None,
        max_skew: Seconds | None = None,
        connect_timeout: Seconds | None = None,
        io_timeout: Seconds | None = None,
    ) -> Self: ...
    def join(self, breaker: Breaker) -> None: ...
    @property
    def link_state(self) -> Literal["up", "partial", "down"]: ...
    @property
    def last_error(self) -> str | None:
        """Why the link last failed (the connection, the step, the reason), or None."""
    def wait_linked(self, timeout: Seconds) -> bool: ...
    def snapshot(self) -> dict[str, int]: ...
    def prometheus(self) -> str: ...

@final
class Limit:
    """One limit: ``units`` in any stretch of ``period`` seconds, ``burst`` of them at once."""

    def __new__(cls, units: int, period: Seconds, *, burst: int | None = None) -> Self: ...
    @property
    def units(self) -> int: ...
    @property
    def period(self) -> float: ...
    @property
    def burst(self) -> int: ...
    @property
    def max_wait(self) -> float: ...

@disjoint_base
class RateLimiter:
    """A rate limiter of weighted costs on one to four limits, taken all or nothing."""

    def __new__(
        cls, limits: Limit | Iterable[Limit], *, path: str | PathLike[str] | None = None, name: str | None = None
    ) -> Self: ...
    @property
    def limits(self) -> list[Limit]: ...
    @property
    def is_shared(self) -> bool: ...
    @property
    def name(self) -> str | None: ...
    def counts(self) -> list[dict[str, int]]: ...
    def try_acquire(self, cost: int | Iterable[int] = 1) -> None: ...
    def acquire(self, cost: int | Iterable[int] = 1, max_wait: Seconds | None = None) -> float: ...
    def refund(self, cost: int | Iterable[int] = 1) -> list[bool]: ...
    def wait_for(self, cost: int | Iterable[int] = 1) -> float: ...
    def observe_used(self, limit: int, used: int, window_left: Seconds | None = None) -> bool: ...
    def in_use(self) -> list[int]: ...

@final
class RetryBudget:
    """Retries kept to a share of recent calls: the core's lock-free token bucket."""

    def __new__(
        cls,
        ratio: float | None = None,
        *,
        ttl: Seconds | None = None,
        min_retries_per_sec: float | None = None,
        clock: ManualClock | None = None,
    ) -> Self: ...
    def deposit(self) -> None: ...
    def try_withdraw(self) -> bool: ...
    @property
    def available(self) -> float: ...
    @property
    def ratio(self) -> float: ...
    @property
    def ttl(self) -> float: ...
    @property
    def min_retries_per_sec(self) -> float: ...

@final
class Backoff:
    """Exponential delays with a cap and jitter (the core's backoff)."""

    def __new__(
        cls,
        *,
        base: Seconds | None = None,
        cap: Seconds | None = None,
        factor: float | None = None,
        jitter: Literal["full", "equal", "decorrelated", "none"] | None = None,
        seed: int | None = None,
    ) -> Self: ...
    def next_delay(self) -> float: ...
    def override_next(self, seconds: Seconds) -> None: ...
    def reset(self) -> None: ...
    @property
    def attempt(self) -> int: ...
    @property
    def base(self) -> float: ...
    @property
    def cap(self) -> float: ...
    @property
    def factor(self) -> float: ...
    @property
    def jitter(self) -> Literal["full", "equal", "decorrelated", "none"]: ...

@final
class RetryPolicy:
    """The core's retry decisions for ``tripwire.retry``: validated arguments,
    and the verdict on each failed attempt."""

    def __new__(
        cls,
        attempts: int | None = None,
        *,
        base: Seconds | None = None,
        cap: Seconds | None = None,
        factor: float | None = None,
        jitter: Literal["full", "equal", "decorrelated", "none"] | None = None,
        retry_on: ExceptionClasses | list[type[BaseException]] | None = None,
        give_up_on: ExceptionClasses | list[type[BaseException]] | None = None,
        retry_if: Callable[[BaseException], object] | None = None,
        retry_after: Callable[[BaseException], Seconds | None] | None = None,
        max_retry_after: Seconds | None = None,
        budget: RetryBudget | None = None,
        deadline: Seconds | None = None,
        seed: int | None = None,
    ) -> Self: ...
    def run(self) -> RetryRun: ...
    def delays(self) -> list[float]: ...
    @property
    def attempts(self) -> int: ...
    @property
    def base(self) -> float: ...
    @property
    def cap(self) -> float: ...
    @property
    def factor(self) -> float: ...
    @property
    def jitter(self) -> Literal["full", "equal", "decorrelated", "none"]: ...
    @property
    def max_retry_after(self) -> float: ...
    @property
    def deadline(self) -> float | None: ...
    @property
    def retry_on(self) -> tuple[type[BaseException], ...]: ...
    @property
    def give_up_on(self) -> tuple[type[BaseException], ...]: ...
    @property
    def retry_if(self) -> Callable[[BaseException], object] | None: ...
    @property
    def retry_after(self) -> Callable[[BaseException], Seconds | None] | None: ...
    @property
    def budget(self) -> RetryBudget | None: ...
    @property
    def seed(self) -> int | None: ...

@final
class RetryRun:
    """One call's retry loop: ``failed(exc)`` after a failed attempt, ``start()`` after each pause."""

    def start(self) -> bool: ...
    def failed(self, exc: BaseException) -> float | None: ...
    @property
    def attempts(self) -> int: ...

def prometheus_text() -> str:
    """Every named breaker's, bulkhead's and stale cache's state and
    counters, and the counters of the fleet links those breakers joined, in
    the Prometheus text format (the core's writer)."""

def breaker_names() -> list[str]:
    """The names of the named breakers alive now, sorted."""

def _seconds_or_none(arg: str, value: object) -> float | None: ...
def _exception_classes(arg: str, value: object) -> tuple[type[BaseException], ...]: ...
def _manual_clock(value: object) -> ManualClock | None: ...
def _retry_after(headers: Mapping[Any, object] | None, now: Seconds | None = None) -> float | None: ...
def _raised_retry_after(exc: BaseException) -> float | None: ...
def _assess(
    status: int, headers: Mapping[Any, object] | None, now: Seconds | None = None
) -> tuple[Literal["success", "failure", "ignored", "backpressure"], float | None]: ...
def _assess_response(
    response: object, now: Seconds | None = None
) -> tuple[Literal["success", "failure", "ignored", "backpressure"], float | None]: ...
def _settle(
    breaker: Breaker, ticket: Ticket | int, response: object
) -> tuple[Literal["success", "failure", "ignored", "backpressure"], int, float | None]: ...
