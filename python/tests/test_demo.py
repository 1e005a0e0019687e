"""The outage demo at a tiny scale: a 2-minute outage replayed in a few
seconds against the fake exchange on 127.0.0.1, through ccxt (when
installed) and over plain HTTP."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from tripwire import demo

#: Small enough to take seconds, large enough that the naive client has
#: more calls in flight during the hang (rate × timeout = 6) than the
#: bulkhead lets through (4).
TINY = dict(rate=3.0, outage=120.0, scale=60.0, bulkhead=4)
HAS_CCXT = importlib.util.find_spec("ccxt") is not None
CLIENTS = [pytest.param("ccxt", marks=pytest.mark.skipif(not HAS_CCXT, reason="ccxt is not installed")), "http"]


@pytest.mark.parametrize("client", CLIENTS)
def test_tripwire_stops_calling_a_dead_exchange_and_recovers_by_itself(client: str) -> None:
    config = demo.Config(live=False, client=client, **TINY)  # type: ignore[arg-type]
    stats = demo.run(config)
    naive, guarded = stats["naive"], stats["tripwire"]
    report = demo.table(config, stats, 0.0)

    # The naive client throws its rate at the dead exchange (most of it: on
    # a loaded machine its own event loop falls behind), tens of times what
    # tripwire lets through.
    assert naive.hits_down > 0.5 * config.rate * config.outage, report
    assert naive.hits_down > 10 * max(guarded.hits_down, 1), report
    # tripwire: the threshold and the bulkhead before the trip, then about
    # one probe per cool-down.
    bound = config.failure_threshold + config.bulkhead + config.outage // config.cool_down + 1
    assert guarded.hits_down <= bound, report
    # Stale order books, never a stale balance; the bulkhead holds.
    assert guarded.stale > 0 and guarded.stale_max_age <= config.stale_max, report
    assert guarded.stale_balances == 0 and guarded.balance_errors > 0, report
    assert guarded.peak_in_flight <= config.bulkhead, report
    assert naive.peak_in_flight > guarded.peak_in_flight, report
    # Back through the first probe after the return, not a later one: within
    # a cool-down and a half (the scenario runs 60x fast, so a loaded
    # machine's lag of a few tens of ms shows as seconds here).
    assert guarded.recovery is not None and guarded.recovery <= 1.5 * config.cool_down, report


def test_a_first_run_prints_progress_and_the_table_and_nothing_on_stderr() -> None:
    # As a newcomer runs it (progress on), in a process of its own.
    argv = ["--outage", "2m", "--rate", str(TINY["rate"]), "--scale", str(TINY["scale"])]
    run = subprocess.run([sys.executable, "-m", "tripwire.demo", *argv], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONWARNINGS": "default"})
    assert run.returncode == 0, run.stderr
    assert run.stderr == "", run.stderr[:3000]
    out = run.stdout
    assert "through ccxt's binance class" in out if HAS_CCXT else "over plain HTTP" in out
    assert " breaker " in out and " to exchange " in out, out  # the live progress
    assert "| 2 min outage (mixed), 3 req/s | naive (timeout only) | tripwire |" in out, out
    assert "| first success after the exchange came back |" in out, out


def test_bad_flags_are_clear_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in [
        (["--rate", "-1"], "is not a positive number"),
        (["--outage", "3 weeks"], "is not a duration"),
        (["--pattern", "down"], "invalid choice"),
        (["--rate", "100", "--scale", "1000"], "keep it under 1000"),
        (["--client", "curl"], "invalid choice"),
    ]:
        with pytest.raises(SystemExit) as exit:
            demo.main(argv)
        assert exit.value.code == 2
        assert message in capsys.readouterr().err


def test_the_timeline_has_every_phase_in_order() -> None:
    spans = demo.timeline(1800.0, "mixed")
    assert [p for p, _, _ in spans] == [
        demo.HEALTHY, demo.RATE_LIMITED, demo.HEALTHY, demo.MAINTENANCE, demo.HANG, demo.RECOVERED,
    ]
    assert spans[-1][2] == 180 + 1800 + 180
    assert [p for p, _, _ in demo.timeline(120.0, "hang")] == [demo.HEALTHY, demo.HANG, demo.RECOVERED]


@pytest.mark.parametrize("client", CLIENTS)
def test_balances_succeed_while_the_exchange_is_up_and_the_first_probe_after_it_returns_gets_through(
    client: str,
) -> None:
    # A short cool-down, replayed slowly enough that a loaded machine's lag
    # (a few tens of ms) stays well inside the bound: 10 s of scenario time
    # is 0.5 s of wall time here. A 503 outage: its probes fail at once, so
    # the first success after the return comes within one cool-down.
    config = demo.Config(live=False, client=client, rate=3.0, outage=60.0, scale=20.0, bulkhead=4,
                         pattern="503", cool_down=10.0)
    stats = demo.run(config)
    guarded, naive = stats["tripwire"], stats["naive"]
    report = demo.table(config, stats, 0.0)
    # The balance request is signed as the exchange asks: while it is up
    # (two minutes of the three, one request in four a balance), most of
    # them are answered, for both clients.
    up_balances = config.rate * 120.0 / 4
    assert naive.fresh_balances > 0.5 * up_balances, report
    assert guarded.fresh_balances > 0.5 * up_balances, report
    # Measured from the moment the fake exchange answers again (the
    # scenario's recovery time, which its script reads): the first probe
    # after it, not a later one.
    assert guarded.recovery is not None and guarded.recovery <= 1.5 * config.cool_down, report
