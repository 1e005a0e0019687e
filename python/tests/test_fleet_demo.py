"""``python -m tripwire.fleet_demo``: several client processes on one fleet
send one probe per cool-down fleet-wide, where processes alone send one
each; without Redis, a clear message and a non-zero status."""

from __future__ import annotations

import os
import shutil

import pytest

from tripwire import fleet_demo

has_redis = any(os.environ.get(v) for v in fleet_demo.REDIS_VARS) or shutil.which("redis-server") is not None


@pytest.mark.skipif(not has_redis, reason="needs TRIPWIRE_TEST_REDIS or redis-server on the PATH")
def test_the_fleet_sends_one_probe_per_cool_down_where_lone_processes_send_one_each() -> None:
    hosts, threshold = 4, 3
    fleet, alone = fleet_demo.run(hosts=hosts, threshold=threshold, outage=6.0)
    report = fleet_demo.table(hosts, fleet, alone)
    # Before its breaker opens a process sends at most the threshold.
    assert fleet.bursts[0] <= hosts * threshold and alone.bursts[0] <= hosts * threshold, report
    # The claim: at most one probe per cool-down fleet-wide, and probing
    # went on through the outage (5 cool-downs in 6 s; load may stretch some).
    assert max(fleet.probes, default=0) <= 1, report
    assert sum(fleet.probes) >= 3, report
    # Alone, each process probes each cool-down. A process delayed past half
    # a cool-down by load makes a burst of its own: the bound is on the total.
    assert max(alone.probes, default=0) >= 2, report
    assert sum(alone.probes) >= 2 * sum(fleet.probes), report
    assert sum(fleet.hits_down) < sum(alone.hits_down), report
    # Every process called again once the exchange was back; the fleet's
    # processes refused calls they never sent.
    assert fleet.recovery is not None and alone.recovery is not None, report
    assert all(r > 0 for r in fleet.refused), report


def test_without_redis_it_says_how_to_get_it_and_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for v in fleet_demo.REDIS_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert fleet_demo.main(["--outage", "2"]) == 2
    err = capsys.readouterr().err
    for text in ("redis-server is not on the PATH", "apt-get install redis-server", "TRIPWIRE_DEMO_REDIS="):
        assert text in err, err


def test_bad_flags_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["--hosts", "0"], ["--outage", "1"], ["--rate", "-1"]):
        with pytest.raises(SystemExit) as e:
            fleet_demo.main(args)
        assert e.value.code == 2
    assert "--rate must be above 0" in capsys.readouterr().err
