"""The outage demo at a tiny scale: a 3-minute outage replayed in about 3
seconds against the simulated exchange on 127.0.0.1."""

from __future__ import annotations

import pytest

from tripwire import demo


def test_tripwire_stops_calling_a_dead_exchange_and_recovers_by_itself() -> None:
    config = demo.Config(rate=5.0, outage=180.0, scale=100.0, live=False)
    stats = demo.run(config)
    naive, guarded = stats["naive"], stats["tripwire"]
    report = demo.table(config, stats, 0.0)

    # The naive client throws its whole rate at the dead exchange.
    assert naive.hits_down > 0.8 * config.rate * config.outage, report
    # tripwire: the threshold and the bulkhead before the trip, then about
    # one probe per cool-down.
    bound = config.failure_threshold + config.bulkhead + config.outage // config.cool_down + 1
    assert guarded.hits_down <= bound, report
    # Stale order books, never a stale balance; the bulkhead holds.
    assert guarded.stale > 0 and guarded.stale_max_age <= config.stale_max, report
    assert guarded.stale_balances == 0 and guarded.balance_errors > 0, report
    assert guarded.peak_in_flight <= config.bulkhead, report
    assert naive.peak_in_flight > guarded.peak_in_flight, report
    # Back within a cool-down (and the last probe's timeout) of the return.
    assert guarded.recovery is not None and guarded.recovery <= config.cool_down + config.timeout, report


def test_bad_flags_are_clear_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in [
        (["--rate", "-1"], "is not a positive number"),
        (["--outage", "3 weeks"], "is not a duration"),
        (["--pattern", "down"], "invalid choice"),
        (["--rate", "100", "--scale", "1000"], "keep it under 1000"),
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
