"""Stale-data fallback: the last good value of each endpoint, returned with
its age when a fresh one cannot be had.

Each key (an endpoint, a symbol's order book, an account's balance) has a
policy: stale data up to ``max_age`` seconds is acceptable (prices, order
books), or never (balances: the caller gets the error). The cache is a
dict whose single-key reads and writes are atomic in CPython; there is no
lock.

A caller with stale data at hand gets it as soon as a fresh value is not:
``call`` then runs the function under ``no_pauses()``, so that a
``tripwire.retry`` inside it stops at its first failed attempt instead of
pausing for a backoff or a ``Retry-After`` (with nothing stale to serve,
the retries run as they would without the cache).
"""

from __future__ import annotations

import functools
import inspect
import sys
import time
from collections.abc import Mapping
from typing import (
    TYPE_CHECKING,
    Any,
    Awaitable,
    Callable,
    Coroutine,
    Dict,
    Generic,
    Hashable,
    NamedTuple,
    Optional,
    Tuple,
    TypeVar,
    overload,
)

from ._retry import no_pauses
from ._tripwire import ManualClock, StaleStats, _exception_classes, _manual_clock, _seconds_or_none
from ._types import ExceptionClasses

if sys.version_info >= (3, 10):
    from typing import ParamSpec
else:  # pragma: no cover - Python 3.9
    from typing_extensions import ParamSpec

P = ParamSpec("P")

T = TypeVar("T")

#: A policy's `max_age` meaning "never serve stale data".
NEVER = None


if TYPE_CHECKING or sys.version_info >= (3, 11):

    class Cached(NamedTuple, Generic[T]):
        """A value and how old it is: ``age`` is 0.0 and ``stale`` False for
        a fresh value; for a fallback, the seconds since it was fetched."""

        value: T
        age: float
        stale: bool

else:  # pragma: no cover - Python 3.9 and 3.10: no generic NamedTuple

    class Cached(NamedTuple):
        """A value and how old it is: ``age`` is 0.0 and ``stale`` False for
        a fresh value; for a fallback, the seconds since it was fetched."""

        value: Any
        age: float
        stale: bool

        @classmethod
        def __class_getitem__(cls, item: Any) -> Any:
            return cls


class StaleCache:
    """Last-known-good values per key, served with their age when a call
    fails.

    ``max_age``: the default policy, seconds of staleness acceptable (None:
    never serve stale data). ``policies``: per-key overrides, e.g.
    ``{"balances": None, "orderbook": 5.0}``. ``fallback_on``: the errors
    that may be answered with stale data (default: any ``Exception``,
    breaker rejections included). ``clock``: a ``ManualClock`` for tests.
    ``name``: exports the cache's counters (``snapshot()``) through
    ``prometheus_text()`` as ``tripwire_fallback_total{cache="…"}``, the
    family a Rust stale cache exports. The arguments are checked by the
    extension, as every other argument of the package is.
    """

    def __init__(
        self,
        max_age: Optional[float] = 60.0,
        *,
        policies: Optional[Dict[Hashable, Optional[float]]] = None,
        fallback_on: ExceptionClasses | list[type[BaseException]] = (Exception,),
        clock: Optional[ManualClock] = None,
        name: Optional[str] = None,
    ) -> None:
        self._stats = StaleStats(name)
        self.name = name
        self.max_age = _seconds_or_none("max_age", max_age)
        if policies is not None and not isinstance(policies, Mapping):
            raise TypeError(f"policies must be a dict of key -> max_age (seconds or None), got {type(policies).__name__}")
        self._policies = {k: _seconds_or_none(f"policies[{k!r}]", v) for k, v in (policies or {}).items()}
        self.fallback_on = _exception_classes("fallback_on", fallback_on)
        manual = _manual_clock(clock)
        self._now: Callable[[], float] = manual.now if manual is not None else time.monotonic
        self._values: Dict[Hashable, Tuple[Any, float]] = {}

    def policy(self, key: Hashable, max_age: Optional[float]) -> None:
        """Sets how stale ``key``'s value may be (None: never stale)."""
        self._policies[key] = _seconds_or_none("max_age", max_age)

    def max_age_of(self, key: Hashable) -> Optional[float]:
        """The policy for ``key``: seconds, or None for never."""
        return self._policies.get(key, self.max_age)

    def put(self, key: Hashable, value: Any) -> None:
        """Stores a fresh value for ``key``."""
        self._values[key] = (value, self._now())

    def get(self, key: Hashable) -> Optional[Cached[Any]]:
        """The last good value of ``key`` with its age, if the policy still
        accepts it; else None."""
        entry = self._values.get(key)
        max_age = self.max_age_of(key)
        if entry is None or max_age is None:
            return None
        value, stored = entry
        age = max(self._now() - stored, 0.0)
        return Cached(value, age, True) if age <= max_age else None

    def _fallback(self, key: Hashable, exc: BaseException) -> Optional[Cached[Any]]:
        """The stale value to answer ``exc`` with, if any; counts the call."""
        cached = self.get(key) if isinstance(exc, self.fallback_on) else None
        if cached is not None:
            self._stats.stale()
        elif isinstance(exc, Exception):  # not cancellation nor an interrupt
            self._stats.refused()
        return cached

    def snapshot(self) -> Dict[str, int]:
        """What the cache served: ``{"fresh": …, "stale": …, "refused": …}``
        (fresh values stored, stale values served, errors passed on)."""
        return self._stats.snapshot()

    def call(self, key: Hashable, func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Cached[T]:
        """Calls ``func``; stores and returns its value (age 0), or, if it
        raises, the stored value with its age when the policy allows, else
        re-raises. With a stale value at hand, ``func`` runs under
        ``no_pauses()``: one attempt, never a retry's wait."""
        try:
            if self.get(key) is None:
                value = func(*args, **kwargs)
            else:
                with no_pauses():
                    value = func(*args, **kwargs)
        except BaseException as exc:
            cached = self._fallback(key, exc)
            if cached is None:
                raise
            return cached
        self.put(key, value)
        self._stats.fresh()
        return Cached(value, 0.0, False)

    async def call_async(
        self, key: Hashable, func: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs
    ) -> Cached[T]:
        """As ``call``, awaiting ``func``."""
        try:
            if self.get(key) is None:
                value = await func(*args, **kwargs)
            else:
                with no_pauses():
                    value = await func(*args, **kwargs)
        except BaseException as exc:
            cached = self._fallback(key, exc)
            if cached is None:
                raise
            return cached
        self.put(key, value)
        self._stats.fresh()
        return Cached(value, 0.0, False)

    def fallback(self, key: Hashable, *, max_age: Any = ...) -> Fallback:
        """Decorator: the function's results are cached under ``key`` and it
        returns ``Cached`` values (``Cached[R]`` for a function returning
        ``R``, its parameters kept). ``max_age`` sets the key's policy."""
        if max_age is not ...:
            self.policy(key, max_age)
        return Fallback(self, key)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"StaleCache(max_age={self.max_age}, keys={len(self._values)})"


class Fallback:
    """``StaleCache.fallback(key)``: decorates a plain or ``async def``
    function so that it returns ``Cached`` values."""

    __slots__ = ("cache", "key")

    def __init__(self, cache: StaleCache, key: Hashable) -> None:
        self.cache = cache
        self.key = key

    @overload
    def __call__(  # type: ignore[overload-overlap]
        self, func: Callable[P, Coroutine[Any, Any, T]]
    ) -> Callable[P, Coroutine[Any, Any, Cached[T]]]: ...
    @overload
    def __call__(self, func: Callable[P, T]) -> Callable[P, Cached[T]]: ...
    def __call__(self, func: Callable[P, Any]) -> Callable[P, Any]:
        cache, key = self.cache, self.key
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def cached_async(*args: P.args, **kwargs: P.kwargs) -> Cached[Any]:
                return await cache.call_async(key, func, *args, **kwargs)

            return cached_async

        @functools.wraps(func)
        def cached(*args: P.args, **kwargs: P.kwargs) -> Cached[Any]:
            return cache.call(key, func, *args, **kwargs)

        return cached
