"""Retry with exponential backoff, jitter, a retry budget and the server's
own ``retry_after``.

Every decision is the core's retry loop (``RetryPolicy`` and its
``RetryRun`` in the extension, the same steps a Rust retry takes): which
exceptions are retried, how long to pause, when the deadline or the budget
ends the retries. This module only calls, sleeps (``time.sleep`` or
``asyncio.sleep``, the caller's runtime) and re-raises.

Composition, outermost first: fallback → retry → breaker → bulkhead →
call. Each attempt then passes the breaker, and a refusal
(``CircuitOpenError``, ``BulkheadFullError``) or backpressure (a 429 or
418, which the breaker holds for) ends the retries at once.
A fallback with stale data at hand (``StaleCache.call``, ``tripwire.ccxt``'s
``.stale``) runs its call under ``no_pauses()``: the first failed attempt
ends the retries, so its caller gets the stale value after one attempt's
time, never after a backoff's or a ``Retry-After``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import math
import sys
import time
from typing import Any, Awaitable, Callable, Coroutine, Iterator, Literal, Optional, TypeVar, overload

from ._tripwire import RetryBudget, RetryPolicy, _raised_retry_after
from ._types import ExceptionClasses

if sys.version_info >= (3, 10):
    from typing import ParamSpec
else:  # pragma: no cover - Python 3.9
    from typing_extensions import ParamSpec

P = ParamSpec("P")

T = TypeVar("T")
JitterName = Literal["full", "equal", "decorrelated", "none"]


#: Whether a caller waits for this call with stale data at hand: a failed
#: attempt then ends the retries (``no_pauses``). A context variable, so
#: that it follows the call (and the tasks it starts), and no other call.
_no_pauses: contextvars.ContextVar[bool] = contextvars.ContextVar("tripwire_no_pauses", default=False)


@contextlib.contextmanager
def no_pauses() -> Iterator[None]:
    """Within it, a retry never pauses: the first failed attempt raises, as
    if it were the last (no budget token is taken for a retry not made).
    For a caller that has an answer at hand, stale data, and would rather
    have it now than a fresh one after a wait."""
    token = _no_pauses.set(True)
    try:
        yield
    finally:
        _no_pauses.reset(token)


def retry_after_attribute(exc: BaseException) -> Optional[float]:
    """The default ``retry_after`` hint: the exception's ``retry_after``
    attribute when it is a number of seconds, else, for an HTTP client's
    own error (or ``tripwire.http``'s ``ServerError``) for a 5xx or a 408,
    the ``Retry-After`` (or reset header) of its response, else None."""
    hint = getattr(exc, "retry_after", None)
    if isinstance(hint, (int, float)) and not isinstance(hint, bool) and hint >= 0:
        # An int beyond a float's range is an endless wait, which the
        # policy cuts to max_retry_after like any long one.
        return float(hint) if hint <= sys.float_info.max else math.inf
    return _raised_retry_after(exc)


class Retry:
    """A retry policy; ``retry(...)`` makes one. Use it as a decorator (plain
    and ``async def`` functions) or through ``call`` / ``call_async``.

    ``attempts``: calls in all, the first included. ``base``, ``cap``,
    ``factor``, ``jitter``, ``seed``: the backoff between attempts
    (seconds). ``retry_on``: exceptions worth retrying (``Exception``
    subclasses; cancellation and interrupts never are). Left at its default
    (every ``Exception``), an HTTP client's own error for a response
    (requests' ``HTTPError``, httpx's ``HTTPStatusError``, aiohttp's
    ``ClientResponseError``) is judged by its status as ``tripwire.http``
    judges the response: a 4xx other than 408, 429 and 418 is the caller's
    fault and final. ``give_up_on``:
    exceptions that are final; ``retry_if``: a further predicate on the
    exception. ``retry_after``: reads a wait the failure asks for (default:
    ``retry_after_attribute``); that wait is the pause, exactly, up to
    ``max_retry_after`` seconds (default 60): a longer one, which a server
    may send by mistake or in malice, waits that long instead.
    ``budget``: a shared ``RetryBudget``; a retry it refuses raises
    ``RetryBudgetExhausted`` from the last error. ``deadline``: seconds
    after which no attempt starts and no pause ends (read on the budget's
    ``ManualClock`` if it has one). A refusal (``CircuitOpenError``,
    ``BulkheadFullError``) is never retried, nor is backpressure (an HTTP
    client's own error for a 429 or 418, or ``tripwire.http``'s
    ``BackpressureError``): the breaker's hold answers it, and the caller
    gets it at once. Under ``no_pauses()`` no failure is retried (a caller
    with stale data at hand). ``sleep``: replaces
    ``time.sleep`` / ``asyncio.sleep`` (tests). The validated arguments are
    ``policy``'s attributes."""

    def __init__(
        self,
        attempts: int = 3,
        *,
        base: float = 0.1,
        cap: float = 10.0,
        factor: float = 2.0,
        jitter: JitterName = "full",
        retry_on: ExceptionClasses | list[type[BaseException]] | None = None,
        give_up_on: ExceptionClasses | list[type[BaseException]] = (),
        retry_if: Optional[Callable[[BaseException], bool]] = None,
        retry_after: Optional[Callable[[BaseException], Optional[float]]] = retry_after_attribute,
        max_retry_after: Optional[float] = None,
        budget: Optional[RetryBudget] = None,
        deadline: Optional[float] = None,
        sleep: Optional[Callable[[float], Any]] = None,
        seed: Optional[int] = None,
    ) -> None:
        self.policy = RetryPolicy(
            attempts,
            base=base,
            cap=cap,
            factor=factor,
            jitter=jitter,
            retry_on=retry_on,
            give_up_on=give_up_on,
            retry_if=retry_if,
            retry_after=retry_after,
            max_retry_after=max_retry_after,
            budget=budget,
            deadline=deadline,
            seed=seed,
        )
        if sleep is not None and not callable(sleep):
            raise TypeError(f"sleep must be a callable or None, got {sleep!r}")
        self.sleep = sleep

    def delays(self) -> Iterator[float]:
        """The pauses before the 2nd, 3rd, … attempts (without hints)."""
        return iter(self.policy.delays())

    def call(self, func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Calls ``func(*args, **kwargs)``, retrying as the policy says."""
        sleep = self.sleep or time.sleep
        run = self.policy.run()
        while True:
            try:
                return func(*args, **kwargs)
            except Exception as exc:
                if _no_pauses.get():
                    raise
                pause = run.failed(exc)
                if pause is None:
                    raise
                last = exc
            sleep(pause)
            if not run.start():
                raise last

    async def call_async(self, func: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Awaits ``func(*args, **kwargs)``, retrying as the policy says."""
        sleep = self.sleep or asyncio.sleep
        run = self.policy.run()
        while True:
            try:
                return await func(*args, **kwargs)
            except Exception as exc:
                if _no_pauses.get():
                    raise
                pause = run.failed(exc)
                if pause is None:
                    raise
                last = exc
            await sleep(pause)
            if not run.start():
                raise last

    @overload
    def __call__(self, func: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, T]]: ...
    @overload
    def __call__(self, func: Callable[P, T]) -> Callable[P, T]: ...
    def __call__(self, func: Callable[P, Any]) -> Callable[P, Any]:
        """Decorates a plain or ``async def`` function; the result keeps its
        signature."""
        if not callable(func):
            raise TypeError(f"retry decorates a function; got {func!r}")
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def retried_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                return await self.call_async(func, *args, **kwargs)

            retried_async.retry = self  # type: ignore[attr-defined]
            return retried_async

        @functools.wraps(func)
        def retried(*args: P.args, **kwargs: P.kwargs) -> Any:
            return self.call(func, *args, **kwargs)

        retried.retry = self  # type: ignore[attr-defined]
        return retried

    def __repr__(self) -> str:
        return "Retry" + repr(self.policy).removeprefix("RetryPolicy")


#: A retry policy, usable as a decorator: ``@tripwire.retry(attempts=4,
#: base=0.2, budget=budget)``; see ``Retry`` for the arguments.
retry = Retry
