"""The bulkhead: a cap on calls in flight, sync and async."""

from __future__ import annotations

import asyncio
import inspect
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
