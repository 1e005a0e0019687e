"""`timeout=`: a breaker's own timeout, applied inside the guard, counts as
a failure; tested against a real server on 127.0.0.1 that accepts
connections and never answers (an exchange that hangs)."""

from __future__ import annotations

import asyncio
import http.client
import socket
import threading
import time
from collections.abc import Iterator

import pytest

import tripwire


@pytest.fixture
def hanging_server() -> Iterator[tuple[str, int]]:
    """A TCP server that accepts every connection, reads the request and
    never answers, until the test ends."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.05)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:  # the accept timed out: look at `stop` again
                continue
            held.append(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[:2]
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


async def get(host: str, port: int, path: str = "/api/v3/depth") -> bytes:
    """An HTTP GET with asyncio streams; waits for the answer as long as it
    takes."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        await writer.drain()
        return await reader.read(1)
    finally:
        writer.close()


def test_timeout_trips_the_breaker_on_a_hanging_server(hanging_server):
    host, port = hanging_server
    b = tripwire.Breaker(failure_threshold=2, open_timeout=30.0, timeout=0.1, failure_on=(OSError,))
    assert b.timeout == 0.1
    fetch = b(get)

    async def main() -> None:
        for _ in range(2):
            start = time.perf_counter()
            with pytest.raises(TimeoutError):
                await fetch(host, port)
            assert time.perf_counter() - start < 2.0
        # Open now: refused at once, the server is not called again.
        with pytest.raises(tripwire.CircuitOpenError):
            await fetch(host, port)
        with pytest.raises(tripwire.CircuitOpenError):
            await b.call_async(get, host, port)

    asyncio.run(asyncio.wait_for(main(), 20))
    s = b.snapshot()
    # Counted as failures although failure_on names only OSError (on
    # Python >= 3.11 TimeoutError is one; the count does not depend on it).
    assert (b.state, s.failures, s.rejected) == ("open", 2, 2)


def test_call_async_has_the_timeout_too(hanging_server):
    host, port = hanging_server
    b = tripwire.Breaker(failure_threshold=1, timeout=0.1, failure_on=(KeyError,))

    async def main() -> None:
        with pytest.raises(TimeoutError):
            await b.call_async(get, host, port)

    asyncio.run(asyncio.wait_for(main(), 20))
    assert b.state == "open", "the breaker's own timeout is a failure, whatever failure_on says"


def test_wait_for_outside_the_guard_never_trips_the_breaker(hanging_server):
    """The trap `timeout=` exists for: a timeout around the guarded call
    reaches it as a cancellation, which says nothing about the server."""
    host, port = hanging_server
    b = tripwire.Breaker(failure_threshold=2)
    fetch = b(get)

    async def main() -> None:
        for _ in range(3):
            with pytest.raises((asyncio.TimeoutError, TimeoutError)):
                await asyncio.wait_for(fetch(host, port), 0.05)

    asyncio.run(asyncio.wait_for(main(), 20))
    s = b.snapshot()
    assert (b.state, s.failures, s.ignored) == ("closed", 0, 3)


def test_a_call_that_finishes_in_time_is_a_success(hanging_server):
    b = tripwire.Breaker(failure_threshold=1, timeout=1.0)

    @b
    async def quick() -> str:
        await asyncio.sleep(0.01)
        return "book"

    assert asyncio.run(quick()) == "book"
    assert (b.state, b.snapshot().successes, b.snapshot().slow) == ("closed", 1, 0)


def test_an_error_inside_the_timeout_is_classified_as_usual():
    b = tripwire.Breaker(failure_threshold=1, timeout=1.0, ignore_on=KeyError)

    @b
    async def missing() -> None:
        raise KeyError("BTC")

    with pytest.raises(KeyError):
        asyncio.run(missing())
    assert (b.state, b.snapshot().ignored) == ("closed", 1)


def test_a_sync_call_is_ended_by_its_own_client_and_counts_as_slow(hanging_server):
    """A sync call cannot be cut short by the breaker: its own client owns
    its timeout (here the socket's), whose error is a failure; the breaker
    counts the call as slow too, since it outlasted `timeout`."""
    host, port = hanging_server
    b = tripwire.Breaker(failure_threshold=2, timeout=0.05)
    assert b.slow_call == 0.05

    @b
    def fetch_sync() -> int:
        conn = http.client.HTTPConnection(host, port, timeout=0.1)  # the client's own timeout
        try:
            conn.request("GET", "/api/v3/ping")
            return conn.getresponse().status
        finally:
            conn.close()

    for _ in range(2):
        with pytest.raises(socket.timeout):  # TimeoutError from Python 3.10
            fetch_sync()
    s = b.snapshot()
    assert (b.state, s.failures, s.slow) == ("open", 2, 2)


def test_slow_sync_calls_trip_a_slow_rate():
    b = tripwire.Breaker(failure_threshold=0, timeout=0.02, window=(10, 1.0), min_calls=2, slow_rate=0.5)

    @b
    def slow() -> str:
        time.sleep(0.03)
        return "late"

    assert [slow(), slow()] == ["late", "late"]
    s = b.snapshot()
    assert (s.successes, s.slow, b.state) == (2, 2, "open")


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "1"])
def test_bad_timeouts_are_refused(bad):
    with pytest.raises((ValueError, TypeError), match="timeout"):
        tripwire.Breaker(timeout=bad)
    assert tripwire.Breaker(timeout=None).timeout is None


def test_an_async_with_block_runs_within_the_timeout(hanging_server):
    host, port = hanging_server
    b = tripwire.Breaker(failure_threshold=2, timeout=0.1, failure_on=(KeyError,))

    async def main() -> None:
        for _ in range(2):
            with pytest.raises(TimeoutError):
                async with b:
                    await get(host, port)
        with pytest.raises(tripwire.CircuitOpenError):
            async with b:
                pytest.fail("the body must not run")

    asyncio.run(asyncio.wait_for(main(), 20))
    s = b.snapshot()
    assert (b.state, s.failures, s.rejected) == ("open", 2, 1)


def test_async_with_blocks_within_the_timeout_record_their_outcome():
    b = tripwire.Breaker(failure_threshold=1, timeout=1.0, ignore_on=KeyError)

    async def main() -> None:
        async with b as entered:
            assert entered is b
            await asyncio.sleep(0)
        with pytest.raises(KeyError):
            async with b:
                raise KeyError("BTC")
        # Nested blocks and interleaved tasks keep their own scopes.
        async def block(delay: float) -> None:
            async with b:
                await asyncio.sleep(delay)

        async with b:
            await asyncio.gather(block(0.02), block(0.0))

    asyncio.run(main())
    s = b.snapshot()
    assert (b.state, s.successes, s.ignored, s.failures) == ("closed", 4, 1, 0)
