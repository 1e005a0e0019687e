"""The bulkhead: a cap on calls in flight, sync and async."""

from __future__ import annotations

import asyncio
import inspect
import selectors
import threading
import time

import pytest

import tripwire


def test_try_acquire_and_release():
    bh = tripwire.Bulkhead(2, name="orders")
    assert bh.try_acquire() and bh.try_acquire()
    assert not bh.try_acquire()
    assert (bh.in_flight, bh.available) == (2, 0)
    bh.release()
    assert bh.available == 1
    bh.release()
    with pytest.raises(RuntimeError, match="without a slot"):
        bh.release()
    assert repr(bh) == "Bulkhead(name='orders', max_concurrent=2, in_flight=0)"


def test_full_bulkhead_rejects_at_once():
    bh = tripwire.Bulkhead(1, name="rest")
    with bh:
        with pytest.raises(tripwire.BulkheadFullError) as info:
            with bh:
                pass
        err = info.value
        assert isinstance(err, tripwire.TripwireError)
        assert (err.name, err.max_concurrent) == ("rest", 1)
        assert str(err) == "bulkhead 'rest' is full (1 calls in flight)"
        with pytest.raises(tripwire.BulkheadFullError):
            bh.call(lambda: None)
    assert bh.call(lambda x: x * 2, 21) == 42
    assert bh.in_flight == 0


def test_a_full_bulkhead_inside_a_breaker_counts_nothing_there():
    # The call never reached the dependency: not its failure, whatever
    # the breaker's default failure_on says.
    bh = tripwire.Bulkhead(1)
    breaker = tripwire.Breaker(failure_threshold=1)
    assert bh.try_acquire()
    with pytest.raises(tripwire.BulkheadFullError):
        breaker.call(bh.call, lambda: None)
    with pytest.raises(tripwire.BulkheadFullError):
        asyncio.run(breaker.call_async(bh.call_async, asyncio.sleep, 0))
    snap = breaker.snapshot()
    assert (breaker.state, snap.failures, snap.ignored) == ("closed", 0, 2)


def test_a_failing_call_frees_its_slot():
    bh = tripwire.Bulkhead(1)
    with pytest.raises(ZeroDivisionError):
        with bh:
            1 / 0
    with pytest.raises(ZeroDivisionError):
        bh.call(lambda: 1 / 0)
    assert bh.in_flight == 0


def test_max_wait_waits_then_gives_up():
    bh = tripwire.Bulkhead(1, max_wait=0.05)
    assert bh.max_wait == 0.05
    bh.try_acquire()
    start = time.perf_counter()
    with pytest.raises(tripwire.BulkheadFullError):
        bh.call(lambda: None)
    assert 0.04 < time.perf_counter() - start < 0.5


def test_decorator_sync_and_async():
    bh = tripwire.Bulkhead(1)

    @bh
    def add(x: int, y: int) -> int:
        """Adds."""
        return x + y

    @bh
    async def aadd(x: int, y: int) -> int:
        await asyncio.sleep(0)
        return x + y

    assert add(1, 2) == 3 and add.__doc__ == "Adds." and add.bulkhead is bh
    assert inspect.iscoroutinefunction(aadd)
    assert asyncio.run(aadd(2, 3)) == 5
    assert bh.in_flight == 0
    with pytest.raises(TypeError, match="decorates a function"):
        bh(3)


def test_async_with_waits_for_a_slot():
    bh = tripwire.Bulkhead(2, max_wait=1.0)
    peak = [0]

    async def job() -> None:
        async with bh as entered:
            assert entered is bh
            peak[0] = max(peak[0], bh.in_flight)
            await asyncio.sleep(0.01)

    async def main() -> None:
        await asyncio.gather(*(job() for _ in range(6)))
        assert await bh.call_async(asyncio.sleep, 0, "done") == "done"

    asyncio.run(main())
    assert peak[0] == 2 and bh.in_flight == 0


def test_async_full_without_wait_rejects():
    bh = tripwire.Bulkhead(1)

    async def main() -> None:
        async with bh:
            with pytest.raises(tripwire.BulkheadFullError):
                async with bh:
                    pass

    asyncio.run(main())


# -- only final refusals count; waits are woken, not polled --------------------


def test_a_call_that_waited_and_got_a_slot_is_not_counted_as_rejected():
    bh = tripwire.Bulkhead(2, max_wait=5.0)
    start = threading.Barrier(6)
    done = []

    def job() -> None:
        start.wait()
        with bh:
            time.sleep(0.02)
        done.append(1)

    threads = [threading.Thread(target=job) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(done) == 6
    assert bh.snapshot() == {"acquired": 6, "rejected": 0, "in_flight": 0, "peak_in_flight": 2}


def test_an_async_call_that_waited_and_got_a_slot_is_not_counted_as_rejected():
    bh = tripwire.Bulkhead(2, max_wait=5.0)

    async def job() -> int:
        async with bh:
            await asyncio.sleep(0.01)
        return 1

    async def main() -> int:
        return sum(await asyncio.gather(*(job() for _ in range(6))))

    assert asyncio.run(main()) == 6
    assert bh.snapshot() == {"acquired": 6, "rejected": 0, "in_flight": 0, "peak_in_flight": 2}


def test_a_wait_that_ends_without_a_slot_counts_once():
    bh = tripwire.Bulkhead(1, max_wait=0.02)
    assert bh.try_acquire()
    with pytest.raises(tripwire.BulkheadFullError):
        bh.call(lambda: None)
    assert bh.snapshot()["rejected"] == 1

    async def main() -> None:
        with pytest.raises(tripwire.BulkheadFullError):
            async with bh:
                pass

    asyncio.run(main())
    assert bh.snapshot() == {"acquired": 1, "rejected": 2, "in_flight": 1, "peak_in_flight": 1}
    bh.release()


class CountingSelector(selectors.DefaultSelector):
    """Counts how often the event loop wakes up to look for work."""

    def __init__(self) -> None:
        super().__init__()
        self.selects = 0

    def select(self, timeout: float | None = None):  # type: ignore[no-untyped-def]
        self.selects += 1
        return super().select(timeout)


def run_counting(main):  # type: ignore[no-untyped-def]
    selector = CountingSelector()
    loop = asyncio.SelectorEventLoop(selector)
    try:
        return loop.run_until_complete(main()), selector.selects
    finally:
        loop.close()


def test_an_async_waiter_sleeps_until_a_release_wakes_it():
    """The loop stays asleep while a coroutine waits (no polling), and the
    release wakes the waiter at once."""
    bh = tripwire.Bulkhead(1, max_wait=10.0)
    assert bh.try_acquire()
    hold = 0.3

    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        released = [0.0]

        def release() -> None:
            released[0] = time.perf_counter()
            bh.release()

        loop.call_later(hold, release)
        start = time.perf_counter()
        async with bh:
            woke = time.perf_counter()
        return woke - start, woke - released[0]

    (waited, latency), selects = run_counting(main)
    assert waited >= hold * 0.9
    assert latency < 0.1, f"woken {latency * 1e3:.1f} ms after the release"
    # A poll every 0.1-5 ms would wake the loop 60+ times in 0.3 s.
    assert selects < 10, f"the loop woke {selects} times while one coroutine waited"
    assert bh.snapshot() == {"acquired": 2, "rejected": 0, "in_flight": 0, "peak_in_flight": 1}


def test_a_release_on_another_thread_wakes_an_async_waiter():
    bh = tripwire.Bulkhead(1, max_wait=10.0)
    assert bh.try_acquire()
    released = [0.0]

    def release_later() -> None:
        time.sleep(0.2)
        released[0] = time.perf_counter()
        bh.release()

    async def main() -> float:
        t = threading.Thread(target=release_later)
        t.start()
        async with bh:
            woke = time.perf_counter()
        t.join()
        return woke - released[0]

    latency, selects = run_counting(main)
    assert latency < 0.1 and selects < 10
    assert bh.in_flight == 0


def test_sync_and_async_waiters_share_the_slots():
    bh = tripwire.Bulkhead(1, max_wait=10.0)
    order: list[str] = []

    def sync_job() -> None:
        with bh:
            order.append("thread")
            time.sleep(0.01)

    async def async_job(i: int) -> None:
        async with bh:
            order.append(f"task{i}")
            await asyncio.sleep(0.01)

    async def main() -> None:
        assert bh.try_acquire()
        threads = [threading.Thread(target=sync_job) for _ in range(3)]
        for t in threads:
            t.start()
        tasks = [asyncio.ensure_future(async_job(i)) for i in range(3)]
        await asyncio.sleep(0.05)
        bh.release()
        await asyncio.gather(*tasks)
        for t in threads:
            await asyncio.get_running_loop().run_in_executor(None, t.join)

    asyncio.run(asyncio.wait_for(main(), 20))
    assert sorted(order) == ["task0", "task1", "task2", "thread", "thread", "thread"]
    assert bh.snapshot() == {"acquired": 7, "rejected": 0, "in_flight": 0, "peak_in_flight": 1}


def test_a_cancelled_waiter_leaves_no_slot_and_no_waiter_behind():
    bh = tripwire.Bulkhead(1, max_wait=10.0)

    async def main() -> None:
        assert bh.try_acquire()
        waiters = [asyncio.ensure_future(bh.call_async(asyncio.sleep, 0)) for _ in range(3)]
        await asyncio.sleep(0.02)
        waiters[0].cancel()
        bh.release()
        # Woken and cancelled in the same turn: the slot it took is given back.
        waiters[1].cancel()
        results = await asyncio.gather(*waiters, return_exceptions=True)
        assert [type(r) for r in results[:2]] == [asyncio.CancelledError] * 2
        assert results[2] is None
        assert bh.in_flight == 0
        async with bh:
            assert bh.in_flight == 1

    asyncio.run(asyncio.wait_for(main(), 10))
    assert bh.in_flight == 0 and bh.snapshot()["rejected"] == 0


def test_no_wake_up_is_lost_between_threads_and_tasks():
    """Threads and coroutines take turns on two slots: every waiter is
    woken by a release, none sits out its (long) deadline."""
    bh = tripwire.Bulkhead(2, max_wait=30.0)
    held = [0]
    peak = [0]

    def sync_job() -> None:
        for _ in range(25):
            with bh:
                time.sleep(0.0005)

    async def async_job() -> None:
        for _ in range(5):
            async with bh:
                held[0] += 1
                peak[0] = max(peak[0], held[0])
                await asyncio.sleep(0.0005)
                held[0] -= 1

    async def main() -> None:
        threads = [threading.Thread(target=sync_job) for _ in range(4)]
        for t in threads:
            t.start()
        await asyncio.gather(*(async_job() for _ in range(40)))
        for t in threads:
            await asyncio.get_running_loop().run_in_executor(None, t.join)

    start = time.perf_counter()
    asyncio.run(main())
    assert time.perf_counter() - start < 15.0, "a waiter sat out its deadline: a lost wake-up"
    s = bh.snapshot()
    assert (s["acquired"], s["rejected"], s["in_flight"]) == (300, 0, 0)
    assert s["peak_in_flight"] == 2 and peak[0] <= 2
