"""User code as a trading bot writes it, for the type checkers: `python/ci.sh`
runs `mypy --strict --disallow-any-expr` and pyright (strict) over this file.

Every decorator must keep the signature it decorates: `assert_type` pins
each result's type, and each `# type: ignore[...]` marks a call that must
be an error. A decorator that let `Any` through would make those calls
pass, and both checkers report an ignore comment with nothing to ignore.
`test_typed_sample.py` runs the code too.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import aiohttp
import httpx

import tripwire
import tripwire.http

if TYPE_CHECKING:
    from typing_extensions import assert_type
else:

    def assert_type(value, _type):
        return value


exchange = tripwire.Breaker(name="typed-sample", failure_threshold=3, timeout=2.0)
orders = tripwire.Bulkhead(4, max_wait=0.5)
cache = tripwire.StaleCache(max_age=30.0, policies={"balance": None})
transitions: list[tuple[str, str]] = []


@exchange.on_state_change
def record_transition(breaker: tripwire.Breaker, old: tripwire.StateName, new: tripwire.StateName) -> None:
    transitions.append((old, new))


@exchange
def fetch_ticker(symbol: str, depth: int = 10) -> float:
    return 97_000.0 + len(symbol) + depth


@exchange
async def fetch_book(symbol: str) -> list[float]:
    await asyncio.sleep(0)
    return [97_000.0, 97_001.0] if symbol else []


@tripwire.retry(attempts=3, base=0.001, retry_on=(OSError,))
@exchange
def fetch_balance(asset: str) -> dict[str, float]:
    return {asset: 1.5}


@tripwire.retry(attempts=2, base=0.001)
async def place_order(symbol: str, qty: float) -> str:
    await asyncio.sleep(0)
    return f"{symbol}:{qty}"


@cache.fallback("book:BTC", max_age=5.0)
@exchange
def order_book(symbol: str) -> list[float]:
    return [1.0, 2.0] if symbol else []


@cache.fallback("book:ETH")
async def order_book_async(symbol: str) -> list[float]:
    return await fetch_book(symbol)


@orders
def submit(order_id: int) -> bool:
    return order_id > 0


class Client:
    @exchange
    def ping(self, attempt: int) -> bool:
        return attempt >= 0

    @exchange
    async def server_time(self) -> int:
        await asyncio.sleep(0)
        return 1_700_000_000


def _answer(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/busy":
        return httpx.Response(429, headers={"Retry-After": "0"})
    return httpx.Response(200, json={"bids": [], "asks": []})


api = tripwire.Breaker(name="typed-sample-http", failure_threshold=3)
http_client = httpx.Client(base_url="http://exchange.test", transport=httpx.MockTransport(_answer))


@tripwire.http.guard(api)
def get_depth(symbol: str, limit: int = 5) -> httpx.Response:
    return http_client.get("/api/v3/depth", params={"symbol": symbol, "limit": limit})


@tripwire.http.guard(api, raise_errors=False)
async def get_depth_async(client: httpx.AsyncClient, symbol: str) -> httpx.Response:
    return await client.get("/api/v3/depth", params={"symbol": symbol})


@tripwire.http.guard(api)
async def get_with_aiohttp(session: aiohttp.ClientSession, path: str) -> aiohttp.ClientResponse:
    async with session.get(path) as response:
        await response.read()
        return response


def http_calls() -> None:
    assert_type(get_depth("BTCUSDT"), httpx.Response)
    assert_type(get_depth("BTCUSDT", limit=10).status_code, int)
    assert_type(tripwire.http.guard(api).call(http_client.get, "/api/v3/ping"), httpx.Response)
    assessment = tripwire.http.assess_response(get_depth("ETHUSDT"))
    assert_type(assessment.verdict, tripwire.http.Verdict)
    assert_type(assessment.verdict, tripwire.Verdict)
    assert_type(assessment.retry_after, "float | None")
    try:
        http_client.get("/busy")
        tripwire.http.guard(api).call(http_client.get, "/busy")
    except tripwire.http.BackpressureError as e:
        assert_type(e.retry_after, "float | None")


async def http_calls_async() -> None:
    async with httpx.AsyncClient(base_url="http://exchange.test", transport=httpx.MockTransport(_answer)) as c:
        assert_type(await get_depth_async(c, "BTCUSDT"), httpx.Response)
        assert_type(await tripwire.http.guard(api).call_async(c.get, "/api/v3/ping"), httpx.Response)


async def aiohttp_calls(session: aiohttp.ClientSession) -> None:
    """Checked, not run (the sample makes no network call)."""
    assert_type(await get_with_aiohttp(session, "/api/v3/ping"), aiohttp.ClientResponse)
    assert_type(await tripwire.http.guard(api).call_async(session.get, "/api/v3/ping"), aiohttp.ClientResponse)


def in_a_block() -> int:
    # No "missing return": the block never swallows an exception.
    with exchange:
        return 1


async def in_async_blocks() -> int:
    async with exchange:
        async with orders:
            return 2


def sync_calls() -> None:
    assert_type(fetch_ticker("BTC"), float)
    assert_type(fetch_ticker("BTC", depth=5), float)
    assert_type(fetch_balance("USDT"), dict[str, float])
    assert_type(order_book("BTC"), tripwire.Cached[list[float]])
    assert_type(order_book("BTC").value, list[float])
    assert_type(submit(7), bool)
    assert_type(Client().ping(1), bool)
    assert_type(exchange.call(fetch_ticker, "ETH"), float)
    assert_type(orders.call(submit, 3), bool)
    assert_type(cache.call("balance", fetch_balance, "BTC"), tripwire.Cached[dict[str, float]])
    assert_type(in_a_block(), int)
    assert_type(exchange.snapshot().failures, int)
    assert_type(exchange.state, tripwire.StateName)


async def async_calls() -> None:
    assert_type(await fetch_book("BTC"), list[float])
    assert_type(await place_order("BTC", 0.1), str)
    assert_type(await order_book_async("ETH"), tripwire.Cached[list[float]])
    assert_type(await Client().server_time(), int)
    assert_type(await exchange.call_async(fetch_book, "ETH"), list[float])
    assert_type(await in_async_blocks(), int)


def wrong_calls() -> None:
    """Each line must be an error: the decorators kept the parameters."""
    fetch_ticker(1)  # type: ignore[arg-type]
    fetch_balance(asset=2)  # type: ignore[arg-type]
    order_book()  # type: ignore[call-arg]
    submit("7")  # type: ignore[arg-type]
    Client().ping("x")  # type: ignore[arg-type]
    exchange.call(fetch_ticker, 1)  # type: ignore[arg-type]
    get_depth(1)  # type: ignore[arg-type]
    tripwire.http.guard(api)(fetch_ticker)  # type: ignore[arg-type]


def shared_breaker(path: str) -> None:
    """Checked, not run: `Breaker.shared` takes the keyword arguments of
    `Breaker(...)` but `clock`, typed alike."""
    assert_type(tripwire.Breaker.shared(path, name="typed-sample-shared", timeout=2.0), tripwire.Breaker)


def wrong_breakers(path: str) -> None:
    """Each line must be an error: the keyword arguments are typed by name."""
    tripwire.Breaker(fail_max=3)  # type: ignore[call-arg]
    tripwire.Breaker(failure_threshold="3")  # type: ignore[arg-type]
    tripwire.Breaker.shared(path, clock=tripwire.ManualClock())  # type: ignore[call-arg]
    tripwire.Breaker.shared(path, open_timeout="30")  # type: ignore[arg-type]


def rate_limits() -> None:
    """The limiter's costs and waits keep their types."""
    limiter = tripwire.RateLimiter([tripwire.Limit(1_200, 60), tripwire.Limit(50, 10, burst=5)])
    assert_type(limiter.acquire((5, 0), max_wait=1.0), float)
    assert_type(limiter.in_use(), list[int])
    assert_type(limiter.limits[0].burst, int)
    limiter.wait([1, 1])


def wrong_rate_limits(limiter: tripwire.RateLimiter) -> None:
    """Each line must be an error: a cost is ints, a period seconds."""
    limiter.wait("5")  # type: ignore[arg-type]
    tripwire.Limit(1_200, "60")  # type: ignore[arg-type]


def main() -> None:
    rate_limits()
    sync_calls()
    asyncio.run(async_calls())
    http_calls()
    asyncio.run(http_calls_async())
