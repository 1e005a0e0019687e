"""The registry of named breakers and the Prometheus export."""

from __future__ import annotations

import gc
import json
import pathlib
import re
import shutil
import subprocess

import pytest

import tripwire
from conftest import trip


def test_prometheus_text_exports_named_breakers(make_breaker):
    b = make_breaker(name='exchange "a"\\b', failure_threshold=1)
    b.call(lambda: None)
    trip(b)
    text = tripwire.prometheus_text()
    label = r'breaker="exchange \"a\"\\b"'
    assert "# HELP tripwire_breaker_state " in text
    assert "# TYPE tripwire_breaker_state gauge" in text
    assert "# TYPE tripwire_breaker_calls_total counter" in text
    assert f"tripwire_breaker_state{{{label},state=\"open\"}} 1" in text
    assert f"tripwire_breaker_state{{{label},state=\"closed\"}} 0" in text
    assert f"tripwire_breaker_calls_total{{{label},outcome=\"success\"}} 1" in text
    assert f"tripwire_breaker_calls_total{{{label},outcome=\"failure\"}} 1" in text
    assert f"tripwire_breaker_transitions_total{{{label}}} 1" in text
    # Every sample line is `name{labels} value`.
    for line in text.splitlines():
        assert line.startswith("# ") or re.fullmatch(r"tripwire_[a-z_]+\{.*\} \d+", line), line


#: Breaker actions, one a line, as `core/tests/fixtures/registry_script.rs` reads
#: them; the names carry the characters a label value must escape.
SCRIPT = """
new parity/binance"book\\x 2
new parity/coinbase 3
success parity/binance"book\\x
ignored parity/binance"book\\x
failure parity/binance"book\\x
failure parity/binance"book\\x
rejected parity/binance"book\\x
rejected parity/binance"book\\x
success parity/coinbase
failure parity/coinbase
disable parity/coinbase
failure parity/coinbase
success parity/coinbase
"""


def run_script(script: str) -> dict[str, tripwire.Breaker]:
    """The script's actions on Python breakers (kept alive by the dict)."""
    breakers: dict[str, tripwire.Breaker] = {}
    for line in script.strip().splitlines():
        action, name, *rest = line.split(" ")
        if action == "new":
            breakers[name] = tripwire.Breaker(name=name, failure_threshold=int(rest[0]))
            continue
        b = breakers[name]
        if action in ("success", "failure", "ignored"):
            b._record(b._acquire(), action)  # type: ignore[arg-type]
        elif action == "rejected":
            with pytest.raises(tripwire.CircuitOpenError):
                b._acquire()
        else:
            getattr(b, action)()
    return breakers


def families(text: str) -> dict[str, list[str]]:
    """Each family's HELP and TYPE lines and the samples of the script's
    breakers (other tests' named breakers may still be registered)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if not line.removeprefix("# HELP ").removeprefix("# TYPE ").startswith("tripwire_breaker_"):
            continue
        if line.startswith("# HELP "):
            out[line.split(" ")[2]] = [line]
        elif line.startswith("# TYPE "):
            out[line.split(" ")[2]].append(line)
        elif line.split("{", 1)[1].startswith('breaker="parity/'):
            out[line.split("{", 1)[0]].append(line)
    return out


def test_the_python_registry_exports_what_a_rust_registry_exports():
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("cargo is not on PATH: the Rust registry's text cannot be rendered")
    root = pathlib.Path(__file__).resolve().parents[2]
    # With the workspace's features, as `cargo test --workspace
    # --all-features` builds: after that build only the example is left
    # to compile (with the core's defaults, the whole core is built again).
    build = subprocess.run(
        [cargo, "build", "--quiet", "--manifest-path", str(root / "Cargo.toml"), "--workspace", "--all-features",
         "--example", "registry_script", "--message-format=json"],
        capture_output=True, text=True, timeout=900,
    )
    assert build.returncode == 0, build.stderr
    messages = [json.loads(line) for line in build.stdout.splitlines()]
    [program] = [
        m["executable"] for m in messages
        if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "registry_script"
    ]
    rust = subprocess.run([program], input=SCRIPT, capture_output=True, text=True, timeout=60)
    assert rust.returncode == 0, rust.stderr
    gc.collect()
    breakers = run_script(SCRIPT)
    python = families(tripwire.prometheus_text())
    assert python == families(rust.stdout)
    assert sorted(python) == [
        "tripwire_breaker_calls_total",
        "tripwire_breaker_rejected_total",
        "tripwire_breaker_slow_calls_total",
        "tripwire_breaker_state",
        "tripwire_breaker_transitions_total",
    ]
    # Two breakers: five state series and three outcomes each, after HELP and TYPE.
    assert len(python["tripwire_breaker_state"]) == 2 + 2 * 5
    assert len(python["tripwire_breaker_calls_total"]) == 2 + 2 * 3
    assert 'tripwire_breaker_rejected_total{breaker="parity/binance\\"book\\\\x"} 2' in python[
        "tripwire_breaker_rejected_total"
    ]
    assert [b.state for b in breakers.values()] == ["open", "disabled"]


def test_unnamed_breakers_are_not_exported_and_dropped_ones_leave(make_breaker):
    make_breaker()
    temp = make_breaker(name="temporary")
    assert "temporary" in tripwire.breaker_names()
    del temp
    gc.collect()
    assert "temporary" not in tripwire.breaker_names()
    assert 'breaker="temporary"' not in tripwire.prometheus_text()


def test_a_name_registered_again_replaces_the_older_breaker(make_breaker):
    old = make_breaker(name="dup")
    new = make_breaker(name="dup", failure_threshold=1)
    trip(new)
    assert tripwire.breaker_names().count("dup") == 1
    assert 'tripwire_breaker_state{breaker="dup",state="open"} 1' in tripwire.prometheus_text()
    assert old.state == "closed"


def samples(text: str) -> dict[tuple[str, str], float]:
    """`{(name, labels): value}` of every sample line."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            name, _, labels = series.partition("{")
            out[(name, "{" + labels)] = float(value)
    return out


def test_named_bulkheads_are_exported_beside_breakers():
    orders = tripwire.Bulkhead(2, name="binance/orders")
    tripwire.Bulkhead(1)  # unnamed: not exported
    assert orders.try_acquire()
    with orders:
        pass
    with orders:
        with pytest.raises(tripwire.BulkheadFullError):
            orders.call(lambda: None)
    text = tripwire.prometheus_text()
    for family, kind in [
        ("tripwire_bulkhead_in_flight", "gauge"),
        ("tripwire_bulkhead_max", "gauge"),
        ("tripwire_bulkhead_peak_in_flight", "gauge"),
        ("tripwire_bulkhead_acquired_total", "counter"),
        ("tripwire_bulkhead_rejected_total", "counter"),
    ]:
        assert f"# TYPE {family} {kind}\n" in text
    got = {k: v for k, v in samples(text).items() if k[0].startswith("tripwire_bulkhead_")}
    label = '{bulkhead="binance/orders"}'
    assert got == {
        ("tripwire_bulkhead_in_flight", label): 1,
        ("tripwire_bulkhead_max", label): 2,
        ("tripwire_bulkhead_peak_in_flight", label): 2,
        ("tripwire_bulkhead_acquired_total", label): 3,
        ("tripwire_bulkhead_rejected_total", label): 1,
    }
    orders.release()
    del orders
    gc.collect()
    assert "tripwire_bulkhead" not in tripwire.prometheus_text()


def test_named_stale_caches_are_exported_beside_breakers():
    clock = tripwire.ManualClock(1000.0)
    cache = tripwire.StaleCache(30.0, policies={"balances": None}, clock=clock, name="binance/market")
    cache.call("book", lambda: {"bids": []})

    def down() -> None:
        raise ConnectionError("503")

    assert cache.call("book", down).stale
    with pytest.raises(ConnectionError):
        cache.call("balances", down)
    with pytest.raises(ConnectionError):
        cache.call("never-fetched", down)
    assert cache.snapshot() == {"fresh": 1, "stale": 1, "refused": 2}
    text = tripwire.prometheus_text()
    assert "# TYPE tripwire_fallback_total counter\n" in text
    got = {k: v for k, v in samples(text).items() if k[0] == "tripwire_fallback_total"}
    assert got == {
        ("tripwire_fallback_total", '{cache="binance/market",result="fresh"}'): 1,
        ("tripwire_fallback_total", '{cache="binance/market",result="stale"}'): 1,
        ("tripwire_fallback_total", '{cache="binance/market",result="refused"}'): 2,
    }
    del cache
    gc.collect()
    assert "tripwire_fallback_total" not in tripwire.prometheus_text()


def test_the_prometheus_client_collector_serves_the_same_series(make_breaker):
    prometheus_client = pytest.importorskip("prometheus_client")
    from tripwire.prometheus import TripwireCollector

    b = make_breaker(name="binance/orderbook", failure_threshold=1)
    b.call(lambda: None)
    trip(b)
    orders = tripwire.Bulkhead(3, name="binance/orders")
    cache = tripwire.StaleCache(name="binance/book")
    cache.call("book", lambda: 1)
    registry = prometheus_client.CollectorRegistry()
    registry.register(TripwireCollector())
    served = prometheus_client.generate_latest(registry).decode()
    ours = tripwire.prometheus_text()
    assert samples(served) == samples(ours)
    assert samples(ours)[("tripwire_breaker_state", '{breaker="binance/orderbook",state="open"}')] == 1
    assert samples(ours)[("tripwire_bulkhead_max", '{bulkhead="binance/orders"}')] == 3
    assert samples(ours)[("tripwire_fallback_total", '{cache="binance/book",result="fresh"}')] == 1
    for line in ours.splitlines():
        if line.startswith("# TYPE "):
            assert line + "\n" in served, line
    # Read at each scrape, not when registered.
    late = make_breaker(name="late")
    assert 'tripwire_breaker_state{breaker="late",state="closed"} 1.0' in prometheus_client.generate_latest(
        registry
    ).decode()
    del orders, late
