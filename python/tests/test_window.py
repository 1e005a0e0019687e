"""Rate conditions over the rolling window, and slow calls."""

from __future__ import annotations

import pytest

import tripwire
from conftest import trip


def test_failure_rate_trips_once_the_window_holds_min_calls(make_breaker):
    b = make_breaker(failure_threshold=0, window=(10, 1.0), min_calls=10, failure_rate=0.5)
    for i in range(9):
        if i % 2:
            trip(b, 1)
        else:
            b.call(lambda: None)
    assert b.state == "closed", "fewer than min_calls calls: no rate yet"
    trip(b, 1)  # 10 calls, 5 failures
    assert b.state == "open"


def test_failures_age_out_of_the_window(make_breaker, clock):
    b = make_breaker(failure_threshold=0, window=(2, 1.0), min_calls=4, failure_rate=0.75)
    trip(b, 2)
    clock.advance(3.0)  # the window has moved past them
    trip(b, 1)
    for _ in range(3):
        b.call(lambda: None)
    assert b.state == "closed"


def test_slow_calls_are_counted_and_can_trip(make_breaker, clock):
    b = make_breaker(slow_call=1.0, slow_rate=0.5, min_calls=2, window=(10, 1.0))

    def slow():
        clock.advance(1.5)
        return "late"

    assert b.call(slow) == "late"
    assert b.snapshot().slow == 1
    assert b.state == "closed"
    b.call(slow)
    assert b.state == "open"
    assert b.slow_call == 1.0 and b.slow_rate == 0.5


def test_window_properties(make_breaker):
    b = make_breaker(window=(20, 0.5), min_calls=30, failure_rate=0.25)
    assert (b.window, b.min_calls, b.failure_rate) == ((20, 0.5), 30, 0.25)


def test_slow_with_blocks_and_coroutines_count_too(make_breaker, clock):
    import asyncio

    b = make_breaker(slow_call=0.5)
    with b:
        clock.advance(0.6)

    @b
    async def slow() -> None:
        clock.advance(0.6)
        await asyncio.sleep(0)

    asyncio.run(slow())
    assert b.snapshot().slow == 2


def test_jitter_only_shortens_the_cooldown(make_breaker):
    waits = set()
    for _ in range(20):
        b = make_breaker(failure_threshold=1, open_timeout=10.0, open_timeout_jitter=0.5)
        trip(b)
        with pytest.raises(tripwire.CircuitOpenError) as info:
            b.call(lambda: None)
        waits.add(round(info.value.retry_after, 6))
    assert all(5.0 <= w <= 10.0 for w in waits)


def test_a_count_window_holds_the_last_n_calls_however_old(make_breaker, clock):
    b = make_breaker(failure_threshold=0, count_window=4, min_calls=4, failure_rate=0.5)
    assert (b.count_window, b.window) == (4, (10, 1.0))
    trip(b, 1)
    for _ in range(2):
        clock.advance(3600.0)  # hours apart: the window counts calls, not time
        b.call(lambda: None)
    assert b.state == "closed"
    trip(b, 1)  # 2 of the last 4 calls failed
    assert b.state == "open"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"count_window": 0}, ValueError, r"count_window = 0, expected 1 to 1000"),
        ({"count_window": 1001, "failure_rate": 0.5}, ValueError, r"count_window = 1001"),
        ({"count_window": 5, "failure_rate": 0.5}, ValueError, r"min_calls = 10, expected at most count_window \(5\)"),
        ({"count_window": "100"}, TypeError, r"count_window must be an int"),
    ],
)
def test_bad_count_windows_name_the_argument(kwargs, error, message):
    with pytest.raises(error, match=message):
        tripwire.Breaker(**kwargs)


def test_a_time_window_has_no_count():
    assert tripwire.Breaker(window=(4, 0.5)).count_window is None
