"""asyncio: decorated coroutines, call_async and `async with`."""

from __future__ import annotations

import asyncio
import inspect

import pytest

import tripwire
from conftest import Boom


def run(coro):
    return asyncio.run(coro)


def test_decorated_coroutine_function_stays_one(make_breaker):
    b = make_breaker(failure_threshold=2)

    @b
    async def fetch(symbol: str) -> str:
        """Fetches a ticker."""
        await asyncio.sleep(0)
        return symbol.lower()

    assert inspect.iscoroutinefunction(fetch)
    assert fetch.__name__ == "fetch" and fetch.__doc__ == "Fetches a ticker."
    assert fetch.breaker is b
    assert run(fetch("BTC")) == "btc"
    assert b.snapshot().successes == 1


def test_async_failures_trip_and_open_rejects_before_awaiting(make_breaker):
    b = make_breaker(failure_threshold=2, name="ws")
    started = []

    @b
    async def down() -> None:
        started.append(1)
        raise Boom

    async def main() -> None:
        for _ in range(2):
            with pytest.raises(Boom):
                await down()
        with pytest.raises(tripwire.CircuitOpenError) as info:
            await down()
        assert info.value.name == "ws"

    run(main())
    assert len(started) == 2
    assert b.state == "open"


def test_async_reraises_the_same_exception_object(make_breaker):
    b = make_breaker()
    original = Boom("x")

    async def raiser() -> None:
        raise original

    async def main() -> None:
        with pytest.raises(Boom) as info:
            await b.call_async(raiser)
        assert info.value is original

    run(main())


def test_call_async_passes_arguments(make_breaker):
    b = make_breaker()

    async def add(x: int, *, y: int) -> int:
        return x + y

    assert run(b.call_async(add, 1, y=2)) == 3


def test_cancellation_is_neutral(make_breaker):
    b = make_breaker(failure_threshold=1)

    @b
    async def hang() -> None:
        await asyncio.sleep(10)

    async def main() -> None:
        task = asyncio.ensure_future(hang())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert b.state == "closed"
    assert b.snapshot().ignored == 1


def test_timeouts_count_as_failures(make_breaker):
    b = make_breaker(failure_threshold=1)

    @b
    async def slow() -> None:
        await asyncio.wait_for(asyncio.sleep(10), 0.01)

    with pytest.raises((asyncio.TimeoutError, TimeoutError)):
        run(slow())
    assert b.state == "open"


def test_async_with(make_breaker):
    b = make_breaker(failure_threshold=1)

    async def main() -> None:
        async with b as entered:
            assert entered is b
            await asyncio.sleep(0)
        with pytest.raises(Boom):
            async with b:
                raise Boom
        with pytest.raises(tripwire.CircuitOpenError):
            async with b:
                pytest.fail("the body must not run")

    run(main())
    s = b.snapshot()
    assert (s.successes, s.failures, s.rejected) == (1, 1, 1)


def test_interleaved_tasks_keep_their_own_with_tickets(make_breaker, clock):
    """Each task's `async with` pairs with its own ticket, however the
    tasks interleave."""
    b = make_breaker(failure_threshold=1, open_timeout=1.0, half_open_max=2, half_open_successes=2)

    async def probe(delay: float, fail: bool) -> None:
        async with b:
            await asyncio.sleep(delay)
            if fail:
                raise Boom

    async def main() -> None:
        b.force_open()
        b.reset()
        # Tasks enter in order a, b and leave in order b, a.
        results = await asyncio.gather(probe(0.02, False), probe(0.0, False), return_exceptions=True)
        assert results == [None, None]

    run(main())
    assert b.snapshot().successes == 2


def test_async_failure_if(make_breaker):
    b = make_breaker(failure_threshold=1, failure_if=lambda r: r == "503")

    @b
    async def status() -> str:
        return "503"

    assert run(status()) == "503"
    assert b.state == "open"


async def stale_and_fresh(b: tripwire.Breaker, enter) -> None:  # type: ignore[no-untyped-def]
    """Task A enters a block, the breaker is reset, task B enters one, and A
    leaves with a failure while B's block is still open: A's ticket is of
    the older generation, so its failure must not trip the breaker. Had the
    blocks swapped tickets, it would."""
    a_in, b_in, a_out = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def task_a() -> None:
        with pytest.raises(Boom):
            async with enter(b):
                a_in.set()
                await b_in.wait()
                raise Boom
        a_out.set()

    async def task_b() -> None:
        await a_in.wait()
        b.reset()
        async with enter(b):
            b_in.set()
            await a_out.wait()

    await asyncio.gather(task_a(), task_b())


class SyncBlock:
    """`with breaker:` (the sync protocol) inside a coroutine."""

    def __init__(self, breaker: tripwire.Breaker) -> None:
        self.breaker = breaker

    async def __aenter__(self) -> None:
        self.breaker.__enter__()

    async def __aexit__(self, *exc) -> None:  # type: ignore[no-untyped-def]
        self.breaker.__exit__(*exc)


@pytest.mark.parametrize("enter", [lambda b: b, SyncBlock], ids=["async with", "with"])
def test_interleaved_tasks_never_swap_tickets(make_breaker, enter):
    b = make_breaker(failure_threshold=1)
    run(stale_and_fresh(b, enter))
    assert b.state == "closed", "task A's stale failure was recorded with task B's ticket"
    s = b.snapshot()
    assert (s.successes, s.failures) == (1, 1)


def test_tasks_inside_an_outer_sync_block_keep_their_tickets(make_breaker):
    """A block entered before the loop started (thread stack) and the
    tasks' blocks inside it (their contexts) each get their own ticket."""
    b = make_breaker(failure_threshold=1)
    with b:
        run(stale_and_fresh(b, SyncBlock))
        assert b.state == "closed"
    s = b.snapshot()
    # The outer block was admitted before the tasks' reset: its success is
    # of an older generation and changes nothing, but it is counted.
    assert (s.successes, s.failures, b.state) == (2, 1, "closed")
