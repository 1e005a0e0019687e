"""``python -m tripwire.demo``: an exchange outage, replayed and measured.

The same scenario as ``cargo run --release -p tripwire-demo``: a simulated
exchange on 127.0.0.1 (``tripwire._fake_exchange``, which speaks Binance's
REST API) follows a script (healthy with random 503s and a 429,
maintenance answering 503, accepting connections and never answering,
healthy again), compressed by a time scale. Two asyncio clients poll it
side by side at the same fixed rate, starting a request every ``1 / rate``
seconds whether earlier ones have been answered or not. With ccxt
installed, both are ccxt's ``binance`` class: a naive one with ccxt's
timeout only, and one behind ``tripwire.ccxt.guard`` (stale fallback →
retry with a budget → breaker → bulkhead → timeout). Without ccxt, the
clients speak HTTP themselves, composed the same way, signing the balance
request as the exchange asks and judging each answer by
``tripwire.http`` (a 4xx other than 408, 429 and 418 is the caller's
fault: neither a failure nor retried). Every duration is
scaled; every time reported is on the scenario's clock.

One event loop drives both clients, so the defaults are gentler than the
Rust demo's: a 10-minute outage replayed 24 times faster (240 requests a
second per client), about 30 seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import math
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import tripwire
import tripwire.http

from . import _fake_exchange as fake
from ._fake_exchange import FakeExchange, Request

HEALTHY, RATE_LIMITED, MAINTENANCE, HANG, RECOVERED = "healthy", "429", "maintenance 503", "hanging", "recovered"
DOWN = (MAINTENANCE, HANG)
PATTERNS = ("503", "hang", "mixed")
#: How long the exchange takes to answer (scenario seconds).
LATENCY = 0.02
#: How long the 429 lasts (scenario seconds).
RATE_LIMIT = 60.0
#: A failure answered faster than this (scenario seconds) never waited for the exchange.
FAST = 0.010
#: What the clients ask for, besides the balance.
SYMBOL = "BTC/USDT"
#: The balance endpoint, a signed one.
ACCOUNT = "/api/v3/account"
CLIENTS = ("ccxt", "http")


@dataclass
class Config:
    """What to replay, in scenario seconds."""

    rate: float = 10.0
    outage: float = 600.0
    scale: float = 24.0
    pattern: str = "mixed"
    seed: int = 7
    timeout: float = 2.0
    cool_down: float = 30.0
    failure_threshold: int = 5
    bulkhead: int = 8
    stale_max: float = 300.0
    live: bool = True
    #: "ccxt" (ccxt's binance class, if installed) or "http" (the clients
    #: speak HTTP themselves).
    client: str = "ccxt"


Span = Tuple[str, float, float]


def timeline(outage: float, pattern: str) -> List[Span]:
    """The exchange's script: (phase, start, end), as in the Rust demo."""
    side = max(outage / 10, 60.0)
    spans: List[Span] = []

    def push(phase: str, length: float) -> None:
        start = spans[-1][2] if spans else 0.0
        spans.append((phase, start, start + length))

    if side >= RATE_LIMIT * 3:
        push(HEALTHY, side / 3)
        push(RATE_LIMITED, RATE_LIMIT)
        push(HEALTHY, side - side / 3 - RATE_LIMIT)
    else:
        push(HEALTHY, side)
    if pattern == "503":
        push(MAINTENANCE, outage)
    elif pattern == "hang":
        push(HANG, outage)
    else:
        push(MAINTENANCE, outage / 2)
        push(HANG, outage / 2)
    push(RECOVERED, side)
    return spans


@dataclass
class Stats:
    """What one client saw."""

    requests: int = 0
    hits: int = 0
    hits_down: int = 0
    fresh: int = 0
    fresh_balances: int = 0
    fast_failures: int = 0
    slow_failures: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    waiting: int = 0
    peak_waiting: int = 0
    bulkhead_full: int = 0
    stale: int = 0
    stale_max_age: float = 0.0
    stale_balances: int = 0
    balance_errors: int = 0
    recovery: Optional[float] = None
    latencies: List[float] = field(default_factory=list)


class Scenario:
    """The scenario's clock and script."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.spans = timeline(config.outage, config.pattern)
        self.total = self.spans[-1][2]
        self.recovered_at = next(s for p, s, _ in self.spans if p == RECOVERED)
        self.t0 = time.monotonic()
        #: False until the clients are ready and the clock starts.
        self.running = False

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.running = True

    def now(self) -> float:
        return (time.monotonic() - self.t0) * self.config.scale

    def real(self, seconds: float) -> float:
        return seconds / self.config.scale

    def span_at(self, t: float) -> Span:
        return next((s for s in self.spans if t < s[2]), self.spans[-1])


class Exchange:
    """The simulated exchange: tripwire's Binance-shaped fake exchange
    (``tripwire._fake_exchange``) on 127.0.0.1, in the mode the script says
    at each request's arrival."""

    def __init__(self, scenario: Scenario, stats: Dict[str, Stats]) -> None:
        self.scenario = scenario
        self.stats = stats
        self.dice = random.Random(scenario.config.seed)
        self.fake = FakeExchange(latency=scenario.real(LATENCY), script=self._mode)

    def _mode(self, request: Request) -> Union[str, Tuple[str, float]]:
        s = self.scenario
        if not s.running:
            return fake.HEALTHY  # the clients getting ready
        now = s.now()
        phase, _, end = s.span_at(now)
        stats = self.stats.get(request.client)
        if stats is not None:
            stats.hits += 1
            stats.hits_down += phase in DOWN
        if phase == HANG:
            return fake.HANG
        if phase == MAINTENANCE:
            return fake.MAINTENANCE
        if phase == RATE_LIMITED:
            # Whole seconds, as servers send them.
            return fake.RATE_LIMITED, max(1, math.ceil(s.real(end - now)))
        return fake.UNAVAILABLE if self.dice.random() < 0.02 else fake.HEALTHY

    def stop(self) -> None:
        self.fake.stop()


class Client:
    """One client: naive (``guarded=False``: the exchange's timeout only) or
    behind tripwire. ``fetch`` makes one caller request."""

    name: str
    stats: Stats
    breaker: Optional[tripwire.Breaker] = None

    async def start(self) -> None:
        """Gets ready before the scenario starts (ccxt loads the markets)."""

    async def fetch(self, balance: bool) -> Optional[float]:
        """A balance or an order book: None if fresh, else the stale
        value's age (scenario seconds); raises if there is neither."""
        raise NotImplementedError

    async def close(self) -> None:
        """Releases the client's connections."""

    async def request(self, s: Scenario, balance: bool) -> None:
        """One caller request, measured."""
        st, c = self.stats, s.config
        st.requests += 1
        st.waiting += 1
        st.peak_waiting = max(st.peak_waiting, st.waiting)
        started = time.monotonic()
        fresh, age = False, None
        try:
            age = await self.fetch(balance)
            fresh = age is None
        except tripwire.BulkheadFullError:
            st.bulkhead_full += 1
        except Exception:
            pass
        finally:
            st.waiting -= 1
        latency = (time.monotonic() - started) * c.scale
        st.latencies.append(latency)
        now = s.now()
        if fresh:
            st.fresh += 1
            st.fresh_balances += balance
            if now >= s.recovered_at and st.recovery is None:
                st.recovery = now - s.recovered_at
        elif age is not None:
            if balance:
                st.stale_balances += 1
            else:
                st.stale += 1
                st.stale_max_age = max(st.stale_max_age, age)
        else:
            if latency < FAST:
                st.fast_failures += 1
            else:
                st.slow_failures += 1
            st.balance_errors += balance

    async def drive(self, s: Scenario) -> None:
        c = s.config
        period = 1.0 / (c.rate * c.scale)
        end = s.t0 + s.real(s.total)
        tasks = set()
        i, next_at = 0, time.monotonic()
        while next_at < end:
            delay = next_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            # One balance for every three order books.
            task = asyncio.ensure_future(self.request(s, balance=i % 4 == 3))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            i += 1
            next_at += period
        # The last requests end within the timeout (and the retries' pauses).
        drain = time.monotonic() + s.real(4 * c.timeout)
        while tasks and time.monotonic() < drain:
            await asyncio.sleep(0.002)
        for t in list(tasks):
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class CcxtClient(Client):
    """A client through ccxt's ``binance`` class (``ccxt.async_support``):
    the naive one is the exchange object alone, with its timeout; the other
    is the same object behind ``tripwire.ccxt.guard``."""

    def __init__(self, name: str, scenario: Scenario, stats: Stats, exchange: Exchange, guarded: bool) -> None:
        import ccxt.async_support as ccxt_async  # type: ignore[import-untyped, import-not-found, unused-ignore]

        from .ccxt import guard

        self.name, self.stats, self.scale = name, stats, scenario.config.scale
        c, real = scenario.config, scenario.real
        self.exchange = exchange.fake.point(ccxt_async.binance({
            "apiKey": FakeExchange.api_key,
            "secret": FakeExchange.secret,
            "enableRateLimit": False,
            "timeout": max(1, round(real(c.timeout) * 1000)),  # milliseconds
            "headers": {"x-client": name},
        }))
        self._count_in_flight()
        self.guarded = None
        if guarded:
            # Outermost first: stale fallback → retry → breaker → bulkhead →
            # ccxt's timeout → call.
            self.guarded = guard(
                self.exchange,
                name=f"demo/{name}",
                breaker={"failure_threshold": c.failure_threshold, "open_timeout": real(c.cool_down)},
                bulkhead=c.bulkhead,
                retry={
                    "attempts": 3, "base": real(0.1), "cap": real(1.0), "jitter": "decorrelated",
                    "budget": tripwire.RetryBudget(0.1, ttl=real(10.0), min_retries_per_sec=c.scale),
                    "deadline": real(2 * c.timeout), "seed": c.seed,
                },
                stale_max_age=real(c.stale_max),
            )
            self.breaker = self.guarded.breaker

    def _count_in_flight(self) -> None:
        """Counts the HTTP requests in flight (ccxt's ``fetch``, under
        every guard)."""
        fetch, st = self.exchange.fetch, self.stats

        async def counted(*args: Any, **kwargs: Any) -> Any:
            st.in_flight += 1
            st.peak_in_flight = max(st.peak_in_flight, st.in_flight)
            try:
                return await fetch(*args, **kwargs)
            finally:
                st.in_flight -= 1

        self.exchange.fetch = counted

    async def start(self) -> None:
        # The markets, once, with time to spare: a bot does this at start.
        timeout, self.exchange.timeout = self.exchange.timeout, 10_000
        await self.exchange.load_markets()
        self.exchange.timeout = timeout

    async def fetch(self, balance: bool) -> Optional[float]:
        if self.guarded is None:
            await (self.exchange.fetch_balance() if balance else self.exchange.fetch_order_book(SYMBOL))
            return None
        if balance:
            await self.guarded.fetch_balance()
            return None
        got = await self.guarded.stale.fetch_order_book(SYMBOL)
        return got.age * self.scale if got.stale else None

    async def close(self) -> None:
        await self.exchange.close()


class HttpError(Exception):
    """The exchange answered with a status that carries no data: one
    ``tripwire.http`` ignored (a 4xx, the caller's own fault), which ends
    the request without counting or retrying it."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


@dataclass(frozen=True)
class Reply:
    """One HTTP answer, as ``tripwire.http`` reads a response: ``status``
    and ``headers`` (names in lower case)."""

    status: int
    headers: Dict[str, str]
    body: bytes


class HttpClient(Client):
    """A client that speaks HTTP itself (when ccxt is not installed),
    signing its balance requests as Binance asks: the naive one with a
    timeout only, the other behind tripwire's breaker, bulkhead, retry and
    stale cache, each answer judged by the core (``tripwire.http``)."""

    def __init__(self, name: str, scenario: Scenario, stats: Stats, exchange: Exchange, guarded: bool) -> None:
        self.name, self.stats, self.scale = name, stats, scenario.config.scale
        self.port = exchange.fake.port
        c, real = scenario.config, scenario.real
        self.timeout = real(c.timeout)
        if guarded:
            self.breaker = tripwire.Breaker(
                name=f"demo/{name}",
                failure_threshold=c.failure_threshold,
                open_timeout=real(c.cool_down),
                ignore_on=tripwire.BulkheadFullError,
            )
            bulkhead = tripwire.Bulkhead(c.bulkhead)
            budget = tripwire.RetryBudget(0.1, ttl=real(10.0), min_retries_per_sec=c.scale)
            policy = tripwire.retry(
                attempts=3, base=real(0.1), cap=real(1.0), jitter="decorrelated", budget=budget,
                give_up_on=(tripwire.http.BackpressureError, tripwire.BulkheadFullError), seed=c.seed,
            )

            # Outermost first: retry → breaker → bulkhead → timeout → call.
            # A 5xx raises ServerError (a failure, retried), a 429 or 418
            # BackpressureError (the breaker held), any other 4xx is
            # returned: ignored, neither counted nor retried.
            @policy
            @tripwire.http.guard(self.breaker)
            async def attempt(path: str) -> Reply:
                async with bulkhead:
                    return await asyncio.wait_for(self.get(path), self.timeout)

            self.attempt = attempt
            # Stale data for the exchange's troubles and the guards'
            # refusals, never for the caller's own mistake (HttpError).
            self.cache = tripwire.StaleCache(
                policies={"book": real(c.stale_max), "balance": None},
                fallback_on=(tripwire.TripwireError, asyncio.TimeoutError, OSError),
            )

    async def get(self, path: str) -> Reply:
        """One GET, its answer whatever the status."""
        st = self.stats
        st.in_flight += 1
        st.peak_in_flight = max(st.peak_in_flight, st.in_flight)
        writer = None
        headers = f"Host: exchange\r\nx-client: {self.name}\r\n"
        if path == ACCOUNT:
            path = _signed(path)
            headers += f"X-MBX-APIKEY: {FakeExchange.api_key}\r\n"
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            writer.write(f"GET {path} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n".encode())
            data = await reader.read()
            head, _, body = data.partition(b"\r\n\r\n")
            status, *lines = head.decode("latin-1").split("\r\n")
            fields = {}
            for line in lines:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip()
            return Reply(int(status.split(" ")[1]), fields, body)
        finally:
            st.in_flight -= 1
            if writer is not None:
                writer.close()

    async def fresh(self, path: str) -> bytes:
        """The body of a 200; ``HttpError`` for an answer without data."""
        reply = await (self.attempt(path) if self.breaker is not None
                       else asyncio.wait_for(self.get(path), self.timeout))
        if reply.status != 200:
            raise HttpError(reply.status)
        return reply.body

    async def fetch(self, balance: bool) -> Optional[float]:
        path = ACCOUNT if balance else "/api/v3/depth?symbol=BTCUSDT"
        if self.breaker is None:
            await self.fresh(path)
            return None
        got = await self.cache.call_async("balance" if balance else "book", self.fresh, path)
        return got.age * self.scale if got.stale else None


def _signed(path: str) -> str:
    """``path`` with a timestamp and Binance's signature (HMAC-SHA256 of the
    query under the API secret), as the exchange checks it."""
    query = f"timestamp={int(time.time() * 1000)}"
    signature = hmac.new(FakeExchange.secret.encode(), query.encode(), hashlib.sha256).hexdigest()
    return f"{path}?{query}&signature={signature}"


def _has_ccxt() -> bool:
    try:
        import ccxt.async_support  # type: ignore[import-untyped, import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


async def _show(s: Scenario, clients: Sequence[Client], done: asyncio.Event) -> None:
    tty = sys.stdout.isatty()
    every = 0.2 if tty else 3.0
    last_t, last_hits = s.now(), [c.stats.hits for c in clients]
    drawn = False
    while not done.is_set():
        try:
            await asyncio.wait_for(done.wait(), every)
        except asyncio.TimeoutError:
            pass
        now = s.now()
        phase = s.span_at(min(now, s.total))[0]
        if tty and drawn:
            sys.stdout.write("\x1b[2A")
        for i, c in enumerate(clients):
            rate = (c.stats.hits - last_hits[i]) / max(now - last_t, 1e-9)
            state = c.breaker.state if c.breaker is not None else "none"
            line = (f"{int(now) // 60:02}:{int(now) % 60:02} {phase:<15} {c.name:<8} breaker {state:<9} "
                    f"to exchange {rate:6.1f}/s  in flight {c.stats.in_flight:4}  waiting {c.stats.waiting:4}")
            sys.stdout.write(f"\r\x1b[K{line}\n" if tty else f"{line}\n")
        sys.stdout.flush()
        drawn = True
        last_t, last_hits = now, [c.stats.hits for c in clients]


async def _replay(config: Config) -> Tuple[Scenario, Dict[str, Stats]]:
    stats = {"naive": Stats(), "tripwire": Stats()}
    scenario = Scenario(config)
    exchange = Exchange(scenario, stats)
    kind = CcxtClient if config.client == "ccxt" else HttpClient
    clients: List[Client] = []
    try:
        clients = [kind(name, scenario, stats[name], exchange, name == "tripwire") for name in stats]
        await asyncio.gather(*(c.start() for c in clients))
        scenario.start()
        done = asyncio.Event()
        show = asyncio.ensure_future(_show(scenario, clients, done)) if config.live else None
        await asyncio.gather(*(c.drive(scenario) for c in clients))
        done.set()
        if show is not None:
            await show
    finally:
        for c in clients:
            await c.close()
        exchange.stop()
    return scenario, stats


def run(config: Config) -> Dict[str, Stats]:
    """Replays the scenario; returns what each client saw, by name."""
    return asyncio.run(_replay(config))[1]


def _quantile(values: List[float], q: float) -> float:
    v = sorted(values)
    return v[min(round((len(v) - 1) * q), len(v) - 1)] if v else 0.0


def _dur(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.0f} ms"
    if s < 60:
        return f"{s:.1f} s"
    return f"{int(s) // 60} min {int(s) % 60:02} s"


def table(config: Config, stats: Dict[str, Stats], wall: float) -> str:
    """The table of the Rust demo, for both clients (Markdown)."""
    n, g = stats["naive"], stats["tripwire"]
    head = f"{config.outage / 60:g} min outage ({config.pattern}), {config.rate:g} req/s"
    rows = [f"| {head} | naive (timeout only) | tripwire |", "| --- | ---: | ---: |"]

    def row(name: str, f: Any) -> None:
        rows.append(f"| {name} | {f(n)} | {f(g)} |")

    row("requests made by the caller", lambda s: f"{s.requests:,}")
    row("requests that reached the exchange while it was down", lambda s: f"{s.hits_down:,}")
    row(f"failures answered fast (< {FAST * 1e3:.0f} ms)", lambda s: f"{s.fast_failures:,}")
    row("failures answered slowly", lambda s: f"{s.slow_failures:,}")
    row("peak requests in flight to the exchange", lambda s: f"{s.peak_in_flight:,}")
    row("peak caller requests waiting", lambda s: f"{s.peak_waiting:,}")
    row("calls refused by the full bulkhead", lambda s: f"{s.bulkhead_full:,}")
    row("peak heap of the client's runtime", lambda s: "not measured")
    row("caller latency p50 / p99 / max", lambda s: " / ".join(
        _dur(_quantile(s.latencies, q)) for q in (0.5, 0.99, 1.0)))
    row("order books served stale (oldest)",
        lambda s: f"{s.stale:,} ({_dur(s.stale_max_age)})" if s.stale else "0")
    row("balances served stale", lambda s: f"{s.stale_balances:,}")
    row("balance requests answered with an error", lambda s: f"{s.balance_errors:,}")
    row("first success after the exchange came back", lambda s: "none" if s.recovery is None else _dur(s.recovery))
    rows.append("")
    rows.append(f"Times are on the scenario's clock (the run is {config.scale:g}x faster than real life: "
                f"{_dur(wall)} of wall time). Heap is not measured in Python.")
    return "\n".join(rows)


def _duration(v: str) -> float:
    units = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
    num = v.rstrip("minsh")
    unit = v[len(num):] or "s"
    try:
        secs = float(num) * units[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"{v!r} is not a duration such as 30m, 90s or 1h") from None
    if not 1 <= secs <= 86400:
        raise argparse.ArgumentTypeError(f"{v!r} must be between 1s and 24h")
    return secs


def _positive(v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        x = -1.0
    if not (x > 0 and math.isfinite(x)):
        raise argparse.ArgumentTypeError(f"{v!r} is not a positive number")
    return x


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line; see ``--help``."""
    p = argparse.ArgumentParser(
        prog="python -m tripwire.demo",
        description="An exchange outage, replayed on 127.0.0.1 and measured: a naive client and one "
        "behind tripwire poll a simulated exchange side by side.",
    )
    p.add_argument("--rate", type=_positive, default=10.0, help="requests per second per client (default 10)")
    p.add_argument("--outage", type=_duration, default=600.0, help="how long the exchange is down: 10m, 90s, 1h (default 10m)")
    p.add_argument("--scale", type=_positive, default=24.0, help="replay this many times faster (default 24)")
    p.add_argument("--pattern", choices=PATTERNS, default="mixed", help="how the exchange fails (default mixed)")
    p.add_argument("--seed", type=int, default=7, help="seed of the random 503s and the jitter (default 7)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--client", choices=CLIENTS, default=None,
                   help="ccxt's binance class (the default, when ccxt is installed) or plain HTTP")
    a = p.parse_args(argv)
    client = a.client or ("ccxt" if _has_ccxt() else "http")
    if client == "ccxt" and not _has_ccxt():
        p.error("--client ccxt needs ccxt: pip install 'tripwire[ccxt]'")
    if a.rate * a.scale > 1000:
        p.error(f"--rate {a.rate:g} at --scale {a.scale:g} is {a.rate * a.scale:.0f} requests per second "
                "per client in real time; keep it under 1000")
    config = Config(rate=a.rate, outage=a.outage, scale=a.scale, pattern=a.pattern, seed=a.seed,
                    live=not a.quiet, client=client)
    how = ("through ccxt's binance class" if client == "ccxt" else
           "over plain HTTP" + ("" if a.client else " (pip install 'tripwire[ccxt]' to run them through ccxt)"))
    print(f"A simulated exchange on 127.0.0.1 goes down for {config.outage / 60:g} min ({config.pattern}); "
          f"two clients poll it at {config.rate:g} req/s each, {how}.\n"
          f"Replayed {config.scale:g}x faster than real life; times below are on the scenario's clock.\n")
    started = time.monotonic()
    stats = run(config)
    print("\n" + table(config, stats, time.monotonic() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
