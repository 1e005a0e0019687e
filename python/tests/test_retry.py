"""retry(): attempts, backoff with jitter, classifier, retry_after hints,
deadline and the retry budget."""

from __future__ import annotations

import asyncio
import inspect
import random

import pytest

import tripwire
from conftest import Boom


class Flaky:
    """Fails `failures` times, then answers."""

    def __init__(self, failures: int, exc: Exception | None = None) -> None:
        self.failures = failures
        self.calls = 0
        self.exc = exc

    def __call__(self, x: int = 1) -> int:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.exc or Boom(self.calls)
        return x


def test_retries_until_success_with_growing_pauses():
    pauses: list[float] = []
    r = tripwire.retry(attempts=4, backoff=0.1, multiplier=2.0, jitter="none", sleep=pauses.append)
    f = Flaky(3)
    assert r.call(f, 7) == 7
    assert f.calls == 4
    assert pauses == pytest.approx([0.1, 0.2, 0.4])


def test_gives_up_after_the_last_attempt_with_the_original_error():
    r = tripwire.retry(attempts=3, backoff=0.0, sleep=lambda s: None)
    f = Flaky(10)
    with pytest.raises(Boom) as info:
        r.call(f)
    assert info.value.args == (3,) and f.calls == 3


def test_full_jitter_stays_under_the_capped_ceiling():
    r = tripwire.retry(attempts=8, backoff=0.5, backoff_max=2.0, rng=random.Random(7))
    delays = list(r.delays())
    assert len(delays) == 7
    ceilings = [min(2.0, 0.5 * 2**n) for n in range(7)]
    assert all(0 <= d <= c for d, c in zip(delays, ceilings))
    assert len(set(delays)) == 7


def test_decorrelated_jitter_stays_between_base_and_cap():
    r = tripwire.retry(attempts=20, backoff=0.1, backoff_max=1.0, jitter="decorrelated", rng=random.Random(1))
    assert all(0.1 <= d <= 1.0 for d in r.delays())


def test_only_retryable_errors_are_retried():
    r = tripwire.retry(attempts=5, backoff=0, retry_on=Boom, give_up_on=KeyError, sleep=lambda s: None)
    for exc in (ValueError("other"), KeyError("final")):
        f = Flaky(3, exc)
        with pytest.raises(type(exc)):
            r.call(f)
        assert f.calls == 1
    r = tripwire.retry(attempts=5, backoff=0, retry_if=lambda e: e.args[0] < 2, sleep=lambda s: None)
    f = Flaky(3)
    with pytest.raises(Boom):
        r.call(f)
    assert f.calls == 2


def test_a_breaker_rejection_ends_the_retries(make_breaker):
    b = make_breaker(failure_threshold=2)
    calls = []

    @tripwire.retry(attempts=5, backoff=0, sleep=lambda s: None)
    @b
    def down() -> None:
        calls.append(1)
        raise Boom

    with pytest.raises(tripwire.CircuitOpenError):
        down()
    assert len(calls) == 2


def test_retry_after_hint_is_honoured():
    class RateLimited(Exception):
        retry_after = 1.5

    pauses: list[float] = []
    r = tripwire.retry(attempts=2, backoff=0.1, jitter="none", sleep=pauses.append)
    assert r.call(Flaky(1, RateLimited())) == 1
    assert pauses == [1.5]
    pauses.clear()
    r = tripwire.retry(
        attempts=2, backoff=0.1, jitter="none", sleep=pauses.append, retry_after=lambda e: 0.7
    )
    r.call(Flaky(1))
    assert pauses == [0.7]


def test_deadline_stops_retries_that_would_end_too_late():
    r = tripwire.retry(attempts=5, backoff=10.0, jitter="none", deadline=1.0, sleep=lambda s: None)
    f = Flaky(3)
    with pytest.raises(Boom):
        r.call(f)
    assert f.calls == 1


def test_budget_limits_retries_to_a_fraction_of_calls(clock):
    budget = tripwire.RetryBudget(0.5, min_per_second=0, capacity=2, clock=clock)
    r = tripwire.retry(attempts=10, backoff=0, budget=budget, sleep=lambda s: None)
    f = Flaky(100)
    with pytest.raises(tripwire.RetryBudgetExhausted) as info:
        r.call(f)
    assert isinstance(info.value.__cause__, Boom)
    assert isinstance(info.value, tripwire.TripwireError)
    # The full bucket (2 tokens; the call's deposit overflowed it) paid for
    # 2 retries: 3 attempts.
    assert f.calls == 3
    assert budget.available == 0.0
    # Each call deposits half a token: two calls pay for one retry.
    budget.deposit()
    assert not budget.try_withdraw()
    budget.deposit()
    assert budget.try_withdraw()


def test_budget_trickles_back_with_time(clock):
    budget = tripwire.RetryBudget(0.0, min_per_second=2.0, capacity=4, clock=clock)
    assert (budget.capacity, budget.ratio, budget.min_per_second) == (4, 0.0, 2.0)
    for _ in range(4):
        assert budget.try_withdraw()
    assert not budget.try_withdraw()
    clock.advance(1.0)
    assert budget.available == pytest.approx(2.0)
    clock.advance(10.0)
    assert budget.available == pytest.approx(4.0), "capped at capacity"
    budget.deposit()
    assert "RetryBudget(" in repr(budget)


def test_bad_retry_arguments_name_the_argument():
    with pytest.raises(ValueError, match="attempts = 0"):
        tripwire.retry(attempts=0)
    with pytest.raises(TypeError, match="attempts must be an int"):
        tripwire.retry(attempts="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="backoff must be"):
        tripwire.retry(backoff=-1)
    with pytest.raises(ValueError, match="backoff_max = 0.01, expected at least backoff"):
        tripwire.retry(backoff=0.1, backoff_max=0.01)
    with pytest.raises(ValueError, match="jitter = 'wild'"):
        tripwire.retry(jitter="wild")
    with pytest.raises(TypeError, match="retry_on must be"):
        tripwire.retry(retry_on=3)
    with pytest.raises(TypeError, match="budget must be"):
        tripwire.retry(budget=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ratio = -1"):
        tripwire.RetryBudget(-1)
    with pytest.raises(TypeError, match="ratio must be a number"):
        tripwire.RetryBudget("x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="capacity = 0"):
        tripwire.RetryBudget(capacity=0)


def test_decorator_sync_and_async():
    pauses: list[float] = []

    @tripwire.retry(attempts=3, backoff=0.01, jitter="none", sleep=pauses.append)
    def fetch(x: int) -> int:
        """Fetches."""
        return flaky(x)

    flaky = Flaky(1)
    assert fetch(5) == 5 and fetch.__doc__ == "Fetches." and isinstance(fetch.retry, tripwire.Retry)

    aflaky = Flaky(2)

    @tripwire.retry(attempts=3, backoff=0.001)
    async def afetch(x: int) -> int:
        await asyncio.sleep(0)
        return aflaky(x)

    assert inspect.iscoroutinefunction(afetch)
    assert asyncio.run(afetch(9)) == 9 and aflaky.calls == 3
    with pytest.raises(TypeError):
        tripwire.retry()(3)
    assert repr(tripwire.retry(2)).startswith("Retry(attempts=2")


def test_cancellation_is_never_retried():
    calls = []

    @tripwire.retry(attempts=5, backoff=0)
    async def hang() -> None:
        calls.append(1)
        await asyncio.sleep(10)

    async def main() -> None:
        task = asyncio.ensure_future(hang())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert calls == [1]
