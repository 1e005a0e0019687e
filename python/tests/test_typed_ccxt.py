"""`typed_ccxt.py` passes `mypy --strict`: `guarded.stale.<method>` is typed
as the `tripwire.Cached` it returns, so typed user code needs no cast."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ccxt")
api = pytest.importorskip("mypy.api")


def test_stale_reads_are_typed_as_cached_values() -> None:
    sample = Path(__file__).with_name("typed_ccxt.py")
    out, err, status = api.run(["--strict", "--no-incremental", "--cache-dir", "/dev/null", str(sample)])
    assert status == 0, out + err
