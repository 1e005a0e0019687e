"""A local exchange for the demo and the tests: an HTTP/1.1 server on
127.0.0.1 that answers the Binance spot REST calls ccxt's ``binance`` class
makes, and that can be put into the outages exchanges really have.

>>> fake = FakeExchange()
>>> exchange = ccxt.binance({"apiKey": fake.api_key, "secret": fake.secret, "enableRateLimit": False})
>>> fake.point(exchange)                 # every URL of the exchange now leads here
>>> exchange.fetch_order_book("BTC/USDT")
>>> fake.mode = MAINTENANCE              # 503 "System is under maintenance."
>>> fake.stop()

The endpoints (Binance's shapes, as ccxt parses them): ``GET /api/v3/ping``,
``/api/v3/time``, ``/api/v3/exchangeInfo`` (BTC/USDT and ETH/USDT),
``/api/v3/depth``, the signed ``GET /api/v3/account``, ``POST`` and
``DELETE /api/v3/order``. Signed calls are checked as Binance checks them
(the ``X-MBX-APIKEY`` header and an HMAC-SHA256 ``signature`` over the rest
of the query), so a wrong key fails as it would for real.

The modes, for every endpoint: ``HEALTHY``; ``MAINTENANCE`` (503 with
Binance's maintenance message: ccxt raises ``OnMaintenance``);
``UNAVAILABLE`` (a bare 503: ``ExchangeNotAvailable``); ``HANG`` (the
connection is accepted and never answered); ``RATE_LIMITED`` (429) and
``BANNED`` (418), both with ``Retry-After: retry_after``. ``script``, if
given, picks the mode of each request instead (the demo's timeline): a
mode, or a mode and the ``Retry-After`` to send with it.

The server runs on a thread with its own event loop, so a blocking client
(ccxt's sync classes) and an asyncio one can both call it. ``stop()``
answers nothing more, closes every connection and lets each handler return
normally: no handler is cancelled, so no event loop reports one.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, Union
from urllib.parse import parse_qsl, urlsplit, urlunsplit

HEALTHY = "healthy"
MAINTENANCE = "maintenance"
UNAVAILABLE = "unavailable"
HANG = "hang"
RATE_LIMITED = "rate_limited"
BANNED = "banned"
MODES = (HEALTHY, MAINTENANCE, UNAVAILABLE, HANG, RATE_LIMITED, BANNED)

#: Options that keep ccxt's binance on the spot endpoints this server has
#: (no futures, margin or wallet calls on ``load_markets``).
CCXT_OPTIONS: Dict[str, Any] = {
    "fetchMarkets": {"types": ["spot"]},
    "fetchCurrencies": False,
    "fetchMargins": False,
}

#: The longest a hanging request is held (seconds) if nothing ends it first.
LONGEST_HANG = 600.0


@dataclass(frozen=True)
class Request:
    """One request as the server read it; ``client`` is its ``x-client``
    header (empty if none)."""

    method: str
    path: str
    query: Dict[str, str]
    headers: Dict[str, str]
    body: str
    client: str
    raw_query: str = ""
    at: float = field(default_factory=time.monotonic)


def point_at(exchange: Any, port: int) -> Any:
    """``FakeExchange.point`` for the server on ``port`` (from another
    process, which has only the port)."""

    def rehost(urls: Any) -> Any:
        if isinstance(urls, dict):
            return {k: rehost(v) for k, v in urls.items()}
        if isinstance(urls, str):
            parts = urlsplit(urls)
            return urlunsplit(("http", f"127.0.0.1:{port}", parts.path, parts.query, ""))
        return urls

    exchange.urls["api"] = rehost(exchange.urls["api"])
    exchange.options.update(CCXT_OPTIONS)
    return exchange


@dataclass(frozen=True)
class WeightRules:
    """Binance's limits on request weight, per IP (every client of this
    server is one IP): ``limit`` weight per fixed ``window`` (seconds;
    windows start on multiples of it since the Unix epoch, as Binance's
    minutes do); past it, 429 with ``Retry-After`` until the window ends;
    ``ban_after`` requests sent during that wait earn a 418 ban of
    ``ban_for`` seconds. Weights: ``/api/v3/depth`` 5 up to 100 levels (25,
    50, 250 beyond), ``/api/v3/account`` and ``/api/v3/exchangeInfo`` 20,
    everything else 1."""

    limit: int = 6000
    window: float = 60.0
    ban_after: int = 3
    ban_for: float = 120.0


def weight_of(r: "Request") -> int:
    """A request's weight, as Binance's spot API documents it."""
    if r.path == "/api/v3/depth":
        raw = r.query.get("limit", "100")
        levels = int(raw) if raw.isdigit() else 100
        return 5 if levels <= 100 else 25 if levels <= 500 else 50 if levels <= 1000 else 250
    if r.path in ("/api/v3/account", "/api/v3/exchangeInfo"):
        return 20
    return 1


@dataclass
class WeightLedger:
    """What the weight rules did: answers by status, the weight served,
    the 418 bans placed (start, end), and per window the weight served and
    the 429s and 418s answered."""

    statuses: Dict[int, int] = field(default_factory=dict)
    served_weight: int = 0
    bans: List[Tuple[float, float]] = field(default_factory=list)
    per_window: Dict[int, List[int]] = field(default_factory=dict)

    def note(self, window: int, status: int, weight: int) -> None:
        self.statuses[status] = self.statuses.get(status, 0) + 1
        row = self.per_window.setdefault(window, [0, 0, 0])
        if status == 200:
            self.served_weight += weight
            row[0] += weight
        elif status == 429:
            row[1] += 1
        elif status == 418:
            row[2] += 1


@dataclass(frozen=True)
class Response:
    status: int
    body: Any
    headers: Tuple[Tuple[str, str], ...] = ()


def _market(symbol: str, base: str, quote: str) -> Dict[str, Any]:
    return {
        "symbol": symbol,
        "status": "TRADING",
        "baseAsset": base,
        "baseAssetPrecision": 8,
        "quoteAsset": quote,
        "quotePrecision": 8,
        "quoteAssetPrecision": 8,
        "orderTypes": ["LIMIT", "LIMIT_MAKER", "MARKET", "STOP_LOSS_LIMIT", "TAKE_PROFIT_LIMIT"],
        "icebergAllowed": True,
        "ocoAllowed": True,
        "isSpotTradingAllowed": True,
        "isMarginTradingAllowed": False,
        "filters": [
            {"filterType": "PRICE_FILTER", "minPrice": "0.01", "maxPrice": "1000000.00", "tickSize": "0.01"},
            {"filterType": "LOT_SIZE", "minQty": "0.00001", "maxQty": "9000.00", "stepSize": "0.00001"},
            {"filterType": "NOTIONAL", "minNotional": "5.00", "maxNotional": "9000000.00"},
        ],
        "permissions": [],
        "permissionSets": [["SPOT"]],
    }


MARKETS = [_market("BTCUSDT", "BTC", "USDT"), _market("ETHUSDT", "ETH", "USDT")]

#: Binance's error bodies for the failures this server answers with.
MAINTENANCE_BODY = {"code": 1, "msg": "System is under maintenance."}
RATE_LIMIT_BODY = {"code": -1003, "msg": "Too many requests; current limit is 6000 request weight per 1 MINUTE."}
BANNED_BODY = {"code": -1003, "msg": "Way too many requests; IP banned until further notice."}
#: What ``reject_orders`` answers with by default: ccxt raises ``InvalidOrder``.
LOT_SIZE_BODY = {"code": -1013, "msg": "Filter failure: LOT_SIZE"}


class FakeExchange:
    """A Binance-shaped exchange on 127.0.0.1; see the module's doc.

    ``latency``: seconds before each answer. ``retry_after``: the
    ``Retry-After`` of a 429 or 418 (seconds; whole ones are sent as an
    integer, as servers do). ``script``: picks the mode of each request
    (overrides ``mode``), optionally with its ``Retry-After`` (None: no
    such header).
    """

    api_key = "tripwire-fake-key"
    secret = "tripwire-fake-secret"

    def __init__(
        self,
        *,
        latency: float = 0.0,
        retry_after: float = 1.0,
        script: Optional[Callable[[Request], Union[str, Tuple[str, Optional[float]]]]] = None,
        weights: Optional[WeightRules] = None,
    ) -> None:
        if not latency >= 0:
            raise ValueError(f"latency must be >= 0 seconds, got {latency!r}")
        self.latency = latency
        self.retry_after = retry_after
        self.script = script
        self._mode = HEALTHY
        #: Binance's weight limits, enforced when given; ``ledger`` says
        #: what they did.
        self.weights = weights
        self.ledger = WeightLedger()
        self._window = -1
        self._used = 0
        self._held_until = 0.0
        self._strikes = 0
        self._banned_until = 0.0
        #: The weight every answer reports used this minute
        #: (``X-MBX-USED-WEIGHT-1M``), as Binance does; None: no such header.
        self.used_weight: Optional[int] = None
        #: Every request read, in order (appended on the server's thread).
        self.requests: List[Request] = []
        #: The orders placed, as the exchange stored them.
        self.orders: List[Dict[str, Any]] = []
        #: Requests being answered now, and the most at once.
        self.in_flight = 0
        self.peak_in_flight = 0
        self._order_error: Optional[Response] = None
        self._order_ids = itertools.count(1)
        self._balances = {"USDT": "1250.00", "BTC": "0.02000000", "ETH": "0.50000000"}
        self._loop = asyncio.new_event_loop()
        self._closing: Optional[asyncio.Event] = None
        self._handlers: Set["asyncio.Task[None]"] = set()
        self._writers: Set[asyncio.StreamWriter] = set()
        self.port = 0
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="fake-exchange", daemon=True)
        self._thread.start()
        ready.wait()

    # -- what a test or the demo uses ----------------------------------------

    @property
    def mode(self) -> str:
        """How every endpoint answers now (one of ``MODES``)."""
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        self._mode = mode

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def point(self, exchange: Any) -> Any:
        """Points every REST URL of a ccxt exchange here (each keeps its
        path, e.g. ``/api/v3``), keeps it on spot markets, and returns it."""
        return point_at(exchange, self.port)

    def hits(self, path: Optional[str] = None, method: Optional[str] = None) -> int:
        """How many requests came in (for ``path`` and ``method``, if given)."""
        return sum(
            1 for r in list(self.requests)
            if (path is None or r.path == path) and (method is None or r.method == method)
        )

    def reject_orders(self, status: int = 400, body: Optional[Dict[str, Any]] = None) -> None:
        """Answers every new order with this error (default: Binance's
        LOT_SIZE filter failure); ``accept_orders()`` undoes it."""
        self._order_error = Response(status, body if body is not None else LOT_SIZE_BODY)

    def accept_orders(self) -> None:
        self._order_error = None

    def stop(self) -> None:
        """Closes every connection and the server; returns when its thread
        has ended."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result()
            self._thread.join()

    def __enter__(self) -> FakeExchange:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the server ------------------------------------------------------------

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._closing = asyncio.Event()
        server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self._server = server
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    async def _shutdown(self) -> None:
        assert self._closing is not None
        self._server.close()
        # Wake every handler: the hanging ones wait on `_closing`, the ones
        # still reading see their connection end. Each then returns by
        # itself; cancelling them instead makes some Python versions
        # (3.12.0, 3.12.1) print a traceback for each.
        self._closing.set()
        for writer in list(self._writers):
            writer.transport.abort()
        if self._handlers:
            await asyncio.wait(list(self._handlers))
        await self._server.wait_closed()
        self._loop.call_soon(self._loop.stop)

    async def _pause(self, seconds: float) -> bool:
        """Sleeps up to ``seconds``; True if the server is closing."""
        assert self._closing is not None
        if self._closing.is_set():
            return True
        if seconds <= 0:
            return False
        try:
            await asyncio.wait_for(self._closing.wait(), seconds)
        except asyncio.TimeoutError:
            return False
        return True

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._writers.add(writer)
        try:
            # Keep-alive: requests on one connection until the client closes
            # it, a request hangs, or the server closes.
            while True:
                request = await self._read(reader)
                self.requests.append(request)
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                try:
                    response = await self._respond(request)
                finally:
                    self.in_flight -= 1
                if response is None:
                    return
                body = b"" if response.body is None else json.dumps(response.body).encode()
                close = request.headers.get("connection", "").lower() == "close"
                head = [f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Error')}",
                        "Content-Type: application/json;charset=UTF-8", f"Content-Length: {len(body)}",
                        "Connection: close" if close else "Connection: keep-alive"]
                head += [f"{k}: {v}" for k, v in response.headers]
                if self.used_weight is not None:
                    head.append(f"X-MBX-USED-WEIGHT-1M: {self.used_weight}")
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
                await writer.drain()
                if close:
                    return
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, UnicodeDecodeError):
            pass  # the client went away, or sent something that is not HTTP
        finally:
            self._writers.discard(writer)
            writer.close()
            self._handlers.discard(task)

    async def _read(self, reader: asyncio.StreamReader) -> Request:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        lines = head.split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        length = int(headers.get("content-length", "0") or "0")
        body = (await reader.readexactly(length)).decode() if length > 0 else ""
        parts = urlsplit(target)
        return Request(method.upper(), parts.path, dict(parse_qsl(parts.query)), headers, body,
                       headers.get("x-client", ""), parts.query)

    async def _respond(self, request: Request) -> Optional[Response]:
        decided = self.script(request) if self.script is not None else self.mode
        mode, wait = decided if isinstance(decided, tuple) else (decided, self.retry_after)
        if mode == HANG:
            await self._pause(LONGEST_HANG)
            return None
        if await self._pause(self.latency):
            return None
        after: Tuple[Tuple[str, str], ...] = (
            () if wait is None else (("Retry-After", str(int(wait)) if float(wait).is_integer() else f"{wait:g}"),)
        )
        if mode == MAINTENANCE:
            return Response(503, MAINTENANCE_BODY)
        if mode == UNAVAILABLE:
            return Response(503, None)
        if mode == RATE_LIMITED:
            return Response(429, RATE_LIMIT_BODY, after)
        if mode == BANNED:
            return Response(418, BANNED_BODY, after)
        if mode != HEALTHY:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        if self.weights is not None:
            return self._weighed(request)
        return self._route(request)

    def _weighed(self, r: Request) -> Response:
        """Binance's weight limits in front of ``_route`` (``WeightRules``)."""
        rules = self.weights
        assert rules is not None
        now = time.time()
        window = int(now // rules.window)
        if window != self._window:
            self._window, self._used = window, 0
        weight = weight_of(r)

        def answer(status: int, body: Any, wait: float) -> Response:
            self.ledger.note(window, status, weight)
            return Response(status, body, (("Retry-After", str(max(1, math.ceil(wait)))),))

        if now < self._banned_until:
            return answer(418, BANNED_BODY, self._banned_until - now)
        if now < self._held_until:
            # Sent while told to back off.
            self._strikes += 1
            if self._strikes >= rules.ban_after:
                self._banned_until = now + rules.ban_for
                self.ledger.bans.append((now, self._banned_until))
                return answer(418, BANNED_BODY, rules.ban_for)
            return answer(429, RATE_LIMIT_BODY, self._held_until - now)
        if self._used + weight > rules.limit:
            self._held_until, self._strikes = (window + 1) * rules.window, 0
            return answer(429, RATE_LIMIT_BODY, self._held_until - now)
        self._used += weight
        response = self._route(r)
        self.ledger.note(window, response.status, weight)
        used = (("X-MBX-USED-WEIGHT-1M", str(self._used)),)
        return Response(response.status, response.body, response.headers + used)

    # -- the endpoints -----------------------------------------------------------

    def _route(self, r: Request) -> Response:
        now_ms = int(time.time() * 1000)
        route = (r.method, r.path)
        if route == ("GET", "/api/v3/ping"):
            return Response(200, {})
        if route == ("GET", "/api/v3/time"):
            return Response(200, {"serverTime": now_ms})
        if route == ("GET", "/api/v3/exchangeInfo"):
            return Response(200, {"timezone": "UTC", "serverTime": now_ms, "rateLimits": [],
                                  "exchangeFilters": [], "symbols": MARKETS})
        if route == ("GET", "/api/v3/depth"):
            return self._depth(r)
        if route in (("GET", "/api/v3/account"), ("POST", "/api/v3/order"), ("DELETE", "/api/v3/order")):
            denied = self._check_signature(r)
            if denied is not None:
                return denied
            if r.path == "/api/v3/account":
                return self._account(now_ms)
            return self._new_order(r, now_ms) if r.method == "POST" else self._cancel_order(r, now_ms)
        return Response(404, {"code": -1, "msg": f"unknown endpoint {r.method} {r.path}"})

    def _depth(self, r: Request) -> Response:
        symbol = r.query.get("symbol", "")
        if symbol not in {m["symbol"] for m in MARKETS}:
            return Response(400, {"code": -1121, "msg": "Invalid symbol."})
        mid = 97000.0 if symbol == "BTCUSDT" else 3400.0
        levels = min(int(r.query.get("limit", "5")), 20)
        return Response(200, {
            "lastUpdateId": len(self.requests),
            "bids": [[f"{mid - 0.1 * (i + 1):.2f}", "0.50000000"] for i in range(levels)],
            "asks": [[f"{mid + 0.1 * (i + 1):.2f}", "0.40000000"] for i in range(levels)],
        })

    def _check_signature(self, r: Request) -> Optional[Response]:
        """None if ``r`` is signed with this exchange's key, else Binance's error."""
        if r.headers.get("x-mbx-apikey") != self.api_key:
            return Response(401, {"code": -2014, "msg": "API-key format invalid."})
        signed = r.body if r.method == "POST" else r.raw_query
        payload, sep, signature = signed.rpartition("&signature=")
        expected = hmac.new(self.secret.encode(), payload.encode(), hashlib.sha256).hexdigest()
        if not sep or not hmac.compare_digest(signature, expected):
            return Response(400, {"code": -1022, "msg": "Signature for this request is not valid."})
        return None

    def _account(self, now_ms: int) -> Response:
        return Response(200, {
            "makerCommission": 10, "takerCommission": 10, "canTrade": True, "canWithdraw": True,
            "canDeposit": True, "updateTime": now_ms, "accountType": "SPOT", "permissions": ["SPOT"],
            "balances": [{"asset": a, "free": free, "locked": "0.00000000"} for a, free in self._balances.items()],
        })

    def _new_order(self, r: Request, now_ms: int) -> Response:
        if self._order_error is not None:
            return self._order_error
        params = dict(parse_qsl(r.body))
        order = {
            "symbol": params.get("symbol", ""), "orderId": next(self._order_ids),
            "clientOrderId": params.get("newClientOrderId", ""), "transactTime": now_ms,
            "price": params.get("price", "0.00"), "origQty": params.get("quantity", "0"),
            "executedQty": "0.00000000", "cummulativeQuoteQty": "0.00000000", "status": "NEW",
            "timeInForce": params.get("timeInForce", "GTC"), "type": params.get("type", "LIMIT"),
            "side": params.get("side", "BUY"), "fills": [],
        }
        self.orders.append(order)
        return Response(200, order)

    def _cancel_order(self, r: Request, now_ms: int) -> Response:
        wanted = r.query.get("orderId")
        for order in self.orders:
            if str(order["orderId"]) == wanted and order["status"] == "NEW":
                order["status"] = "CANCELED"
                return Response(200, dict(order, transactTime=now_ms))
        return Response(400, {"code": -2011, "msg": "Unknown order sent."})


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 418: "I'm a teapot",
            429: "Too Many Requests", 503: "Service Unavailable"}
