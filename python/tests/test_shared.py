"""Breaker.shared: one breaker in a memory-mapped file, shared by every
process that opens the same path."""

from __future__ import annotations

import inspect
import multiprocessing
import os

import pytest

import tripwire
from conftest import Boom, fail

CONFIG = {"failure_threshold": 4, "open_timeout": 60.0, "name": "shared-exchange"}


def fail_once(path: str) -> str:
    """A worker process: one failed call through the shared breaker."""
    b = tripwire.Breaker.shared(path, **CONFIG)
    try:
        b.call(fail)
    except Boom:
        pass
    except tripwire.CircuitOpenError:
        return "rejected"
    return b.state


GUARD = tripwire.Breaker()


@GUARD
def double(x: int) -> int:
    return 2 * x


def test_decorated_functions_go_to_worker_processes(tmp_path):
    """A decorated function pickles by reference, like a function."""
    import pickle

    assert pickle.loads(pickle.dumps(double)) is double
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        assert pool.map(double, [1, 2, 3]) == [2, 4, 6]


def probe(path: str) -> str:
    b = tripwire.Breaker.shared(path, **CONFIG)
    try:
        b.call(lambda: None)
    except tripwire.CircuitOpenError as e:
        return f"rejected:{e.state}"
    return "passed"


def test_four_processes_trip_one_breaker(tmp_path):
    path = str(tmp_path / "exchange.breaker")
    parent = tripwire.Breaker.shared(path, **CONFIG)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        states = pool.map(fail_once, [path] * 4)
        # Four failures in four processes: the shared breaker is open…
        assert parent.state == "open"
        assert sorted(states)[-1] == "open"
        # …for this process and for any other that opens the file.
        assert pool.map(probe, [path] * 4) == ["rejected:open"] * 4
    with pytest.raises(tripwire.CircuitOpenError):
        parent.call(lambda: None)
    s = parent.snapshot()
    assert (s.failures, s.transitions) == (4, 1)
    assert s.rejected >= 5
    parent.reset()
    assert tripwire.Breaker.shared(path, **CONFIG).state == "closed"


def test_a_shared_breaker_is_the_same_breaker_in_one_process(tmp_path):
    path = tmp_path / "b"
    a = tripwire.Breaker.shared(path, failure_threshold=1)
    b = tripwire.Breaker.shared(os.fspath(path), failure_threshold=1)
    with pytest.raises(Boom):
        a.call(fail)
    assert b.state == "open"
    assert b.snapshot().failures == 1


def test_another_config_is_refused(tmp_path):
    path = tmp_path / "b"
    tripwire.Breaker.shared(path, failure_threshold=3)
    with pytest.raises(ValueError, match="another config"):
        tripwire.Breaker.shared(path, failure_threshold=4)


def test_garbage_files_are_refused(tmp_path):
    path = tmp_path / "garbage"
    path.write_bytes(b"not a breaker" * 1000)
    with pytest.raises(ValueError, match="garbage"):
        tripwire.Breaker.shared(path)
    short = tmp_path / "short"
    short.write_bytes(b"\0" * 8)
    with pytest.raises(ValueError):
        tripwire.Breaker.shared(short)


def test_shared_arguments(tmp_path):
    with pytest.raises(TypeError, match="clock"):
        tripwire.Breaker.shared(tmp_path / "c", clock=tripwire.ManualClock())
    with pytest.raises(TypeError, match="unexpected keyword argument 'fail_max'"):
        tripwire.Breaker.shared(tmp_path / "c", fail_max=3)
    with pytest.raises(ValueError, match="failure_threshold = 0"):
        tripwire.Breaker.shared(tmp_path / "c", failure_threshold=0)
    with pytest.raises(OSError):
        tripwire.Breaker.shared(tmp_path / "no" / "such" / "dir")


def test_every_keyword_argument_of_shared_takes_none_as_breaker_does(tmp_path):
    # The stub gives each a None default: passing it explicitly (a wrapper
    # forwarding its own defaults) must mean the same as leaving it out.
    keys = [k for k in inspect.signature(tripwire.Breaker).parameters if k != "clock"]
    breaker = tripwire.Breaker.shared(tmp_path / "b", **dict.fromkeys(keys))
    assert breaker.failure_threshold == tripwire.Breaker().failure_threshold
    with breaker:
        pass
    with pytest.raises(KeyError):
        with breaker:
            raise KeyError("a failure, as failure_on's default says")
    assert breaker.snapshot().failures == 1


def test_a_path_that_cannot_be_opened_raises_the_os_error_python_would(tmp_path):
    missing = tmp_path / "no-such-dir" / "exchange.tw"
    with pytest.raises(FileNotFoundError) as err:
        tripwire.Breaker.shared(str(missing))
    assert (err.value.errno, err.value.filename) == (2, str(missing)), err.value
    assert str(missing) in str(err.value)
    # A directory where the file should be: IsADirectoryError, its path.
    with pytest.raises(IsADirectoryError) as err_dir:
        tripwire.Breaker.shared(str(tmp_path))
    assert err_dir.value.filename == str(tmp_path)
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(PermissionError) as denied:
            tripwire.Breaker.shared(str(locked / "x"))
        assert denied.value.filename == str(locked / "x")
