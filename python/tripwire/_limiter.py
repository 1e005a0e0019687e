"""A rate limiter with weights: the core's ``RateLimiter``, and the waits
that sleep (``wait``) and await (``wait_async``) for it.

Every decision is the core's (``tripwire._tripwire.RateLimiter``): whether
a cost goes, how long it waits, what a refund gives back. This module only
sleeps the wait the core reserved, and gives the units back when the wait
is interrupted.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Optional, Sequence, Union

from ._tripwire import Limit
from ._tripwire import RateLimiter as _CoreLimiter

Cost = Union[int, Sequence[int]]


class RateLimiter(_CoreLimiter):
    """At most each ``Limit``'s units in any stretch of its period, for
    costs taken on every limit at once, all or nothing.

    >>> weight = Limit(1200, 60)            # Binance: 1,200 weight a minute
    >>> orders = Limit(50, 10, burst=5)     # 50 orders per 10 s
    >>> limiter = RateLimiter([weight, orders])
    >>> limiter.wait((5, 0))                # an order book: weight 5, no order
    >>> limiter.wait((1, 1))                # an order: weight 1, one order
    >>> limiter.in_use()
    [6, 1]

    ``cost``: an int for a limiter of one limit, else one int per limit (0
    on the limits a request does not count on). ``try_acquire(cost)``
    takes the cost now or raises ``RateLimitedError``; ``acquire(cost,
    max_wait)`` reserves it ahead and returns the seconds to wait before
    sending; ``wait`` and ``wait_async`` sleep that wait. ``refund(cost)``
    gives back the units of a request that was never sent, where that lets
    nothing more through. ``RateLimiter.shared(path, limits)`` (or
    ``path=``) keeps the limits in a memory-mapped file that every process
    opening it shares. ``observe_used(limit, used)`` counts what the
    server reports having seen (Binance's ``X-MBX-USED-WEIGHT-1M``), so
    the next calls slow down at once. ``counts()`` says what each limit
    did (units spent, waits, refusals, corrections); with ``name=``,
    ``tripwire.prometheus_text()`` exports them (``tripwire_rate_limit_*``).
    """

    @classmethod
    def shared(
        cls,
        path: Union[str, "os.PathLike[str]"],
        limits: Union[Limit, Sequence[Limit]],
        *,
        name: Optional[str] = None,
    ) -> "RateLimiter":
        """The limiter of ``limits`` in the memory-mapped file at ``path``
        (created if need be): every process that opens the same path with
        the same limits spends one budget, so four workers behind one IP
        stay under its limit together. Another process's limits at that
        path raise ``ValueError``. ``name``: as for the constructor."""
        return cls(limits, path=path, name=name)

    def wait(self, cost: Cost = 1, max_wait: Optional[float] = None) -> None:
        """Takes ``cost`` and sleeps until it may be sent; raises
        ``RateLimitedError`` (taking nothing) if that is more than
        ``max_wait`` seconds away. Interrupted, it gives the units back."""
        delay = self.acquire(cost, max_wait)
        if delay > 0:
            try:
                time.sleep(delay)
            except BaseException:
                self.refund(cost)
                raise

    async def wait_async(self, cost: Cost = 1, max_wait: Optional[float] = None) -> None:
        """``wait`` for a coroutine: awaits ``asyncio.sleep``. Cancelled, it
        gives the units back."""
        delay = self.acquire(cost, max_wait)
        if delay > 0:
            try:
                await asyncio.sleep(delay)
            except BaseException:
                self.refund(cost)
                raise


__all__ = ["Cost", "Limit", "RateLimiter"]
