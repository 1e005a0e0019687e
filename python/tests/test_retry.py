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


def test_a_full_bulkhead_ends_the_retries():
    """A refusal is never retried, as the core decides for Rust callers:
    retrying a full bulkhead only adds load where there is no room."""
    bulkhead = tripwire.Bulkhead(1)
    assert bulkhead.try_acquire()  # the only slot is taken
    attempts: list[int] = []
    pauses: list[float] = []

    def fetch() -> int:
        attempts.append(1)
        return bulkhead.call(lambda: 1)

    for retry_on in ((Exception,), (tripwire.BulkheadFullError,)):
        attempts.clear()
        r = tripwire.retry(attempts=5, base=0.001, retry_on=retry_on, sleep=pauses.append)
        with pytest.raises(tripwire.BulkheadFullError):
            r.call(fetch)
        assert (attempts, pauses) == ([1], []), retry_on

    async def afetch() -> int:
        attempts.append(1)
        return await bulkhead.call_async(asyncio.sleep, 0, 1)

    async def no_sleep(s: float) -> None:
        pauses.append(s)

    attempts.clear()
    r = tripwire.retry(attempts=5, base=0.001, sleep=no_sleep)
    with pytest.raises(tripwire.BulkheadFullError):
        asyncio.run(r.call_async(afetch))
    assert (attempts, pauses) == ([1], [])
    bulkhead.release()
    assert r.call(fetch) == 1


def test_a_servers_hint_is_the_wait_exactly():
    """``Retry-After: 0.25`` means 0.25 s, even when the backoff would wait
    longer (1 s here); a hint longer than the cap is not cut either."""

    class RateLimited(Exception):
        def __init__(self, after: float) -> None:
            self.retry_after = after

    pauses: list[float] = []
    r = tripwire.retry(attempts=4, base=1.0, cap=2.0, jitter="none", sleep=pauses.append)
    f = Flaky(3, RateLimited(0.25))
    assert r.call(f) == 1
    assert pauses == [0.25, 0.25, 0.25]
    pauses.clear()
    assert r.call(Flaky(1, RateLimited(30.0))) == 1
    assert pauses == [30.0]
    # Without a hint: the backoff's curve, 1 s then 2 s.
    pauses.clear()
    r.call(Flaky(2))
    assert pauses == [1.0, 2.0]


def test_a_deadline_on_the_budgets_clock(clock):
    """With a ``ManualClock`` on the budget, the deadline is read on it."""
    budget = tripwire.RetryBudget(1.0, clock=clock)
    r = tripwire.retry(attempts=10, base=1.0, factor=1.0, jitter="none", budget=budget, deadline=2.5,
                       sleep=clock.advance)
    f = Flaky(10)
    with pytest.raises(Boom) as info:
        r.call(f)
    # Waits of 1 s end at 1 and 2; the third would end at 3, past 2.5.
    assert f.calls == 3 and info.value.args == (3,)


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
    with pytest.raises(ValueError, match="invalid retry policy config: attempts = 0, expected 1 to 10000"):
        tripwire.retry(attempts=0)
    with pytest.raises(ValueError, match="attempts = 10001"):
        tripwire.retry(attempts=10_001)
    with pytest.raises(ValueError, match="attempts = -1"):
        tripwire.retry(attempts=-1)
    with pytest.raises(ValueError, match=r"deadline = 0ns, expected 1ns to 604800s"):
        tripwire.retry(deadline=0)
    with pytest.raises(ValueError, match="deadline must be a finite, non-negative number of seconds"):
        tripwire.retry(deadline=float("nan"))
    with pytest.raises(TypeError, match="deadline must be a number of seconds"):
        tripwire.retry(deadline="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed = -1, expected an int from 0 to 2\\*\\*64 - 1"):
        tripwire.retry(seed=-1)
    with pytest.raises(TypeError, match="retry_if must be a callable or None"):
        tripwire.retry(retry_if=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sleep must be a callable or None"):
        tripwire.retry(sleep=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="give_up_on must be"):
        tripwire.retry(give_up_on=[KeyError, 3])
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


def test_a_bad_hint_is_an_error_that_names_it():
    r = tripwire.retry(attempts=2, base=0.001, retry_after=lambda e: -1.0, sleep=lambda s: None)
    with pytest.raises(ValueError, match="retry_after's result must be a finite, non-negative") as info:
        r.call(Flaky(1))
    assert isinstance(info.value.__context__, Boom)
    r = tripwire.retry(attempts=2, base=0.001, retry_after=lambda e: "soon", sleep=lambda s: None)
    with pytest.raises(TypeError, match="retry_after's result must be a number of seconds"):
        r.call(Flaky(1))


def test_the_policy_shows_its_validated_arguments():
    budget = tripwire.RetryBudget()
    r = tripwire.retry(4, base=0.2, cap=3.0, factor=1.5, jitter="equal", retry_on=[OSError], budget=budget,
                       deadline=5.0, seed=9)
    p = r.policy
    assert (p.attempts, p.base, p.cap, p.factor, p.jitter, p.deadline, p.seed) == (4, 0.2, 3.0, 1.5, "equal", 5.0, 9)
    assert p.retry_on == (OSError,) and p.give_up_on == () and p.budget is budget
    assert p.retry_after is tripwire.retry_after_attribute and p.retry_if is None
    assert repr(r) == 'Retry(attempts=4, base=0.2, cap=3.0, factor=1.5, jitter="equal")'


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


def test_a_servers_hint_is_cut_to_max_retry_after():
    class Later(Exception):
        retry_after = 10.0**12  # about 31,700 years

    pauses: list[float] = []
    r = tripwire.retry(attempts=2, base=0.1, jitter="none", sleep=pauses.append)
    assert r.policy.max_retry_after == 60.0
    with pytest.raises(Later):
        r.call(Flaky(2, Later()))
    assert pauses == [60.0]
    pauses.clear()
    r = tripwire.retry(attempts=2, base=0.1, jitter="none", sleep=pauses.append, max_retry_after=2.5)
    assert r.policy.max_retry_after == 2.5
    with pytest.raises(Later):
        r.call(Flaky(2, Later()))
    assert pauses == [2.5]


@pytest.mark.parametrize("hint", [float("inf"), 10**400, 2**64])
def test_an_endless_hint_waits_max_retry_after_and_never_breaks_the_retry(hint):
    # A wait no float holds, or an infinite one, is the longest wait there
    # is: cut to max_retry_after like any long one, not an OverflowError or
    # a ValueError in place of the retry.
    class Never(Exception):
        retry_after = hint

    pauses: list[float] = []
    r = tripwire.retry(attempts=2, base=0.1, jitter="none", sleep=pauses.append, max_retry_after=2.5)
    with pytest.raises(Never):
        r.call(Flaky(2, Never()))
    assert pauses == [2.5]
    pauses.clear()
    r = tripwire.retry(attempts=2, base=0.1, jitter="none", sleep=pauses.append, retry_after=lambda e: hint)
    with pytest.raises(Never):
        r.call(Flaky(2, Never()))
    assert pauses == [60.0]


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "soon"])
def test_a_bad_max_retry_after_is_an_error_that_names_it(bad):
    with pytest.raises((ValueError, TypeError), match="max_retry_after"):
        tripwire.retry(max_retry_after=bad)


def test_the_default_hint_reads_a_raised_5xx_s_retry_after_and_backpressure_is_never_retried():
    requests = pytest.importorskip("requests")

    def raised(status, headers):
        response = requests.Response()
        response.status_code = status
        response.headers.update(headers)
        return requests.HTTPError(f"{status}", response=response)

    assert tripwire.retry_after_attribute(raised(503, {"Retry-After": "2"})) == 2.0
    assert tripwire.retry_after_attribute(raised(408, {"retry-after": "3"})) == 3.0
    assert tripwire.retry_after_attribute(raised(500, {})) is None
    # Backpressure's wait is the breaker's hold, never a retry's pause.
    assert tripwire.retry_after_attribute(raised(429, {"Retry-After": "2"})) is None
    for status, sent, pauses_wanted in [(503, 2, [2.0]), (429, 1, []), (418, 1, [])]:
        pauses = []
        calls = []

        def call(status=status):
            calls.append(status)
            if len(calls) == 1:
                raise raised(status, {"Retry-After": "2"})
            return "ok"

        r = tripwire.retry(attempts=3, sleep=pauses.append, retry_on=requests.HTTPError)
        try:
            assert r.call(call) == "ok"
        except requests.HTTPError as e:
            assert e.response.status_code == status
        assert (len(calls), pauses) == (sent, pauses_wanted), status
