"""`tripwire.ccxt` as typed user code writes it; `test_typed_ccxt.py` runs
`mypy --strict` over it. A stale read is a `tripwire.Cached`, awaited for
an `async_support` exchange, used as it comes for a sync one."""

from __future__ import annotations

from typing import Any

import tripwire
from tripwire.ccxt import BACKPRESSURE, GuardedExchange


async def order_book(binance: GuardedExchange, pair: str) -> tripwire.Cached[Any]:
    return await binance.stale.fetch_order_book(pair)


def order_book_sync(binance: GuardedExchange, pair: str) -> tripwire.Cached[Any]:
    book = binance.stale.fetch_order_book(pair, 5)
    age: float = book.age
    stale: bool = book.stale
    assert age >= 0 or stale
    return book


async def ticker_age(binance: GuardedExchange) -> float:
    got = await binance.stale.fetch_ticker("BTC/USDT")
    return got.age


def not_a_number(binance: GuardedExchange) -> None:
    # An error for the checker (the ignore below would be unused, which
    # --strict reports, if the read were typed Any).
    n: int = binance.stale.fetch_order_book("BTC/USDT")  # type: ignore[assignment]
    del n


def judged(binance: GuardedExchange, exc: Exception) -> tripwire.Verdict:
    # A rule's verdict is a tripwire.Verdict, in the words tripwire.http
    # gives a response: "hold" is not one of them.
    verdict = binance.verdict(exc)
    if verdict == "hold":  # type: ignore[comparison-overlap]
        return BACKPRESSURE
    return verdict
