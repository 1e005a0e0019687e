"""retry(): attempts, backoff with jitter, classifier, retry_after hints,
deadline and the retry budget."""

from __future__ import annotations

import asyncio
import inspect

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
    r = tripwire.retry(attempts=4, base=0.1, factor=2.0, jitter="none", sleep=pauses.append)
    f = Flaky(3)
    assert r.call(f, 7) == 7
    assert f.calls == 4
    assert pauses == pytest.approx([0.1, 0.2, 0.4])


def test_gives_up_after_the_last_attempt_with_the_original_error():
    r = tripwire.retry(attempts=3, base=0.001, sleep=lambda s: None)
    f = Flaky(10)
    with pytest.raises(Boom) as info:
        r.call(f)
    assert info.value.args == (3,) and f.calls == 3


def test_full_jitter_stays_under_the_capped_ceiling():
    r = tripwire.retry(attempts=8, base=0.5, cap=2.0, seed=7)
    delays = list(r.delays())
    assert len(delays) == 7
    ceilings = [min(2.0, 0.5 * 2**n) for n in range(7)]
    assert all(0 <= d <= c for d, c in zip(delays, ceilings))
    assert len(set(delays)) == 7


def test_decorrelated_jitter_stays_between_base_and_cap():
    r = tripwire.retry(attempts=20, base=0.1, cap=1.0, jitter="decorrelated", seed=1)
    assert all(0.1 <= d <= 1.0 for d in r.delays())
    assert list(r.delays()) == list(r.delays()), "one seed, one sequence"


def test_only_retryable_errors_are_retried():
    r = tripwire.retry(attempts=5, base=0.001, retry_on=Boom, give_up_on=KeyError, sleep=lambda s: None)
    for exc in (ValueError("other"), KeyError("final")):
        f = Flaky(3, exc)
        with pytest.raises(type(exc)):
            r.call(f)
        assert f.calls == 1
    r = tripwire.retry(attempts=5, base=0.001, retry_if=lambda e: e.args[0] < 2, sleep=lambda s: None)
    f = Flaky(3)
    with pytest.raises(Boom):
        r.call(f)
    assert f.calls == 2


def test_a_breaker_rejection_ends_the_retries(make_breaker):
    b = make_breaker(failure_threshold=2)
    calls = []

    @tripwire.retry(attempts=5, base=0.001, sleep=lambda s: None)
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
    r = tripwire.retry(attempts=2, base=0.1, jitter="none", sleep=pauses.append)
    assert r.call(Flaky(1, RateLimited())) == 1
    assert pauses == [1.5]
    pauses.clear()
    r = tripwire.retry(
        attempts=2, base=0.1, jitter="none", sleep=pauses.append, retry_after=lambda e: 0.7
    )
    r.call(Flaky(1))
    assert pauses == [0.7]


def test_deadline_stops_retries_that_would_end_too_late():
    r = tripwire.retry(attempts=5, base=10.0, jitter="none", deadline=1.0, sleep=lambda s: None)
    f = Flaky(3)
    with pytest.raises(Boom):
        r.call(f)
    assert f.calls == 1


def test_budget_limits_retries_to_a_fraction_of_calls(clock):
    # A reserve of 2 tokens (0.2/s × 10 s); each call deposits half a token.
    budget = tripwire.RetryBudget(0.5, ttl=10.0, min_retries_per_sec=0.2, clock=clock)
    assert budget.available == pytest.approx(2.0)
    r = tripwire.retry(attempts=10, base=0.001, budget=budget, sleep=lambda s: None)
    f = Flaky(100)
    with pytest.raises(tripwire.RetryBudgetExhausted) as info:
        r.call(f)
    assert isinstance(info.value.__cause__, Boom)
    assert isinstance(info.value, tripwire.TripwireError)
    # 2.5 tokens (reserve and the call's deposit) paid for 2 retries.
    assert f.calls == 3
    assert budget.available == pytest.approx(0.5)
    budget.deposit()
    assert budget.try_withdraw()
    assert not budget.try_withdraw()


def test_budget_deposits_expire_back_to_the_reserve(clock):
    budget = tripwire.RetryBudget(1.0, ttl=1.0, min_retries_per_sec=1.0, clock=clock)
    assert (budget.ratio, budget.ttl, budget.min_retries_per_sec) == (1.0, 1.0, 1.0)
    for _ in range(20):
        budget.deposit()
    assert budget.available == pytest.approx(21.0)
    clock.advance(10.0)
    assert budget.available == pytest.approx(1.0, abs=0.01)
    assert "RetryBudget(" in repr(budget)


def test_backoff():
    b = tripwire.Backoff(base=0.1, cap=1.0, factor=2.0, jitter="none")
    assert [b.next_delay() for _ in range(5)] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0])
    assert b.attempt == 5
    b.override_next(7.5)
    assert b.next_delay() == 7.5
    b.reset()
    assert b.next_delay() == pytest.approx(0.1)
    assert (b.base, b.cap, b.factor, b.jitter) == (0.1, 1.0, 2.0, "none")
    assert repr(b) == "Backoff(base=0.1, cap=1.0, factor=2.0, jitter=\"none\")"
    e = tripwire.Backoff(base=1.0, factor=1.0, jitter="equal", seed=3)
    assert all(0.5 <= e.next_delay() <= 1.0 for _ in range(50))
    with pytest.raises(ValueError, match="jitter"):
        tripwire.Backoff(jitter="wild")
    with pytest.raises(ValueError, match="factor"):
        tripwire.Backoff(factor=0.5)


def test_bad_retry_arguments_name_the_argument():
    with pytest.raises(ValueError, match="attempts = 0"):
        tripwire.retry(attempts=0)
    with pytest.raises(TypeError, match="attempts must be an int"):
        tripwire.retry(attempts="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="base must be"):
        tripwire.retry(base=-1)
    with pytest.raises(ValueError, match=r"cap = 10ms, expected at least base"):
        tripwire.retry(base=0.1, cap=0.01)
    with pytest.raises(ValueError, match='jitter = "wild"'):
        tripwire.retry(jitter="wild")
    with pytest.raises(TypeError, match="retry_on must be"):
        tripwire.retry(retry_on=3)
    with pytest.raises(TypeError, match="budget must be"):
        tripwire.retry(budget=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ratio = -1"):
        tripwire.RetryBudget(-1)
    with pytest.raises(TypeError, match="ratio must be a number"):
        tripwire.RetryBudget("x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ttl"):
        tripwire.RetryBudget(ttl=0.001)


def test_decorator_sync_and_async():
    pauses: list[float] = []

    @tripwire.retry(attempts=3, base=0.01, jitter="none", sleep=pauses.append)
    def fetch(x: int) -> int:
        """Fetches."""
        return flaky(x)

    flaky = Flaky(1)
    assert fetch(5) == 5 and fetch.__doc__ == "Fetches." and isinstance(fetch.retry, tripwire.Retry)

    aflaky = Flaky(2)

    @tripwire.retry(attempts=3, base=0.001)
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

    @tripwire.retry(attempts=5, base=0.001)
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
