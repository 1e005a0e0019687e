"""``python -m tripwire.rate_demo``, short: four bot processes behind one
IP against the fake exchange's weight limits. tripwire's shared limiter
gets no 429 and no 418 and uses nearly all of the allowed weight; the
naive bots are banned."""

from __future__ import annotations

import pytest

pytest.importorskip("ccxt")

from tripwire import rate_demo  # noqa: E402


def test_the_shared_limiter_is_never_refused_and_uses_the_allowed_weight(tmp_path, capsys):
    chart = tmp_path / "rate.svg"
    assert rate_demo.main(["--duration", "3m", "--scale", "30", "--only", "naive", "--only", "tripwire",
                           "--chart", str(chart), "--quiet"]) == 0
    table = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in table.splitlines() if line.startswith("| naive") or line.startswith("| tripwire")}
    ok, too_many, banned, banned_for, share = rows["tripwire"]
    assert (too_many, banned, banned_for) == ("0", "0", "0"), table
    assert float(share.rstrip("%")) >= 90, table
    assert int(rows["naive"][2].replace(",", "")) > 0, "the naive bots were banned"
    assert chart.read_text().startswith("<svg") and "tripwire" in chart.read_text()


def test_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit):
        rate_demo.main(["--duration", "soon"])
    assert "is not a duration" in capsys.readouterr().err
