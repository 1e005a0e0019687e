"""tripwire: a lock-free circuit breaker for clients of flaky APIs.

>>> import tripwire
>>> breaker = tripwire.Breaker(failure_threshold=5, open_timeout=30.0, name="exchange")
>>> @breaker
... def fetch_price(symbol): ...

The breaker, its clock and the registry live in the Rust extension
``tripwire._tripwire``; this package re-exports them.
"""

from ._errors import BulkheadFullError, CircuitOpenError, RetryBudgetExhausted, TripwireError
from ._tripwire import (
    Breaker,
    Bulkhead,
    Guarded,
    ManualClock,
    Snapshot,
    Ticket,
    __version__,
    breaker_names,
    prometheus_text,
)

__all__ = [
    "Breaker",
    "Bulkhead",
    "BulkheadFullError",
    "CircuitOpenError",
    "Guarded",
    "ManualClock",
    "RetryBudgetExhausted",
    "Snapshot",
    "Ticket",
    "TripwireError",
    "__version__",
    "breaker_names",
    "prometheus_text",
]
