"""Redis's work per 1,000 checks of the ``limits`` package's Redis backend,
for each of its strategies: the commands Redis ran during 1,000 ``hit``
calls (those its Lua scripts call included), from its ``INFO stats``
before and after (the second ``INFO`` itself taken off), and the time per
check. Prints Markdown table rows.

``python benches/python/limiter_redis.py redis://127.0.0.1:PORT``;
``benches/limiter_redis.sh`` runs it next to tripwire's.
"""

from __future__ import annotations

import sys
import time

import limits
import limits.storage
import limits.strategies
import redis

CHECKS = 1000


def main(url: str) -> None:
    info = redis.Redis.from_url(url)
    storage = limits.storage.storage_from_string(url)
    item = limits.RateLimitItemPerSecond(1_000_000)
    for name in ("FixedWindowRateLimiter", "MovingWindowRateLimiter", "SlidingWindowCounterRateLimiter"):
        strategy = getattr(limits.strategies, name)(storage)
        strategy.hit(item, "warm-up", name)
        before = info.info("stats")["total_commands_processed"]
        start = time.perf_counter()
        for _ in range(CHECKS):
            strategy.hit(item, "bench", name)
        took = time.perf_counter() - start
        commands = info.info("stats")["total_commands_processed"] - before - 1
        print(f"| limits `{name}` (Redis storage) | {commands} | {took / CHECKS * 1e6:.1f} µs |")


if __name__ == "__main__":
    main(sys.argv[1])
