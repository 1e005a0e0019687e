"""Retry with exponential backoff, jitter, a retry budget and the server's
own ``retry_after``.

The loop is Python: a retry waits milliseconds to seconds between attempts,
so the microseconds of its own bookkeeping do not matter, and sleeping
belongs to the caller's runtime (``time.sleep`` or ``asyncio.sleep``). The
delays come from the core's ``Backoff`` and the budget is the core's
lock-free ``RetryBudget``, both through the extension.

Composition, outermost first: fallback → retry → breaker → bulkhead →
call. Each attempt then passes the breaker, and a rejection
(``CircuitOpenError``) ends the retries at once.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from typing import Any, Awaitable, Callable, Iterator, Literal, Optional, TypeVar

from ._errors import CircuitOpenError, RetryBudgetExhausted
from ._tripwire import Backoff, RetryBudget

T = TypeVar("T")
JitterName = Literal["full", "equal", "decorrelated", "none"]

def _exception_tuple(arg: str, value: Any) -> tuple[type[BaseException], ...]:
    items = value if isinstance(value, (tuple, list)) else (value,)
    if not all(isinstance(c, type) and issubclass(c, BaseException) for c in items):
        raise TypeError(f"{arg} must be an exception class or a tuple of exception classes, got {value!r}")
    return tuple(items)


def _seconds(arg: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{arg} must be a number of seconds, got {type(value).__name__}")
    if not (value >= 0 and value != float("inf")):
        raise ValueError(f"{arg} must be a finite, non-negative number of seconds, got {value}")
    return float(value)


def retry_after_attribute(exc: BaseException) -> Optional[float]:
    """The default ``retry_after`` hint: the exception's ``retry_after``
    attribute when it is a number of seconds (e.g. from a 429's
    ``Retry-After`` header), else None."""
    hint = getattr(exc, "retry_after", None)
    if isinstance(hint, (int, float)) and not isinstance(hint, bool) and hint >= 0:
        return float(hint)
    return None


class Retry:
    """A retry policy; ``retry(...)`` makes one. Use it as a decorator (plain
    and ``async def`` functions) or through ``call`` / ``call_async``.

    ``attempts``: calls in all, the first included. ``base``, ``cap``,
    ``factor``, ``jitter``, ``seed``: the ``Backoff`` between attempts
    (seconds). ``retry_on``: exceptions worth retrying (``Exception``
    subclasses; cancellation and interrupts never are); ``give_up_on``:
    exceptions that are final; ``retry_if``: a further predicate on the
    exception. ``retry_after``: reads a wait the failure asks for (default:
    its ``retry_after`` attribute); the pause is at least that. ``budget``: a
    shared ``RetryBudget``; a retry it refuses raises
    ``RetryBudgetExhausted`` from the last error. ``deadline``: seconds
    after which no new attempt starts. A breaker's ``CircuitOpenError`` is
    never retried. ``sleep``: replaces ``time.sleep`` / ``asyncio.sleep``
    (tests)."""

    def __init__(
        self,
        attempts: int = 3,
        *,
        base: float = 0.1,
        cap: float = 10.0,
        factor: float = 2.0,
        jitter: JitterName = "full",
        retry_on: Any = (Exception,),
        give_up_on: Any = (),
        retry_if: Optional[Callable[[BaseException], bool]] = None,
        retry_after: Optional[Callable[[BaseException], Optional[float]]] = retry_after_attribute,
        budget: Optional[RetryBudget] = None,
        deadline: Optional[float] = None,
        sleep: Optional[Callable[[float], Any]] = None,
        seed: Optional[int] = None,
    ) -> None:
        if isinstance(attempts, bool) or not isinstance(attempts, int):
            raise TypeError(f"attempts must be an int, got {type(attempts).__name__}")
        if attempts < 1:
            raise ValueError(f"attempts = {attempts}, expected at least 1")
        self.attempts = attempts
        # Validates the backoff arguments once (errors name them).
        Backoff(base=base, cap=cap, factor=factor, jitter=jitter)
        self.base = float(base)
        self.cap = float(cap)
        self.factor = float(factor)
        self.jitter = jitter
        self.retry_on = _exception_tuple("retry_on", retry_on)
        self.give_up_on = _exception_tuple("give_up_on", give_up_on)
        for arg, f in (("retry_if", retry_if), ("retry_after", retry_after), ("sleep", sleep)):
            if f is not None and not callable(f):
                raise TypeError(f"{arg} must be a callable or None, got {f!r}")
        self.retry_if = retry_if
        self.retry_after = retry_after
        if budget is not None and not isinstance(budget, RetryBudget):
            raise TypeError(f"budget must be a tripwire.RetryBudget or None, got {budget!r}")
        self.budget = budget
        self.deadline = None if deadline is None else _seconds("deadline", deadline)
        self.sleep = sleep
        self.seed = seed

    def _retryable(self, exc: BaseException) -> bool:
        """Whether an attempt that raised ``exc`` may be retried."""
        if isinstance(exc, CircuitOpenError) or isinstance(exc, self.give_up_on):
            return False
        if not isinstance(exc, self.retry_on):
            return False
        return self.retry_if is None or bool(self.retry_if(exc))

    def _backoff(self) -> Backoff:
        return Backoff(base=self.base, cap=self.cap, factor=self.factor, jitter=self.jitter, seed=self.seed)

    def delays(self) -> Iterator[float]:
        """The pauses before the 2nd, 3rd, … attempts (without hints)."""
        backoff = self._backoff()
        for _ in range(self.attempts - 1):
            yield backoff.next_delay()

    def _next_pause(
        self, exc: BaseException, attempt: int, backoff: Backoff, started: float, now: float
    ) -> Optional[float]:
        """The pause before the next attempt; None when ``exc`` is final
        (the caller re-raises it); raises ``RetryBudgetExhausted`` when the
        budget is spent."""
        if attempt >= self.attempts or not self._retryable(exc):
            return None
        hint = self.retry_after(exc) if self.retry_after is not None else None
        pause = backoff.next_delay()
        if hint is not None:
            pause = max(pause, hint)
        if self.deadline is not None and now + pause - started > self.deadline:
            return None
        if self.budget is not None and not self.budget.try_withdraw():
            raise RetryBudgetExhausted("retry budget exhausted") from exc
        return pause

    def call(self, func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Calls ``func(*args, **kwargs)``, retrying as the policy says."""
        if self.budget is not None:
            self.budget.deposit()
        sleep = self.sleep or time.sleep
        backoff = self._backoff()
        attempt = 1
        started = time.monotonic()
        while True:
            try:
                return func(*args, **kwargs)
            except Exception as exc:
                pause = self._next_pause(exc, attempt, backoff, started, time.monotonic())
                if pause is None:
                    raise
            sleep(pause)
            attempt += 1

    async def call_async(self, func: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any) -> T:
        """Awaits ``func(*args, **kwargs)``, retrying as the policy says."""
        if self.budget is not None:
            self.budget.deposit()
        sleep = self.sleep or asyncio.sleep
        backoff = self._backoff()
        attempt = 1
        started = time.monotonic()
        while True:
            try:
                return await func(*args, **kwargs)
            except Exception as exc:
                pause = self._next_pause(exc, attempt, backoff, started, time.monotonic())
                if pause is None:
                    raise
            await sleep(pause)
            attempt += 1

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """Decorates a plain or ``async def`` function."""
        if not callable(func):
            raise TypeError(f"retry decorates a function; got {func!r}")
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def retried_async(*args: Any, **kwargs: Any) -> Any:
                return await self.call_async(func, *args, **kwargs)

            retried_async.retry = self  # type: ignore[attr-defined]
            return retried_async

        @functools.wraps(func)
        def retried(*args: Any, **kwargs: Any) -> Any:
            return self.call(func, *args, **kwargs)

        retried.retry = self  # type: ignore[attr-defined]
        return retried

    def __repr__(self) -> str:
        return (
            f"Retry(attempts={self.attempts}, base={self.base}, cap={self.cap}, "
            f"factor={self.factor}, jitter={self.jitter!r})"
        )


def retry(attempts: int = 3, **kwargs: Any) -> Retry:
    """A retry policy, usable as a decorator: ``@tripwire.retry(attempts=4,
    base=0.2, budget=budget)``. See ``Retry`` for the arguments."""
    return Retry(attempts, **kwargs)
