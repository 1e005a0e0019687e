"""Type aliases shared by the stubs and the Python modules."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal, Tuple, Type, Union

#: A breaker's state, as `Breaker.state`, snapshots and listeners name it.
StateName = Literal["closed", "open", "half_open", "forced_open", "disabled"]

#: A duration in seconds.
Seconds = Union[float, int, timedelta]

#: What `failure_on` / `ignore_on` accept.
ExceptionClasses = Union[Type[BaseException], Tuple[Type[BaseException], ...]]
