"""tripwire.ccxt end to end: the real ccxt package, sync and async, against
the Binance-shaped fake exchange on 127.0.0.1."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any, Callable, Iterator, List, get_args

import pytest

ccxt = pytest.importorskip("ccxt")
import ccxt.async_support as ccxt_async  # noqa: E402

import tripwire  # noqa: E402
import tripwire.ccxt  # noqa: E402
import tripwire.http  # noqa: E402
from tripwire import _fake_exchange as fx  # noqa: E402
from tripwire.ccxt import (  # noqa: E402
    BACKPRESSURE,
    DEFAULT_RULES,
    ExchangeCircuitOpen,
    GuardedExchange,
    group_of,
    guard,
    retry_after_from_headers,
)

BOOK = "/api/v3/depth"
ORDER = "/api/v3/order"
ACCOUNT = "/api/v3/account"
#: Retries fast enough for tests.
QUICK = {"base": 0.001, "cap": 0.002}


class Env:
    """Makes guarded exchanges of one flavour (ccxt's sync classes, or
    ``async_support`` on an event loop of the test's own) and runs their
    calls."""

    def __init__(self, flavour: str, fake: fx.FakeExchange) -> None:
        self.flavour = flavour
        self.fake = fake
        self.loop = asyncio.new_event_loop() if flavour == "async" else None
        self.exchanges: List[Any] = []

    def guard(self, **options: Any) -> GuardedExchange:
        module = ccxt_async if self.loop is not None else ccxt
        config = {"apiKey": self.fake.api_key, "secret": self.fake.secret, "enableRateLimit": False, "timeout": 300}
        config.update(options.pop("ccxt", {}))
        exchange = self.fake.point(module.binance(config))
        self.exchanges.append(exchange)
        # The markets, loaded while the exchange is up (a bot does this at
        # start), so that the calls under test make one request each.
        mode, self.fake.mode = self.fake.mode, fx.HEALTHY
        self.run(exchange.load_markets)
        self.fake.mode = mode
        options.setdefault("name", f"test/{self.flavour}/{len(self.exchanges)}")
        return guard(exchange, **options)

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        if self.loop is not None:
            result = self.loop.run_until_complete(result)
        return result

    def close(self) -> None:
        if self.loop is not None:
            for exchange in self.exchanges:
                self.loop.run_until_complete(exchange.close())
            self.loop.close()


@pytest.fixture
def fake() -> Iterator[fx.FakeExchange]:
    with fx.FakeExchange(retry_after=7) as f:
        yield f


@pytest.fixture(params=["sync", "async"])
def env(request: pytest.FixtureRequest, fake: fx.FakeExchange) -> Iterator[Env]:
    e = Env(request.param, fake)
    yield e
    e.close()


def test_guarded_calls_return_what_ccxt_returns(env: Env) -> None:
    g = env.guard()
    book = env.run(g.fetch_order_book, "BTC/USDT", 5)
    assert book["symbol"] == "BTC/USDT" and len(book["bids"]) == 5 and book["bids"][0][0] == 96999.9
    assert env.run(g.fetch_balance)["USDT"]["free"] == 1250.0
    order = env.run(g.create_order, "BTC/USDT", "limit", "buy", 0.001, 90000)
    assert order["status"] == "open" and env.fake.orders[0]["side"] == "BUY"
    assert env.run(g.cancel_order, order["id"], "BTC/USDT")["status"] == "canceled"
    # Helpers and attributes are the exchange's own.
    assert g.id == "binance" and g.amount_to_precision("BTC/USDT", 0.123456789) == "0.12345"
    assert g.breaker.snapshot().successes == 4


def test_a_breaker_trips_on_an_outage_and_refuses_without_calling_the_server(env: Env) -> None:
    g = env.guard(breaker={"failure_threshold": 3, "open_timeout": 60.0}, retry=False)
    env.fake.mode = fx.UNAVAILABLE
    for _ in range(3):
        with pytest.raises(ccxt.ExchangeNotAvailable):
            env.run(g.fetch_order_book, "BTC/USDT")
    assert g.breaker.state == "open" and env.fake.hits(BOOK) == 3
    with pytest.raises(ExchangeCircuitOpen) as refused:
        env.run(g.fetch_order_book, "BTC/USDT")
    # Not called; both a tripwire refusal and a ccxt error a bot already catches.
    assert env.fake.hits(BOOK) == 3
    assert isinstance(refused.value, tripwire.CircuitOpenError) and isinstance(refused.value, ccxt.NetworkError)
    assert refused.value.retry_after == pytest.approx(60.0, abs=1.0) and refused.value.name == g.breaker.name
    # One breaker for the exchange: the balance is refused too.
    with pytest.raises(ExchangeCircuitOpen):
        env.run(g.fetch_balance)
    assert env.fake.hits(ACCOUNT) == 0


def test_maintenance_and_a_hanging_exchange_are_failures(env: Env) -> None:
    g = env.guard(breaker={"failure_threshold": 2}, retry=False, ccxt={"timeout": 100})
    env.fake.mode = fx.MAINTENANCE
    with pytest.raises(ccxt.OnMaintenance):
        env.run(g.fetch_order_book, "BTC/USDT")
    env.fake.mode = fx.HANG
    started = time.monotonic()
    with pytest.raises(ccxt.RequestTimeout):
        env.run(g.fetch_order_book, "BTC/USDT")
    assert time.monotonic() - started < 2.0
    assert g.breaker.state == "open" and g.breaker.snapshot().failures == 2


def test_a_429_holds_the_breaker_for_the_servers_wait(env: Env) -> None:
    # Never retried: the caller learns the 7 s the server asks for at once.
    # The exchange is up, so nothing
    # counts as its failure, but the breaker refuses every call until the
    # wait ends, without sending it.
    for mode in (fx.RATE_LIMITED, fx.BANNED):
        g = env.guard(retry={**QUICK, "deadline": 1.0})
        env.fake.mode = mode
        hits = env.fake.hits(BOOK)
        started = time.monotonic()
        with pytest.raises(ccxt.DDoSProtection) as info:
            env.run(g.fetch_order_book, "BTC/USDT")
        assert info.value.retry_after == 7.0
        assert time.monotonic() - started < 0.9
        left = g.breaker.hold_left
        assert g.breaker.state == "open" and left is not None and 6.0 < left <= 7.0
        assert g.breaker.snapshot().failures == 0
        with pytest.raises(ExchangeCircuitOpen) as refused:
            env.run(g.fetch_order_book, "BTC/USDT")
        assert refused.value.retry_after is not None and 6.0 < refused.value.retry_after <= 7.0
        assert env.fake.hits(BOOK) == hits + 1


def test_a_429_without_a_wait_holds_for_the_open_timeout(env: Env) -> None:
    g = env.guard(retry=False, breaker={"open_timeout": 12.0})
    env.fake.script = lambda r: (fx.RATE_LIMITED, None)
    with pytest.raises(ccxt.DDoSProtection) as info:
        env.run(g.fetch_order_book, "BTC/USDT")
    assert getattr(info.value, "retry_after", None) is None
    left = g.breaker.hold_left
    assert left is not None and 11.0 < left <= 12.0


def test_a_429_is_never_retried_the_caller_gets_it_at_once(env: Env) -> None:
    # The exchange would answer the second request: the hold, not a retry,
    # answers a 429, and the caller learns the wait at once.
    env.fake.retry_after = 1
    g = env.guard(retry={"attempts": 3, "deadline": 5.0})
    hits = env.fake.hits(BOOK)
    env.fake.script = lambda r: fx.RATE_LIMITED if env.fake.hits(BOOK) <= hits + 1 else fx.HEALTHY
    started = time.monotonic()
    with pytest.raises(ccxt.DDoSProtection) as info:
        env.run(g.fetch_order_book, "BTC/USDT")
    took = time.monotonic() - started
    assert env.fake.hits(BOOK) == hits + 1 and info.value.retry_after == 1.0 and took < 0.9, took


def test_retry_after_comes_from_the_failed_calls_own_response(env: Env) -> None:
    # With ccxt's own record of the last headers off, the hold still
    # carries the server's wait: it is read from this call's response.
    g = env.guard(retry=False, ccxt={"enableLastResponseHeaders": False})
    env.fake.mode = fx.RATE_LIMITED
    with pytest.raises(ccxt.DDoSProtection) as info:
        env.run(g.fetch_order_book, "BTC/USDT")
    assert g.exchange.last_response_headers is None and info.value.retry_after == 7.0


def test_an_absurd_retry_after_is_cut_to_max_retry_after(env: Env) -> None:
    env.fake.retry_after = 10**30
    g = env.guard(retry=False, max_retry_after=120.0)
    env.fake.mode = fx.RATE_LIMITED
    with pytest.raises(ccxt.DDoSProtection) as info:
        env.run(g.fetch_order_book, "BTC/USDT")
    assert info.value.retry_after == 120.0


def test_an_invalid_order_is_ignored_and_not_retried(env: Env) -> None:
    # Trading retries on, so that only the classification can stop them.
    g = env.guard(breaker={"failure_threshold": 1}, retry={**QUICK, "attempts": 5}, retry_trading=True)
    env.fake.reject_orders()
    with pytest.raises(ccxt.InvalidOrder):
        env.run(g.create_order, "BTC/USDT", "limit", "buy", 0.001, 90000)
    env.fake.reject_orders(400, {"code": -2010, "msg": "Account has insufficient balance for requested action."})
    with pytest.raises(ccxt.InsufficientFunds):
        env.run(g.create_order, "BTC/USDT", "limit", "buy", 0.001, 90000)
    assert env.fake.hits(ORDER, "POST") == 2
    assert g.breaker.state == "closed"
    snap = g.breaker.snapshot()
    assert (snap.failures, snap.ignored) == (0, 2)


def test_a_wrong_key_is_the_callers_fault(env: Env) -> None:
    g = env.guard(breaker={"failure_threshold": 1}, retry=QUICK, ccxt={"secret": "not-the-secret"})
    with pytest.raises(ccxt.AuthenticationError):
        env.run(g.fetch_balance)
    assert env.fake.hits(ACCOUNT) == 1 and g.breaker.state == "closed"


def test_every_4xx_the_caller_caused_is_ignored_and_not_retried(env: Env) -> None:
    # A wrong API key (the exchange's 401, ccxt's AuthenticationError) and
    # an unknown symbol (ccxt's BadSymbol): neither is the exchange's
    # failure, neither is asked again, whatever the threshold.
    g = env.guard(breaker={"failure_threshold": 1}, retry={**QUICK, "attempts": 5}, retry_trading=True,
                  ccxt={"apiKey": "not-the-key"})
    with pytest.raises(ccxt.AuthenticationError):
        env.run(g.fetch_balance)
    assert env.fake.hits(ACCOUNT) == 1
    with pytest.raises(ccxt.BadSymbol):
        env.run(g.fetch_order_book, "NOPE/USDT")
    env.fake.reject_orders()
    with pytest.raises(ccxt.AuthenticationError):
        env.run(g.create_order, "BTC/USDT", "limit", "buy", 0.001, 90000)
    assert env.fake.hits(ORDER, "POST") == 1
    snap = g.breaker.snapshot()
    assert (g.breaker.state, snap.failures, snap.ignored) == ("closed", 0, 3)


def test_create_order_is_not_retried_unless_asked(env: Env) -> None:
    env.fake.mode = fx.UNAVAILABLE
    g = env.guard(breaker={"failure_threshold": 100}, retry=QUICK)
    with pytest.raises(ccxt.ExchangeNotAvailable):
        env.run(g.create_order, "BTC/USDT", "limit", "buy", 0.001, 90000)
    assert env.fake.hits(ORDER, "POST") == 1
    # A read in the same outage is retried: 3 attempts.
    with pytest.raises(ccxt.ExchangeNotAvailable):
        env.run(g.fetch_balance)
    assert env.fake.hits(ACCOUNT) == 3
    opted = env.guard(breaker={"failure_threshold": 100}, retry=QUICK, retry_trading=True)
    with pytest.raises(ccxt.ExchangeNotAvailable):
        env.run(opted.create_order, "BTC/USDT", "limit", "buy", 0.001, 90000)
    assert env.fake.hits(ORDER, "POST") == 4


def test_an_order_book_is_served_stale_with_its_age_and_a_balance_never(env: Env) -> None:
    g = env.guard(breaker={"failure_threshold": 2}, retry=False, stale_max_age=30.0)
    fresh = env.run(g.stale.fetch_order_book, "BTC/USDT", 5)
    assert fresh.stale is False and fresh.age == 0.0
    env.run(g.fetch_balance)
    env.fake.mode = fx.MAINTENANCE
    time.sleep(0.05)
    # Down, then refused by the open breaker: the last good book, with its age.
    for _ in range(3):
        got = env.run(g.stale.fetch_order_book, "BTC/USDT", 5)
        assert got.stale is True and got.value == fresh.value and 0.05 <= got.age < 30.0
    assert g.breaker.state == "open" and env.fake.hits(BOOK) == 3
    # Another call (other arguments) has no last good value: the error.
    with pytest.raises(ExchangeCircuitOpen):
        env.run(g.stale.fetch_order_book, "ETH/USDT", 5)
    # A balance is never stale.
    with pytest.raises(ExchangeCircuitOpen):
        env.run(g.fetch_balance)
    for name in ("fetch_balance", "create_order", "fetch_open_orders"):
        with pytest.raises(TypeError, match="only market data is served stale"):
            getattr(g.stale, name)


def test_stale_data_has_an_age_limit_and_the_callers_fault_is_not_hidden(env: Env) -> None:
    g = env.guard(retry=False, stale_max_age=0.05)
    env.run(g.fetch_order_book, "BTC/USDT")  # the plain call keeps it too
    env.fake.mode = fx.UNAVAILABLE
    assert env.run(g.stale.fetch_order_book, "BTC/USDT").stale
    time.sleep(0.1)
    with pytest.raises(ccxt.ExchangeNotAvailable):
        env.run(g.stale.fetch_order_book, "BTC/USDT")
    env.fake.mode = fx.HEALTHY
    with pytest.raises(ccxt.BadSymbol):
        env.run(g.stale.fetch_order_book, "NOPE/USDT")


def test_a_stale_read_during_a_429_takes_one_request_and_never_waits_for_the_hold(env: Env) -> None:
    # A 2 s Retry-After inside the retries' 10 s deadline: a plain read
    # pauses it out and asks again; a read that accepts stale data has a
    # book at hand and takes it after the one answer.
    env.fake.retry_after = 2
    g = env.guard(retry={**QUICK, "attempts": 3, "deadline": 10.0}, stale_max_age=60.0)
    fresh = env.run(g.stale.fetch_order_book, "BTC/USDT", 5)
    env.fake.mode = fx.RATE_LIMITED
    hits = env.fake.hits(BOOK)
    started = time.monotonic()
    got = env.run(g.stale.fetch_order_book, "BTC/USDT", 5)
    took = time.monotonic() - started
    assert got.stale is True and got.value == fresh.value
    assert env.fake.hits(BOOK) == hits + 1, "one attempt"
    assert took < 1.0, f"{took:.2f}s: one attempt's time, not the 2 s hold"
    # Held now: refused without a request, the stale book at once.
    started = time.monotonic()
    assert env.run(g.stale.fetch_order_book, "BTC/USDT", 5).stale
    assert env.fake.hits(BOOK) == hits + 1 and time.monotonic() - started < 1.0
    assert g.breaker.hold_left is not None


def test_a_stale_read_during_an_outage_never_waits_for_a_backoff(env: Env) -> None:
    g = env.guard(breaker={"failure_threshold": 100},
                  retry={"attempts": 3, "base": 1.0, "cap": 1.0, "jitter": "none", "deadline": 10.0})
    env.run(g.stale.fetch_order_book, "BTC/USDT", 5)
    env.fake.mode = fx.UNAVAILABLE
    hits = env.fake.hits(BOOK)
    started = time.monotonic()
    assert env.run(g.stale.fetch_order_book, "BTC/USDT", 5).stale
    took = time.monotonic() - started
    assert env.fake.hits(BOOK) == hits + 1 and took < 0.8, f"{took:.2f}s, backoff 1 s"
    # Nothing stale for ETH: the read retries as a plain one does.
    with pytest.raises(ccxt.ExchangeNotAvailable):
        env.run(g.stale.fetch_order_book, "ETH/USDT", 5)
    assert env.fake.hits(BOOK) == hits + 4


def test_per_group_breakers_keep_market_data_flowing(env: Env) -> None:
    g = env.guard(per_group=True, breaker={"failure_threshold": 2}, retry=False)
    env.fake.script = lambda r: fx.UNAVAILABLE if r.path == ORDER else fx.HEALTHY
    for _ in range(2):
        with pytest.raises(ccxt.ExchangeNotAvailable):
            env.run(g.create_order, "BTC/USDT", "limit", "buy", 0.001, 90000)
    states = {group: b.state for group, b in g.breakers.items()}
    assert states == {"market": "closed", "account": "closed", "trading": "open"}
    assert env.run(g.fetch_order_book, "BTC/USDT")["bids"] and env.run(g.fetch_balance)["USDT"]
    with pytest.raises(ExchangeCircuitOpen):
        env.run(g.cancel_order, "1", "BTC/USDT")
    assert g.breakers["trading"].name == f"{g.breaker.name.rsplit('/', 1)[0]}/trading"


def test_per_symbol_breakers_trip_only_the_failing_symbol(env: Env) -> None:
    g = env.guard(per_symbol=True, breaker={"failure_threshold": 2}, retry=False)
    assert g.keyed is not None
    env.fake.script = lambda r: fx.UNAVAILABLE if r.query.get("symbol") == "ETHUSDT" else fx.HEALTHY
    for _ in range(2):
        with pytest.raises(ccxt.ExchangeNotAvailable):
            env.run(g.fetch_order_book, "ETH/USDT")
    assert g.keyed["ETH/USDT"].state == "open"
    hits = env.fake.hits(BOOK)
    with pytest.raises(ExchangeCircuitOpen) as refused:
        env.run(g.fetch_order_book, symbol="ETH/USDT")
    assert env.fake.hits(BOOK) == hits, "refused without a request"
    assert refused.value.name == f"{g.breaker.name}/symbols/ETH/USDT"
    # The other symbol, and calls without one, still go through.
    assert env.run(g.fetch_order_book, "BTC/USDT")["bids"]
    assert env.run(g.fetch_order_book, symbol="BTC/USDT", limit=5)["bids"]
    assert env.run(g.fetch_time) > 0 and env.run(g.fetch_balance)["USDT"]
    assert g.breaker.state == "closed" and g.breaker.snapshot().successes == 2
    assert g.keyed.counts()["live"] == 2


def test_per_endpoint_breakers_trip_only_the_failing_method(env: Env) -> None:
    g = env.guard(per_endpoint=True, breaker={"failure_threshold": 2}, retry=False, keyed={"capacity": 100})
    assert g.keyed is not None and g.keyed.capacity == 100
    env.fake.script = lambda r: fx.UNAVAILABLE if r.path == BOOK else fx.HEALTHY
    for symbol in ("BTC/USDT", "ETH/USDT"):
        with pytest.raises(ccxt.ExchangeNotAvailable):
            env.run(g.fetch_order_book, symbol)
    assert g.keyed["fetch_order_book"].state == "open"
    with pytest.raises(ExchangeCircuitOpen):
        env.run(g.fetch_order_book, "BTC/USDT")
    assert env.run(g.fetch_time) > 0 and env.run(g.fetch_balance)["USDT"]
    assert g.keyed["fetch_time"].snapshot().successes == 1
    assert g.keyed["fetch_balance"].snapshot().successes == 1


def test_per_endpoint_and_symbol_key_by_both(env: Env) -> None:
    g = env.guard(per_symbol=True, per_endpoint=True, breaker={"failure_threshold": 1}, retry=False)
    assert g.keyed is not None
    env.fake.script = lambda r: fx.UNAVAILABLE if r.path == BOOK and r.query.get("symbol") == "ETHUSDT" else fx.HEALTHY
    with pytest.raises(ccxt.ExchangeNotAvailable):
        env.run(g.fetch_order_book, "ETH/USDT")
    assert g.keyed[("fetch_order_book", "ETH/USDT")].state == "open"
    assert env.run(g.fetch_order_book, "BTC/USDT")["bids"]
    assert env.run(g.fetch_time) > 0 and g.keyed["fetch_time"].snapshot().successes == 1
    assert g.keyed.name == f"{g.breaker.name}/endpoint-symbols"


def test_keyed_options_need_a_keyed_mode(fake: fx.FakeExchange) -> None:
    with pytest.raises(TypeError, match="keyed needs per_symbol or per_endpoint"):
        guard(fake.point(ccxt.binance()), keyed={"capacity": 10})
    with pytest.raises(ValueError, match="capacity"):
        guard(fake.point(ccxt.binance()), per_symbol=True, keyed={"capacity": 0})


def test_the_bulkhead_caps_calls_in_flight(fake: fx.FakeExchange) -> None:
    fake.latency = 0.05
    e = Env("async", fake)
    try:
        g = e.guard(bulkhead=2, max_wait=None, retry=False)
        e.run(g.load_markets)

        async def many() -> List[Any]:
            return await asyncio.gather(*(g.fetch_order_book("BTC/USDT") for _ in range(6)), return_exceptions=True)

        results = e.run(many)
        full = [r for r in results if isinstance(r, tripwire.BulkheadFullError)]
        assert len(full) == 4 and fake.peak_in_flight == 2, results
        # Refusals by the bulkhead are not the exchange's failures.
        assert g.breaker.snapshot().failures == 0
    finally:
        e.close()


def test_the_most_specific_rule_wins(fake: fx.FakeExchange) -> None:
    g = Env("sync", fake).guard()
    for exc, verdict in [
        (ccxt.NetworkError(), "failure"),
        (ccxt.RequestTimeout(), "failure"),
        (ccxt.ExchangeNotAvailable(), "failure"),
        (ccxt.OnMaintenance(), "failure"),
        (ccxt.BadResponse(), "failure"),
        (ccxt.RateLimitExceeded(), "backpressure"),  # a NetworkError, held
        (ccxt.DDoSProtection(), "backpressure"),
        (ccxt.InvalidNonce(), "ignored"),  # a NetworkError: the local clock is off
        (ccxt.AuthenticationError(), "ignored"),
        (ccxt.PermissionDenied(), "ignored"),
        (ccxt.AccountSuspended(), "ignored"),
        (ccxt.InsufficientFunds(), "ignored"),
        (ccxt.InvalidOrder(), "ignored"),
        (ccxt.OrderNotFound(), "ignored"),
        (ccxt.BadSymbol(), "ignored"),
        (ccxt.BadRequest(), "ignored"),
        (ccxt.ExchangeError(), "ignored"),
        (ValueError(), "ignored"),
        (tripwire.BulkheadFullError(None, 1), "ignored"),
        (asyncio.CancelledError(), "ignored"),
        (KeyboardInterrupt(), "ignored"),
    ]:
        assert g.verdict(exc) == verdict, exc

    class Slow(ccxt.RequestTimeout):
        pass

    custom = Env("sync", fake).guard(rules={ccxt.NetworkError: "ignored", ccxt.ExchangeError: "failure"})
    assert custom.verdict(ccxt.NetworkError()) == "ignored"
    assert custom.verdict(Slow()) == "failure", "RequestTimeout's own rule is more specific"
    assert custom.verdict(ccxt.ExchangeError()) == "failure"
    assert custom.verdict(ccxt.InvalidOrder()) == "ignored"


def test_a_rule_speaks_the_one_verdict_vocabulary_and_hold_or_success_is_refused(fake: fx.FakeExchange) -> None:
    # One Verdict for the package: a response's, as tripwire.http assesses
    # it, and a ccxt exception's, as its rules judge it.
    assert tripwire.http.Verdict is tripwire.Verdict
    assert tripwire.ccxt.Verdict is tripwire.Verdict
    assert set(DEFAULT_RULES.values()) == {"failure", "backpressure", "ignored"} < set(get_args(tripwire.Verdict))
    assert DEFAULT_RULES[ccxt.RateLimitExceeded] == BACKPRESSURE == "backpressure"
    exchange = fake.point(ccxt.binance())
    # "hold" was this module's old word for backpressure; an exception is
    # never a success.
    for word in ("hold", "success"):
        expected = f"rules[RateLimitExceeded] must be one of ('failure', 'backpressure', 'ignored'), got '{word}'"
        with pytest.raises(ValueError, match=re.escape(expected)):
            guard(exchange, rules={ccxt.RateLimitExceeded: word})


def test_endpoint_groups() -> None:
    expected = {
        "market": ["fetch_order_book", "fetch_l2_order_book", "fetch_ticker", "fetch_tickers", "fetch_ohlcv",
                   "fetch_mark_ohlcv", "fetch_trades", "load_markets", "fetch_markets", "fetch_status",
                   "fetch_order_book_ws"],
        "account": ["fetch_balance", "fetch_order", "fetch_orders", "fetch_open_orders", "fetch_closed_orders",
                    "fetch_my_trades", "fetch_positions", "fetch_deposits", "fetch_ledger", "fetch_balance_ws",
                    "fetch_order_with_client_order_id", "fetch_something_new"],
        "trading": ["create_order", "create_market_buy_order", "create_orders", "edit_order", "cancel_order",
                    "cancel_all_orders", "withdraw", "transfer", "set_leverage", "create_order_ws"],
    }
    for group, names in expected.items():
        for name in names:
            assert group_of(name) == group, name
    for name in ("amount_to_precision", "close", "public_get_depth", "markets", "watch_order_book", "sign"):
        assert group_of(name) is None, name


def test_groups_override_and_implicit_methods(env: Env) -> None:
    g = env.guard(groups={"public_get_depth": "market"}, breaker={"failure_threshold": 1}, retry=False)
    assert g.group("public_get_depth") == "market"
    env.fake.mode = fx.UNAVAILABLE
    with pytest.raises(ccxt.ExchangeNotAvailable):
        env.run(g.public_get_depth, {"symbol": "BTCUSDT"})
    assert g.breaker.state == "open"


def test_every_unified_method_of_binance_is_grouped_or_a_stream() -> None:
    import re

    exchange = ccxt.binance()
    for capability, supported in exchange.has.items():
        name = re.sub(r"(?<!^)(?=[A-Z])", "_", capability).lower()
        if not supported or not callable(getattr(exchange, name, None)):
            continue
        if name.startswith(("watch_", "un_watch_")) or name == "sign_in":
            assert group_of(name) is None, name
        else:
            assert group_of(name) is not None, name


def test_an_async_exchange_closes_with_the_block(fake: fx.FakeExchange) -> None:
    async def main() -> Any:
        exchange = fake.point(ccxt_async.binance({"enableRateLimit": False}))
        async with guard(exchange, name="test/async-with") as g:
            book = await g.fetch_order_book("BTC/USDT")
        return book, exchange.session

    book, session = asyncio.run(main())
    assert book["asks"] and (session is None or session.closed)


def test_retry_after_headers_are_read_as_the_core_reads_them() -> None:
    now = 1_700_000_000.0
    read = retry_after_from_headers
    assert read({"Retry-After": "7"}) == 7.0
    assert read({"retry-after": " 30 "}) == 30.0
    assert read({"RETRY-AFTER": "Tue, 14 Nov 2023 22:13:27 GMT"}, now=now) == pytest.approx(7.0)
    assert read({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=now) == 0.0
    for bad in ("-5", "1.5", "soon", "", "7 s", "0x10"):
        assert read({"Retry-After": bad}) is None, bad
    assert read({"X-RateLimit-Reset": "12"}) == 12.0
    assert read({"RateLimit-Reset": "3", "X-RateLimit-Reset": "50"}) == 3.0
    assert read({"x-ratelimit-reset": "1700000045"}, now=now) == 45.0
    assert read({"x-ratelimit-reset": "1600000000"}, now=now) == 0.0
    assert read({"Retry-After": "5", "X-RateLimit-Reset": "50"}) == 5.0
    # Too large to hold: as long as can be (the breaker caps it); a sign or
    # a fraction is no HTTP number.
    assert read({"Retry-After": "9" * 40}) == float(2**64 - 1)
    for bad in ("+5", "5.0"):
        assert read({"Retry-After": bad}) is None, bad
    # Any mapping, any case; a pair that is no header is skipped.
    assert read({"Retry-After": "7", "bad name": "x", "x": "\n"}) == 7.0
    with pytest.raises(TypeError, match="headers must be a mapping"):
        read([("Retry-After", "7")])  # type: ignore[arg-type]
    assert read(None) is None and read({}) is None and read({"Content-Type": "x"}) is None


def test_bad_arguments_are_clear_errors(fake: fx.FakeExchange) -> None:
    exchange = fake.point(ccxt.binance())
    with pytest.raises(TypeError, match="ccxt exchange"):
        guard(object())
    with pytest.raises(ValueError, match="groups"):
        guard(exchange, groups={"fetch_ticker": "public"})
    with pytest.raises(TypeError, match="exception classes"):
        guard(exchange, rules={"NetworkError": "failure"})
    with pytest.raises(ValueError, match="rules"):
        guard(exchange, rules={ccxt.NetworkError: "maybe"})
    with pytest.raises(TypeError, match="retry"):
        guard(exchange, retry="yes")
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="max_retry_after"):
            guard(exchange, max_retry_after=bad)
    with pytest.raises(ValueError):
        guard(exchange, breaker={"failure_threshold": -1})
    with pytest.raises(TypeError):
        guard(exchange, colour="red")


def test_the_seed_example_in_seven_lines(fake: fx.FakeExchange) -> None:
    # The README's example (python/README.md, "ccxt"), line for line, but
    # for `fake.point`: an order book served stale with its age when the
    # exchange is down, a balance never, retry and a breaker around both.
    async def main() -> None:
        import ccxt.async_support as ccxt  # noqa: F811 - the example's own import
        from tripwire.ccxt import guard as guard_

        binance = guard_(fake.point(ccxt.binance({"apiKey": fake.api_key, "secret": fake.secret, "timeout": 2000})))

        async def order_book(pair: str) -> tripwire.Cached:
            return await binance.stale.fetch_order_book(pair)

        async def balance() -> Any:
            return await binance.fetch_balance()

        try:
            assert (await order_book("BTC/USDT")).stale is False
            assert (await balance())["USDT"]["free"] == 1250.0
            fake.mode = fx.MAINTENANCE
            for _ in range(3):
                book = await order_book("BTC/USDT")
                assert book.stale and book.age > 0 and book.value["bids"]
                with pytest.raises(ccxt.NetworkError):
                    await balance()
            assert binance.breaker.state == "open"
            before = fake.hits()
            assert (await order_book("BTC/USDT")).stale
            assert fake.hits() == before, "refused without a call"
        finally:
            await binance.exchange.close()

    asyncio.run(main())


def test_a_rate_limiter_replaces_ccxts_throttle_and_learns_the_servers_count(env: Env) -> None:
    limiter = tripwire.RateLimiter(tripwire.Limit(1_200, 60))
    g = env.guard(rate_limiter=limiter)
    env.run(g.fetch_order_book, "BTC/USDT", 5)
    spent = limiter.in_use()[0]
    assert spent >= 1, "ccxt asked the limiter for the endpoint's weight"
    # Other clients on the same IP: the server has counted its whole
    # limit. What this limiter's pace sends in the part of the server's
    # minute that has passed is taken off; the rest is at least the burst.
    env.fake.used_weight = 1_200
    env.run(g.fetch_order_book, "BTC/USDT", 5)
    assert limiter.in_use()[0] >= limiter.limits[0].burst
    assert limiter.wait_for(1) > 0, "the next call waits"
    env.fake.used_weight = None


def test_a_rate_limiter_paces_the_calls(env: Env) -> None:
    # A burst of 100 weight: five order books go at once.
    limiter = tripwire.RateLimiter(tripwire.Limit(1_000, 8, burst=100))
    g = env.guard(rate_limiter=limiter)
    start = time.monotonic()
    for _ in range(5):
        env.run(g.fetch_order_book, "BTC/USDT", 5)
    assert env.fake.hits(BOOK) >= 5
    assert limiter.counts()[0]["spent"] >= 5, "ccxt took each order book's cost"
    assert time.monotonic() - start < 5, "a burst of 100 never waited"


def test_rate_limit_options_are_checked(env: Env) -> None:
    with pytest.raises(TypeError, match="rate_limiter must be a tripwire.RateLimiter"):
        env.guard(rate_limiter=object())
    with pytest.raises(TypeError, match="rate_headers needs a rate_limiter"):
        env.guard(rate_headers={"x-mbx-used-weight-1m": 0})
    limiter = tripwire.RateLimiter(tripwire.Limit(1_200, 60))
    with pytest.raises(ValueError, match=r"rate_headers\['x-used'\] must be a limit's index, 0 to 0, got 1"):
        env.guard(rate_limiter=limiter, rate_headers={"x-used": 1})


def test_a_429_despite_the_rate_limiter_tightens_it(env: Env) -> None:
    limiter = tripwire.RateLimiter(tripwire.Limit(1_200, 60))
    g = env.guard(rate_limiter=limiter)
    env.fake.mode = fx.RATE_LIMITED
    with pytest.raises(ccxt.DDoSProtection):
        env.run(g.fetch_order_book, "BTC/USDT", 5)
    env.fake.mode = fx.HEALTHY
    assert limiter.in_use() == [1_200], "the whole limit counts as spent"
    assert g.breaker.hold_left is not None and g.breaker.hold_left > 0

