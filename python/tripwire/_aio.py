"""asyncio support for breakers and bulkheads, and the bulkhead's
decorator.

Admission and recording are the Rust objects' own methods; only the
``await`` lives here, since a coroutine has to be a Python frame.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, Awaitable, Callable, TypeVar

T = TypeVar("T")


async def call_async(breaker: Any, func: Callable[..., Awaitable[T]], args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> T:
    """Awaits ``func(*args, **kwargs)`` under ``breaker``."""
    ticket = breaker._acquire()
    try:
        result = await func(*args, **(kwargs or {}))
    except BaseException as exc:
        breaker._record_error(ticket, exc)
        raise
    breaker._record_result(ticket, result)
    return result


def wrap(breaker: Any, func: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """``func`` (an ``async def`` function) guarded by ``breaker``."""
    acquire = breaker._acquire
    record_error = breaker._record_error
    record_result = breaker._record_result

    @functools.wraps(func)
    async def guarded(*args: Any, **kwargs: Any) -> T:
        ticket = acquire()
        try:
            result = await func(*args, **kwargs)
        except BaseException as exc:
            record_error(ticket, exc)
            raise
        record_result(ticket, result)
        return result

    guarded.breaker = breaker  # type: ignore[attr-defined]
    return guarded


class _Ready:
    """An awaitable that is already done: what ``__aenter__`` and
    ``__aexit__`` return, since the breaker decides without waiting."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Any:
        return self.value
        yield  # pragma: no cover - makes this a generator


def ready(value: Any) -> _Ready:
    return _Ready(value)


# -- bulkheads ---------------------------------------------------------------


async def _bulkhead_take(bulkhead: Any) -> None:
    """Takes a slot, waiting up to ``bulkhead.max_wait`` without blocking
    the event loop; raises ``BulkheadFullError`` if none frees in time.

    The wait is the core's: a release wakes it (through the loop's
    ``call_soon_threadsafe``), the deadline is the loop's ``call_later``,
    and only a wait that ends without a slot counts as a refusal."""
    max_wait = bulkhead.max_wait
    if max_wait is None:
        if bulkhead.try_acquire():
            return
        raise bulkhead._full()
    loop = asyncio.get_running_loop()
    wait = bulkhead._wait(loop)
    if wait is None:
        return
    expiry = loop.call_later(max_wait, wait.expire)
    try:
        took = await wait.future
    except BaseException:
        # Cancelled: leave the wait, giving back a slot it took for us.
        wait.cancel()
        raise
    finally:
        expiry.cancel()
    if not took:
        raise bulkhead._full()


async def bulkhead_enter(bulkhead: Any) -> Any:
    await _bulkhead_take(bulkhead)
    return bulkhead


async def bulkhead_call_async(
    bulkhead: Any, func: Callable[..., Awaitable[T]], args: tuple[Any, ...], kwargs: dict[str, Any] | None
) -> T:
    await _bulkhead_take(bulkhead)
    try:
        return await func(*args, **(kwargs or {}))
    finally:
        bulkhead.release()


def bulkhead_wrap(bulkhead: Any, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` (plain or ``async def``) run in one of ``bulkhead``'s slots."""
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def guarded_async(*args: Any, **kwargs: Any) -> Any:
            await _bulkhead_take(bulkhead)
            try:
                return await func(*args, **kwargs)
            finally:
                bulkhead.release()

        guarded_async.bulkhead = bulkhead  # type: ignore[attr-defined]
        return guarded_async

    call = bulkhead.call

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        return call(func, *args, **kwargs)

    guarded.bulkhead = bulkhead  # type: ignore[attr-defined]
    return guarded
