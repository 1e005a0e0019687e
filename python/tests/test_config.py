"""Bad arguments give a TypeError or ValueError that names the argument."""

from __future__ import annotations

from datetime import timedelta

import pytest

import tripwire


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"failure_threshold": 0}, ValueError, r"failure_threshold = 0, expected 1 to 65535"),
        ({"failure_threshold": 70_000}, ValueError, r"failure_threshold = 70000"),
        ({"failure_threshold": -1}, ValueError, r"failure_threshold = -1"),
        ({"failure_threshold": 2**80}, ValueError, r"failure_threshold = "),
        ({"failure_threshold": "5"}, TypeError, r"failure_threshold must be an int, got str"),
        ({"failure_threshold": 2.0}, TypeError, r"failure_threshold must be an int, got float"),
        ({"failure_threshold": True}, TypeError, r"failure_threshold must be an int, got bool"),
        ({"open_timeout": -1.0}, ValueError, r"open_timeout must be a finite, non-negative number"),
        ({"open_timeout": float("nan")}, ValueError, r"open_timeout must be"),
        ({"open_timeout": float("inf")}, ValueError, r"open_timeout must be"),
        ({"open_timeout": 0}, ValueError, r"open_timeout = 0ns, expected"),
        ({"open_timeout": "30"}, TypeError, r"open_timeout must be a number of seconds"),
        ({"open_timeout": 10, "open_timeout_max": 5}, ValueError, r"open_timeout_max = 5s, expected at least open_timeout"),
        ({"open_timeout_growth": 0.5}, ValueError, r"open_timeout_growth = 0.5"),
        ({"open_timeout_growth": 2.0}, ValueError, r"open_timeout_growth = 2, expected open_timeout_max to be set as well"),
        ({"open_timeout_growth": None, "open_timeout_jitter": 1.0}, ValueError, r"open_timeout_jitter = 1"),
        ({"open_timeout_jitter": "x"}, TypeError, r"open_timeout_jitter must be a number"),
        ({"half_open_max": 0}, ValueError, r"half_open_max = 0"),
        ({"half_open_max": 2, "half_open_successes": 3}, ValueError, r"half_open_successes = 3, expected at most half_open_max"),
        ({"window": (0, 1.0), "failure_rate": 0.5}, ValueError, r"window_buckets = 0"),
        ({"window": (10, 0.0001), "failure_rate": 0.5}, ValueError, r"window_bucket_width"),
        ({"window": 10}, TypeError, r"window must be a \(buckets, bucket_width_seconds\) tuple"),
        ({"failure_rate": 1.5}, ValueError, r"failure_rate = 1.5"),
        ({"min_calls": 0}, ValueError, r"min_calls = 0"),
        ({"slow_rate": 0.5}, ValueError, r"slow_rate"),
        ({"slow_call": -2}, ValueError, r"slow_call must be"),
        ({"name": 3}, TypeError, r"name must be a non-empty str or None"),
        ({"name": ""}, TypeError, r"name must be a non-empty str"),
        ({"failure_on": ValueError()}, TypeError, r"failure_on must be an exception class or a tuple"),
        ({"failure_on": (ValueError, int)}, TypeError, r"failure_on must be"),
        ({"ignore_on": "KeyError"}, TypeError, r"ignore_on must be"),
        ({"failure_if": 1}, TypeError, r"failure_if must be a callable"),
        ({"on_state_change": 1}, TypeError, r"on_state_change must be a callable"),
        ({"listeners": [print, 1]}, TypeError, r"listeners must be an iterable of callables"),
        ({"listeners": 1}, TypeError, r"listeners must be an iterable"),
        ({"clock": lambda: 0.0}, TypeError, r"clock must be a tripwire.ManualClock"),
        ({"probe_timeout": 0}, ValueError, r"probe_timeout = 0ns, expected 1µs to"),
        ({"probe_timeout": -1.0}, ValueError, r"probe_timeout must be a finite, non-negative number"),
        ({"max_hold": 0}, ValueError, r"max_hold = 0ns, expected 1µs to"),
        ({"max_hold": "1h"}, TypeError, r"max_hold must be a number of seconds"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        tripwire.Breaker(**kwargs)


def test_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        tripwire.Breaker(5)  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword|got an unexpected"):
        tripwire.Breaker(fail_max=5)  # type: ignore[call-arg]


def test_durations_accept_ints_floats_and_timedeltas():
    b = tripwire.Breaker(open_timeout=timedelta(seconds=90), open_timeout_max=600, slow_call=0.25)
    assert (b.open_timeout, b.open_timeout_max, b.slow_call) == (90.0, 600.0, 0.25)
    assert tripwire.Breaker().slow_call is None


def test_seconds_are_the_nearest_nanosecond_not_one_short():
    # 1.001 * 1e9 is 1000999999.9999999 in floating point: cut, not
    # rounded, it read back as 1.000999999, for one value in fifty.
    assert tripwire.Breaker(open_timeout=1.001).open_timeout == 1.001
    assert tripwire.Breaker(slow_call=0.000065).slow_call == 0.000065
    assert tripwire.Bulkhead(1, max_wait=2.003).max_wait == 2.003
    assert tripwire.ManualClock(1.001).now() == 1.001
    every_ms = [k / 1000 for k in range(1, 5000)]
    assert [tripwire.Breaker(open_timeout=s).open_timeout for s in every_ms] == every_ms
    clock = tripwire.ManualClock()
    breaker = tripwire.Breaker(clock=clock)
    assert breaker.hold(1.001) and breaker.hold_left == 1.001


def test_a_positive_time_below_half_a_nanosecond_is_never_zero():
    # Rounded to 0 ns, slow_call=1e-10 turned slow-call counting off in
    # silence; as 1 ns it meets the range check and its message.
    with pytest.raises(ValueError, match=r"slow_call = 1ns, expected"):
        tripwire.Breaker(slow_call=1e-10)
    assert tripwire.ManualClock(1e-10).now() == 1e-9
    assert tripwire.Breaker(open_timeout=0.0000015).open_timeout == 0.0000015


class _Duration(timedelta):
    """A timedelta subclass, as pandas' Timedelta and pendulum's Duration are."""


def test_durations_accept_timedelta_subclasses_everywhere_a_timedelta_goes():
    # The stubs' `Seconds` takes any timedelta, so a subclass type-checks;
    # it must be read as the timedelta it is, not refused by its class name.
    d = _Duration(seconds=90)
    assert tripwire.Breaker(open_timeout=d, slow_call=_Duration(milliseconds=250)).open_timeout == 90.0
    assert tripwire.Bulkhead(1, max_wait=d).max_wait == 90.0
    assert tripwire.RetryBudget(ttl=d).ttl == 90.0
    assert tripwire.Backoff(base=_Duration(seconds=1), cap=d).cap == 90.0
    clock = tripwire.ManualClock(d)
    clock.advance(_Duration(seconds=10))
    assert clock.now() == 100.0
    assert tripwire.StaleCache(max_age=d).max_age_of("any") == 90.0


def test_defaults():
    b = tripwire.Breaker()
    assert (b.failure_threshold, b.open_timeout, b.open_timeout_max) == (5, 30.0, 30.0)
    assert (b.half_open_max, b.half_open_successes, b.name, b.state) == (1, 1, None, "closed")
    assert (b.window, b.min_calls, b.failure_rate, b.slow_rate) == ((10, 1.0), 10, 0.0, 0.0)
    assert (b.probe_timeout, b.max_hold) == (60.0, 3600.0)


def test_failure_on_accepts_lists_and_single_classes():
    tripwire.Breaker(failure_on=[ValueError, KeyError], ignore_on=KeyError)
    tripwire.Breaker(failure_on=(), ignore_on=())


def test_bulkhead_arguments():
    with pytest.raises(ValueError, match="max_concurrent = 0"):
        tripwire.Bulkhead(0)
    with pytest.raises(TypeError, match="max_concurrent must be an int"):
        tripwire.Bulkhead("3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_wait must be"):
        tripwire.Bulkhead(1, max_wait=-1)
    with pytest.raises(TypeError, match="name must be a str"):
        tripwire.Bulkhead(1, name=2)  # type: ignore[arg-type]


# Every argument of every class: a wrong type is a TypeError, a wrong value a
# ValueError, and the message names the argument; never an OverflowError.
HUGE = 10**400  # beyond a float, beyond any C integer


@pytest.mark.parametrize(
    ("make", "error", "pattern"),
    [
        (lambda: tripwire.Bulkhead(-1), ValueError, r"invalid bulkhead config: max_concurrent = -1"),
        (lambda: tripwire.Bulkhead(0), ValueError, r"invalid bulkhead config: max_concurrent = 0, expected an int from 1"),
        (lambda: tripwire.Bulkhead(2**32), ValueError, r"max_concurrent = 4294967296"),
        (lambda: tripwire.Bulkhead(2**64), ValueError, r"max_concurrent = 18446744073709551616"),
        (lambda: tripwire.Bulkhead(HUGE), ValueError, r"max_concurrent = 1000000000000000000000000000000000000000…"),
        (lambda: tripwire.Bulkhead(2.0), TypeError, r"max_concurrent must be an int, got float"),
        (lambda: tripwire.Bulkhead(True), TypeError, r"max_concurrent must be an int, got bool"),
        (lambda: tripwire.Bulkhead(None), TypeError, r"max_concurrent must be an int, got NoneType"),
        (lambda: tripwire.Bulkhead(1, max_wait=-0.5), ValueError, r"max_wait must be a finite, non-negative"),
        (lambda: tripwire.Bulkhead(1, max_wait=-HUGE), ValueError, r"max_wait must be a finite, non-negative"),
        (lambda: tripwire.Bulkhead(1, max_wait=float("nan")), ValueError, r"max_wait must be"),
        (lambda: tripwire.Bulkhead(1, max_wait=True), TypeError, r"max_wait must be a number of seconds"),
        (lambda: tripwire.Bulkhead(1, max_wait="1"), TypeError, r"max_wait must be a number of seconds"),
        (lambda: tripwire.Backoff(seed=-1), ValueError, r"seed = -1, expected an int from 0 to 2\*\*64 - 1"),
        (lambda: tripwire.Backoff(seed=2**64), ValueError, r"seed = 18446744073709551616"),
        (lambda: tripwire.Backoff(seed=HUGE), ValueError, r"seed = "),
        (lambda: tripwire.Backoff(seed=1.0), TypeError, r"seed must be an int"),
        (lambda: tripwire.Backoff(seed=True), TypeError, r"seed must be an int"),
        (lambda: tripwire.Backoff(base=-1), ValueError, r"base must be a finite, non-negative"),
        (lambda: tripwire.Backoff(base=HUGE), ValueError, r"base"),
        (lambda: tripwire.Backoff(factor=HUGE), ValueError, r"factor = 1000.*too large for a float"),
        (lambda: tripwire.Backoff(factor=True), TypeError, r"factor must be a number, got bool"),
        (lambda: tripwire.Backoff(jitter=1), TypeError, r"jitter must be a str"),
        (lambda: tripwire.Backoff(jitter="some"), ValueError, r"jitter = \"some\""),
        (lambda: tripwire.Backoff().override_next(HUGE * -1), ValueError, r"seconds must be a finite, non-negative"),
        (lambda: tripwire.RetryBudget(-0.1), ValueError, r"ratio"),
        (lambda: tripwire.RetryBudget(HUGE), ValueError, r"ratio = 1000.*too large for a float"),
        (lambda: tripwire.RetryBudget("0.2"), TypeError, r"ratio must be a number, got str"),
        (lambda: tripwire.RetryBudget(ttl=-1), ValueError, r"ttl must be a finite, non-negative"),
        (lambda: tripwire.RetryBudget(ttl=False), TypeError, r"ttl must be a number of seconds"),
        (lambda: tripwire.RetryBudget(min_retries_per_sec=HUGE), ValueError, r"min_retries_per_sec = 1000.*too large"),
        (lambda: tripwire.ManualClock(-1), ValueError, r"start must be a finite, non-negative"),
        (lambda: tripwire.ManualClock(True), TypeError, r"start must be a number of seconds"),
        (lambda: tripwire.ManualClock("0"), TypeError, r"start must be a number of seconds"),
        (lambda: tripwire.ManualClock().advance(-HUGE), ValueError, r"seconds must be a finite, non-negative"),
        (lambda: tripwire.ManualClock().set(None), TypeError, r"seconds must be a number of seconds"),
        (lambda: tripwire.retry(attempts=-1), ValueError, r"invalid retry policy config: attempts = -1, expected 1 to 10000"),
        (lambda: tripwire.retry(attempts=0), ValueError, r"attempts"),
        (lambda: tripwire.retry(attempts=HUGE), ValueError, r"invalid retry policy config: attempts = 1000"),
        (lambda: tripwire.retry(attempts=3.0), TypeError, r"attempts must be an int, got float"),
        (lambda: tripwire.retry(attempts=True), TypeError, r"attempts must be an int, got bool"),
        (lambda: tripwire.retry(deadline=-1), ValueError, r"deadline must be a finite, non-negative"),
        (lambda: tripwire.retry(seed=-1), ValueError, r"seed = -1"),
        (lambda: tripwire.retry(factor=HUGE), ValueError, r"factor = 1000.*too large for a float"),
        (lambda: tripwire.StaleCache(-1), ValueError, r"max_age must be a finite, non-negative"),
        (lambda: tripwire.StaleCache(True), TypeError, r"max_age must be a number of seconds"),
        (lambda: tripwire.StaleCache(policies=3), TypeError, r"policies must be a dict"),
        (lambda: tripwire.StaleCache(policies={"k": -1}), ValueError, r"policies\['k'\] must be a finite"),
        (lambda: tripwire.StaleCache(fallback_on=3), TypeError, r"fallback_on must be an exception class"),
        (lambda: tripwire.Breaker(failure_threshold=HUGE), ValueError, r"invalid breaker config: failure_threshold = 1000"),
        (lambda: tripwire.Breaker(failure_threshold=-1), ValueError, r"invalid breaker config: failure_threshold = -1"),
        (lambda: tripwire.Breaker(failure_threshold=0), ValueError, r"failure_threshold"),
        (lambda: tripwire.Breaker(failure_threshold=True), TypeError, r"failure_threshold must be an int, got bool"),
        (lambda: tripwire.Breaker(half_open_max=2**64), ValueError, r"half_open_max = 18446744073709551616"),
        (lambda: tripwire.Breaker(count_window=HUGE), ValueError, r"count_window = 1000"),
        (lambda: tripwire.Breaker(window=(HUGE, 1.0)), ValueError, r"window_buckets = 1000"),
        (lambda: tripwire.Breaker(window=(4, HUGE)), ValueError, r"window"),
        (lambda: tripwire.Breaker(window=(4, True)), TypeError, r"window_bucket_width must be a number of seconds"),
        (lambda: tripwire.Breaker(open_timeout=-HUGE), ValueError, r"open_timeout must be a finite, non-negative"),
        (lambda: tripwire.Breaker(open_timeout=True), TypeError, r"open_timeout must be a number of seconds"),
        (lambda: tripwire.Breaker(failure_rate=HUGE), ValueError, r"failure_rate = 1000.*too large for a float"),
    ],
)
def test_every_bad_argument_is_a_type_or_value_error_naming_it(make, error, pattern):
    with pytest.raises(error, match=pattern) as info:
        make()
    assert not isinstance(info.value, OverflowError)


def test_huge_durations_mean_a_very_long_time():
    """An int too large for a float, as a wait, is as long as the core can
    count (584 years), not an error."""
    assert tripwire.Bulkhead(1, max_wait=HUGE).max_wait == pytest.approx(2**64 / 1e9)


# One message per setting: whatever the wrong value (below the range, above
# it, beyond what the core can even hold), the same range, and the value as
# it was given.
COUNTS = [
    ("failure_threshold", lambda v: tripwire.Breaker(failure_threshold=v), "invalid breaker config", "1 to 65535"),
    ("half_open_max", lambda v: tripwire.Breaker(half_open_max=v), "invalid breaker config", "1 to 10"),
    ("half_open_successes", lambda v: tripwire.Breaker(half_open_successes=v), "invalid breaker config", "1 to 10"),
    ("count_window", lambda v: tripwire.Breaker(count_window=v), "invalid breaker config", "1 to 1000"),
    ("min_calls", lambda v: tripwire.Breaker(min_calls=v), "invalid breaker config", "1 to 1000000"),
    ("window_buckets", lambda v: tripwire.Breaker(window=(v, 1.0), failure_rate=0.5), "invalid breaker config", "1 to 32"),
    ("attempts", lambda v: tripwire.retry(attempts=v), "invalid retry policy config", "1 to 10000"),
]


@pytest.mark.parametrize(("setting", "make", "prefix", "expected"), COUNTS)
@pytest.mark.parametrize("value", [-1, 0, 2**32, 2**80])
def test_a_count_out_of_range_gets_one_message_naming_the_value_given(setting, make, prefix, expected, value):
    with pytest.raises(ValueError) as info:
        make(value)
    assert str(info.value) == f"{prefix}: {setting} = {value}, expected {expected}"


DURATIONS = [
    ("open_timeout", lambda v: tripwire.Breaker(open_timeout=v), "invalid breaker config", "1µs to 604800s"),
    ("open_timeout_max", lambda v: tripwire.Breaker(open_timeout_max=v), "invalid breaker config", "1µs to 604800s"),
    ("slow_call", lambda v: tripwire.Breaker(slow_call=v), "invalid breaker config", "1µs to 604800s"),
    ("timeout", lambda v: tripwire.Breaker(timeout=v), "invalid breaker config", "1µs to 604800s"),
    ("window_bucket_width", lambda v: tripwire.Breaker(window=(4, v), failure_rate=0.5), "invalid breaker config", "1ms to 3600s"),
    ("deadline", lambda v: tripwire.retry(deadline=v), "invalid retry policy config", "1ns to 604800s"),
    ("max_retry_after", lambda v: tripwire.retry(max_retry_after=v), "invalid retry policy config", "1ns to 604800s"),
    ("base", lambda v: tripwire.Backoff(base=v), "invalid backoff config", "1ns to 604800s"),
    ("cap", lambda v: tripwire.retry(cap=v), "invalid backoff config", "1ns to 604800s"),
    ("ttl", lambda v: tripwire.RetryBudget(ttl=v), "invalid retry budget config", "100ms to 604800s"),
]


@pytest.mark.parametrize(("setting", "make", "prefix", "expected"), DURATIONS)
@pytest.mark.parametrize(("value", "shown"), [(1e300, "1e+300s"), (10**30, "1000000000000000000000000000000s"),
                                              (timedelta(days=10**8), "8640000000000.0s")])
def test_a_duration_beyond_what_the_core_holds_is_shown_as_given(setting, make, prefix, expected, value, shown):
    with pytest.raises(ValueError) as info:
        make(value)
    assert str(info.value) == f"{prefix}: {setting} = {shown}, expected {expected}"


def test_a_manual_clock_refuses_a_time_it_cannot_hold():
    """The clock counts nanoseconds in 64 bits (up to 18446744073.709551615 s):
    a time past that is refused, never saturated (a clock stuck at its end
    never lets a breaker's cool-down pass)."""
    clock = tripwire.ManualClock()
    with pytest.raises(ValueError) as info:
        clock.advance(2e10)
    assert str(info.value) == (
        "seconds = 20000000000.0 would take the ManualClock from 0.0 s past its end, "
        "18446744073.709551615 s: expected less than 18446744073.709551615 s"
    )
    assert clock.now() == 0.0, "refused: the clock did not move"
    clock.advance(18446744073.0)
    with pytest.raises(ValueError, match=r"seconds = 1 would take .* from 18446744073.0 s .*: expected less than 0\.7095\d+ s"):
        clock.advance(1)
    with pytest.raises(ValueError, match=r"start = 20000000000.0, expected less than 18446744073.709551615 s"):
        tripwire.ManualClock(2e10)
    with pytest.raises(ValueError, match=r"seconds = 1e\+300, expected less than 18446744073.709551615 s"):
        tripwire.ManualClock().set(1e300)
    with pytest.raises(ValueError, match=r"start = 1000000000000000000000000000000000000000…, expected less than"):
        tripwire.ManualClock(HUGE)


def test_a_breaker_on_a_manual_clock_near_its_end_still_recovers():
    clock = tripwire.ManualClock(18446744000.0)
    b = tripwire.Breaker(failure_threshold=1, open_timeout=10.0, clock=clock)
    with pytest.raises(ZeroDivisionError):
        b.call(lambda: 1 / 0)
    assert b.state == "open"
    clock.advance(10.0)
    assert b.call(lambda: "probe") == "probe" and b.state == "closed"
