"""tripwire.Fleet: Python breakers on the Rust fleet link, across processes.

Needs a Redis: TRIPWIRE_TEST_REDIS=redis://127.0.0.1:PORT (.ci/run sets it);
the tests that link are skipped, saying so, without it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid

import pytest

import tripwire

KEY = b"0123456789abcdef0123456789abcdef"
REDIS = os.environ.get("TRIPWIRE_TEST_REDIS")
needs_redis = pytest.mark.skipif(not REDIS, reason="set TRIPWIRE_TEST_REDIS (.ci/run does) to run the fleet tests")

HOST = """
import sys, time, tripwire
url, ns = sys.argv[1], sys.argv[2]
b = tripwire.Breaker(name="exchange", failure_threshold=1, open_timeout=5.0)
fleet = tripwire.Fleet(url, ns, b"0123456789abcdef0123456789abcdef")
fleet.join(b)
assert fleet.wait_linked(5.0), fleet.snapshot()
print("ready", flush=True)
deadline = time.monotonic() + 5
while b.state != "open" and time.monotonic() < deadline:
    time.sleep(0.001)
refused = 0
for _ in range(50):
    try:
        with b:
            pass
    except tripwire.CircuitOpenError:
        refused += 1
print("done", b.state, refused, fleet.snapshot()["received"], flush=True)
"""


class Down(Exception):
    pass


@needs_redis
def test_one_process_trips_and_two_others_refuse() -> None:
    assert REDIS is not None
    ns = f"py-{uuid.uuid4().hex}"
    hosts = [
        subprocess.Popen(
            [sys.executable, "-c", HOST, REDIS, ns], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    for h in hosts:
        assert h.stdout is not None
        assert h.stdout.readline().strip() == "ready"
    b = tripwire.Breaker(name="exchange", failure_threshold=1, open_timeout=5.0)
    fleet = tripwire.Fleet(REDIS, ns, KEY)
    fleet.join(b)
    assert fleet.wait_linked(5.0)

    @b
    def call() -> None:
        raise Down

    with pytest.raises(Down):
        call()
    assert b.state == "open"
    for h in hosts:
        out, _ = h.communicate(timeout=10)
        assert out.split() == ["done", "open", "50", "1"], out
    # The link counts a message after Redis answers the publish, which may
    # come after the hosts heard it.
    deadline = time.monotonic() + 5.0
    while fleet.snapshot()["sent"] != 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert fleet.snapshot()["sent"] == 1
    assert 'tripwire_fleet_sent_total{fleet="' + ns + '"} 1' in fleet.prometheus()


def test_bad_settings_are_value_and_type_errors() -> None:
    with pytest.raises(ValueError, match="key"):
        tripwire.Fleet("redis://127.0.0.1:1", "ns", b"short")
    with pytest.raises(ValueError, match="invalid fleet config: key, expected random bytes, not one byte repeated"):
        tripwire.Fleet("redis://127.0.0.1:1", "ns", bytes(16))
    with pytest.raises(ValueError, match="fleet config: key, expected"):
        tripwire.Fleet("redis://127.0.0.1:1", "ns", "x" * 32)
    with pytest.raises(ValueError, match="namespace"):
        tripwire.Fleet("redis://127.0.0.1:1", "a b", KEY)
    with pytest.raises(ValueError, match="Redis"):
        tripwire.Fleet("http://nowhere", "ns", KEY)
    with pytest.raises(TypeError, match="key"):
        tripwire.Fleet("redis://127.0.0.1:1", "ns", 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        tripwire.Fleet("redis://127.0.0.1:1", "ns", KEY, probe_timeout=-1.0)
    with pytest.raises(ValueError, match="invalid fleet config: lease_lead = 61s, expected from 1 ms to 60 s"):
        tripwire.Fleet("redis://127.0.0.1:1", "ns", KEY, lease_lead=61.0)


def says_why(fleet: tripwire.Fleet, *words: str) -> str:
    """Waits (at most 3 s) for a last error holding `words` and a failed attempt."""
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        why = fleet.last_error
        failed = fleet.snapshot()["connect_failures"]
        if why is not None and all(w in why for w in words) and failed >= 1:
            assert fleet.link_state == "down"
            return why
        time.sleep(0.005)
    raise AssertionError(f"last error {fleet.last_error!r}, {fleet.snapshot()}: no {words}")


def test_a_port_nothing_listens_on_is_the_last_error() -> None:
    fleet = tripwire.Fleet("redis://127.0.0.1:1", "faults", KEY, connect_timeout=0.05)
    says_why(fleet, "connect: Connection refused")


@needs_redis
def test_a_wrong_password_and_a_missing_database_are_the_last_error() -> None:
    assert REDIS is not None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    own = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 5
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.01)
        subprocess.run(
            ["redis-cli", "-p", str(port), "CONFIG", "SET", "requirepass", "s3cret"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        wrong = tripwire.Fleet(f"redis://127.0.0.1:{port}", "faults", KEY, password="guess")
        why = says_why(wrong, "AUTH failed", "WRONGPASS")
        assert "guess" not in why
        del wrong
    finally:
        own.kill()
        own.wait()
    db99 = tripwire.Fleet(REDIS.rstrip("/") + "/99", "faults", KEY)
    # The text Rust and C read.
    says_why(db99, "SELECT 99: ResponseError: DB index is out of range")
    fine = tripwire.Fleet(REDIS, "faults", KEY)
    assert fine.wait_linked(5.0)
    assert fine.last_error is None and fine.snapshot()["connect_failures"] == 0


def test_unlinked_a_joined_breaker_is_a_plain_local_one() -> None:
    fleet = tripwire.Fleet("redis://127.0.0.1:1", "alone", KEY, connect_timeout=0.05)
    b = tripwire.Breaker(name="exchange", failure_threshold=1, open_timeout=0.05)
    fleet.join(b)
    with pytest.raises(ValueError, match="name"):
        fleet.join(tripwire.Breaker())
    with pytest.raises(ValueError, match="joined already"):
        fleet.join(b)
    assert not fleet.wait_linked(0.2)
    assert fleet.link_state == "down"
    with pytest.raises(Down):
        with b:
            raise Down
    time.sleep(0.1)
    with b:
        pass
    assert b.state == "closed"


def test_prometheus_text_carries_the_link_of_a_joined_breaker() -> None:
    # Unlinked (nothing listens on port 1) is a state the export shows too.
    ns = f"py-export-{uuid.uuid4().hex}"
    other = f"py-export-{uuid.uuid4().hex}"
    fleet = tripwire.Fleet("redis://127.0.0.1:1", ns, KEY, connect_timeout=0.05)
    lonely = tripwire.Fleet("redis://127.0.0.1:1", other, KEY, connect_timeout=0.05)
    b = tripwire.Breaker(name=f"exchange-{ns}", failure_threshold=1)
    assert f'fleet="{ns}"' not in tripwire.prometheus_text()
    fleet.join(b)
    text = tripwire.prometheus_text()
    assert f'tripwire_fleet_link_state{{fleet="{ns}",state="down"}} 1' in text.splitlines(), text
    for family in ("sent", "received", "dropped", "reconnects"):
        assert f'tripwire_fleet_{family}_total{{fleet="{ns}"}} 0' in text.splitlines(), text
    assert f'tripwire_fleet_rejected_total{{fleet="{ns}",reason="replayed"}} 0' in text.splitlines()
    # The fleet's own lines, the same in both exports; no fleet none of the
    # named breakers joined.
    # The link keeps trying port 1 between the two reads, so its failure
    # count may only have grown; every other line is the same.
    mine = [line for line in text.splitlines() if f'fleet="{ns}"' in line]
    own = [line for line in fleet.prometheus().splitlines() if f'fleet="{ns}"' in line]
    assert [line.rsplit(" ", 1)[0] for line in mine] == [line.rsplit(" ", 1)[0] for line in own]
    for before, after in zip(mine, own):
        if before.startswith("tripwire_fleet_connect_failures_total"):
            assert int(before.rsplit(" ", 1)[1]) <= int(after.rsplit(" ", 1)[1])
        else:
            assert before == after
    assert f'fleet="{other}"' not in text
    del lonely


@needs_redis
def test_prometheus_text_counts_what_the_link_sent() -> None:
    assert REDIS is not None
    ns = f"py-export-{uuid.uuid4().hex}"
    fleet = tripwire.Fleet(REDIS, ns, KEY)
    b = tripwire.Breaker(name=f"exchange-{ns}", failure_threshold=1, open_timeout=5.0)
    fleet.join(b)
    assert fleet.wait_linked(5.0)
    with pytest.raises(Down):
        with b:
            raise Down
    deadline = time.monotonic() + 2
    while fleet.snapshot()["sent"] != 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    text = tripwire.prometheus_text()
    assert f'tripwire_fleet_link_state{{fleet="{ns}",state="up"}} 1' in text.splitlines(), text
    assert f'tripwire_fleet_sent_total{{fleet="{ns}"}} 1' in text.splitlines(), text


def test_dropping_a_fleet_whose_server_never_answers_lets_other_threads_call() -> None:
    # A server that accepts and never answers: the link's drop waits for
    # its connection attempts, at most the longer of the two timeouts.
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    port = server.getsockname()[1]
    fleet = tripwire.Fleet(f"redis://127.0.0.1:{port}", "silent", KEY, connect_timeout=1.0, io_timeout=0.2)
    fleet.join(tripwire.Breaker(name="exchange"))
    deadline = time.monotonic() + 2
    while len(held) < 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert len(held) >= 2, "both connections accepted"

    other = tripwire.Breaker(name="other")
    stop = threading.Event()
    gaps: list[float] = []

    def calls() -> None:
        last = time.monotonic()
        while not stop.is_set():
            with other:
                pass
            now = time.monotonic()
            gaps.append(now - last)
            last = now
            time.sleep(0.001)

    caller = threading.Thread(target=calls)
    caller.start()
    time.sleep(0.05)
    start = time.monotonic()
    del fleet
    took = time.monotonic() - start
    time.sleep(0.05)
    stop.set()
    caller.join()
    server.close()
    for s in held:
        s.close()
    assert took <= 1.15, f"del fleet took {took:.3f} s"
    # The drop ran without the GIL: the other thread's calls went on.
    assert max(gaps) < 0.25, f"calls stalled {max(gaps):.3f} s while the fleet was dropped"
