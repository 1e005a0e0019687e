"""The typed sample (`typed_sample.py`, checked by mypy and pyright in
`python/ci.sh`) is real code: it runs."""

from __future__ import annotations

import asyncio

import typed_sample


def test_the_typed_sample_runs():
    typed_sample.main()
    assert typed_sample.exchange.snapshot().successes > 10


def test_decorated_functions_keep_their_metadata():
    for f in (typed_sample.fetch_ticker, typed_sample.fetch_balance, typed_sample.order_book, typed_sample.submit):
        assert f.__name__ in dir(typed_sample)
    assert asyncio.iscoroutinefunction(typed_sample.order_book_async)
    assert asyncio.iscoroutinefunction(typed_sample.place_order)
