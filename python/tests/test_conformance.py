"""The conformance matrix for the Python integrations: the scenarios of
``core/tests/conformance.rs``, each run through every Python integration
with a guard against a real HTTP server on 127.0.0.1, each cell a trace in
the format of ``core/src/layers/conformance.md``, compared with the Rust cell of
the same nesting (read from that file at test time):

``<sent> sent, got <what>; failures <n>, ignored <n>; hold <none | N s>[ (capped)]; next caller: <what> (<sent> sent)``

The integrations ("doors") and the nesting column each is compared with:

| door | nesting | the guarded call |
| --- | --- | --- |
| ``guard sync`` | retry → breaker | ``Retry.call`` → ``Breaker.call`` → ``Bulkhead.call`` → requests, ``raise_for_status()`` |
| ``guard async`` | retry → breaker | ``Retry.call_async`` → ``Breaker.call_async`` (``timeout=``) → ``Bulkhead.call_async`` → httpx, ``raise_for_status()`` |
| ``guard sync, breaker outside`` | breaker → retry | ``Breaker.call`` → ``Retry.call`` → ``Bulkhead.call`` → requests |
| ``guard async, breaker outside`` | breaker → retry | ``Breaker.call_async`` → ``Retry.call_async`` → ``Bulkhead.call_async`` → httpx (its own timeout bounds each attempt) |
| ``http requests``, ``http httpx``, ``http httpx async``, ``http aiohttp`` | retry → breaker | ``Retry`` → ``tripwire.http.guard`` → ``Bulkhead`` → the client |
| ``ccxt sync``, ``ccxt async`` | retry → breaker | ``tripwire.ccxt.guard`` (its own retry, breaker and bulkhead) → ccxt's binance → the fake exchange |

The configuration is the Rust test's: 3 attempts, backoff 1–2 ms, each
attempt bounded at 200 ms (the client's timeout for a sync call and for an
attempt inside a breaker that is outside the retries; the breaker's
``timeout=`` otherwise; ccxt's ``timeout``), a breaker that trips after 6
failures with a 20 ms cool-down, a bulkhead of one slot, no retry budget,
no deadline. tripwire.ccxt's own ``max_retry_after`` (300 s) is kept.

Time, as the breakers and the retries see it, is a ``ManualClock``: every
retry pause advances it by the pause instead of sleeping, and the probe
scenario advances it by the waits the Rust test sleeps. The traces are the
ones real time gives (a ``Retry-After: 30`` the retry waits for is 30 s
passed), without the test sleeping through them. Attempt timeouts and the
slow probe's 150 ms are real time.

**ccxt's vocabulary.** A ccxt caller gets exceptions, not statuses; its
cells name them, and the Rust cell is translated before the comparison:
a status becomes the class ccxt's binance raises for the fake exchange's
answer with that status (``CCXT_WORDS``: Binance's error code in the body
decides before the status does), 200 becomes ``result`` (the call
returned), ``timed out`` ``RequestTimeout``, ``refused``
``ExchangeCircuitOpen`` and ``bulkhead full`` ``BulkheadFullError``. The
fake exchange answers the order book (``fetch_order_book``); the 401 is
its answer to a wrong API key (``fetch_balance``), the 404 its answer to a
path it does not have.

A cell an integration cannot run is in ``SKIPPED`` with the reason; a cell
where an integration differs from the Rust cell by design is in
``EXPECTED_DIFFERENCES`` with the trace it gives and why, so that a change
of behaviour there fails too.
"""

from __future__ import annotations

import asyncio
import http.server
import math
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, Iterator, List, Optional, Tuple, Union

import aiohttp
import httpx
import pytest
import requests

import tripwire
import tripwire._fake_exchange as fx
import tripwire.http as th

ccxt = pytest.importorskip("ccxt")
import ccxt.async_support as ccxt_async  # noqa: E402

from tripwire.ccxt import ExchangeCircuitOpen  # noqa: E402
from tripwire.ccxt import guard as ccxt_guard  # noqa: E402

MATRIX = Path(__file__).resolve().parents[2] / "core" / "src" / "layers" / "conformance.md"

#: Each attempt's bound, attempts per call, the breaker's threshold and
#: cool-down, and how long the server takes to answer the slow probe: the
#: Rust test's constants.
ATTEMPT = 0.2
ATTEMPTS = 3
THRESHOLD = 2 * ATTEMPTS
COOL_DOWN = 0.02
SLOW = 0.15
BACKOFF: Dict[str, Any] = {"base": 0.001, "cap": 0.002}

INSIDE = "retry → breaker"
OUTSIDE = "breaker → retry"


# -- the Rust cells ---------------------------------------------------------------


def rust_cells() -> Dict[Tuple[str, str], str]:
    """``{(scenario, nesting): cell}`` from ``core/src/layers/conformance.md``."""
    cells: Dict[Tuple[str, str], str] = {}
    for line in MATRIX.read_text().splitlines():
        if not line.startswith("| ") or line.startswith("| scenario") or line.startswith("| ---"):
            continue
        scenario, inside, outside = [c.strip() for c in line.strip().strip("|").split("|")]
        cells[(scenario, INSIDE)] = inside
        cells[(scenario, OUTSIDE)] = outside
    return cells


# -- the server ---------------------------------------------------------------------


@dataclass(frozen=True)
class Mode:
    """How the server answers (the Rust support server's modes): ``up``
    (200 with a body), ``status`` (``status``, with ``Retry-After:
    retry_after`` if given), ``until`` (503 up to and including hit number
    ``last``, 200 after), ``hang`` (never answers), ``slow`` (200 after
    ``after`` seconds)."""

    kind: str
    status: int = 200
    retry_after: Optional[str] = None
    last: int = 0
    after: float = 0.0


class Server:
    """An HTTP server on 127.0.0.1, one thread per request, answering
    every GET as ``mode`` says; ``hits`` counts the requests that reached
    it."""

    def __init__(self) -> None:
        self.mode = Mode("up")
        self._hits = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with outer._lock:
                    outer._hits += 1
                    hit = outer._hits
                mode = outer.mode
                if mode.kind == "hang":
                    outer._stopping.wait(60.0)
                    return
                if mode.kind == "slow":
                    outer._stopping.wait(mode.after)
                status, headers = 200, []
                if mode.kind == "status":
                    status = mode.status
                    if mode.retry_after is not None:
                        headers.append(("Retry-After", mode.retry_after))
                elif mode.kind == "until" and hit <= mode.last:
                    status = 503
                body = b"bids/asks" if status == 200 else b""
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/book"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True)
        self._thread.start()

    def hits(self) -> int:
        with self._lock:
            return self._hits

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


# -- the scenarios ------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    name: str
    #: The server's mode, given its hits so far.
    mode: Callable[[int], Mode]
    #: "plain", "full bulkhead" (its one slot held by someone else) or
    #: "slow probe" (the breaker tripped and cooled down: the first request
    #: is its probe, which outlives the cool-down; the second caller comes
    #: meanwhile).
    setup: str = "plain"


SCENARIOS = [
    Scenario("503 burst", lambda _: Mode("status", 503)),
    Scenario("503, then 200", lambda hits: Mode("until", last=hits + 1)),
    Scenario("429, Retry-After: 30", lambda _: Mode("status", 429, "30")),
    Scenario("429, Retry-After above max_hold", lambda _: Mode("status", 429, "86400")),
    Scenario("401", lambda _: Mode("status", 401)),
    Scenario("404", lambda _: Mode("status", 404)),
    Scenario("hang", lambda _: Mode("hang")),
    Scenario("full bulkhead", lambda _: Mode("up"), "full bulkhead"),
    Scenario("a probe running past the cool-down", lambda _: Mode("slow", after=SLOW), "slow probe"),
]
BY_NAME = {s.name: s for s in SCENARIOS}


# -- what a caller got --------------------------------------------------------------


def got_of(outcome: Union[BaseException, Any]) -> str:
    """What a caller got, in the Rust cells' words: a status, ``refused``,
    ``bulkhead full`` or ``timed out``."""
    if isinstance(outcome, tripwire.CircuitOpenError):
        return "refused"
    if isinstance(outcome, tripwire.BulkheadFullError):
        return "bulkhead full"
    if isinstance(outcome, th.ResponseError):
        return str(outcome.status)
    if isinstance(outcome, (requests.HTTPError, httpx.HTTPStatusError)):
        response: Any = outcome.response
        return str(response.status_code)
    if isinstance(outcome, (TimeoutError, requests.Timeout, httpx.TimeoutException)):
        return "timed out"
    if isinstance(outcome, BaseException):
        raise AssertionError(f"neither a response, a refusal nor a timeout: {outcome!r}") from outcome
    status = getattr(outcome, "status_code", None)
    return str(outcome.status if status is None else status)


def ccxt_got_of(outcome: Union[BaseException, Any]) -> str:
    """What a ccxt caller got: ``result``, or the exception's class, the
    refusals as tripwire's."""
    if isinstance(outcome, ExchangeCircuitOpen):
        return "ExchangeCircuitOpen"
    if isinstance(outcome, tripwire.BulkheadFullError):
        return "BulkheadFullError"
    if isinstance(outcome, BaseException):
        if not isinstance(outcome, ccxt.BaseError):
            raise AssertionError(f"not a ccxt error: {outcome!r}") from outcome
        return type(outcome).__name__
    return "result"


#: What a ccxt caller gets where the Rust cell says a status or a refusal.
CCXT_WORDS = {
    "200": "result",
    # A bare 503: ccxt's own table for the status.
    "503": "ExchangeNotAvailable",
    # Binance's -1003 ("too many requests") in the 429's body.
    "429": "DDoSProtection",
    # Binance's -2014 ("API-key format invalid") in the 401's body.
    "401": "AuthenticationError",
    # Binance's -1 in the body of the 404 for an unknown endpoint; ccxt's
    # table alone would make a 404 ExchangeNotAvailable.
    "404": "ExchangeError",
    "timed out": "RequestTimeout",
    "refused": "ExchangeCircuitOpen",
    "bulkhead full": "BulkheadFullError",
}


def ccxt_words(cell: str) -> str:
    """A Rust cell in ccxt's vocabulary (see the module's doc)."""

    def word(m: re.Match[str]) -> str:
        return m.group(1) + CCXT_WORDS[m.group(2)] + m.group(3)

    return re.sub(r"(got |next caller: )(refused|bulkhead full|timed out|\d{3})( \(|;)", word, cell)


# -- a trace ------------------------------------------------------------------------


@dataclass
class Trace:
    hits: int
    got: str
    failures: int
    ignored: int
    hold_left: Optional[float]
    capped_holds: int
    then: str
    hits_after: int

    def cell(self) -> str:
        hold = "none" if self.hold_left is None else f"{math.ceil(self.hold_left)} s"
        capped = " (capped)" if self.capped_holds > 0 else ""
        return (
            f"{self.hits} sent, got {self.got}; failures {self.failures}, ignored {self.ignored}; "
            f"hold {hold}{capped}; next caller: {self.then} ({self.hits_after - self.hits} sent)"
        )


class Clock:
    """The manual clock the breakers and retries read, and the retry's
    ``sleep``: a pause advances it."""

    def __init__(self) -> None:
        self.manual = tripwire.ManualClock(1000.0)

    def sleep(self, seconds: float) -> None:
        self.manual.advance(seconds)

    async def sleep_async(self, seconds: float) -> None:
        self.manual.advance(seconds)
        await asyncio.sleep(0)


def retry(clock: Clock, is_async: bool) -> tripwire.Retry:
    return tripwire.retry(ATTEMPTS, **BACKOFF, sleep=clock.sleep_async if is_async else clock.sleep)


def breaker(clock: Clock, **options: Any) -> tripwire.Breaker:
    # Above the attempts of one request: one request never trips it.
    return tripwire.Breaker(failure_threshold=THRESHOLD, open_timeout=COOL_DOWN, clock=clock.manual, **options)


def trip(b: tripwire.Breaker, clock: Clock) -> None:
    """Trips ``b`` with failures of its own, then lets it cool down."""
    while b.state != "open":
        b._record(b._acquire(), "failure")
    clock.manual.advance(2 * COOL_DOWN)


@dataclass
class Guarded:
    """One door, opened for one cell: its breaker and bulkhead, and the
    guarded call (returning the response or raising), plain or awaitable."""

    breaker: tripwire.Breaker
    bulkhead: tripwire.Bulkhead
    call: Callable[[], Any]
    got: Callable[[Union[BaseException, Any]], str] = got_of


def outcome_of(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as exc:
        return exc


async def outcome_of_async(call: Callable[[], Awaitable[Any]]) -> Any:
    try:
        return await call()
    except Exception as exc:
        return exc


def observe(g: Guarded, hits: Callable[[], int], first: str, probe: bool) -> Trace:
    """The trace after the first caller; the second caller's part is
    filled in by ``then``."""
    snapshot = g.breaker.snapshot()
    # The trip's own failures, made by the test, are no part of the trace.
    failures = snapshot.failures - (THRESHOLD if probe else 0)
    hold = None if probe else g.breaker.hold_left
    return Trace(hits(), first, failures, snapshot.ignored, hold, snapshot.capped_holds, "", 0)


def then(trace: Trace, got: str, hits: Callable[[], int]) -> Trace:
    trace.then, trace.hits_after = got, hits()
    return trace


def run_sync(g: Guarded, scenario: Scenario, clock: Clock, hits: Callable[[], int]) -> Trace:
    if scenario.setup == "full bulkhead":
        assert g.bulkhead.try_acquire(), "the one slot, held by someone else"
    if scenario.setup != "slow probe":
        trace = observe(g, hits, g.got(outcome_of(g.call)), probe=False)
        return then(trace, g.got(outcome_of(g.call)), hits)
    trip(g.breaker, clock)
    probe: List[Any] = []
    caller = threading.Thread(target=lambda: probe.append(outcome_of(g.call)))
    caller.start()
    # The second caller asks once the probe is out and the cool-down has
    # passed again, while the server still works on the probe.
    while g.breaker.state != "half_open":
        time.sleep(0.001)
    clock.manual.advance(2 * COOL_DOWN)
    time.sleep(2 * COOL_DOWN)
    second = g.got(outcome_of(g.call))
    caller.join()
    assert g.breaker.state == "closed", "the probe's success closed the breaker"
    return then(observe(g, hits, g.got(probe[0]), probe=True), second, hits)


async def run_async(g: Guarded, scenario: Scenario, clock: Clock, hits: Callable[[], int]) -> Trace:
    if scenario.setup == "full bulkhead":
        assert g.bulkhead.try_acquire(), "the one slot, held by someone else"
    if scenario.setup != "slow probe":
        trace = observe(g, hits, g.got(await outcome_of_async(g.call)), probe=False)
        return then(trace, g.got(await outcome_of_async(g.call)), hits)
    trip(g.breaker, clock)

    async def later() -> Any:
        while g.breaker.state != "half_open":
            await asyncio.sleep(0.001)
        clock.manual.advance(2 * COOL_DOWN)
        await asyncio.sleep(2 * COOL_DOWN)
        return await outcome_of_async(g.call)

    probe, second = await asyncio.gather(outcome_of_async(g.call), later())
    assert g.breaker.state == "closed", "the probe's success closed the breaker"
    return then(observe(g, hits, g.got(probe), probe=True), g.got(second), hits)


# -- the doors ------------------------------------------------------------------------


def raising(response: Any) -> Any:
    response.raise_for_status()
    return response


class Door:
    """An integration: its name, the nesting it is compared with, and how
    it runs a scenario to a trace."""

    name = ""
    nesting = INSIDE

    def trace(self, scenario: Scenario) -> Trace:
        raise NotImplementedError


class HttpDoor(Door):
    """A door over the test's own server."""

    def trace(self, scenario: Scenario) -> Trace:
        server, clock = Server(), Clock()
        try:
            server.mode = scenario.mode(server.hits())
            return self.run(server, scenario, clock)
        finally:
            server.stop()

    def run(self, server: Server, scenario: Scenario, clock: Clock) -> Trace:
        raise NotImplementedError


class GuardSync(HttpDoor):
    def __init__(self, nesting: str) -> None:
        self.nesting = nesting
        self.name = "guard sync" if nesting == INSIDE else "guard sync, breaker outside"

    def run(self, server: Server, scenario: Scenario, clock: Clock) -> Trace:
        b, bulkhead, r = breaker(clock), tripwire.Bulkhead(1), retry(clock, False)
        with requests.Session() as session:
            session.trust_env = False

            def attempt() -> Any:
                return bulkhead.call(lambda: raising(session.get(server.url, timeout=ATTEMPT)))

            def call() -> Any:
                if self.nesting == INSIDE:
                    return r.call(lambda: b.call(attempt))
                return b.call(lambda: r.call(attempt))

            return run_sync(Guarded(b, bulkhead, call), scenario, clock, server.hits)


class GuardAsync(HttpDoor):
    def __init__(self, nesting: str) -> None:
        self.nesting = nesting
        self.name = "guard async" if nesting == INSIDE else "guard async, breaker outside"

    def run(self, server: Server, scenario: Scenario, clock: Clock) -> Trace:
        async def main() -> Trace:
            r, bulkhead = retry(clock, True), tripwire.Bulkhead(1)
            # Each attempt's bound: the breaker's timeout inside the
            # retries; the client's own outside them, where the breaker's
            # would bound the whole retried call.
            inside = self.nesting == INSIDE
            b = breaker(clock, timeout=ATTEMPT) if inside else breaker(clock)
            async with httpx.AsyncClient(trust_env=False, timeout=5.0 if inside else ATTEMPT) as client:

                async def get() -> Any:
                    return raising(await client.get(server.url))

                async def attempt() -> Any:
                    return await bulkhead.call_async(get)

                async def call() -> Any:
                    if inside:
                        return await r.call_async(lambda: b.call_async(attempt))
                    return await b.call_async(lambda: r.call_async(attempt))

                return await run_async(Guarded(b, bulkhead, call), scenario, clock, server.hits)

        return asyncio.run(main())


class HttpRequests(HttpDoor):
    name = "http requests"

    def run(self, server: Server, scenario: Scenario, clock: Clock) -> Trace:
        b, bulkhead, r = breaker(clock), tripwire.Bulkhead(1), retry(clock, False)
        with requests.Session() as session:
            session.trust_env = False
            guarded = th.guard(b)(lambda: bulkhead.call(session.get, server.url, timeout=ATTEMPT))
            return run_sync(Guarded(b, bulkhead, lambda: r.call(guarded)), scenario, clock, server.hits)


class HttpHttpx(HttpDoor):
    name = "http httpx"

    def run(self, server: Server, scenario: Scenario, clock: Clock) -> Trace:
        b, bulkhead, r = breaker(clock), tripwire.Bulkhead(1), retry(clock, False)
        with httpx.Client(trust_env=False, timeout=ATTEMPT) as client:
            guarded = th.guard(b)(lambda: bulkhead.call(client.get, server.url))
            return run_sync(Guarded(b, bulkhead, lambda: r.call(guarded)), scenario, clock, server.hits)


class HttpHttpxAsync(HttpDoor):
    name = "http httpx async"

    def run(self, server: Server, scenario: Scenario, clock: Clock) -> Trace:
        async def main() -> Trace:
            b, bulkhead, r = breaker(clock, timeout=ATTEMPT), tripwire.Bulkhead(1), retry(clock, True)
            async with httpx.AsyncClient(trust_env=False, timeout=5.0) as client:

                @th.guard(b)
                async def get() -> httpx.Response:
                    return await bulkhead.call_async(client.get, server.url)

                return await run_async(Guarded(b, bulkhead, lambda: r.call_async(get)), scenario, clock, server.hits)

        return asyncio.run(main())


class HttpAiohttp(HttpDoor):
    name = "http aiohttp"

    def run(self, server: Server, scenario: Scenario, clock: Clock) -> Trace:
        async def main() -> Trace:
            b, bulkhead, r = breaker(clock, timeout=ATTEMPT), tripwire.Bulkhead(1), retry(clock, True)
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5.0)) as session:

                async def fetch() -> aiohttp.ClientResponse:
                    async with session.get(server.url) as response:
                        await response.read()
                        return response

                @th.guard(b)
                async def get() -> aiohttp.ClientResponse:
                    return await bulkhead.call_async(fetch)

                return await run_async(Guarded(b, bulkhead, lambda: r.call_async(get)), scenario, clock, server.hits)

        return asyncio.run(main())


class Ccxt(Door):
    """tripwire.ccxt over ccxt's binance and the fake exchange."""

    def __init__(self, flavour: str) -> None:
        self.flavour = flavour
        self.name = f"ccxt {flavour}"

    def trace(self, scenario: Scenario) -> Trace:
        with fx.FakeExchange() as fake:
            loop = asyncio.new_event_loop() if self.flavour == "async" else None
            try:
                return self._trace(fake, loop, scenario)
            finally:
                if loop is not None:
                    loop.close()

    def _trace(self, fake: fx.FakeExchange, loop: Optional[asyncio.AbstractEventLoop], scenario: Scenario) -> Trace:
        clock = Clock()
        module = ccxt_async if loop is not None else ccxt
        key = "not-the-key" if scenario.name == "401" else fake.api_key
        config = {"apiKey": key, "secret": fake.secret, "enableRateLimit": False, "timeout": int(ATTEMPT * 1000)}
        exchange = fake.point(module.binance(config))

        def run(fn: Callable[..., Any], *args: Any) -> Any:
            result = fn(*args)
            return result if loop is None else loop.run_until_complete(result)

        try:
            # The markets, loaded while the exchange is up (a bot does this
            # at start), so that each call under test is one request.
            run(exchange.load_markets)
            if scenario.name == "404":
                exchange.urls["api"]["public"] = fake.url + "/nowhere"
            g = ccxt_guard(
                exchange,
                breaker={"failure_threshold": THRESHOLD, "open_timeout": COOL_DOWN, "clock": clock.manual},
                bulkhead=1,
                retry={"attempts": ATTEMPTS, **BACKOFF, "deadline": None, "budget": None,
                       "sleep": clock.sleep if loop is None else clock.sleep_async},
                stale_max_age=None,
                name=f"conformance/{self.flavour}/{scenario.name}",
            )
            self._set(fake, scenario)
            method = g.fetch_balance if scenario.name == "401" else lambda: g.fetch_order_book("BTC/USDT")
            base = fake.hits()
            assert g.bulkhead is not None
            guarded = Guarded(g.breaker, g.bulkhead, method, ccxt_got_of)

            def hits() -> int:
                return fake.hits() - base

            if loop is None:
                return run_sync(guarded, scenario, clock, hits)
            return loop.run_until_complete(run_async(guarded, scenario, clock, hits))
        finally:
            if loop is not None:
                loop.run_until_complete(exchange.close())

    @staticmethod
    def _set(fake: fx.FakeExchange, scenario: Scenario) -> None:
        """The fake exchange's answer for ``scenario``."""
        mode = scenario.mode(0)
        if mode.kind == "status" and mode.status == 503:
            fake.mode = fx.UNAVAILABLE
        elif mode.kind == "status" and mode.status == 429:
            assert mode.retry_after is not None
            fake.mode, fake.retry_after = fx.RATE_LIMITED, float(mode.retry_after)
        elif mode.kind == "until":
            first = fake.hits() + 1
            fake.script = lambda r: fx.UNAVAILABLE if len(fake.requests) <= first else fx.HEALTHY
        elif mode.kind == "hang":
            fake.mode = fx.HANG
        elif mode.kind == "slow":
            fake.latency = mode.after
        # 401, 404 (set up by the caller), and up: the healthy exchange.


DOORS: List[Door] = [
    GuardSync(INSIDE),
    GuardAsync(INSIDE),
    HttpRequests(),
    HttpHttpx(),
    HttpHttpxAsync(),
    HttpAiohttp(),
    Ccxt("sync"),
    Ccxt("async"),
    GuardSync(OUTSIDE),
    GuardAsync(OUTSIDE),
]
BY_DOOR = {d.name: d for d in DOORS}

#: Cells an integration cannot run: ``(door, scenario): reason``. None
#: today: every door has a bulkhead (the user's ``tripwire.Bulkhead``
#: inside the guard, or tripwire.ccxt's own) and a per-attempt bound.
#: tripwire.http and tripwire.ccxt have no breaker → retry door: their
#: guard raises for the retry around it (tripwire.ccxt composes it
#: itself), as the reqwest middleware has none in the Rust matrix.
SKIPPED: Dict[Tuple[str, str], str] = {}

RMAX = "429, Retry-After above max_hold"


def _differences() -> Dict[Tuple[str, str], Tuple[str, str]]:
    table: Dict[Tuple[str, str], Tuple[str, str]] = {}
    for door in ("ccxt sync", "ccxt async"):
        table[(door, RMAX)] = (
            "1 sent, got DDoSProtection; failures 0, ignored 1; hold 300 s; next caller: ExchangeCircuitOpen (0 sent)",
            "tripwire.ccxt cuts a Retry-After to its own max_retry_after (300 s, documented) before it holds, "
            "so its hold is shorter than the breaker's max_hold and no capped one",
        )
    return table


#: Cells where an integration differs from the Rust cell by design:
#: ``(door, scenario): (its trace, why)``.
EXPECTED_DIFFERENCES: Dict[Tuple[str, str], Tuple[str, str]] = _differences()

#: Rows of the Rust matrix this test does not run, and why: each names
#: what the Rust row checks that no Python integration offers in that form.
NOT_RUN: Dict[str, str] = {
    "503 with Retry-After: 1": "a pause measured at the server, which needs real time; "
    "test_http.py's test_retry_pauses_a_503s_retry_after_exactly_and_then_gets_through checks the pause",
    "cancelled mid-call": "a dropped Rust future; a cancelled Python task is test_async.py's test_cancellation_is_neutral",
    "cancelled mid-backoff": "a dropped Rust future; a cancelled Python task is test_async.py's test_cancellation_is_neutral",
    "cancelled mid-probe": "a dropped Rust future; a cancelled Python task is test_async.py's test_cancellation_is_neutral",
    "stale read during an outage": "the Rust StaleCache around each door; Python's is test_fallback.py's",
    "stale read during a hold": "the Rust StaleCache around each door; Python's is test_fallback.py's",
}


def cells() -> Iterator[Any]:
    for door in DOORS:
        for scenario in SCENARIOS:
            key = (door.name, scenario.name)
            marks = [pytest.mark.skip(reason=SKIPPED[key])] if key in SKIPPED else []
            yield pytest.param(door.name, scenario.name, marks=marks, id=f"{door.name}: {scenario.name}")


def test_the_matrix_has_every_scenario_and_the_tables_name_real_cells() -> None:
    rust = {s for s, _ in rust_cells()}
    assert rust == set(BY_NAME) | set(NOT_RUN), "the Rust matrix and this test's scenarios differ"
    assert not set(BY_NAME) & set(NOT_RUN)
    for door, scenario in [*SKIPPED, *EXPECTED_DIFFERENCES]:
        assert door in BY_DOOR and scenario in BY_NAME, (door, scenario)
    assert not set(SKIPPED) & set(EXPECTED_DIFFERENCES)


@pytest.mark.parametrize(("door", "scenario"), list(cells()))
def test_each_python_integration_gives_the_rust_answer_for_its_nesting(door: str, scenario: str) -> None:
    d = BY_DOOR[door]
    want = rust_cells()[(scenario, d.nesting)]
    if isinstance(d, Ccxt):
        want = ccxt_words(want)
    got = d.trace(BY_NAME[scenario]).cell()
    if (door, scenario) in EXPECTED_DIFFERENCES:
        expected, why = EXPECTED_DIFFERENCES[(door, scenario)]
        assert expected != want, f"listed as a difference, but the Rust cell is the same: {why}"
        assert got == expected, f"{door}, {scenario}: the expected difference ({why}) changed"
    else:
        assert got == want, f"{door}, {scenario} ({d.nesting})"
