"""The rate limiter: weighted costs on several limits, all or nothing, its
waits sync and async, refunds, a server's count, and bad arguments."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import tripwire
from tripwire import Limit, RateLimitedError, RateLimiter

# 10 a second, 2 at once: a unit stays counted 125 ms.
UNIT = 0.125


def ten_a_second() -> RateLimiter:
    return RateLimiter(Limit(10, 1.0, burst=2))


def test_a_limit_says_what_it_allows():
    weight = Limit(6_000, 60)
    assert (weight.units, weight.period, weight.burst) == (6_000, 60.0, 300)
    assert weight.max_wait == pytest.approx(60 * 6_000 / 5_700)
    assert repr(Limit(10, 1, burst=2)) == "Limit(10, 1, burst=2)"


def test_the_burst_goes_at_once_and_the_next_cost_is_refused_with_its_wait():
    limiter = ten_a_second()
    limiter.try_acquire()
    limiter.try_acquire(1)
    with pytest.raises(RateLimitedError) as refused:
        limiter.try_acquire()
    assert refused.value.limit == 0
    assert 0 < refused.value.retry_after <= UNIT
    assert str(refused.value).startswith("rate limit 0: wait 0.1")
    assert isinstance(refused.value, tripwire.TripwireError)
    assert limiter.in_use() == [2]


def test_a_request_one_limit_refuses_takes_nothing_from_the_others():
    limiter = RateLimiter([Limit(1_200, 60), Limit(10, 10, burst=2)])
    limiter.try_acquire((5, 1))
    limiter.try_acquire([1, 1])
    with pytest.raises(RateLimitedError) as refused:
        limiter.try_acquire((1, 1))
    assert refused.value.limit == 1
    assert limiter.in_use() == [6, 2]
    limiter.try_acquire((20, 0))
    assert limiter.in_use() == [26, 2]


def test_reserving_ahead_returns_the_wait_and_wait_sleeps_it():
    limiter = ten_a_second()
    assert [limiter.acquire() for _ in range(4)] == pytest.approx([0, 0, UNIT, 2 * UNIT], abs=0.01)
    with pytest.raises(RateLimitedError):
        limiter.acquire(1, max_wait=0.1)
    limiter = ten_a_second()
    start = time.monotonic()
    for _ in range(4):
        limiter.wait()
    assert time.monotonic() - start >= 2 * UNIT - 0.005


def test_wait_async_awaits_and_a_cancelled_wait_gives_nothing_more_through():
    async def main() -> None:
        limiter = ten_a_second()
        start = time.monotonic()
        for _ in range(3):
            await limiter.wait_async()
        assert time.monotonic() - start >= UNIT - 0.005
        # A wait cancelled before its send time: its units, which later
        # reservations rest on, stay counted and run out on their own.
        task = asyncio.ensure_future(limiter.wait_async())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert limiter.in_use()[0] >= 2

    asyncio.run(main())


def test_a_refund_gives_back_a_request_that_was_not_sent():
    limiter = ten_a_second()
    limiter.try_acquire(2)
    assert limiter.refund(2) == [True]
    assert limiter.in_use() == [0]
    limiter.try_acquire(2)


def test_a_server_count_raises_the_limiter_and_never_past_its_units():
    limiter = RateLimiter([Limit(1_200, 60), Limit(50, 10)])
    assert limiter.observe_used(0, 1_100)
    assert limiter.in_use() == [1_100, 0]
    assert not limiter.observe_used(0, 10), "a lower count changes nothing"
    assert limiter.observe_used(1, 10**30)
    assert limiter.in_use() == [1_100, 50]
    assert limiter.wait_for((1, 0)) > 0
    with pytest.raises(RateLimitedError):
        limiter.try_acquire((1, 1))


def test_a_server_count_in_a_window_that_ends_soon_leaves_this_pace_alone():
    limiter = RateLimiter(Limit(1_200, 60))
    # 40 s into the server's minute: what this pace sends in 40 s is its own.
    assert not limiter.observe_used(0, 700, window_left=20)
    assert limiter.observe_used(0, 1_100, window_left=20.0)
    # Some 340 more than this pace: others on the same IP (less the
    # moments since, which run out as every unit does).
    assert limiter.in_use()[0] in (340, 341)
    with pytest.raises(ValueError, match="window_left"):
        limiter.observe_used(0, 5, window_left=-1)


def test_threads_never_take_more_than_the_burst():
    limiter = RateLimiter(Limit(1_000, 3_600, burst=100))
    taken = []

    def take() -> None:
        n = 0
        for _ in range(200):
            try:
                limiter.try_acquire()
                n += 1
            except RateLimitedError:
                pass
        taken.append(n)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(taken) == 100
    assert limiter.in_use() == [100]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: Limit(1, 1), ValueError, "units = 1, expected 2 to 1000000000"),
        (lambda: Limit(10, 0), ValueError, "period = 0ns"),
        (lambda: Limit(10, 1, burst=6), ValueError, "burst = 6, expected 1 to 5"),
        (lambda: Limit(10, -1), ValueError, "period"),
        (lambda: Limit("10", 1), TypeError, "units must be an int"),
        (lambda: Limit(10, 1, burst=2.5), TypeError, "burst must be an int"),
        (lambda: RateLimiter([]), ValueError, "1 to 4 Limits, got 0"),
        (lambda: RateLimiter([Limit(10, 1)] * 5), ValueError, "1 to 4 Limits, got 5"),
        (lambda: RateLimiter([(10, 1)]), TypeError, "limits must hold Limits, got tuple"),
        (lambda: RateLimiter(10), TypeError, "limits must be a Limit or a sequence of Limits, got int"),
    ],
)
def test_bad_settings_raise_a_clear_error(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_bad_costs_raise_a_clear_error_and_take_nothing():
    limiter = RateLimiter([Limit(100, 1), Limit(10, 1, burst=2)])
    with pytest.raises(TypeError, match="one per limit"):
        limiter.try_acquire(1)
    with pytest.raises(ValueError, match="cost has 3 values, the limiter 2 limits"):
        limiter.try_acquire((1, 1, 1))
    with pytest.raises(ValueError, match="cost = -1"):
        limiter.try_acquire((-1, 0))
    with pytest.raises(TypeError, match="cost must be an int"):
        limiter.try_acquire(("1", 0))
    with pytest.raises(ValueError, match="a cost of 3 is above its burst of 2"):
        limiter.acquire((1, 3), max_wait=60)
    with pytest.raises(ValueError, match="limit must be an int from 0 to 1"):
        limiter.observe_used(2, 5)
    with pytest.raises(ValueError, match="used must be at least 0"):
        limiter.observe_used(0, -5)
    with pytest.raises(TypeError, match="used must be an int"):
        limiter.observe_used(0, 5.0)
    with pytest.raises(TypeError, match="max_wait"):
        limiter.acquire((1, 0), max_wait="soon")
    assert limiter.in_use() == [0, 0]


def _take_all(path: str, out) -> None:  # a worker process
    limiter = RateLimiter.shared(path, [Limit(1_000, 3_600, burst=20)])
    n = 0
    for _ in range(50):
        try:
            limiter.try_acquire()
            n += 1
        except RateLimitedError:
            pass
    out.put(n)


def test_processes_sharing_a_path_spend_one_budget(tmp_path):
    import multiprocessing

    path = str(tmp_path / "exchange.limiter")
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    workers = [ctx.Process(target=_take_all, args=(path, out)) for _ in range(4)]
    for w in workers:
        w.start()
    taken = [out.get(timeout=60) for _ in workers]
    for w in workers:
        w.join(timeout=60)
    assert sum(taken) == 20, taken
    mine = RateLimiter.shared(path, Limit(1_000, 3_600, burst=20))
    assert mine.is_shared and mine.in_use() == [20]


def test_a_shared_path_refuses_other_limits_and_a_file_that_is_not_a_region(tmp_path):
    path = tmp_path / "exchange.limiter"
    RateLimiter.shared(str(path), [Limit(1_200, 60)])
    with pytest.raises(ValueError, match="holds other limits than asked for"):
        RateLimiter.shared(str(path), [Limit(1_200, 30)])
    with pytest.raises(ValueError, match="holds `limits` = 1, not the 2 asked for"):
        RateLimiter([Limit(1_200, 60), Limit(50, 10)], path=path)
    junk = tmp_path / "junk"
    junk.write_bytes(b"not a region at all, just some bytes" * 4)
    with pytest.raises(ValueError, match="not a shared rate limiter region"):
        RateLimiter.shared(str(junk), [Limit(1_200, 60)])
    with pytest.raises(FileNotFoundError):
        RateLimiter.shared(str(tmp_path / "no" / "such" / "dir"), [Limit(1_200, 60)])
    assert not RateLimiter(Limit(10, 1)).is_shared


def test_counts_and_the_prometheus_export_of_a_named_limiter():
    limiter = RateLimiter([Limit(10, 1, burst=2), Limit(100, 1)], name="binance-counts")
    assert limiter.name == "binance-counts"
    limiter.try_acquire((1, 3))
    limiter.try_acquire((1, 0))
    with pytest.raises(RateLimitedError):
        limiter.try_acquire((1, 0))
    assert limiter.observe_used(1, 90)
    assert limiter.counts() == [
        {"spent": 2, "waits": 0, "refusals": 1, "corrections": 0},
        {"spent": 3, "waits": 0, "refusals": 0, "corrections": 1},
    ]
    text = tripwire.prometheus_text()
    assert 'tripwire_rate_limit_spent_total{limiter="binance-counts",limit="0"} 2' in text
    assert 'tripwire_rate_limit_refusals_total{limiter="binance-counts",limit="0"} 1' in text
    assert 'tripwire_rate_limit_units{limiter="binance-counts",limit="1"} 100' in text
    del limiter
    import gc

    gc.collect()
    assert 'limiter="binance-counts"' not in tripwire.prometheus_text(), "exported while it lives"
    with pytest.raises(TypeError, match="name must be a str or None"):
        RateLimiter(Limit(10, 1), name=5)
