"""A guarded call with its state shared through Redis: tripwire's breaker
joined to a `tripwire.Fleet` (decisions local, the link in the background)
next to pybreaker's `CircuitRedisStorage` (state read and written in Redis
on every call, as gobreaker v2's distributed breaker does), on the closed
path and the rejection path, in one run. `bench.py` runs it; it needs a
redis-server: `TRIPWIRE_BENCH_REDIS` or `TRIPWIRE_TEST_REDIS` if set, else
one of its own on a free loopback port.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import timeit
import uuid
from typing import Callable, List, Optional, Tuple

import tripwire
from tripwire.compat import pybreaker as compat

try:
    import pybreaker
    import redis
except ImportError:  # pragma: no cover
    pybreaker = None
    redis = None

KEY = b"bench-fleet-key-0123456789abcdef"
#: Calls per round of a candidate that touches Redis on each call (about
#: 100 µs a round trip): enough for a stable best round, few enough that
#: the section takes seconds.
N_REDIS = 2_000


class Server:
    """The Redis to measure against: the one named by the environment, or
    a redis-server of our own, stopped by `stop`."""

    def __init__(self) -> None:
        self.url: Optional[str] = None
        self.why = ""
        self._proc: Optional[subprocess.Popen] = None
        for var in ("TRIPWIRE_BENCH_REDIS", "TRIPWIRE_TEST_REDIS"):
            if os.environ.get(var):
                self.url = os.environ[var]
                return
        exe = shutil.which("redis-server")
        if exe is None:
            self.why = "redis-server not found (Debian/Ubuntu: apt-get install redis-server)"
            return
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self._proc = subprocess.Popen(
            [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                self.url = f"redis://127.0.0.1:{port}"
                return
            except OSError:
                time.sleep(0.02)
        self.stop()
        self.why = f"redis-server did not answer on port {port} within 5 s"

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None


def work(x: int = 1) -> int:
    return x


def swallow(fn: Callable[[], object], exc: type) -> Callable[[], None]:
    def rejected() -> None:
        try:
            fn()
        except exc:
            pass

    return rejected


Row = Tuple[str, Callable[[], object], int]


def candidates(url: str, keep: list) -> Tuple[List[Row], List[Row]]:
    """(closed path, rejection path): each a list of (name, call, calls per
    round). `keep` holds what must outlive the measurement (fleets, clients)."""
    ns = f"bench-{uuid.uuid4().hex[:12]}"
    fleet = tripwire.Fleet(url, ns, KEY)
    keep.append(fleet)
    closed_b = tripwire.Breaker(name="closed", failure_threshold=5, open_timeout=30.0)
    open_b = tripwire.Breaker(name="open", failure_threshold=1, open_timeout=3600.0)
    fleet.join(closed_b)
    fleet.join(open_b)
    if not fleet.wait_linked(5.0):
        raise RuntimeError(f"the fleet link to {url} did not come up: {fleet.snapshot()}")
    try:
        open_b.call(lambda: 1 / 0)
    except ZeroDivisionError:
        pass
    alone = tripwire.Breaker(failure_threshold=5, open_timeout=30.0)
    n = 200_000
    closed: List[Row] = [
        ("tripwire, not joined: decorated call", alone(work), n),
        ("tripwire, fleet-joined: decorated call", closed_b(work), n),
    ]
    rejection: List[Row] = [
        ("tripwire, fleet-joined: rejection + except", swallow(open_b(work), tripwire.CircuitOpenError), n),
    ]

    cs = compat.CircuitRedisStorage(compat.STATE_CLOSED, url, namespace=f"{ns}-compat", key=KEY)
    cc = compat.CircuitBreaker(fail_max=5, reset_timeout=30, state_storage=cs)
    os_ = compat.CircuitRedisStorage(compat.STATE_CLOSED, url, namespace=f"{ns}-compat-open", key=KEY)
    co = compat.CircuitBreaker(fail_max=1, reset_timeout=3600, state_storage=os_)
    co.open()
    keep.extend([cc, co])
    closed.append(("tripwire.compat.pybreaker + CircuitRedisStorage: decorated call", cc(work), n // 4))
    rejection.append(
        ("tripwire.compat.pybreaker + CircuitRedisStorage: rejection + except",
         swallow(co(work), compat.CircuitBreakerError), n // 4)
    )

    if pybreaker is not None and redis is not None:
        client = redis.Redis.from_url(url)
        keep.append(client)
        client.get("bench-warm")
        ps = pybreaker.CircuitRedisStorage(pybreaker.STATE_CLOSED, client, namespace=f"{ns}-pybreaker")
        pc = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=30, state_storage=ps)
        pos = pybreaker.CircuitRedisStorage(pybreaker.STATE_CLOSED, client, namespace=f"{ns}-pybreaker-open")
        po = pybreaker.CircuitBreaker(fail_max=1, reset_timeout=3600, state_storage=pos)
        po.open()
        closed.append(("redis-py: one GET (a round trip, reference)", lambda: client.get("bench-warm"), N_REDIS))
        closed.append(("pybreaker + CircuitRedisStorage: decorated call", pc(work), N_REDIS))
        rejection.append(
            ("pybreaker + CircuitRedisStorage: rejection + except",
             swallow(po(work), pybreaker.CircuitBreakerError), N_REDIS)
        )
    return closed, rejection


def measure(rows: List[Row], rounds: int) -> List[Tuple[str, float]]:
    """Best µs per call of each over `rounds` rounds, taking turns."""
    best = [float("inf")] * len(rows)
    for _ in range(rounds):
        for i, (_, fn, n) in enumerate(rows):
            best[i] = min(best[i], timeit.timeit(fn, number=n) / n * 1e6)
    return [(name, us) for (name, _, _), us in zip(rows, best)]


def run(rounds: int) -> Tuple[Optional[Tuple[list, list]], str]:
    """((closed, rejection) figures, "") or (None, why not measured)."""
    server = Server()
    if server.url is None:
        return None, server.why
    keep: list = []
    try:
        closed, rejection = candidates(server.url, keep)
        # One list, so that both paths share every round's conditions.
        figures = measure(closed + rejection, rounds)
    finally:
        keep.clear()
        server.stop()
    return (figures[: len(closed)], figures[len(closed):]), ""


def ratio(figures: List[Tuple[str, float]], name: str, base: str) -> Optional[float]:
    d = dict(figures)
    return d[name] / d[base] if name in d and base in d else None


PEER_CLOSED = "pybreaker + CircuitRedisStorage: decorated call"
PEER_REJECTED = "pybreaker + CircuitRedisStorage: rejection + except"
OURS_CLOSED = "tripwire, fleet-joined: decorated call"
OURS_REJECTED = "tripwire, fleet-joined: rejection + except"
NOTE = (
    "pybreaker's CircuitRedisStorage reads the state from Redis on every call and writes its counter "
    "on every success: the \"Redis on every call\" design gobreaker v2's distributed breaker shares, "
    "so its row is that design's cost. tripwire's joined breaker decides locally; its link publishes "
    "transitions from a background thread."
)


def text(result, why: str) -> str:
    if result is None:
        return f"# fleet: not measured: {why}\n"
    closed, rejection = result
    lines = ["# shared state through Redis (loopback), best round"]
    for title, table, base in (("closed path", closed, OURS_CLOSED), ("rejection path", rejection, OURS_REJECTED)):
        lines.append(f"## {title}")
        for name, us in table:
            r = ratio(table, name, base)
            lines.append(f"{name:70} {us:9.3f} µs  {r:9.1f}×" if r else f"{name:70} {us:9.3f} µs")
    lines.append(NOTE)
    return "\n".join(lines) + "\n"


def markdown(result, why: str) -> str:
    out = ["### Shared state through Redis: tripwire's fleet next to pybreaker's CircuitRedisStorage\n"]
    if result is None:
        return out[0] + f"\nNot measured in this run: {why}.\n"
    closed, rejection = result
    out.append(
        "One redis-server on loopback, the same run; µs per call (best round) and the ratio to tripwire's "
        "fleet-joined breaker on the same path.\n"
    )
    for title, table, base in (("closed path", closed, OURS_CLOSED), ("rejection path", rejection, OURS_REJECTED)):
        out.append(f"| {title} | µs per call | × tripwire, fleet-joined |")
        out.append("| --- | --- | --- |")
        for name, us in table:
            r = ratio(table, name, base)
            out.append(f"| {name} | {us:.3f} | {r:.1f} |" if r else f"| {name} | {us:.3f} | |")
        out.append("")
    c, r = ratio(closed, PEER_CLOSED, OURS_CLOSED), ratio(rejection, PEER_REJECTED, OURS_REJECTED)
    if c and r:
        out.append(f"pybreaker + CircuitRedisStorage ÷ tripwire fleet-joined: **{c:.0f}×** on the closed path, "
                   f"**{r:.0f}×** on the rejection path.\n")
    out.append(NOTE + "\n")
    return "\n".join(out)
