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


def test_defaults():
    b = tripwire.Breaker()
    assert (b.failure_threshold, b.open_timeout, b.open_timeout_max) == (5, 30.0, 30.0)
    assert (b.half_open_max, b.half_open_successes, b.name, b.state) == (1, 1, None, "closed")
    assert (b.window, b.min_calls, b.failure_rate, b.slow_rate) == ((10, 1.0), 10, 0.0, 0.0)


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
