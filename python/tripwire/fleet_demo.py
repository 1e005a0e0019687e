"""``python -m tripwire.fleet_demo``: several client processes on one fleet,
against one exchange that goes down.

The Python face of ``cargo run --release -p tripwire-demo --bin fleet``:
two groups of ``--hosts`` processes poll one exchange on 127.0.0.1 at the
same rate, each through its own ``tripwire.Breaker``; one group's breakers
are joined to one ``tripwire.Fleet`` over Redis, the other's are alone. The
exchange answers 503 for ``--outage`` seconds and logs who called it. The
table gives, per process and in total, the calls that reached the dead
exchange, and the probes per cool-down fleet-wide: the fleet sends one, the
lone processes one each.

Needs a redis-server: ``TRIPWIRE_DEMO_REDIS=redis://HOST:PORT`` (or
``TRIPWIRE_TEST_REDIS``), else ``redis-server`` on the ``PATH``, started on
a free loopback port and stopped. Without one it says how to get it and
exits with status 2.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, List, Optional, Sequence, Tuple

import tripwire

#: The key every process of the demo's fleet signs with.
KEY = b"tripwire-demo-fleet-key-32-bytes"
#: The variables that name a Redis to use, in the order they are read.
REDIS_VARS = ("TRIPWIRE_DEMO_REDIS", "TRIPWIRE_TEST_REDIS")
NO_REDIS = (
    "The fleet demo needs a Redis server: install redis-server (Debian/Ubuntu: "
    "`sudo apt-get install redis-server`; macOS: `brew install redis`) and run it again, or point it "
    "at one with TRIPWIRE_DEMO_REDIS=redis://HOST:PORT.\n"
    "(The main demo, `python -m tripwire.demo`, needs no Redis.)"
)


@dataclass(frozen=True)
class Hit:
    """One request the exchange received."""

    fleet: bool
    host: int
    at: float
    down: bool


class _Handler(BaseHTTPRequestHandler):
    """Answers and logs one request for the `Exchange` its server serves."""

    server: "_Server"

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        ex = self.server.exchange
        down, at = ex.down, time.monotonic() - ex.started
        parts = self.path.strip("/").split("/")
        if len(parts) == 2 and parts[0] in ("fleet", "alone") and parts[1].isdigit():
            with ex.lock:
                ex.hits.append(Hit(parts[0] == "fleet", int(parts[1]), at, down))
        body = b"maintenance" if down else b"ok"
        self.send_response(503 if down else 200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, exchange: "Exchange") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.exchange = exchange


class Exchange:
    """Plain HTTP on 127.0.0.1: 200, or 503 at once while down; logs every
    ``GET /<fleet|alone>/<host>``."""

    def __init__(self) -> None:
        self.down = False
        self.hits: List[Hit] = []
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self._server = _Server(self)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def set_down(self, down: bool) -> float:
        """Takes it down or brings it back; returns the time since it started."""
        self.down = down
        return time.monotonic() - self.started

    def log(self) -> List[Hit]:
        with self.lock:
            return sorted(self.hits, key=lambda h: h.at)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Redis:
    """The Redis the environment names, or a redis-server of our own."""

    def __init__(self) -> None:
        self._proc: Optional["subprocess.Popen[bytes]"] = None
        named = [os.environ[v] for v in REDIS_VARS if os.environ.get(v)]
        if named:
            self.url = named[0]
            return
        exe = shutil.which("redis-server")
        if exe is None:
            raise LookupError(f"redis-server is not on the PATH and none of {', '.join(REDIS_VARS)} is set")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self._proc = subprocess.Popen(
            [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"redis://127.0.0.1:{port}"
        deadline = time.monotonic() + 5
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.close()
                    raise LookupError(f"redis-server did not answer on port {port} within 5 s") from None
                time.sleep(0.02)

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None


class Down(Exception):
    """The exchange did not answer 200."""


def _get(port: int, group: str, host: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=0.5)
    try:
        conn.request("GET", f"/{group}/{host}")
        status = conn.getresponse().status
    except OSError as e:
        raise Down(str(e)) from e
    finally:
        conn.close()
    if status != 200:
        raise Down(f"HTTP {status}")


def host(argv: Sequence[str]) -> int:
    """One client process: ``--host fleet|alone INDEX PORT RATE THRESHOLD
    COOL_DOWN [REDIS_URL NAMESPACE]``. Prints ``ready``, polls from ``go``
    to ``stop``, prints ``done SENT REFUSED``."""
    group, index, port, rate, threshold, cool = argv[:6]
    b = tripwire.Breaker(name="exchange", failure_threshold=int(threshold), open_timeout=float(cool))
    fleet = None
    if group == "fleet":
        url, ns = argv[6], argv[7]
        # The lease asked for a quarter of a cool-down early leaves a loaded
        # machine room to answer before the wait ends.
        fleet = tripwire.Fleet(url, ns, KEY, lease_lead=float(cool) / 4)
        fleet.join(b)
        if not fleet.wait_linked(10.0):
            print(f"fleet host: no link to {url} within 10 s: {fleet.snapshot()}", file=sys.stderr)
            return 1
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 1
    stop = threading.Event()

    def until_stop() -> None:
        # `stop`, or the input closing: either ends the run.
        sys.stdin.readline()
        stop.set()

    threading.Thread(target=until_stop, daemon=True).start()
    sent = refused = 0
    every, nxt = 1.0 / float(rate), time.monotonic()
    while not stop.is_set():
        try:
            with b:
                sent += 1
                _get(int(port), group, int(index))
        except tripwire.CircuitOpenError:
            refused += 1
        except Down:
            pass
        nxt += every
        now = time.monotonic()
        if nxt > now:
            time.sleep(nxt - now)
        else:
            nxt = now
    print(f"done {sent} {refused}", flush=True)
    return 0


@dataclass
class Group:
    """One group's figures: per process, the calls that reached the dead
    exchange and the calls refused; the calls of each burst (calls less than
    half a cool-down apart): the trip first, then a cool-down's probes each;
    the time from the return to the last process's first answered call."""

    hits_down: List[int] = field(default_factory=list)
    refused: List[int] = field(default_factory=list)
    bursts: List[int] = field(default_factory=list)
    recovery: Optional[float] = None

    @property
    def probes(self) -> List[int]:
        return self.bursts[1:]


def summarise(hits: Sequence[Hit], hosts: int, up_at: float, cool: float) -> Group:
    g = Group()
    down = [h for h in hits if h.down]
    g.hits_down = [sum(1 for h in down if h.host == i) for i in range(hosts)]
    last: Optional[float] = None
    for h in down:
        if last is not None and h.at - last < cool / 2:
            g.bursts[-1] += 1
        else:
            g.bursts.append(1)
        last = h.at
    back = [next((h.at - up_at for h in hits if h.host == i and not h.down and h.at > up_at), None)
            for i in range(hosts)]
    g.recovery = None if any(t is None for t in back) else max(t for t in back if t is not None)
    return g


def run(hosts: int = 4, rate: float = 20.0, threshold: int = 3, cool_down: float = 1.0,
        outage: float = 10.0, up: float = 1.0, after: float = 2.0) -> Tuple[Group, Group]:
    """Runs both groups; returns (fleet, alone). Raises LookupError without
    a Redis."""
    redis = Redis()
    exchange = Exchange()
    ns = f"tripwire-py-demo-{uuid.uuid4().hex[:12]}"
    procs: List["subprocess.Popen[str]"] = []
    try:
        for group in ("fleet", "alone"):
            for i in range(hosts):
                args = [group, str(i), str(exchange.port), str(rate), str(threshold), str(cool_down)]
                if group == "fleet":
                    args += [redis.url, ns]
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "tripwire.fleet_demo", "--host", *args],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                ))
        for p in procs:
            assert p.stdout is not None
            line = p.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"a client process said {line!r} instead of ready (exit {p.poll()})")
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        time.sleep(up)
        exchange.set_down(True)
        time.sleep(outage)
        up_at = exchange.set_down(False)
        time.sleep(after)
        done = []
        for p in procs:
            assert p.stdin is not None and p.stdout is not None
            p.stdin.write("stop\n")
            p.stdin.flush()
        for p in procs:
            assert p.stdout is not None
            fields = p.stdout.readline().split()
            if len(fields) != 3 or fields[0] != "done":
                raise RuntimeError(f"a client process said {' '.join(fields)!r}")
            done.append(int(fields[2]))
        log = exchange.log()
        groups = []
        for k, fleet in enumerate((True, False)):
            g = summarise([h for h in log if h.fleet == fleet], hosts, up_at, cool_down)
            g.refused = done[k * hosts:(k + 1) * hosts]
            groups.append(g)
        return groups[0], groups[1]
    finally:
        for p in procs:
            p.kill()
            p.wait()
        exchange.close()
        redis.close()


def table(hosts: int, fleet: Group, alone: Group) -> str:
    head = "| calls that reached the dead exchange | " + " | ".join(f"process {i + 1}" for i in range(hosts))
    rows = [head + " | total |", "|---" * (hosts + 2) + "|"]
    for name, g in (("each process alone", alone), ("one fleet over Redis", fleet)):
        rows.append(f"| {name} | " + " | ".join(map(str, g.hits_down)) + f" | **{sum(g.hits_down)}** |")
    rows += ["", "| fleet-wide, per cool-down | trip | probes per cool-down (each one) | most | back after the return |",
             "|---|---|---|---|---|"]
    for name, g in (("each process alone", alone), ("one fleet over Redis", fleet)):
        back = f"{g.recovery * 1000:.0f} ms" if g.recovery is not None else "not back"
        rows.append(f"| {name} | {g.bursts[0] if g.bursts else 0} | {' '.join(map(str, g.probes)) or 'none'} | "
                    f"**{max(g.probes, default=0)}** | {back} |")
    return "\n".join(rows)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line; see ``--help``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--host"]:
        return host(args[1:])
    p = argparse.ArgumentParser(
        prog="python -m tripwire.fleet_demo",
        description="Client processes sharing one fleet over Redis, next to as many alone, against one "
        "exchange that goes down: the calls that reach the dead exchange, and the probes per cool-down.",
    )
    p.add_argument("--hosts", type=int, default=4, choices=range(1, 33), metavar="N",
                   help="client processes per group, 1 to 32 (default 4)")
    p.add_argument("--outage", type=float, default=10.0, help="seconds the exchange is down (default 10)")
    p.add_argument("--rate", type=float, default=20.0, help="requests per second per process (default 20)")
    a = p.parse_args(args)
    if not 2 <= a.outage <= 600:
        p.error("--outage must be between 2 and 600 seconds")
    if not 0 < a.rate <= 200:
        p.error("--rate must be above 0 and at most 200")
    print(f"{a.hosts} + {a.hosts} client processes, one exchange on 127.0.0.1 down for {a.outage:g} s; "
          f"breakers trip after 3 failures, cool-down 1 s; about {a.outage + 4:.0f} s.\n", flush=True)
    try:
        fleet, alone = run(hosts=a.hosts, rate=a.rate, outage=a.outage)
    except LookupError as e:
        print(f"error: {e}.\n{NO_REDIS}", file=sys.stderr)
        return 2
    print(table(a.hosts, fleet, alone))
    return 0


if __name__ == "__main__":
    sys.exit(main())
