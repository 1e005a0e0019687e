"""The exception hierarchy: everything tripwire raises derives from
``TripwireError``.

``CircuitOpenError`` is raised on the hot path of an open breaker, so it is
made as cheaply as Python allows: its fields are its ``args`` and the
message is formatted only when someone reads it.
"""

from __future__ import annotations

from typing import Optional


class TripwireError(Exception):
    """Base class of every error tripwire raises itself."""


class CircuitOpenError(TripwireError):
    """The breaker refused the call; it was never made.

    ``retry_after``: seconds until a probe may be admitted, or None when the
    breaker was forced open (only ``reset()`` closes it). ``name``: the
    breaker's name, or None. ``state``: the state that refused the call
    (``"open"``, ``"half_open"`` or ``"forced_open"``).
    """

    # No __init__: the arguments (retry_after, name, state) are `args`,
    # stored by BaseException without a Python frame.

    @property
    def retry_after(self) -> Optional[float]:
        return self.args[0]  # type: ignore[no-any-return]

    @property
    def name(self) -> Optional[str]:
        return self.args[1]  # type: ignore[no-any-return]

    @property
    def state(self) -> str:
        return self.args[2]  # type: ignore[no-any-return]

    def __str__(self) -> str:
        retry_after, name, state = self.args[:3]
        who = "circuit breaker" if name is None else f"circuit breaker {name!r}"
        if retry_after is None:
            return f"{who} is forced open"
        if state == "half_open":
            return f"{who} is half-open with every probe slot taken; retry after {retry_after:.3f}s"
        return f"{who} is open; retry after {retry_after:.3f}s"


class BulkheadFullError(TripwireError):
    """The bulkhead had no free slot (within ``max_wait``, if one was given).

    ``name``: the bulkhead's name, or None. ``max_concurrent``: its limit.
    """

    # Arguments: (name, max_concurrent), kept in `args`.

    @property
    def name(self) -> Optional[str]:
        return self.args[0]  # type: ignore[no-any-return]

    @property
    def max_concurrent(self) -> int:
        return self.args[1]  # type: ignore[no-any-return]

    def __str__(self) -> str:
        name, limit = self.args[:2]
        who = "bulkhead" if name is None else f"bulkhead {name!r}"
        return f"{who} is full ({limit} calls in flight)"


class RetryBudgetExhausted(TripwireError):
    """A retry was due but the retry budget had no token left; the error of
    the last attempt is ``__cause__``."""


class RateLimitedError(TripwireError):
    """A rate limiter would not let the request go (within ``max_wait``, if
    one was given); nothing was taken from any of its limits.

    ``retry_after``: seconds until the request's cost would go at once, if
    nothing else is taken meanwhile. ``limit``: the index of the limit that
    waits longest.
    """

    # Arguments: (retry_after, limit), kept in `args`.

    @property
    def retry_after(self) -> float:
        return self.args[0]  # type: ignore[no-any-return]

    @property
    def limit(self) -> int:
        return self.args[1]  # type: ignore[no-any-return]

    def __str__(self) -> str:
        retry_after, limit = self.args[:2]
        return f"rate limit {limit}: wait {retry_after:.3f}s"
