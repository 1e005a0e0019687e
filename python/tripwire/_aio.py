"""asyncio support for breakers and bulkheads, and the bulkhead's
decorator.

Admission and recording are the Rust objects' own methods; only the
``await`` lives here, since a coroutine has to be a Python frame.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import sys
from typing import Any, Awaitable, Callable, TypeVar

T = TypeVar("T")


if sys.version_info >= (3, 11):
    _timeout = asyncio.timeout
else:  # pragma: no cover - Python 3.9 and 3.10

    class _TimeoutError(asyncio.TimeoutError, TimeoutError):
        """What a breaker's timeout raises before Python 3.11, where
        ``asyncio.TimeoutError`` is not yet the builtin ``TimeoutError``:
        both, so that either ``except`` catches it."""

    class _timeout:
        """``asyncio.timeout`` for Python < 3.11: cancels the task when the
        time is up and turns that cancellation into ``TimeoutError``.
        (Without ``Task.uncancel``, a cancellation from outside in the same
        instant is taken for the timeout.)"""

        def __init__(self, delay: float) -> None:
            self._delay = delay
            self._expired = False

        def expired(self) -> bool:
            return self._expired

        def _fire(self, task: asyncio.Task[Any]) -> None:
            self._expired = True
            task.cancel()

        async def __aenter__(self) -> _timeout:
            task = asyncio.current_task()
            assert task is not None
            self._handle = asyncio.get_running_loop().call_later(self._delay, self._fire, task)
            return self

        async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
            self._handle.cancel()
            if self._expired and exc_type is asyncio.CancelledError:
                raise _TimeoutError from exc


async def call_async(
    breaker: Any,
    func: Callable[..., Awaitable[T]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None,
) -> T:
    """Awaits ``func(*args, **kwargs)`` under ``breaker``, within its
    timeout if it has one."""
    timeout = breaker.timeout
    ticket = breaker._acquire()
    if timeout is None:
        try:
            result = await func(*args, **(kwargs or {}))
        except BaseException as exc:
            breaker._record_error(ticket, exc)
            raise
    else:
        scope = _timeout(timeout)
        try:
            async with scope:
                result = await func(*args, **(kwargs or {}))
        except BaseException as exc:
            _record_within(breaker, ticket, scope, exc)
            raise
    breaker._record_result(ticket, result)
    return result


async def enter_within(breaker: Any, scope: Any) -> Any:
    """``async with breaker:`` on a breaker with a timeout: enters the
    block's timeout scope (the ticket is taken and kept already)."""
    try:
        await scope.__aenter__()
    except BaseException:
        breaker._abandon_block()
        raise
    return breaker


async def exit_within(breaker: Any, ticket: Any, scope: Any, exc_type: Any, exc: Any, tb: Any) -> None:
    """Leaves the block's timeout scope, which turns the cancellation of a
    block it cut short into ``TimeoutError``, and records the block."""
    try:
        await scope.__aexit__(exc_type, exc, tb)
    except BaseException as raised:
        _record_within(breaker, ticket, scope, raised)
        raise
    if exc is None:
        breaker._record(ticket, "success")
    else:
        _record_within(breaker, ticket, scope, exc)


def _record_within(breaker: Any, ticket: Any, scope: Any, exc: BaseException) -> None:
    """Records a call that raised ``exc`` inside the breaker's timeout: a
    failure, whatever ``failure_on`` says, if the timeout cut it short."""
    if scope.expired():
        breaker._record(ticket, "failure")
    else:
        breaker._record_error(ticket, exc)


def wrap(breaker: Any, func: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """``func`` (an ``async def`` function) guarded by ``breaker``, within
    its timeout if it has one."""
    acquire = breaker._acquire
    record_error = breaker._record_error
    record_result = breaker._record_result
    timeout = breaker.timeout

    if timeout is None:

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

    else:

        @functools.wraps(func)
        async def guarded(*args: Any, **kwargs: Any) -> T:
            ticket = acquire()
            scope = _timeout(timeout)
            try:
                async with scope:
                    result = await func(*args, **kwargs)
            except BaseException as exc:
                _record_within(breaker, ticket, scope, exc)
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
