"""tripwire: a lock-free circuit breaker for clients of flaky APIs.

>>> import tripwire
>>> breaker = tripwire.Breaker(failure_threshold=5, open_timeout=30.0, name="exchange")
>>> @breaker
... def fetch_price(symbol): ...

The breaker, the bulkhead, the retry budget and the retry decisions, the
clock and the registry live in the Rust extension ``tripwire._tripwire``;
the retry loop's sleeping and awaiting and the stale-data fallback are
Python (``_retry``, ``_fallback``), with their arguments checked by the
extension. ``tripwire.http`` guards requests, httpx and aiohttp calls by
their responses (the core's classification), ``tripwire.ccxt`` ccxt
exchanges, ``tripwire.compat.pybreaker`` is pybreaker's API.
``tripwire.Breakers`` is a breaker per key (a symbol, an endpoint, a
host). ``tripwire.RateLimiter`` keeps a client under an exchange's weight
limits, several at once.
"""

from ._errors import BulkheadFullError, CircuitOpenError, RateLimitedError, RetryBudgetExhausted, TripwireError
from ._fallback import Cached, StaleCache
from ._limiter import Cost, RateLimiter
from ._retry import Retry, retry, retry_after_attribute
from ._tripwire import (
    Backoff,
    Breaker,
    Breakers,
    Bulkhead,
    Fleet,
    Guarded,
    Limit,
    ManualClock,
    RetryBudget,
    Snapshot,
    StaleStats,
    Ticket,
    __version__,
    breaker_names,
    prometheus_text,
)
from ._types import ExceptionClasses, Seconds, StateName, Verdict

__all__ = [
    "Backoff",
    "Breaker",
    "Breakers",
    "Bulkhead",
    "BulkheadFullError",
    "Cached",
    "CircuitOpenError",
    "Cost",
    "ExceptionClasses",
    "Fleet",
    "Guarded",
    "Limit",
    "ManualClock",
    "RateLimitedError",
    "RateLimiter",
    "Retry",
    "RetryBudget",
    "RetryBudgetExhausted",
    "Seconds",
    "Snapshot",
    "StaleCache",
    "StaleStats",
    "StateName",
    "Ticket",
    "TripwireError",
    "Verdict",
    "__version__",
    "breaker_names",
    "prometheus_text",
    "retry",
    "retry_after_attribute",
]
