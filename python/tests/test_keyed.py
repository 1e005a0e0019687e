"""tripwire.Breakers: a breaker per key, the core's keyed map."""

from __future__ import annotations

import ast
import asyncio
import gc
import inspect
import sys
import threading
import weakref
from pathlib import Path

import pytest
from conftest import Boom, fail

import tripwire
from tripwire import _tripwire


def make(clock: tripwire.ManualClock, **kwargs: object) -> tripwire.Breakers[str]:
    kwargs.setdefault("failure_threshold", 2)
    kwargs.setdefault("open_timeout", 30.0)
    return tripwire.Breakers(clock=clock, **kwargs)  # type: ignore[arg-type]


def trip(breakers: tripwire.Breakers[str], key: str) -> None:
    for _ in range(breakers[key].failure_threshold):
        with pytest.raises(Boom):
            breakers.call(key, fail)


def test_a_failing_key_trips_only_its_own_breaker(clock):
    per_symbol = make(clock)
    trip(per_symbol, "ETHUSDT")
    assert per_symbol["ETHUSDT"].state == "open"
    with pytest.raises(tripwire.CircuitOpenError) as e:
        per_symbol.call("ETHUSDT", lambda: 1)
    assert e.value.name == "ETHUSDT"
    assert per_symbol.call("BTCUSDT", lambda: 1) == 1
    assert per_symbol["BTCUSDT"].state == "closed"


def test_the_same_key_is_the_same_breaker_through_every_handle(clock):
    per_symbol = make(clock, name="test-keyed-same")
    a, b = per_symbol["BTCUSDT"], per_symbol["BTCUSDT"]
    assert isinstance(a, tripwire.Breaker)
    assert a.name == b.name == "test-keyed-same/BTCUSDT"
    with pytest.raises(Boom):
        a.call(fail)
    assert b.snapshot().failures == 1
    with pytest.raises(Boom):
        per_symbol.call("BTCUSDT", fail)
    assert a.state == b.state == "open"
    assert per_symbol.counts() == {"live": 1, "created": 1, "evicted": 0, "overflow_calls": 0}


def test_a_keys_breaker_works_as_a_breaker_does(clock):
    per_symbol = make(clock)
    breaker = per_symbol["BTCUSDT"]

    @breaker
    def ticker(symbol: str) -> str:
        return symbol

    assert ticker("BTCUSDT") == "BTCUSDT"
    with per_symbol["BTCUSDT"]:
        pass
    with pytest.raises(Boom), per_symbol["BTCUSDT"]:
        fail()

    async def fetch() -> int:
        return 7

    assert asyncio.run(per_symbol.call_async("BTCUSDT", fetch)) == 7
    assert asyncio.run(per_symbol["BTCUSDT"](fetch)()) == 7

    async def block() -> None:
        async with per_symbol["BTCUSDT"]:
            pass

    asyncio.run(block())
    snapshot = per_symbol["BTCUSDT"].snapshot()
    assert (snapshot.successes, snapshot.failures) == (5, 1)


def test_nested_blocks_of_two_keys_record_into_their_own_breakers(clock):
    per_symbol = make(clock)
    with pytest.raises(Boom), per_symbol["a"]:
        with per_symbol["b"]:
            pass
        fail()
    assert per_symbol["a"].snapshot().failures == 1
    assert per_symbol["b"].snapshot().successes == 1


def test_the_template_gives_every_key_its_settings(clock):
    class Refused(Exception):
        pass

    template = tripwire.Breaker(failure_threshold=1, ignore_on=(Refused,), timeout=2.0, clock=clock)
    per_host = tripwire.Breakers(template)
    assert per_host.template is template
    b = per_host["api"]
    assert (b.failure_threshold, b.timeout, b.clock) == (1, 2.0, clock)

    def refused() -> None:
        raise Refused

    with pytest.raises(Refused):
        per_host.call("api", refused)
    assert per_host["api"].state == "closed"
    with pytest.raises(Boom):
        per_host.call("api", fail)
    assert per_host["api"].state == "open"
    assert template.state == "closed", "the template's own breaker is not a key's"
    clock.advance(30.0)
    assert per_host.call("api", lambda: 1) == 1


def test_listeners_hear_every_key(clock):
    heard: list[tuple[str | None, str, str]] = []
    per_symbol = make(clock, on_state_change=lambda b, old, new: heard.append((b.name, old, new)))
    trip(per_symbol, "a")

    @per_symbol.on_state_change
    def later(breaker: tripwire.Breaker, old: str, new: str) -> None:
        heard.append(("later", old, new))

    trip(per_symbol, "b")
    assert heard == [("a", "closed", "open"), ("b", "closed", "open"), ("later", "closed", "open")]


KEYS: list[object] = ["BTCUSDT", "", 0, -(2**70), b"raw", ("BTC/USDT", "1m"), (("a", 1), b"x"), ()]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_every_key_type_has_a_breaker_of_its_own(clock, key):
    per_key = make(clock)
    for other in KEYS:
        per_key[other]
    with pytest.raises(Boom):
        per_key.call(key, fail)
    assert [per_key[k].snapshot().failures for k in KEYS] == [int(k == key) for k in KEYS]
    assert len(per_key) == len(KEYS)


def test_keys_are_compared_as_a_dict_compares_them(clock):
    per_key = make(clock, name="test-keyed-equal")
    with pytest.raises(Boom):
        per_key.call(True, fail)
    assert per_key[1].snapshot().failures == 1, "True is 1"
    assert per_key["1"].snapshot().failures == 0, "'1' is not 1"
    assert per_key[1].name == per_key[True].name == "test-keyed-equal/1"
    assert per_key[("a", 1)].name == "test-keyed-equal/('a', 1)"
    assert len(per_key) == 3
    # Equal keys that are other objects (made at run time, not interned)
    # find the same breaker; a big int and its equal, too.
    symbol = "".join(["BTC", "USDT"])
    per_key.call(symbol, lambda: 1)
    other = "".join(["BTC", "USD", "T"])
    assert other is not symbol
    assert per_key[other] is per_key[symbol]
    assert per_key[other].snapshot().successes == 1
    big = 10**30
    assert per_key[big] is per_key[int(str(big))]
    assert per_key[("a", 1)] is per_key[tuple(["a", 1])]
    assert len(per_key) == 5


@pytest.mark.parametrize(
    "key",
    [1.0, float("nan"), None, ["a"], ("a", 1.5), frozenset(), object()],
    ids=repr,
)
def test_other_keys_are_a_type_error(clock, key):
    per_key = make(clock)
    with pytest.raises(TypeError, match="Breakers key must be a str, int, bytes or a tuple of those"):
        per_key[key]
    with pytest.raises(TypeError, match="Breakers key"):
        per_key.call(key, lambda: 1)
    assert len(per_key) == 0


def test_in_and_iteration_see_the_keys_with_breakers_of_their_own_and_make_none(clock):
    per_symbol = make(clock, capacity=2, idle_after=10.0)
    assert "BTC" not in per_symbol
    assert list(per_symbol) == []
    per_symbol.call("BTC", lambda: 1)
    per_symbol[("ETH", 1)]
    per_symbol["SOL"]  # past capacity: the overflow breaker
    assert "BTC" in per_symbol and ("ETH", 1) in per_symbol
    assert "SOL" not in per_symbol, "an overflowed key has no breaker of its own"
    assert sorted(per_symbol, key=repr) == ["BTC", ("ETH", 1)]
    assert per_symbol.counts()["created"] == 2, "asking made no breaker"
    # Asked in every period, an unused key is still evicted.
    for _ in range(2):
        clock.advance(10.0)
        assert "BTC" in per_symbol
        per_symbol.evict_idle()
    assert "BTC" not in per_symbol and list(per_symbol) == []
    with pytest.raises(TypeError, match="Breakers key"):
        1.5 in per_symbol  # noqa: B015


def test_subclasses_of_key_types_are_a_type_error(clock):
    class Symbol(str):
        def __hash__(self) -> int:
            raise AssertionError("never called")

    with pytest.raises(TypeError, match="got Symbol"):
        make(clock)[Symbol("BTC")]


def test_many_threads_on_the_same_keys_make_one_breaker_each(clock):
    per_symbol = make(clock)
    keys = [f"S{i}" for i in range(50)]
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            start.wait()
            for _ in range(20):
                for k in keys:
                    per_symbol.call(k, lambda: None)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert per_symbol.counts() == {"live": 50, "created": 50, "evicted": 0, "overflow_calls": 0}
    assert sum(per_symbol[k].snapshot().successes for k in keys) == 8 * 20 * 50


def test_past_capacity_new_keys_share_the_overflow_breaker(clock):
    per_symbol = make(clock, capacity=2, name="test-keyed-overflow")
    per_symbol["a"], per_symbol["b"]
    assert per_symbol.capacity == 2
    assert per_symbol["c"].name == per_symbol.overflow.name == "test-keyed-overflow/(overflow)"
    trip(per_symbol, "d")
    with pytest.raises(tripwire.CircuitOpenError):
        per_symbol.call("e", lambda: 1)
    assert per_symbol.call("a", lambda: 1) == 1, "keys of their own are untouched"
    counts = per_symbol.counts()
    assert (counts["live"], counts["created"]) == (2, 2)
    assert counts["overflow_calls"] >= 5
    assert len(per_symbol) == 2


def test_idle_keys_are_evicted_open_ones_kept(clock):
    per_symbol = make(clock, idle_after=10.0)
    per_symbol.call("idle", lambda: 1)
    per_symbol.call("busy", lambda: 1)
    trip(per_symbol, "down")
    assert per_symbol.evict_idle() == 0, "no whole period has passed"
    clock.advance(10.0)
    assert per_symbol.evict_idle() == 0, "used in the period before"
    per_symbol.call("busy", lambda: 1)
    clock.advance(10.0)
    assert per_symbol.evict_idle() == 1
    assert per_symbol.counts() == {"live": 2, "created": 3, "evicted": 1, "overflow_calls": 0}
    assert per_symbol["down"].state == "open", "an outage in progress is kept"
    assert per_symbol["idle"].snapshot().calls == 0, "a new breaker for the key"


def test_a_new_key_runs_the_due_sweep(clock):
    per_symbol = make(clock, idle_after=1.0)
    per_symbol["old"]
    clock.advance(1.0)
    per_symbol["new"]
    clock.advance(1.0)
    per_symbol["newer"]
    # "old", unused for two periods, is gone; "new" may be too (a key made
    # while a sweep starts a period may count in the one before).
    counts = per_symbol.counts()
    assert counts["created"] == 3
    assert counts["evicted"] >= 1
    assert counts["live"] == 3 - counts["evicted"]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"capacity": 0}, ValueError, "capacity"),
        ({"capacity": -1}, ValueError, "capacity"),
        ({"capacity": 2**40}, ValueError, "capacity"),
        ({"capacity": "10"}, TypeError, "capacity must be an int"),
        ({"capacity": True}, TypeError, "capacity must be an int"),
        ({"idle_after": 0.0}, ValueError, "idle_after"),
        ({"idle_after": 86400.0 * 31}, ValueError, "idle_after"),
        ({"idle_after": -1.0}, ValueError, "idle_after"),
        ({"idle_after": "1"}, TypeError, "idle_after"),
        ({"label_cap": 10_001}, ValueError, "label_cap"),
        ({"label_cap": 1.5}, TypeError, "label_cap must be an int"),
        ({"name": ""}, TypeError, "name must be a non-empty str"),
        ({"name": 1}, TypeError, "name must be a non-empty str"),
        ({"failure_threshold": -1}, ValueError, "failure_threshold"),
        ({"failure_on": 1}, TypeError, "failure_on"),
        ({"fail_max": 1}, TypeError, r"Breakers.__new__\(\) got an unexpected keyword argument 'fail_max'"),
    ],
    ids=repr,
)
def test_bad_arguments_are_refused_by_name(kwargs, error, message):
    with pytest.raises(error, match=message):
        tripwire.Breakers(**kwargs)


def test_a_template_that_is_no_breaker_or_comes_with_keywords_is_refused():
    with pytest.raises(TypeError, match="template must be a tripwire.Breaker, got dict"):
        tripwire.Breakers({"failure_threshold": 1})  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="not both"):
        tripwire.Breakers(tripwire.Breaker(), failure_threshold=1)  # type: ignore[call-overload]


def test_a_named_map_is_exported_while_it_lives(clock):
    per_symbol = make(clock, name="test-keyed-export", label_cap=1)
    per_symbol.call("BTCUSDT", lambda: 1)
    trip(per_symbol, "ETHUSDT")
    text = tripwire.prometheus_text()
    assert 'tripwire_keyed_breakers{breakers="test-keyed-export"} 2' in text
    assert 'tripwire_keyed_created_total{breakers="test-keyed-export"} 2' in text
    assert 'tripwire_keyed_breakers_in_state{breakers="test-keyed-export",state="open"} 1' in text
    # The label cap names the key not Closed first.
    assert 'tripwire_keyed_breaker_state{breakers="test-keyed-export",key="ETHUSDT",state="open"} 1' in text
    assert 'key="BTCUSDT"' not in text
    assert 'tripwire_keyed_unnamed_breakers{breakers="test-keyed-export"} 1' in text
    assert "test-keyed-export/" not in tripwire.breaker_names(), "keys are not breakers of the registry"
    del per_symbol
    gc.collect()
    assert "test-keyed-export" not in tripwire.prometheus_text()


def test_the_collector_serves_a_named_map(clock):
    pytest.importorskip("prometheus_client")
    from tripwire.prometheus import TripwireCollector

    per_symbol = make(clock, name="test-keyed-collector")
    per_symbol.call("BTCUSDT", lambda: 1)
    families = {f.name: f for f in TripwireCollector().collect()}
    live = families["tripwire_keyed_breakers"]
    assert any(s.labels == {"breakers": "test-keyed-collector"} and s.value == 1 for s in live.samples)


def test_the_stub_gives_breakers_every_keyword_of_a_breaker_but_name():
    tree = ast.parse(Path(_tripwire.__file__).with_name("_tripwire.pyi").read_text())
    typed = next(c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "_TemplateKeywords")
    keys = [s.target.id for s in typed.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    assert keys == [k for k in inspect.signature(tripwire.Breaker).parameters if k != "name"]


def test_the_readme_example(clock):
    # python/README.md, "A breaker per key", line for line but the clock.
    per_symbol: tripwire.Breakers[str] = tripwire.Breakers(
        name="binance-symbols",  # breakers "binance-symbols/<key>", one family in Prometheus
        failure_threshold=5,
        open_timeout=30.0,  # any keyword argument of tripwire.Breaker(...) but name
        capacity=10_000,  # keys with a breaker of their own; new ones past it share one
        idle_after=600.0,  # a Closed breaker unused this long is evicted
        clock=clock,
    )
    fetched: list[str] = []

    def fetch_ticker(symbol: str) -> dict[str, str]:
        fetched.append(symbol)
        return {"symbol": symbol}

    ticker = per_symbol.call("BTC/USDT", fetch_ticker, "BTC/USDT")  # one call through the key's breaker

    with per_symbol["ETH/USDT"]:  # a block
        fetch_ticker("ETH/USDT")

    @per_symbol["SOL/USDT"]  # a decorator
    def fetch_sol() -> dict[str, str]:
        return fetch_ticker("SOL/USDT")

    fetch_sol()
    per_symbol.counts()  # {'live': 3, 'created': 3, 'evicted': 0, 'overflow_calls': 0}
    assert ticker == {"symbol": "BTC/USDT"}
    assert fetched == ["BTC/USDT", "ETH/USDT", "SOL/USDT"]
    assert per_symbol.counts() == {"live": 3, "created": 3, "evicted": 0, "overflow_calls": 0}


def test_breakers_call_judges_results_and_reports_every_transition_as_a_breaker_does(clock):
    heard: list[tuple[str | None, str, str]] = []
    per_symbol = make(
        clock,
        failure_threshold=1,
        failure_if=lambda result: result is None,
        on_state_change=lambda b, old, new: heard.append((b.name, old, new)),
    )
    assert per_symbol.call("BTCUSDT", lambda: None) is None, "a result judged a failure is still returned"
    assert per_symbol["BTCUSDT"].state == "open"
    clock.advance(30.0)
    # The probe: admitted (open -> half_open), then a success (half_open -> closed).
    assert per_symbol.call("BTCUSDT", lambda: 1) == 1
    assert heard == [
        ("BTCUSDT", "closed", "open"),
        ("BTCUSDT", "open", "half_open"),
        ("BTCUSDT", "half_open", "closed"),
    ]
    snapshot = per_symbol["BTCUSDT"].snapshot()
    assert (snapshot.failures, snapshot.successes) == (1, 1)


def test_breakers_call_passes_every_argument_on_and_names_the_ones_missing(clock):
    per_key = make(clock)
    assert per_key.call("k", lambda *a, **kw: (a, kw), 1, 2, c=3) == ((1, 2), {"c": 3})
    assert per_key.call("k", lambda **kw: kw, key=1, func=2) == {"key": 1, "func": 2}
    with pytest.raises(TypeError, match=r"^Breakers.call\(\) missing 2 required positional arguments: 'key' and 'func'$"):
        per_key.call()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^Breakers.call\(\) missing 1 required positional argument: 'func'$"):
        per_key.call("k")  # type: ignore[call-arg]
    assert len(per_key) == 1
    assert str(inspect.signature(per_key.call)) == "(key, func, /, *args, **kwargs)"


def test_a_lookup_borrows_the_key_and_the_map_keeps_a_new_one(clock):
    per_key = make(clock)
    key = "".join(["BTC", "USDT"])  # made at run time: an object of its own
    before = sys.getrefcount(key)
    per_key.call(key, lambda: 1)
    assert sys.getrefcount(key) == before + 1, "the map keeps the new key"
    for _ in range(100):
        per_key.call(key, lambda: 1)
        per_key[key]
        assert key in per_key
    assert sys.getrefcount(key) == before + 1, "a lookup takes no reference that it keeps"
    del key
    assert list(per_key) == ["BTCUSDT"]
    assert per_key["BTCUSDT"].snapshot().successes == 101


def test_a_key_breaker_is_one_object_until_its_key_is_evicted(clock):
    per_symbol = make(clock, idle_after=10.0, capacity=1)
    eth = per_symbol["ETHUSDT"]
    assert per_symbol["ETHUSDT"] is eth
    assert per_symbol["BTCUSDT"] is per_symbol["SOLUSDT"] is per_symbol.overflow, "one overflow object"
    # Unused for two periods, the key is evicted; its next lookup makes a new
    # breaker, and a new object.
    clock.advance(10.0)
    per_symbol.evict_idle()
    clock.advance(10.0)
    assert per_symbol.evict_idle() == 1
    fresh = per_symbol["ETHUSDT"]
    assert fresh is not eth
    assert per_symbol["ETHUSDT"] is fresh


def test_a_cycle_through_a_key_breaker_is_collected(clock):
    per_symbol = make(clock)
    ref = weakref.ref(per_symbol)
    # The listener reaches the map, and the map keeps the key's breaker,
    # whose listeners are the map's: a cycle only the collector can free.
    # (A default argument, not a closure: `del` below would empty a cell.)
    per_symbol["ETHUSDT"].on_state_change(lambda *_, m=per_symbol: m)
    del per_symbol
    gc.collect()
    assert ref() is None


def test_a_key_breaker_outlives_its_map_and_its_own_cycle_is_collected(clock):
    per_symbol = make(clock)
    eth = per_symbol["ETHUSDT"]
    del per_symbol
    gc.collect()
    assert eth.call(lambda: 1) == 1, "the map's end leaves its breakers working"
    # Alone with the listener list, the breaker reports it to the collector.
    eth.on_state_change(lambda *_, b=eth: b)
    ref = weakref.ref(eth)
    del eth
    gc.collect()
    assert ref() is None
