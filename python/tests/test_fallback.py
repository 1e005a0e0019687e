"""StaleCache: last-known-good values with their age, per-key policies."""

from __future__ import annotations

import asyncio

import pytest

import tripwire
from conftest import Boom, fail


def test_fresh_values_are_stored_and_returned_with_age_zero(clock):
    cache = tripwire.StaleCache(max_age=30.0, clock=clock)
    got = cache.call("btc", lambda: 97_000.0)
    assert got == tripwire.Cached(97_000.0, 0.0, False)
    assert (got.value, got.age, got.stale) == (97_000.0, 0.0, False)
    assert len(cache) == 1


def test_a_failure_returns_the_stale_value_with_its_age(clock):
    cache = tripwire.StaleCache(max_age=30.0, clock=clock)
    cache.call("btc", lambda: 97_000.0)
    clock.advance(12.5)
    got = cache.call("btc", fail)
    assert got == tripwire.Cached(97_000.0, 12.5, True)
    clock.advance(20.0)  # 32.5 s old: too stale
    with pytest.raises(Boom):
        cache.call("btc", fail)


def test_never_stale_policy_reraises(clock):
    cache = tripwire.StaleCache(max_age=60.0, policies={"balances": None}, clock=clock)
    cache.call("balances", lambda: {"USD": 10})
    with pytest.raises(Boom):
        cache.call("balances", fail)
    assert cache.max_age_of("balances") is None
    assert cache.max_age_of("other") == 60.0
    cache.policy("other", 5)
    assert cache.max_age_of("other") == 5.0


def test_nothing_cached_reraises(clock):
    with pytest.raises(Boom):
        tripwire.StaleCache(clock=clock).call("k", fail)


def test_breaker_rejections_fall_back_too(make_breaker, clock):
    b = make_breaker(failure_threshold=1)
    cache = tripwire.StaleCache(max_age=10.0, clock=clock)

    @cache.fallback("book")
    @b
    def book() -> list[int]:
        return answers.pop(0)()

    answers = [lambda: [1, 2], fail]
    assert book() == ([1, 2], 0.0, False)
    clock.advance(1.0)
    assert book() == ([1, 2], 1.0, True)  # the failure itself
    assert book() == ([1, 2], 1.0, True)  # the rejection
    assert b.snapshot().rejected == 1


def test_fallback_on_limits_which_errors_fall_back(clock):
    cache = tripwire.StaleCache(fallback_on=tripwire.TripwireError, clock=clock)
    cache.put("k", 1)
    with pytest.raises(Boom):
        cache.call("k", fail)
    assert cache.get("k") == (1, 0.0, True)


def test_async(clock):
    cache = tripwire.StaleCache(clock=clock)

    @cache.fallback("px", max_age=2.0)
    async def px(ok: bool) -> float:
        await asyncio.sleep(0)
        if not ok:
            raise Boom
        return 1.5

    assert asyncio.run(px(True)) == (1.5, 0.0, False)
    clock.advance(1.0)
    assert asyncio.run(px(False)) == (1.5, 1.0, True)
    assert asyncio.run(cache.call_async("px", px.__wrapped__, True)) == (1.5, 0.0, False)


def test_bad_arguments(clock):
    with pytest.raises(ValueError, match="max_age must be"):
        tripwire.StaleCache(max_age=-1)
    with pytest.raises(TypeError, match=r"policies\['x'\] must be"):
        tripwire.StaleCache(policies={"x": "5"})
    with pytest.raises(TypeError, match="fallback_on must be"):
        tripwire.StaleCache(fallback_on=3)
    with pytest.raises(TypeError, match="clock must be"):
        tripwire.StaleCache(clock=3)  # type: ignore[arg-type]
    assert repr(tripwire.StaleCache(clock=clock)) == "StaleCache(max_age=60.0, keys=0)"


def test_with_a_stale_value_at_hand_a_retry_inside_makes_one_attempt_and_never_pauses(clock):
    cache = tripwire.StaleCache(max_age=30.0, clock=clock)
    pauses = []
    calls = []

    @tripwire.retry(attempts=4, base=5.0, cap=20.0, jitter="none", sleep=pauses.append)
    def book():
        calls.append(1)
        raise Boom("503")

    # Nothing at hand: the retries run, pauses and all, and the error comes.
    with pytest.raises(Boom):
        cache.call("btc", book)
    assert (len(calls), pauses) == (4, [5.0, 10.0, 20.0])
    cache.put("btc", 97_000.0)
    calls.clear()
    pauses.clear()
    assert cache.call("btc", book) == tripwire.Cached(97_000.0, 0.0, True)
    assert (len(calls), pauses) == (1, []), "the stale value after one attempt, no backoff"
    # Only within the cache's call: the same function outside it retries.
    with pytest.raises(Boom):
        book()
    assert len(calls) == 5 and len(pauses) == 3


def test_async_with_a_stale_value_at_hand_never_pauses(clock):
    cache = tripwire.StaleCache(max_age=30.0, clock=clock)
    calls = []
    pauses = []

    async def pause(seconds):
        pauses.append(seconds)

    @tripwire.retry(attempts=3, base=5.0, jitter="none", sleep=pause)
    async def book():
        calls.append(1)
        raise Boom("503")

    cache.put("btc", 97_000.0)
    got = asyncio.run(cache.call_async("btc", book))
    assert got.stale and got.value == 97_000.0
    assert (len(calls), pauses) == (1, [])
