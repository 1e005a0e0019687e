"""The registry of named breakers and the Prometheus export."""

from __future__ import annotations

import gc
import re

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
    assert "# TYPE tripwire_breaker_failures_total counter" in text
    assert f"tripwire_breaker_state{{{label},state=\"open\"}} 1" in text
    assert f"tripwire_breaker_state{{{label},state=\"closed\"}} 0" in text
    assert f"tripwire_breaker_successes_total{{{label}}} 1" in text
    assert f"tripwire_breaker_failures_total{{{label}}} 1" in text
    assert f"tripwire_breaker_transitions_total{{{label}}} 1" in text
    # Every sample line is `name{labels} value`.
    for line in text.splitlines():
        assert line.startswith("# ") or re.fullmatch(r"tripwire_[a-z_]+\{.*\} \d+", line), line


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
