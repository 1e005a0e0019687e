"""HTTP responses behind a breaker, for requests, httpx and aiohttp.

The core classifies (``tripwire::http::assess``, the table the Rust and C
users have); this module only finds a response's status and headers and
raises. A response is judged by its status:

| status | verdict | the breaker | ``guard`` |
| --- | --- | --- | --- |
| 1xx, 2xx, 3xx | ``"success"`` | counts a success | returns the response |
| 5xx; 408 (the server timed out); 600–999 (no HTTP status: a broken server) | ``"failure"`` | counts a failure (enough of them trip it) | raises ``ServerError`` |
| 429, 418 | ``"backpressure"`` | held open for the ``Retry-After`` (or ``RateLimit-Reset`` / ``X-RateLimit-Reset``), its ``open_timeout`` when none is sent, capped at one hour | raises ``BackpressureError`` with ``retry_after``, which ``tripwire.retry`` never retries |
| other 4xx (401 unsigned, 403, 400, 404, …) | ``"ignored"``: the caller's fault | counts nothing, never retried | returns the response |

::

    import httpx, tripwire, tripwire.http

    exchange = tripwire.Breaker(name="exchange", failure_threshold=5, open_timeout=30.0)
    client = httpx.AsyncClient(base_url="https://api.example.com", timeout=5.0)

    @tripwire.retry(attempts=3)              # pauses a 5xx's Retry-After; never retries a 429
    @tripwire.http.guard(exchange)
    async def depth(symbol: str) -> httpx.Response:
        return await client.get("/api/v3/depth", params={"symbol": symbol})

While the breaker is open or held, ``depth`` raises
``tripwire.CircuitOpenError`` (with ``retry_after``) without sending a
request. ``guard`` works the same on plain functions (requests,
``httpx.Client``) and on ``async def`` ones (``httpx.AsyncClient``,
aiohttp); ``guard(b).call(session.get, url)`` and ``await
guard(b).call_async(session.get, url)`` guard one call without a
decorator (aiohttp's ``session.get`` is no ``async def``: use
``call_async``, or return ``await session.get(...)`` from your own).

A response is anything with an int ``status_code`` (requests, httpx) or
``status`` (aiohttp) and a mapping ``headers``. An exception the function
raises (connection refused, a client timeout) is judged by the breaker's
``failure_on`` / ``ignore_on`` as in any guarded call, and the breaker's
``timeout=`` cuts an awaited call short as a failure; its ``failure_if``
is not consulted, the status decides. ``raise_errors=False`` returns every
response, 5xx and 429 included, after recording it.
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import (
    Any,
    Awaitable,
    Callable,
    Coroutine,
    Mapping,
    NamedTuple,
    NoReturn,
    Optional,
    TypeVar,
    Union,
    overload,
)

from . import _aio, _tripwire
from ._errors import TripwireError
from ._tripwire import Breaker, Ticket
from ._types import Verdict

if sys.version_info >= (3, 10):
    from typing import ParamSpec, Protocol
else:  # pragma: no cover - Python 3.9
    from typing import Protocol

    from typing_extensions import ParamSpec

__all__ = [
    "Assessment",
    "BackpressureError",
    "Response",
    "ResponseError",
    "ResponseGuard",
    "ServerError",
    "Verdict",
    "assess",
    "assess_response",
    "guard",
]

P = ParamSpec("P")

# `headers` is typed `object`: aiohttp's is a caching descriptor that type
# checkers do not take for a property. It must be a mapping at run time.


class _StatusCodeResponse(Protocol):
    """requests' and httpx's responses."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> object: ...


class _StatusResponse(Protocol):
    """aiohttp's ``ClientResponse``."""

    @property
    def status(self) -> int: ...
    @property
    def headers(self) -> object: ...


#: A response ``guard`` and ``assess_response`` read.
Response = Union[_StatusCodeResponse, _StatusResponse]

R = TypeVar("R", bound=Response)


class Assessment(NamedTuple):
    """The core's verdict on a response. ``retry_after``: for
    ``"backpressure"``, the seconds the headers ask to wait (None when
    they ask for none: a breaker then holds for its ``open_timeout``);
    None for every other verdict."""

    verdict: Verdict
    retry_after: Optional[float]


def assess(status: int, headers: Optional[Mapping[Any, Any]] = None, *, now: Optional[float] = None) -> Assessment:
    """The core's verdict on ``status`` and ``headers`` (any mapping, names and
    values str or bytes; names are case-insensitive). ``now``: the Unix time an
    HTTP date or a reset time is measured from (default: the wall clock).
    ``TypeError`` for a status that is no int, ``ValueError`` for one outside
    100–999."""
    verdict, wait = _tripwire._assess(status, headers, now)
    return Assessment(verdict, wait)


def assess_response(response: Response, *, now: Optional[float] = None) -> Assessment:
    """``assess`` for a requests, httpx or aiohttp response; ``TypeError``
    for anything without an int ``status_code`` or ``status`` and
    ``headers``."""
    verdict, wait = _tripwire._assess_response(response, now)
    return Assessment(verdict, wait)


class ResponseError(TripwireError):
    """A guarded call's response was a failure or asked for less traffic;
    the call was made. ``response``: the response itself (its body not read
    by tripwire). ``status``, ``verdict`` and ``retry_after`` (seconds the
    breaker now refuses calls for, or None)."""

    def __init__(self, response: Any, status: int, verdict: Verdict, retry_after: Optional[float]) -> None:
        super().__init__(response, status, verdict, retry_after)
        self.response = response
        self.status = status
        self.verdict: Verdict = verdict
        self.retry_after = retry_after

    def __str__(self) -> str:
        if self.retry_after is None:
            return f"HTTP {self.status}: counted as a failure by the circuit breaker"
        return f"HTTP {self.status}: the server pushed back; circuit breaker held for {self.retry_after:.3f}s"


class ServerError(ResponseError):
    """A 5xx, a 408, or a status outside 100–599: counted as a failure.
    ``retry_after`` is None (no hold); ``tripwire.retry`` pauses for the
    response's own ``Retry-After`` if it has one."""


class BackpressureError(ResponseError):
    """A 429 or 418: the breaker is held open; ``retry_after`` says for how
    many more seconds. ``tripwire.retry`` never retries it: the caller gets
    it at once, and the hold refuses the calls that follow."""


def _settle(breaker: Breaker, ticket: Ticket | int, response: object, raise_errors: bool) -> None:
    """Records ``response`` (the core settles it; one that cannot be read
    gives the ticket back and raises) and raises for a failure or
    backpressure if asked to."""
    verdict, status, wait = _tripwire._settle(breaker, ticket, response)
    if raise_errors and verdict != "success" and verdict != "ignored":
        _raise(response, verdict, status, wait)


def _raise(response: object, verdict: Verdict, status: int, wait: Optional[float]) -> NoReturn:
    if verdict == "failure":
        raise ServerError(response, status, verdict, None)
    raise BackpressureError(response, status, verdict, wait)


class ResponseGuard:
    """What ``guard`` returns: a decorator, and ``call`` / ``call_async``."""

    __slots__ = ("_breaker", "_raise_errors")

    def __init__(self, breaker: Breaker, raise_errors: bool) -> None:
        self._breaker = breaker
        self._raise_errors = raise_errors

    @property
    def breaker(self) -> Breaker:
        return self._breaker

    @overload
    def __call__(self, func: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]: ...
    @overload
    def __call__(self, func: Callable[P, R]) -> Callable[P, R]: ...
    def __call__(self, func: Callable[P, Any]) -> Callable[P, Any]:
        """Decorates a plain or ``async def`` function that returns a
        response; the result keeps its signature."""
        if not callable(func):
            raise TypeError(f"guard() decorates a function returning a response, got {type(func).__name__}")
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def guarded_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                return await self._call_async(func, args, kwargs)

            return guarded_async

        breaker, raise_errors = self._breaker, self._raise_errors
        acquire, record_error, settle = breaker._acquire, breaker._record_error, _tripwire._settle

        # `_call`, inlined: this wrapper is the hot path of every call.
        @functools.wraps(func)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> Any:
            ticket = acquire()
            try:
                response = func(*args, **kwargs)
            except BaseException as exc:
                record_error(ticket, exc)
                raise
            verdict, status, wait = settle(breaker, ticket, response)
            if raise_errors and verdict != "success" and verdict != "ignored":
                _raise(response, verdict, status, wait)
            return response

        return guarded

    def call(self, func: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """``func(*args, **kwargs)`` under the breaker, judged by its response."""
        return self._call(func, args, kwargs)

    async def call_async(self, func: Callable[P, Awaitable[R]], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Awaits ``func(*args, **kwargs)`` under the breaker (within its
        ``timeout``), judged by its response."""
        return await self._call_async(func, args, kwargs)

    def _call(self, func: Callable[..., R], args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
        breaker = self._breaker
        ticket = breaker._acquire()
        try:
            response = func(*args, **kwargs)
        except BaseException as exc:
            breaker._record_error(ticket, exc)
            raise
        _settle(breaker, ticket, response, self._raise_errors)
        return response

    async def _call_async(self, func: Callable[..., Awaitable[R]], args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
        breaker = self._breaker
        timeout = breaker.timeout
        ticket = breaker._acquire()
        if timeout is None:
            try:
                response = await func(*args, **kwargs)
            except BaseException as exc:
                breaker._record_error(ticket, exc)
                raise
        else:
            scope = _aio._timeout(timeout)
            try:
                async with scope:
                    response = await func(*args, **kwargs)
            except BaseException as exc:
                _aio._record_within(breaker, ticket, scope, exc)
                raise
        _settle(breaker, ticket, response, self._raise_errors)
        return response


def guard(breaker: Breaker, *, raise_errors: bool = True) -> ResponseGuard:
    """Guards functions that return HTTP responses with ``breaker``: a 5xx
    (or a 408, or a status outside 100–599) counts as a failure, a 429/418 holds the breaker for the server's wait,
    any other 4xx counts nothing (see the module's table). With
    ``raise_errors`` (the default) a failure raises ``ServerError`` and a
    429/418 ``BackpressureError``, so that ``tripwire.retry`` and
    ``except`` see them; without it every response is returned."""
    if not isinstance(breaker, Breaker):
        raise TypeError(f"guard() takes a tripwire.Breaker, got {type(breaker).__name__}")
    if not isinstance(raise_errors, bool):
        raise TypeError(f"raise_errors must be a bool, got {type(raise_errors).__name__}")
    return ResponseGuard(breaker, raise_errors)
