"""``python -m tripwire.demo``: an exchange outage, replayed and measured.

The same scenario as ``cargo run --release -p tripwire-demo``: a simulated
exchange on 127.0.0.1 (an asyncio server from the standard library) follows
a script (healthy with random 503s and a 429, maintenance answering 503,
accepting connections and never answering, healthy again), compressed by a
time scale. Two asyncio clients poll it side by side at the same fixed
rate, starting a request every ``1 / rate`` seconds whether earlier ones
have been answered or not: a naive one with a timeout only, and one behind
tripwire (stale fallback → retry with a budget → breaker → bulkhead →
timeout). Every duration is scaled; every time reported is on the
scenario's clock.

One event loop drives both clients, so the defaults are gentler than the
Rust demo's: a 10-minute outage replayed 24 times faster (240 requests a
second per client), about 30 seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import tripwire

HEALTHY, RATE_LIMITED, MAINTENANCE, HANG, RECOVERED = "healthy", "429", "maintenance 503", "hanging", "recovered"
DOWN = (MAINTENANCE, HANG)
PATTERNS = ("503", "hang", "mixed")
#: How long the exchange takes to answer (scenario seconds).
LATENCY = 0.02
#: How long the 429 lasts (scenario seconds).
RATE_LIMIT = 60.0
#: A failure answered faster than this (scenario seconds) never waited for the exchange.
FAST = 0.010


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


class HttpError(Exception):
    """The exchange answered with an error status."""

    def __init__(self, status: int, retry_after: Optional[float] = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


class RateLimited(HttpError):
    """A 429: the exchange asks for less traffic, it is not down."""


class Scenario:
    """The scenario's clock and script."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.spans = timeline(config.outage, config.pattern)
        self.total = self.spans[-1][2]
        self.recovered_at = next(s for p, s, _ in self.spans if p == RECOVERED)
        self.t0 = time.monotonic()

    def now(self) -> float:
        return (time.monotonic() - self.t0) * self.config.scale

    def real(self, seconds: float) -> float:
        return seconds / self.config.scale

    def span_at(self, t: float) -> Span:
        return next((s for s in self.spans if t < s[2]), self.spans[-1])


class Exchange:
    """The simulated exchange: an asyncio HTTP/1.1 server on 127.0.0.1, on
    a thread and event loop of its own."""

    def __init__(self, scenario: Scenario, stats: Dict[str, Stats]) -> None:
        self.scenario = scenario
        self.stats = stats
        self.dice = random.Random(scenario.config.seed)
        self.loop = asyncio.new_event_loop()
        self.port = 0
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), name="exchange", daemon=True)
        self.thread.start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._answer, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()
        # Drop the requests still hanging, then close.
        server.close()
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.close()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        s = self.scenario
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            who = next((ln.split(":", 1)[1].strip() for ln in lines if ln.lower().startswith("x-client:")), "")
            now = s.now()
            phase, _, end = s.span_at(now)
            stats = self.stats.get(who)
            if stats is not None:
                stats.hits += 1
                stats.hits_down += phase in DOWN
            headers = ""
            if phase == HANG:
                # Accepted, never answered while it lasts.
                await asyncio.sleep(s.real(end - now + 60.0))
                status, body = 503, b""
            else:
                await asyncio.sleep(s.real(LATENCY))
                if phase == RATE_LIMITED:
                    status, body = 429, b""
                    headers = f"Retry-After: {max(1, math.ceil(s.real(end - now)))}\r\n"
                elif phase == MAINTENANCE or self.dice.random() < 0.02:
                    status, body = 503, b""
                else:
                    status = 200
                    body = (b'{"asset":"USDT","free":"1250.00"}' if path.endswith("/account")
                            else b'{"bids":[["97000.1","0.5"]],"asks":[["97000.2","0.4"]]}')
            writer.write(
                f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n{headers}Connection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, IndexError):
            pass
        finally:
            writer.close()


class Client:
    """One client: naive (``guarded=False``) or behind tripwire."""

    def __init__(self, name: str, scenario: Scenario, stats: Stats, port: int, guarded: bool) -> None:
        self.name = name
        self.s = scenario
        self.stats = stats
        self.port = port
        self.breaker: Optional[tripwire.Breaker] = None
        c, real = scenario.config, scenario.real
        if guarded:
            self.breaker = tripwire.Breaker(
                name=f"demo/{name}",
                failure_threshold=c.failure_threshold,
                open_timeout=real(c.cool_down),
                ignore_on=(RateLimited, tripwire.BulkheadFullError),
            )
            bulkhead = tripwire.Bulkhead(c.bulkhead)
            budget = tripwire.RetryBudget(0.1, ttl=real(10.0), min_retries_per_sec=c.scale)
            policy = tripwire.retry(
                attempts=3, base=real(0.1), cap=real(1.0), jitter="decorrelated", budget=budget,
                give_up_on=(RateLimited, tripwire.BulkheadFullError), seed=c.seed,
            )

            # Outermost first: retry → breaker → bulkhead → timeout → call.
            @policy
            @self.breaker
            async def attempt(path: str) -> bytes:
                async with bulkhead:
                    body = await asyncio.wait_for(self.get(path), real(c.timeout))
                return body

            self.attempt = attempt
            self.cache = tripwire.StaleCache(policies={"book": real(c.stale_max), "balance": None})

    async def get(self, path: str) -> bytes:
        """One GET; any status but 200 raises ``HttpError``."""
        st = self.stats
        st.in_flight += 1
        st.peak_in_flight = max(st.peak_in_flight, st.in_flight)
        writer = None
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            writer.write(f"GET {path} HTTP/1.1\r\nHost: exchange\r\nx-client: {self.name}\r\n\r\n".encode())
            data = await reader.read()
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ")[1])
            if status == 200:
                return body
            after = next((float(ln.split(":", 1)[1]) for ln in lines if ln.lower().startswith("retry-after:")), None)
            raise (RateLimited if status == 429 else HttpError)(status, after)
        finally:
            st.in_flight -= 1
            if writer is not None:
                writer.close()

    async def request(self, balance: bool) -> None:
        s, st, c = self.s, self.stats, self.s.config
        st.requests += 1
        st.waiting += 1
        st.peak_waiting = max(st.peak_waiting, st.waiting)
        path = "/api/v3/account" if balance else "/api/v3/depth?symbol=BTCUSDT"
        started = time.monotonic()
        fresh, age = False, None
        try:
            if self.breaker is None:
                await asyncio.wait_for(self.get(path), s.real(c.timeout))
                fresh = True
            else:
                got = await self.cache.call_async("balance" if balance else "book", self.attempt, path)
                fresh, age = not got.stale, (got.age * c.scale if got.stale else None)
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

    async def drive(self) -> None:
        s, c = self.s, self.s.config
        period = 1.0 / (c.rate * c.scale)
        end = s.t0 + s.real(s.total)
        tasks = set()
        i, next_at = 0, time.monotonic()
        while next_at < end:
            delay = next_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            # One balance for every three order books.
            task = asyncio.ensure_future(self.request(balance=i % 4 == 3))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            i += 1
            next_at += period
        drain = time.monotonic() + s.real(2 * c.timeout)
        while tasks and time.monotonic() < drain:
            await asyncio.sleep(0.002)
        for t in list(tasks):
            t.cancel()


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
    try:
        clients = [Client(name, scenario, stats[name], exchange.port, name == "tripwire") for name in stats]
        scenario.t0 = time.monotonic()
        done = asyncio.Event()
        show = asyncio.ensure_future(_show(scenario, clients, done)) if config.live else None
        await asyncio.gather(*(c.drive() for c in clients))
        done.set()
        if show is not None:
            await show
    finally:
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
    a = p.parse_args(argv)
    if a.rate * a.scale > 1000:
        p.error(f"--rate {a.rate:g} at --scale {a.scale:g} is {a.rate * a.scale:.0f} requests per second "
                "per client in real time; keep it under 1000")
    config = Config(rate=a.rate, outage=a.outage, scale=a.scale, pattern=a.pattern, seed=a.seed, live=not a.quiet)
    print(f"A simulated exchange on 127.0.0.1 goes down for {config.outage / 60:g} min ({config.pattern}); "
          f"two clients poll it at {config.rate:g} req/s each.\n"
          f"Replayed {config.scale:g}x faster than real life; times below are on the scenario's clock.\n")
    started = time.monotonic()
    stats = run(config)
    print("\n" + table(config, stats, time.monotonic() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
