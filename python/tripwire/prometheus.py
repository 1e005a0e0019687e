"""tripwire's series for a ``prometheus_client`` registry (the optional extra:
``pip install tripwire[prometheus]``).

>>> from prometheus_client import REGISTRY
>>> from tripwire.prometheus import TripwireCollector
>>> REGISTRY.register(TripwireCollector())

The collector serves every named breaker, bulkhead and stale cache, as
``tripwire.prometheus_text()`` does: the text is the core's writer's (the
families, labels and help texts a Rust service exports), read back by
``prometheus_client``'s own parser, so no name is spelt twice.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from ._tripwire import prometheus_text

__all__ = ["TripwireCollector"]


class TripwireCollector(Collector):
    """Every named breaker's, bulkhead's and stale cache's series, read when
    the registry is scraped."""

    def collect(self) -> Iterable[Metric]:
        return list(text_string_to_metric_families(prometheus_text()))
