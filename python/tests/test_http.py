"""`tripwire.http`: responses of real requests, httpx (sync and async) and
aiohttp clients, from a real server on 127.0.0.1 (the fake exchange), judged
by the core. Every check is a count or a state; time is a ManualClock."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import os
import socket
import threading
import time
import uuid
from types import SimpleNamespace
from typing import Any, Callable, Iterator, List

import aiohttp
import httpx
import pytest
import requests

import tripwire
import tripwire._fake_exchange as fx
import tripwire.http as th

PING = "/api/v3/ping"
CLIENTS = ["requests", "httpx", "httpx-async", "aiohttp"]


class Env:
    """One client library, a guarded `fetch(path)` on it, and a way to run it."""

    def __init__(self, flavour: str, fake: fx.FakeExchange) -> None:
        self.flavour = flavour
        self.fake = fake
        self.loop = asyncio.new_event_loop()
        self._close: List[Callable[[], Any]] = []
        base = fake.url
        if flavour == "requests":
            session = requests.Session()
            session.trust_env = False
            self._close.append(session.close)
            self.get: Callable[..., Any] = lambda path: session.get(base + path, timeout=5)
        elif flavour == "httpx":
            client = httpx.Client(base_url=base, trust_env=False, timeout=5)
            self._close.append(client.close)
            self.get = lambda path: client.get(path)
        elif flavour == "httpx-async":
            aclient = httpx.AsyncClient(base_url=base, trust_env=False, timeout=5)
            self._close.append(lambda: self.loop.run_until_complete(aclient.aclose()))

            async def get_httpx(path: str) -> httpx.Response:
                return await aclient.get(path)

            self.get = get_httpx
        else:

            async def open_session() -> aiohttp.ClientSession:
                return aiohttp.ClientSession(base)

            session_a = self.loop.run_until_complete(open_session())
            self._close.append(lambda: self.loop.run_until_complete(session_a.close()))

            async def get_aiohttp(path: str) -> aiohttp.ClientResponse:
                async with session_a.get(path) as resp:
                    await resp.read()
                    return resp

            self.get = get_aiohttp

    @property
    def is_async(self) -> bool:
        return self.flavour in ("httpx-async", "aiohttp")

    def fetch(self, breaker: tripwire.Breaker, **options: Any) -> Callable[[str], Any]:
        """`get`, decorated with `tripwire.http.guard(breaker)`, run to its end."""
        guarded = th.guard(breaker, **options)(self.get)
        if self.is_async:
            assert asyncio.iscoroutinefunction(guarded)
            return lambda path: self.loop.run_until_complete(guarded(path))
        return guarded

    def status(self, response: Any) -> int:
        return response.status if self.flavour == "aiohttp" else response.status_code

    def close(self) -> None:
        for close in self._close:
            close()
        self.loop.close()


@pytest.fixture
def fake() -> Iterator[fx.FakeExchange]:
    with fx.FakeExchange() as f:
        yield f


@pytest.fixture(params=CLIENTS)
def env(request: pytest.FixtureRequest, fake: fx.FakeExchange) -> Iterator[Env]:
    e = Env(request.param, fake)
    yield e
    e.close()


def test_a_healthy_response_is_returned_and_counted_as_a_success(env: Env, make_breaker: Any) -> None:
    breaker = make_breaker(failure_threshold=3)
    fetch = env.fetch(breaker)
    for _ in range(4):
        assert env.status(fetch(PING)) == 200
    snap = breaker.snapshot()
    assert (snap.successes, snap.failures, snap.ignored, breaker.state) == (4, 0, 0, "closed")
    assert env.fake.hits(PING) == 4


def test_a_503_outage_trips_the_breaker_and_later_calls_never_reach_the_server(
    env: Env, make_breaker: Any, clock: tripwire.ManualClock
) -> None:
    breaker = make_breaker(failure_threshold=3, open_timeout=10.0)
    fetch = env.fetch(breaker)
    env.fake.mode = fx.UNAVAILABLE
    for _ in range(3):
        with pytest.raises(th.ServerError) as err:
            fetch(PING)
        assert err.value.status == 503 and err.value.retry_after is None
        assert env.status(err.value.response) == 503
    assert breaker.state == "open"
    for _ in range(5):
        with pytest.raises(tripwire.CircuitOpenError) as refused:
            fetch(PING)
        assert refused.value.retry_after == 10.0
    assert env.fake.hits(PING) == 3, "a refused call never reaches the server"
    assert breaker.snapshot().failures == 3 and breaker.snapshot().rejected == 5
    # The cool-down over, one probe goes out; the server is back, so it closes.
    clock.advance(10.0)
    env.fake.mode = fx.HEALTHY
    assert env.status(fetch(PING)) == 200
    assert breaker.state == "closed" and env.fake.hits(PING) == 4


def test_a_429_holds_the_breaker_for_its_retry_after(
    env: Env, make_breaker: Any, clock: tripwire.ManualClock
) -> None:
    env.fake.retry_after = 7
    env.fake.mode = fx.RATE_LIMITED
    breaker = make_breaker(failure_threshold=3, open_timeout=30.0)
    fetch = env.fetch(breaker)
    with pytest.raises(th.BackpressureError) as err:
        fetch(PING)
    assert (err.value.status, err.value.verdict, err.value.retry_after) == (429, "backpressure", 7.0)
    assert breaker.state == "open" and breaker.hold_left == 7.0
    snap = breaker.snapshot()
    assert (snap.failures, snap.ignored) == (0, 1), "a 429 is no failure: the server is up"
    env.fake.mode = fx.HEALTHY
    clock.advance(6.5)
    with pytest.raises(tripwire.CircuitOpenError) as refused:
        fetch(PING)
    assert refused.value.retry_after == 0.5
    assert env.fake.hits(PING) == 1
    clock.advance(0.5)
    assert env.status(fetch(PING)) == 200
    assert breaker.state == "closed" and env.fake.hits(PING) == 2


def test_a_418_ban_holds_too_and_a_429_without_a_wait_holds_for_the_open_timeout(
    env: Env, make_breaker: Any, clock: tripwire.ManualClock
) -> None:
    breaker = make_breaker(open_timeout=12.0)
    fetch = env.fetch(breaker)
    env.fake.retry_after = 120
    env.fake.mode = fx.BANNED
    with pytest.raises(th.BackpressureError) as err:
        fetch(PING)
    assert (err.value.status, err.value.retry_after, breaker.hold_left) == (418, 120.0, 120.0)
    clock.advance(120.0)
    env.fake.script = lambda request: (fx.RATE_LIMITED, None)
    with pytest.raises(th.BackpressureError) as bare:
        fetch(PING)
    assert (bare.value.status, bare.value.retry_after, breaker.hold_left) == (429, 12.0, 12.0)
    assert env.fake.hits(PING) == 2


def test_a_4xx_is_the_callers_fault_returned_and_never_counted(env: Env, make_breaker: Any) -> None:
    breaker = make_breaker(failure_threshold=2)
    fetch = env.fetch(breaker)
    for path in ["/api/v3/depth?symbol=NOPE", "/nowhere"] * 5:
        response = fetch(path)
        assert env.status(response) in (400, 404)
    snap = breaker.snapshot()
    assert (snap.successes, snap.failures, snap.ignored, breaker.state) == (0, 0, 10, "closed")
    assert env.fake.hits() == 10
    # An unsigned private call: the exchange's 401 is the caller's too.
    for _ in range(3):
        assert env.status(fetch("/api/v3/account")) == 401
    snap = breaker.snapshot()
    assert (snap.failures, snap.ignored, breaker.state) == (0, 13, "closed")


@contextlib.contextmanager
def _answering(status: int) -> Iterator[str]:
    """A real HTTP/1.1 server on 127.0.0.1 that answers every GET with
    ``status`` (one the fake exchange has no mode for); yields its URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(status, "Odd")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize("flavour", CLIENTS)
@pytest.mark.parametrize("status", [408, 600, 999])
def test_a_server_timeout_and_a_status_outside_http_are_failures_that_trip_the_breaker(
    flavour: str, status: int, make_breaker: Any
) -> None:
    with _answering(status) as url:
        env = Env(flavour, SimpleNamespace(url=url))  # type: ignore[arg-type]
        try:
            breaker = make_breaker(failure_threshold=2)
            fetch = env.fetch(breaker)
            for _ in range(2):
                with pytest.raises(th.ServerError) as err:
                    fetch("/")
                assert (err.value.status, err.value.verdict, err.value.retry_after) == (status, "failure", None)
            snap = breaker.snapshot()
            assert (snap.successes, snap.failures, snap.ignored, breaker.state) == (0, 2, 0, "open")
        finally:
            env.close()


def test_without_raise_errors_every_response_is_returned_and_still_counted(
    env: Env, make_breaker: Any
) -> None:
    breaker = make_breaker(failure_threshold=2)
    fetch = env.fetch(breaker, raise_errors=False)
    env.fake.mode = fx.UNAVAILABLE
    assert [env.status(fetch(PING)) for _ in range(2)] == [503, 503]
    assert breaker.state == "open"
    with pytest.raises(tripwire.CircuitOpenError):
        fetch(PING)
    assert env.fake.hits(PING) == 2


def test_a_refused_connection_is_a_failure(make_breaker: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nothing listens on `port` now.
    breaker = make_breaker(failure_threshold=2)
    session = requests.Session()
    session.trust_env = False
    fetch = th.guard(breaker)(session.get)
    for _ in range(2):
        with pytest.raises(requests.ConnectionError):
            fetch(f"http://127.0.0.1:{port}/", timeout=5)
    assert breaker.state == "open" and breaker.snapshot().failures == 2


def test_call_and_call_async_guard_one_call(fake: fx.FakeExchange, make_breaker: Any) -> None:
    breaker = make_breaker(failure_threshold=1)
    g = th.guard(breaker)
    with httpx.Client(base_url=fake.url, trust_env=False) as client:
        assert g.call(client.get, PING).status_code == 200

    async def with_aiohttp() -> int:
        async with aiohttp.ClientSession(fake.url) as session:
            # aiohttp's `session.get` is no `async def`; `call_async` awaits it.
            response = await g.call_async(session.get, PING)
            response.release()
            fake.mode = fx.UNAVAILABLE
            with pytest.raises(th.ServerError):
                (await g.call_async(session.get, PING)).release()
            with pytest.raises(tripwire.CircuitOpenError):
                await g.call_async(session.get, PING)
            return response.status

    assert asyncio.run(with_aiohttp()) == 200
    assert fake.hits(PING) == 3 and breaker.state == "open"


def test_the_breakers_timeout_cuts_a_hanging_server_short_as_a_failure(fake: fx.FakeExchange) -> None:
    breaker = tripwire.Breaker(failure_threshold=1, timeout=0.05)
    fake.mode = fx.HANG

    async def main() -> None:
        async with httpx.AsyncClient(base_url=fake.url, trust_env=False, timeout=30) as client:
            with pytest.raises(TimeoutError):
                await th.guard(breaker).call_async(client.get, PING)
            with pytest.raises(tripwire.CircuitOpenError):
                await th.guard(breaker).call_async(client.get, PING)

    asyncio.run(main())
    assert breaker.snapshot().failures == 1 and fake.hits(PING) == 1


def test_retry_never_asks_again_after_a_429_the_caller_gets_it_at_once_and_the_hold_refuses_the_next(
    env: Env, make_breaker: Any, clock: tripwire.ManualClock
) -> None:
    # The core's rule: backpressure is held, never retried. One request,
    # no pause, the 429 to the caller; the hold answers whoever comes next.
    env.fake.mode, env.fake.retry_after = fx.RATE_LIMITED, 30
    breaker = make_breaker()
    pauses: List[float] = []

    async def pause_async(seconds: float) -> None:
        pauses.append(seconds)

    policy = tripwire.retry(attempts=3, sleep=pause_async if env.is_async else pauses.append)
    retried = policy(th.guard(breaker)(env.get))

    def call() -> Any:
        return env.loop.run_until_complete(retried(PING)) if env.is_async else retried(PING)

    with pytest.raises(th.BackpressureError) as err:
        call()
    assert (err.value.status, err.value.retry_after) == (429, 30.0)
    assert pauses == [] and env.fake.hits(PING) == 1
    snap = breaker.snapshot()
    assert (snap.failures, snap.ignored, breaker.hold_left) == (0, 1, 30.0)
    with pytest.raises(tripwire.CircuitOpenError):
        call()
    assert env.fake.hits(PING) == 1


def test_retry_pauses_a_503s_retry_after_exactly_and_then_gets_through(make_breaker: Any) -> None:
    # A failure of the server that names its pause is retried after it, as
    # a Rust retry does (capped at max_retry_after).
    answers = iter([_Response(503, {"Retry-After": "4"}), _Response(503, {"Retry-After": "600"})])
    breaker = make_breaker()
    pauses: List[float] = []

    @tripwire.retry(attempts=3, sleep=pauses.append, max_retry_after=60.0)
    @th.guard(breaker)
    def ping() -> Any:
        return next(answers, _Response(200))

    assert ping().status_code == 200
    assert pauses == [4.0, 60.0] and breaker.snapshot().failures == 2


def test_a_function_that_returns_no_response_raises_and_gives_its_ticket_back(make_breaker: Any) -> None:
    breaker = make_breaker(failure_threshold=1, half_open_max=1)
    breaker.hold(1.0)
    breaker.clock.advance(1.0)
    # Half-open with one probe slot: a call that returns no response takes
    # it and must give it back.
    bad = th.guard(breaker)(lambda: "not a response")
    with pytest.raises(TypeError, match="status_code"):
        bad()
    assert breaker.snapshot().ignored == 1
    assert th.guard(breaker).call(lambda: _Response(200)).status_code == 200
    assert breaker.state == "closed"


def test_an_awaitable_from_a_sync_function_says_to_use_call_async(fake: fx.FakeExchange, make_breaker: Any) -> None:
    breaker = make_breaker()

    async def main() -> None:
        async with aiohttp.ClientSession(fake.url) as session:
            pending = session.get(PING)
            with pytest.raises(TypeError, match="call_async"):
                th.guard(breaker).call(lambda: pending)
            (await pending).release()

    asyncio.run(main())
    assert breaker.snapshot().ignored == 1 and fake.hits(PING) == 1


class _Response:
    def __init__(self, status: Any, headers: Any = None) -> None:
        self.status_code = status
        self.headers = {} if headers is None else headers


def test_a_bad_status_is_a_clear_error_and_the_call_is_not_counted(make_breaker: Any) -> None:
    breaker = make_breaker()
    g = th.guard(breaker)
    for status, error in [("200", TypeError), (200.0, TypeError), (True, TypeError), (99, ValueError),
                          (1000, ValueError), (-1, ValueError), (2**80, ValueError)]:
        with pytest.raises(error, match="status"):
            g.call(lambda: _Response(status))
    with pytest.raises(TypeError, match="headers must be a mapping"):
        g.call(lambda: _Response(200, ["Retry-After", "5"]))
    snap = breaker.snapshot()
    assert (snap.successes, snap.failures, snap.ignored) == (0, 0, 8)


def test_guard_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="tripwire.Breaker"):
        th.guard(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="raise_errors"):
        th.guard(tripwire.Breaker(), raise_errors="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="decorates a function"):
        th.guard(tripwire.Breaker())(42)  # type: ignore[call-overload]


def test_assess_is_the_cores_table() -> None:
    for status, verdict in [(100, "success"), (200, "success"), (304, "success"), (400, "ignored"),
                            (401, "ignored"), (403, "ignored"), (404, "ignored"), (499, "ignored"), (408, "failure"),
                            (418, "backpressure"), (429, "backpressure"), (500, "failure"), (503, "failure"),
                            (599, "failure"), (600, "failure"), (999, "failure")]:
        assert th.assess(status) == th.Assessment(verdict, None), status
    assert th.assess(429, {"RETRY-AFTER": "30"}) == ("backpressure", 30.0), "names are case-insensitive"
    assert th.assess(503, {"Retry-After": "30"}) == ("failure", None), "a wait matters for backpressure only"
    now = 1_700_000_000.0
    assert th.assess(429, {"X-RateLimit-Reset": "1700000045"}, now=now).retry_after == 45.0
    assert th.assess(429, {"Retry-After": "Tue, 14 Nov 2023 22:14:20 GMT"}, now=now).retry_after == 60.0
    assert th.assess(429, {"Retry-After": "soon"}).retry_after is None
    assert th.assess(429, {"Retry-After": "-5"}).retry_after is None
    assert th.assess(429, {"Retry-After": "9" * 400}).retry_after == float(2**64 - 1)


def test_header_names_and_values_given_as_bytes_are_read_as_the_bytes_on_the_wire() -> None:
    # A mapping of raw headers (httpcore's or an ASGI scope's pairs in a
    # dict): str() of bytes is "b'30'", which no header parser reads.
    assert th.assess(429, {b"Retry-After": b"30"}) == ("backpressure", 30.0)
    assert th.assess(429, {"retry-after": bytearray(b"30")}) == ("backpressure", 30.0)
    assert tripwire._tripwire._retry_after({b"x-ratelimit-reset": b"1700000045"}, 1_700_000_000.0) == 45.0
    # Bytes that are no header value (a control character) are dropped, as
    # for a str.
    assert th.assess(429, {b"Retry-After": b"3\x010"}).retry_after is None


def test_assess_response_reads_every_clients_response(fake: fx.FakeExchange) -> None:
    fake.retry_after = 5
    fake.mode = fx.RATE_LIMITED
    session = requests.Session()
    session.trust_env = False
    with session:
        assert th.assess_response(session.get(fake.url + PING)) == ("backpressure", 5.0)
    with httpx.Client(trust_env=False) as client:
        assert th.assess_response(client.get(fake.url + PING)) == ("backpressure", 5.0)

    async def with_aiohttp() -> th.Assessment:
        async with aiohttp.ClientSession() as s, s.get(fake.url + PING) as response:
            return th.assess_response(response)

    assert asyncio.run(with_aiohttp()) == ("backpressure", 5.0)
    with pytest.raises(TypeError, match="expected an HTTP response"):
        th.assess_response(object())  # type: ignore[arg-type]


def test_an_absurd_retry_after_holds_at_most_max_hold(make_breaker: Any) -> None:
    breaker = make_breaker()
    with pytest.raises(th.BackpressureError) as err:
        th.guard(breaker).call(lambda: _Response(429, {"Retry-After": "9" * 400}))
    assert err.value.retry_after == 3600.0 and breaker.hold_left == 3600.0
    assert breaker.snapshot().capped_holds == 1


def test_a_429_never_shortens_a_longer_hold(make_breaker: Any) -> None:
    breaker = make_breaker()
    # Two calls in flight; the first answer asks for 50 s, the second for 5.
    first, second = breaker._acquire(), breaker._acquire()
    settle = tripwire._tripwire._settle
    assert settle(breaker, first, _Response(429, {"Retry-After": "50"})) == ("backpressure", 429, 50.0)
    assert settle(breaker, second, _Response(429, {"Retry-After": "5"})) == ("backpressure", 429, 50.0)
    assert breaker.hold_left == 50.0


@pytest.mark.skipif(not os.environ.get("TRIPWIRE_TEST_REDIS"), reason="set TRIPWIRE_TEST_REDIS (.ci/run does)")
def test_a_429_on_one_host_holds_the_breaker_of_another_in_the_fleet(fake: fx.FakeExchange) -> None:
    url = os.environ["TRIPWIRE_TEST_REDIS"]
    ns, key = f"http-{uuid.uuid4().hex[:16]}", b"0123456789abcdef0123456789abcdef"
    here, there = tripwire.Breaker(name="exchange"), tripwire.Breaker(name="exchange")
    fleets = [tripwire.Fleet(url, ns, key), tripwire.Fleet(url, ns, key)]
    fleets[0].join(here)
    fleets[1].join(there)
    assert all(f.wait_linked(5.0) for f in fleets)
    fake.retry_after = 60
    fake.mode = fx.RATE_LIMITED
    with httpx.Client(base_url=fake.url, trust_env=False) as client:
        with pytest.raises(th.BackpressureError):
            th.guard(here).call(client.get, PING)
        deadline = time.monotonic() + 5
        while there.hold_left is None and time.monotonic() < deadline:
            time.sleep(0.005)
        left = there.hold_left
        assert left is not None and 50 < left <= 60, left
        with pytest.raises(tripwire.CircuitOpenError):
            th.guard(there).call(client.get, PING)
    assert fake.hits(PING) == 1


class _RaisingClient:
    """One HTTP client library used as most code uses it: a GET that raises
    the library's own error for a 4xx or 5xx (``raise_for_status``)."""

    def __init__(self, flavour: str, base: str) -> None:
        self.flavour, self.base = flavour, base
        self.loop = asyncio.new_event_loop()

    def run(self, breaker: tripwire.Breaker, policy: Any, path: str) -> Any:
        if self.flavour == "requests":

            @policy
            @breaker
            def get_requests() -> Any:
                with requests.Session() as s:
                    s.trust_env = False
                    r = s.get(self.base + path, timeout=5)
                    r.raise_for_status()
                    return r

            return get_requests()
        if self.flavour == "httpx":

            @policy
            @breaker
            def get_httpx() -> Any:
                with httpx.Client(trust_env=False, timeout=5) as c:
                    return c.get(self.base + path).raise_for_status()

            return get_httpx()

        @policy
        @breaker
        async def get_aiohttp() -> Any:
            async with aiohttp.ClientSession() as s:
                async with s.get(self.base + path, raise_for_status=True) as r:
                    return await r.read()

        return self.loop.run_until_complete(get_aiohttp())

    def close(self) -> None:
        self.loop.close()


ERRORS = {"requests": requests.HTTPError, "httpx": httpx.HTTPStatusError, "aiohttp": aiohttp.ClientResponseError}


@pytest.mark.parametrize("flavour", ["requests", "httpx", "aiohttp"])
def test_a_clients_own_error_for_a_4xx_is_the_callers_fault_for_the_breaker_and_the_retries(
    flavour: str, fake: fx.FakeExchange
) -> None:
    client = _RaisingClient(flavour, fake.url)
    pauses: List[float] = []
    policy = tripwire.retry(attempts=3, sleep=pauses.append if flavour != "aiohttp" else None, base=0.001, cap=0.002)
    breaker = tripwire.Breaker(failure_threshold=2)
    try:
        # Unsigned: the exchange's 401, raised by the client. Neither a
        # failure nor asked again, by the defaults alone.
        for _ in range(3):
            with pytest.raises(ERRORS[flavour]):
                client.run(breaker, policy, "/api/v3/account")
        assert fake.hits("/api/v3/account") == 3, "each sent once"
        snap = breaker.snapshot()
        assert (breaker.state, snap.failures, snap.ignored) == ("closed", 0, 3)
        # A 5xx raised the same way is the exchange's failure, and retried.
        fake.mode = fx.UNAVAILABLE
        with pytest.raises((ERRORS[flavour], tripwire.CircuitOpenError)):
            client.run(breaker, policy, PING)
        assert fake.hits(PING) == 2 and breaker.state == "open"
    finally:
        client.close()


@pytest.mark.parametrize("flavour", ["requests", "httpx", "aiohttp"])
def test_a_clients_own_error_for_a_429_holds_a_plain_breaker_for_its_retry_after_and_is_never_retried(
    flavour: str, fake: fx.FakeExchange
) -> None:
    client = _RaisingClient(flavour, fake.url)
    pauses: List[float] = []

    async def pause_async(seconds: float) -> None:
        pauses.append(seconds)

    policy = tripwire.retry(attempts=3, sleep=pause_async if flavour == "aiohttp" else pauses.append)
    clock = tripwire.ManualClock(1000.0)
    try:
        # The server's 30 s, read from the raised error's response: held
        # as tripwire.http holds for the response itself, counted as
        # ignored, the error to the caller after one request.
        fake.mode, fake.retry_after = fx.RATE_LIMITED, 30
        breaker = tripwire.Breaker(failure_threshold=2, open_timeout=12.0, clock=clock)
        with pytest.raises(ERRORS[flavour]):
            client.run(breaker, policy, PING)
        assert fake.hits(PING) == 1 and pauses == []
        snap = breaker.snapshot()
        assert (snap.failures, snap.ignored, breaker.hold_left) == (0, 1, 30.0)
        with pytest.raises(tripwire.CircuitOpenError):
            client.run(breaker, policy, PING)
        assert fake.hits(PING) == 1
        # No wait asked: held for the breaker's open_timeout; an absurd
        # one: for its max_hold, counted as capped.
        for wait, hold in [(None, 12.0), (10**9, 3600.0)]:
            fake.script = lambda request, wait=wait: (fx.BANNED, wait)
            breaker = tripwire.Breaker(failure_threshold=2, open_timeout=12.0, clock=clock)
            with pytest.raises(ERRORS[flavour]):
                client.run(breaker, policy, PING)
            assert breaker.hold_left == hold and breaker.snapshot().capped_holds == (0 if wait is None else 1)
        assert fake.hits(PING) == 3 and pauses == []
    finally:
        client.close()
