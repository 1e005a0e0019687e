"""Per-call cost of tripwire's Python breaker next to a bare call and to
pybreaker, circuitbreaker, aiobreaker and purgatory (whichever are
installed), measured in one run. `bash benches/python/run.sh` makes the
virtual environment and runs this; `--markdown` prints Markdown tables;
`--only with,rejection` measures only the cases whose names contain one of
those words (and the bare call).

Prints µs per call (the best of several rounds, the candidates taking turns
in each, so that noise from other processes weighs least) and the overhead
over a bare call, for sync calls and for awaited `async def`; then the wall
time of 8 threads × 50 calls that each sleep 1 ms; then (`fleet.py`) a
breaker joined to a fleet next to pybreaker's `CircuitRedisStorage`, both
through one redis-server (`--only fleet` measures that section alone).
"""

from __future__ import annotations

import functools
import itertools
import os
import platform
import sys
import tempfile
import threading
import time
import timeit

import fleet
import tripwire
from tripwire.compat import pybreaker as compat

try:
    import pybreaker
except ImportError:  # pragma: no cover
    pybreaker = None
try:
    import circuitbreaker
except ImportError:  # pragma: no cover
    circuitbreaker = None
try:
    import aiobreaker
except ImportError:  # pragma: no cover
    aiobreaker = None
try:
    import purgatory
except ImportError:  # pragma: no cover
    purgatory = None
try:
    import limits
    import limits.storage
    import limits.strategies
except ImportError:  # pragma: no cover
    limits = None
try:
    import pyrate_limiter
except ImportError:  # pragma: no cover
    pyrate_limiter = None
try:
    import aiolimiter
except ImportError:  # pragma: no cover
    aiolimiter = None

#: A rate no loop here reaches: every check of a limiter admits.
FAST = 10**9

#: The keyed call the budget is measured on, next to the decorated call.
KEYED_CALL = "tripwire: Breakers[key] call, breakers.call(key, fn), one key of 10,000"
DECORATED = "tripwire: decorated call"
#: The budget: a keyed call at most this many times a decorated call.
KEYED_BUDGET = 1.5

N = 200_000
ROUNDS = 7


def selected(name: str) -> bool:
    """Whether a case is measured: all of them, or those whose name
    contains one of the words after `--only` (comma-separated)."""
    if "--only" not in sys.argv:
        return True
    words = sys.argv[sys.argv.index("--only") + 1].split(",")
    return any(w in name for w in words)


def per_call(fn):
    """A candidate: measured later, in rounds interleaved with the others."""
    return fn


def measure(rows: list) -> list[tuple[str, float]]:
    """Best µs per call of each candidate over ROUNDS rounds of N calls,
    the candidates taking turns in every round, so that a burst of load from
    other processes hits them all alike."""
    best = [float("inf")] * len(rows)
    for _ in range(ROUNDS):
        for i, (_, fn) in enumerate(rows):
            best[i] = min(best[i], timeit.timeit(fn, number=N) / N * 1e6)
    return [(name, us) for (name, _), us in zip(rows, best)]


def work(x: int = 1) -> int:
    return x


def main() -> None:
    rows: list = []

    rows.append(("bare call", per_call(work)))

    b = tripwire.Breaker(failure_threshold=5, open_timeout=30.0)
    guarded = b(work)
    rows.append(("tripwire: decorated call", per_call(guarded)))

    def with_block() -> int:
        with b:
            return work()

    rows.append(("tripwire: with breaker", per_call(with_block)))
    rows.append(("tripwire: breaker.call(fn)", per_call(lambda: b.call(work))))

    # A breaker per key, 10,000 keys made beforehand. timeit calls the
    # decorated function itself; a keyed call takes arguments, so it is
    # called through functools.partial, which adds no Python frame: each row
    # costs what the user's own line `breakers.call(key, fn)` costs. The rows
    # with a Python function around them (a lambda, for `breakers[key]` or
    # the next key) have the decorated call through a lambda beside them.
    keyed = tripwire.Breakers(failure_threshold=5, open_timeout=30.0)
    keys = [f"SYM{i}" for i in range(10_000)]
    for key in keys:
        keyed[key]
    next_key = itertools.cycle(keys).__next__

    def keyed_with() -> int:
        with keyed[next_key()]:
            return work()

    hot = keys[len(keys) // 2]
    rows.append((KEYED_CALL, per_call(functools.partial(keyed.call, hot, work))))
    rows.append(("tripwire: decorated call, through a lambda", per_call(lambda: guarded())))
    rows.append(("tripwire: Breakers[key] call, breakers[key].call(fn), one key of 10,000",
                 per_call(lambda: keyed[hot].call(work))))
    rows.append(("tripwire: Breakers[key] call, breakers.call(key, fn), the keys in turn",
                 per_call(lambda: keyed.call(next_key(), work))))
    rows.append(("tripwire: Breakers[key] call, breakers[key].call(fn), the keys in turn",
                 per_call(lambda: keyed[next_key()].call(work))))
    rows.append(("tripwire: Breakers[key] call, with breakers[key], the keys in turn", per_call(keyed_with)))
    rows.append(("python: next key only, through a lambda (reference)", per_call(lambda: next_key())))

    tmp = tempfile.TemporaryDirectory()
    shared = tripwire.Breaker.shared(os.path.join(tmp.name, "bench.breaker"))
    rows.append(("tripwire: decorated call, Breaker.shared", per_call(shared(work))))

    def try_raise() -> None:
        try:
            raise ValueError
        except ValueError:
            pass

    rows.append(("python: raise + except (reference)", per_call(try_raise)))

    def raise_open() -> None:
        try:
            raise tripwire.CircuitOpenError(30.0, None, "open")
        except tripwire.CircuitOpenError:
            pass

    # The refusal's own exception, raised from Python with its three
    # arguments: a rejection costs this plus the call into the breaker.
    rows.append(("python: raise CircuitOpenError(retry_after, name, state) + except (reference)",
                 per_call(raise_open)))

    lock = threading.Lock()

    def with_lock() -> int:
        with lock:
            return work()

    # What any context manager written in C costs a `with` block: the
    # interpreter binds and calls `__enter__` and `__exit__` as it does here.
    rows.append(("python: with threading.Lock() (reference)", per_call(with_lock)))

    for label, trip in (("open", None), ("forced open", "force")):
        o = tripwire.Breaker(failure_threshold=1, open_timeout=3600.0)
        if trip:
            o.force_open()
        else:
            try:
                o.call(lambda: 1 / 0)
            except ZeroDivisionError:
                pass
        og = o(work)

        def rejected() -> None:
            try:
                og()
            except tripwire.CircuitOpenError:
                pass

        rows.append((f"tripwire: rejection ({label}) + except", per_call(rejected)))

    c = compat.CircuitBreaker(fail_max=5, reset_timeout=30)
    rows.append(("tripwire.compat.pybreaker: decorated call", per_call(c(work))))

    def c_calling() -> int:
        with c.calling():
            return work()

    rows.append(("tripwire.compat.pybreaker: with calling()", per_call(c_calling)))
    co = compat.CircuitBreaker(fail_max=1, reset_timeout=3600)
    co.open()
    cog = co(work)

    def c_rejected() -> None:
        try:
            cog()
        except compat.CircuitBreakerError:
            pass

    rows.append(("tripwire.compat.pybreaker: rejection + except", per_call(c_rejected)))

    if pybreaker is not None:
        p = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=30)
        rows.append(("pybreaker: decorated call", per_call(p(work))))

        def p_calling() -> int:
            with p.calling():
                return work()

        rows.append(("pybreaker: with calling()", per_call(p_calling)))
        po = pybreaker.CircuitBreaker(fail_max=1, reset_timeout=3600)
        po.open()
        pog = po(work)

        def p_rejected() -> None:
            try:
                pog()
            except pybreaker.CircuitBreakerError:
                pass

        rows.append(("pybreaker: rejection + except", per_call(p_rejected)))

    if circuitbreaker is not None:
        cb = circuitbreaker.CircuitBreaker(failure_threshold=5, recovery_timeout=30)
        rows.append(("circuitbreaker: decorated call", per_call(cb(work))))

    if purgatory is not None:
        pf = purgatory.SyncCircuitBreakerFactory(default_threshold=5, default_ttl=30)
        pg = pf.get_breaker("bench")
        rows.append(("purgatory: decorated call", per_call(pf("bench-decorated")(work))))

        def pg_with() -> int:
            with pg:
                return work()

        rows.append(("purgatory: with breaker", per_call(pg_with)))

    rows += limiter_candidates()

    rows = [rows[0]] + [r for r in rows[1:] if selected(r[0])]
    rows = measure(rows)
    async_rows = async_candidates()
    async_rows = measure_async([async_rows[0]] + [r for r in async_rows[1:] if selected(r[0])])
    thread_rows = [(name, threads(deco)) for name, deco in threads_candidates() if selected(name)]
    via_redis = fleet.run(ROUNDS) if selected("fleet") else None
    if "--markdown" in sys.argv:
        markdown(rows, async_rows, thread_rows)
        if via_redis is not None:
            print("\n" + fleet.markdown(*via_redis))
        return
    bare = rows[0][1]
    print(
        f"# Python {platform.python_version()} on {platform.machine()}, "
        f"{ROUNDS} interleaved rounds of {N:,} calls, best round"
    )
    print(f"{'what':45} {'µs/call':>8} {'over bare':>10}")
    for name, us in rows:
        print(f"{name:45} {us:8.3f} {us - bare:10.3f}")
    print(f"\n# async def, awaited in one task ({N_ASYNC:,} awaits a round)")
    abare = async_rows[0][1]
    for name, us in async_rows:
        print(f"{name:45} {us:8.3f} {us - abare:10.3f}")
    print("\n# 8 threads × 50 calls that each sleep 1 ms (serialised: 0.400 s)")
    for name, secs in thread_rows:
        print(f"{name:45} {secs:8.3f} s")
    if via_redis is not None:
        print("\n" + fleet.text(*via_redis))


def limiter_candidates() -> list:
    """One check of a rate limiter that admits, sync: tripwire's next to
    limits' (in-memory storage) and pyrate-limiter's."""
    rows = []
    one = tripwire.RateLimiter(tripwire.Limit(FAST, 1.0))
    rows.append(("limiter: tripwire RateLimiter.try_acquire()", per_call(one.try_acquire)))
    two = tripwire.RateLimiter([tripwire.Limit(FAST, 1.0), tripwire.Limit(FAST, 60.0)])
    rows.append(("limiter: tripwire, two limits, try_acquire((1, 1))", per_call(lambda: two.try_acquire((1, 1)))))
    if limits is not None:
        item = limits.RateLimitItemPerSecond(FAST)
        for name in ("FixedWindowRateLimiter", "SlidingWindowCounterRateLimiter"):
            strategy = getattr(limits.strategies, name)(limits.storage.MemoryStorage())
            rows.append((f"limiter: limits {name}.hit", per_call(lambda s=strategy: s.hit(item))))
    if pyrate_limiter is not None:
        pyrate = pyrate_limiter.Limiter(pyrate_limiter.Rate(FAST, pyrate_limiter.Duration.SECOND))
        rows.append(("limiter: pyrate-limiter Limiter.try_acquire", per_call(lambda: pyrate.try_acquire("bench", blocking=False))))
    return rows


def markdown(rows, async_rows, thread_rows) -> None:
    """The same figures as Markdown tables, for benches/RESULTS.md."""
    from importlib.metadata import version

    versions = ", ".join(
        f"{m.__name__} {version(m.__name__)}"
        for m in (pybreaker, circuitbreaker, aiobreaker, purgatory, limits, pyrate_limiter, aiolimiter)
        if m is not None
    )
    print(f"Python {platform.python_version()}; peers from PyPI: {versions or 'none installed'}.")
    print(f"Best of {ROUNDS} interleaved rounds.\n")
    for title, table in (("sync call", rows), ("async def, awaited", async_rows)):
        base = table[0][1]
        print(f"| {title} | µs per call | µs over a bare call |")
        print("| --- | --- | --- |")
        for name, us in table:
            print(f"| {name} | {us:.3f} | {us - base:.3f} |")
        print()
    print("| 8 threads × 50 calls that each sleep 1 ms (0.400 s if serialised) | wall time (s) |")
    print("| --- | --- |")
    for name, secs in thread_rows:
        print(f"| {name} | {secs:.3f} |")
    us = dict(rows)
    if KEYED_CALL in us and DECORATED in us:
        ratio = us[KEYED_CALL] / us[DECORATED]
        verdict = "met" if ratio <= KEYED_BUDGET else "**missed**"
        print(f"\nA keyed call (`breakers.call(key, fn)`, one key of 10,000) costs {ratio:.2f}× a decorated "
              f"call (budget ≤ {KEYED_BUDGET}×: {verdict}).")


N_ASYNC = 50_000


async def awork(x: int = 1) -> int:
    return x


def async_candidates() -> list:
    """Coroutine functions to await N_ASYNC times in a row."""
    rows: list = [("bare async def", awork)]

    async def awaiting(*args, **kwargs):
        return await awork(*args, **kwargs)

    # What any decorator that keeps `async def` a coroutine function costs:
    # a coroutine around the call, passing its arguments on.
    rows.append(("python: async def awaiting it (reference)", awaiting))
    b = tripwire.Breaker(failure_threshold=5, open_timeout=30.0)
    rows.append(("tripwire: decorated async def", b(awork)))
    if aiobreaker is not None:
        ab = aiobreaker.CircuitBreaker(fail_max=5)
        rows.append(("aiobreaker: decorated async def", ab(awork)))
    if purgatory is not None:
        factory = purgatory.AsyncCircuitBreakerFactory(default_threshold=5, default_ttl=30)
        rows.append(("purgatory: decorated async def", factory("bench")(awork)))
    limiter = tripwire.RateLimiter(tripwire.Limit(FAST, 1.0))
    rows.append(("limiter: tripwire await RateLimiter.wait_async()", limiter.wait_async))
    if aiolimiter is not None:
        al = aiolimiter.AsyncLimiter(FAST, 1.0)
        rows.append(("limiter: aiolimiter await AsyncLimiter.acquire()", al.acquire))
    return rows


def measure_async(rows: list) -> list[tuple[str, float]]:
    """Best µs per await of each candidate, rounds interleaved as in `measure`."""
    import asyncio

    async def run(fn) -> float:
        start = time.perf_counter()
        for _ in range(N_ASYNC):
            await fn()
        return (time.perf_counter() - start) / N_ASYNC * 1e6

    best = [float("inf")] * len(rows)

    async def rounds() -> None:
        for _ in range(ROUNDS):
            for i, (_, fn) in enumerate(rows):
                best[i] = min(best[i], await run(fn))

    asyncio.run(rounds())
    return [(name, us) for (name, _), us in zip(rows, best)]


def threads_candidates():
    yield "tripwire: decorated", tripwire.Breaker()
    yield "tripwire.compat.pybreaker: decorated", compat.CircuitBreaker()
    if pybreaker is not None:
        yield "pybreaker: decorated", pybreaker.CircuitBreaker()


def threads(decorator) -> float:
    @decorator
    def io() -> None:
        time.sleep(0.001)

    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        for _ in range(50):
            io()

    ts = [threading.Thread(target=worker) for _ in range(8)]
    start = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
