"""The fake exchange itself, spoken to over raw HTTP: its modes, its
signature check, and a shutdown that cancels nothing."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import time
import urllib.error
import urllib.request
from typing import Any, Dict, Optional, Tuple

import pytest

from tripwire import _fake_exchange as fx


def get(fake: fx.FakeExchange, path: str, headers: Optional[Dict[str, str]] = None,
        timeout: float = 2.0) -> Tuple[int, Dict[str, str], Any]:
    request = urllib.request.Request(fake.url + path, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, dict(r.headers), json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read() or b"null")


@pytest.fixture
def fake() -> Any:
    with fx.FakeExchange(retry_after=7) as f:
        yield f


def test_public_endpoints_answer_in_binances_shapes(fake: fx.FakeExchange) -> None:
    assert get(fake, "/api/v3/ping")[::2] == (200, {})
    status, _, info = get(fake, "/api/v3/exchangeInfo")
    assert status == 200 and [m["symbol"] for m in info["symbols"]] == ["BTCUSDT", "ETHUSDT"]
    status, _, book = get(fake, "/api/v3/depth?symbol=BTCUSDT&limit=3")
    assert status == 200 and len(book["bids"]) == 3 and float(book["bids"][0][0]) < float(book["asks"][0][0])
    assert get(fake, "/api/v3/depth?symbol=NOPE")[::2] == (400, {"code": -1121, "msg": "Invalid symbol."})
    assert get(fake, "/api/v3/nothing")[0] == 404
    assert fake.hits("/api/v3/depth") == 2 and fake.hits(method="GET") == 5


def test_outage_modes(fake: fx.FakeExchange) -> None:
    fake.mode = fx.MAINTENANCE
    assert get(fake, "/api/v3/ping")[::2] == (503, fx.MAINTENANCE_BODY)
    fake.mode = fx.UNAVAILABLE
    assert get(fake, "/api/v3/ping")[::2] == (503, None)
    for mode, status in ((fx.RATE_LIMITED, 429), (fx.BANNED, 418)):
        fake.mode = mode
        code, headers, _ = get(fake, "/api/v3/ping")
        assert (code, headers["Retry-After"]) == (status, "7")
    fake.script = lambda r: (fx.RATE_LIMITED, 2.5)
    assert get(fake, "/api/v3/ping")[1]["Retry-After"] == "2.5"
    fake.script = None
    fake.mode = fx.HANG
    started = time.monotonic()
    with pytest.raises(OSError):  # a timeout: accepted, never answered
        get(fake, "/api/v3/ping", timeout=0.2)
    assert 0.2 <= time.monotonic() - started < 2.0
    fake.mode = fx.HEALTHY
    assert get(fake, "/api/v3/ping")[0] == 200


def test_signed_endpoints_check_key_and_signature(fake: fx.FakeExchange) -> None:
    query = "timestamp=1700000000000&recvWindow=10000"
    signature = hmac.new(fake.secret.encode(), query.encode(), hashlib.sha256).hexdigest()
    key = {"X-MBX-APIKEY": fake.api_key}
    status, _, account = get(fake, f"/api/v3/account?{query}&signature={signature}", key)
    assert status == 200 and {b["asset"] for b in account["balances"]} >= {"USDT", "BTC"}
    assert get(fake, f"/api/v3/account?{query}&signature={signature}")[::2] == (
        401, {"code": -2014, "msg": "API-key format invalid."})
    assert get(fake, f"/api/v3/account?{query}&signature={'0' * 64}", key)[2]["code"] == -1022
    assert get(fake, f"/api/v3/account?{query}", key)[2]["code"] == -1022


def test_garbage_does_not_stop_the_server(fake: fx.FakeExchange) -> None:
    with socket.create_connection(("127.0.0.1", fake.port), timeout=2) as s:
        s.sendall(b"\x00\xffgarbage\r\n\r\n")
        assert s.recv(100) == b""  # closed
    assert get(fake, "/api/v3/ping")[0] == 200


def test_stop_ends_every_connection_without_cancelling_a_handler() -> None:
    # Some Python versions (3.12.0, 3.12.1) print a traceback for every
    # connection handler that ends cancelled; the demo used to cancel
    # thousands of hanging ones on exit.
    fake = fx.FakeExchange()
    fake.mode = fx.HANG
    hanging = socket.create_connection(("127.0.0.1", fake.port))
    hanging.sendall(b"GET /api/v3/ping HTTP/1.1\r\nHost: x\r\n\r\n")
    idle = socket.create_connection(("127.0.0.1", fake.port))  # sends nothing
    half = socket.create_connection(("127.0.0.1", fake.port))
    half.sendall(b"GET /api/v3/ping HTTP/1.1\r\nHost")
    deadline = time.monotonic() + 5
    while (len(fake._handlers) < 3 or fake.hits() < 1) and time.monotonic() < deadline:
        time.sleep(0.01)
    handlers = set(fake._handlers)
    assert len(handlers) == 3
    started = time.monotonic()
    fake.stop()
    assert time.monotonic() - started < 2.0
    assert all(t.done() and not t.cancelled() for t in handlers)
    for s in (hanging, idle, half):
        s.settimeout(2)
        assert s.recv(100) == b""  # closed by the server, unanswered
        s.close()
    fake.stop()  # twice is harmless


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="latency"):
        fx.FakeExchange(latency=-1)
    with fx.FakeExchange() as fake:
        with pytest.raises(ValueError, match="sideways"):
            fake.mode = "sideways"
        # A script's unknown mode closes that connection; the server goes on.
        fake.script = lambda r: "sideways"
        with pytest.raises(OSError):
            get(fake, "/api/v3/ping")
        fake.script = None
        assert get(fake, "/api/v3/ping")[0] == 200
