"""`tripwire.compat.pybreaker.CircuitRedisStorage`: pybreaker's Redis
storage on the fleet link. The link's tests need a Redis:
TRIPWIRE_TEST_REDIS=redis://127.0.0.1:PORT (.ci/run sets it); they are
skipped, saying so, without it. The argument checks run everywhere."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from typing import Any, Callable, Iterator, List

import pytest
import redis
import requests

import tripwire._fake_exchange as fx
from tripwire.compat import pybreaker

KEY = b"0123456789abcdef0123456789abcdef"
REDIS = os.environ.get("TRIPWIRE_TEST_REDIS")
needs_redis = pytest.mark.skipif(not REDIS, reason="set TRIPWIRE_TEST_REDIS (.ci/run does) to run the fleet tests")


def eventually(check: Callable[[], bool], what: str, within: float = 5.0) -> None:
    """Waits for `check` (the link works in the background); fails saying
    `what` did not happen in `within` seconds."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within}s")
        time.sleep(0.005)


def trip(cb: pybreaker.CircuitBreaker) -> None:
    """Fails `fail_max` calls; the last one trips the breaker (pybreaker
    then raises its CircuitBreakerError, from the failure)."""
    for _ in range(cb.fail_max - 1):
        with pytest.raises(ZeroDivisionError):
            cb.call(lambda: 1 / 0)
    with pytest.raises(pybreaker.CircuitBreakerError, match="Failures threshold reached"):
        cb.call(lambda: 1 / 0)


def storage(url: Any, ns: str, **kwargs: Any) -> pybreaker.CircuitRedisStorage:
    return pybreaker.CircuitRedisStorage(pybreaker.STATE_CLOSED, url, namespace=ns, key=KEY, **kwargs)


@pytest.fixture
def fake() -> Iterator[fx.FakeExchange]:
    with fx.FakeExchange() as f:
        yield f


# -- the constructor, as pybreaker's -------------------------------------------------


def test_the_constructor_takes_pybreakers_arguments_and_a_redis_client() -> None:
    client = redis.Redis(host="10.1.2.3", port=6380, db=2, username="bot", password="s3cret")
    s = pybreaker.CircuitRedisStorage("open", client, "orders", pybreaker.STATE_CLOSED, False, key=KEY)
    assert (s.name, s.state, s.namespace, s.fallback_circuit_state) == ("redis", "open", "orders", "closed")
    assert (s.counter, s.success_counter, s.opened_at) == (0, 0, None)
    assert pybreaker.CircuitRedisStorage("closed", "redis://127.0.0.1:1", key=KEY).namespace == "pybreaker"
    assert isinstance(s, pybreaker.CircuitBreakerStorage)
    assert not isinstance(s, pybreaker.CircuitMemoryStorage)
    # The client's address and credentials, read from its pool; no command sent.
    assert pybreaker._redis_location(client) == ("redis://10.1.2.3:6380/2", {"username": "bot", "password": "s3cret"})
    tls = redis.Redis(host="::1", port=6390, ssl=True)
    assert pybreaker._redis_location(tls) == ("rediss://[::1]:6390/0", {})


def test_what_cannot_map_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "redis://127.0.0.1:1"
    with pytest.raises(NotImplementedError, match="cluster_mode"):
        pybreaker.CircuitRedisStorage("closed", url, cluster_mode=True, key=KEY)
    with pytest.raises(ValueError, match="Unix socket"):
        pybreaker.CircuitRedisStorage("closed", redis.Redis(unix_socket_path="/run/redis.sock"), key=KEY)
    with pytest.raises(TypeError, match="redis.Redis client"):
        pybreaker.CircuitRedisStorage("closed", object(), key=KEY)
    with pytest.raises(ValueError, match="redis:// or rediss:// URL"):
        pybreaker.CircuitRedisStorage("closed", "127.0.0.1:6379", key=KEY)
    with pytest.raises(ValueError, match="Unknown state 'ajar'"):
        pybreaker.CircuitRedisStorage("ajar", url, key=KEY)
    with pytest.raises(ValueError, match="fallback_circuit_state"):
        pybreaker.CircuitRedisStorage("closed", url, fallback_circuit_state="ajar", key=KEY)
    with pytest.raises(ValueError, match="namespace"):
        pybreaker.CircuitRedisStorage("closed", url, namespace="", key=KEY)
    monkeypatch.delenv(pybreaker.KEY_ENV, raising=False)
    with pytest.raises(ValueError, match="signing key.*TRIPWIRE_FLEET_KEY"):
        pybreaker.CircuitRedisStorage("closed", url)
    with pytest.raises(ValueError, match="key"):
        pybreaker.CircuitRedisStorage("closed", url, key=b"short")
    monkeypatch.setenv(pybreaker.KEY_ENV, KEY.decode())
    assert pybreaker.CircuitRedisStorage("closed", url).fleet.link_state == "down"
    with pytest.raises(TypeError, match="lease_lead"):
        pybreaker.CircuitRedisStorage("closed", url, key=KEY, lease_lead="soon")


def test_pybreakers_own_redis_storage_is_refused_with_the_way_out() -> None:
    class TheirRedisStorage(pybreaker.CircuitMemoryStorage):
        name = "redis"  # type: ignore[assignment]

    with pytest.raises(TypeError, match="tripwire.compat.pybreaker.CircuitRedisStorage"):
        pybreaker.CircuitBreaker(state_storage=TheirRedisStorage("closed"))


def test_without_redis_the_breaker_is_a_plain_local_one_and_no_call_fails() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nothing listens on `port`: the link never comes up.
    cb = pybreaker.CircuitBreaker(fail_max=2, reset_timeout=30,
                                  state_storage=storage(f"redis://127.0.0.1:{port}", "down"))
    assert [cb.call(lambda: i) for i in range(1000)] == list(range(1000))
    trip(cb)
    assert cb.current_state == "open"
    with pytest.raises(pybreaker.CircuitBreakerError):
        cb.call(lambda: None)
    assert cb._state_storage.fleet.link_state == "down"  # type: ignore[attr-defined]


# -- sharing, through a real Redis -----------------------------------------------------


@needs_redis
def test_a_trip_on_one_host_is_refused_on_another_and_close_and_open_travel_too() -> None:
    ns = f"db-{uuid.uuid4().hex}"
    a = pybreaker.CircuitBreaker(fail_max=2, reset_timeout=30, state_storage=storage(REDIS, ns), name="db")
    b = pybreaker.CircuitBreaker(fail_max=2, reset_timeout=30, state_storage=storage(REDIS, ns), name="db")
    other = pybreaker.CircuitBreaker(fail_max=2, reset_timeout=30, state_storage=storage(REDIS, ns + "-x"))
    for cb in (a, b, other):
        assert cb._state_storage.fleet.wait_linked(5.0)  # type: ignore[attr-defined]
    trip(a)
    eventually(lambda: b.current_state == "open", "the other host opened")
    calls = []
    with pytest.raises(pybreaker.CircuitBreakerError):
        b.call(lambda: calls.append(1))
    assert calls == [], "refused without calling"
    assert other.current_state == "closed", "another namespace is another breaker"
    assert b.breaker.name == ns and b.name == "db"
    # pybreaker's manual close is a close for the fleet too.
    a.close()
    eventually(lambda: b.current_state == "closed", "the other host closed")
    assert b.call(lambda: 7) == 7
    # And a manual open is an open.
    b.open()
    eventually(lambda: a.current_state == "open", "the first host opened")


def _real_pybreaker() -> Any:
    import pybreaker as real

    return real


@needs_redis
@pytest.mark.parametrize("impl", ["tripwire", "pybreaker-1.4.1"])
def test_what_pybreakers_redis_storage_shares_ours_shares(impl: str) -> None:
    """The same user code on both: two hosts' breakers on one Redis
    namespace; a trip on one refuses calls on the other without making them,
    and a close on the second closes the first. (pybreaker reads Redis on
    each call; ours hears it from the link, hence `eventually`.)"""
    assert REDIS is not None
    ns = f"same-{uuid.uuid4().hex}"
    if impl == "tripwire":
        lib: Any = pybreaker

        def make() -> Any:
            s = lib.CircuitRedisStorage(lib.STATE_CLOSED, redis.Redis.from_url(REDIS), namespace=ns, key=KEY)
            assert s.fleet.wait_linked(5.0)
            return lib.CircuitBreaker(fail_max=2, reset_timeout=30, state_storage=s)
    else:
        lib = _real_pybreaker()

        def make() -> Any:
            s = lib.CircuitRedisStorage(lib.STATE_CLOSED, redis.Redis.from_url(REDIS), namespace=ns)
            return lib.CircuitBreaker(fail_max=2, reset_timeout=30, state_storage=s)

    a, b = make(), make()
    with pytest.raises(ZeroDivisionError):
        a.call(lambda: 1 / 0)
    with pytest.raises(lib.CircuitBreakerError):
        a.call(lambda: 1 / 0)
    eventually(lambda: b.current_state == "open", "the other host opened")
    calls: List[int] = []
    with pytest.raises(lib.CircuitBreakerError):
        b.call(lambda: calls.append(1))
    assert calls == []
    b.close()
    eventually(lambda: a.current_state == "closed", "the first host closed")
    assert a.call(lambda: 5) == 5


@needs_redis
def test_a_setter_rebuilds_the_breaker_and_it_stays_in_the_fleet() -> None:
    ns = f"rebuilt-{uuid.uuid4().hex}"
    a = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=30, state_storage=storage(REDIS, ns))
    b = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=30, state_storage=storage(REDIS, ns))
    a.fail_max = 1
    for cb in (a, b):
        assert cb._state_storage.fleet.wait_linked(5.0)  # type: ignore[attr-defined]
    trip(a)
    assert a.current_state == "open"
    eventually(lambda: b.current_state == "open", "the other host opened")


HOST = """
import sys, time, requests
from tripwire.compat import pybreaker
redis_url, ns, server = sys.argv[1], sys.argv[2], sys.argv[3]
storage = pybreaker.CircuitRedisStorage("closed", redis_url, namespace=ns, key=b"0123456789abcdef0123456789abcdef")
cb = pybreaker.CircuitBreaker(fail_max=2, reset_timeout=30, state_storage=storage)
assert storage.fleet.wait_linked(5.0), storage.fleet.snapshot()
print("ready", flush=True)
deadline = time.monotonic() + 10
while cb.current_state != "open" and time.monotonic() < deadline:
    time.sleep(0.002)
refused = 0
for _ in range(20):
    try:
        cb.call(requests.get, server, timeout=5)
    except pybreaker.CircuitBreakerError:
        refused += 1
print("done", cb.current_state, refused, flush=True)
"""


@needs_redis
def test_three_processes_one_trips_on_a_503_and_the_others_never_call_the_server(
    fake: fx.FakeExchange,
) -> None:
    assert REDIS is not None
    ns = f"procs-{uuid.uuid4().hex}"
    server = fake.url + "/api/v3/ping"
    hosts = [subprocess.Popen([sys.executable, "-c", HOST, REDIS, ns, server], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    try:
        for h in hosts:
            assert h.stdout is not None
            assert h.stdout.readline().strip() == "ready"
        cb = pybreaker.CircuitBreaker(fail_max=2, reset_timeout=30, state_storage=storage(REDIS, ns))
        assert cb._state_storage.fleet.wait_linked(5.0)  # type: ignore[attr-defined]
        fake.mode = fx.UNAVAILABLE

        def get() -> None:
            requests.get(server, timeout=5).raise_for_status()

        with pytest.raises(requests.HTTPError):
            cb.call(get)
        with pytest.raises(pybreaker.CircuitBreakerError):
            cb.call(get)  # the second failure trips it
        assert cb.current_state == "open"
        for h in hosts:
            out, _ = h.communicate(timeout=20)
            assert out.split() == ["done", "open", "20"], out
        assert fake.hits("/api/v3/ping") == 2, "only the tripping process reached the server"
    finally:
        for h in hosts:
            if h.poll() is None:
                h.kill()
                h.wait()
