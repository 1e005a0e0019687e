"""Type aliases shared by the stubs and the Python modules."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal, Tuple, Type, Union

#: A breaker's state, as `Breaker.state`, snapshots and listeners name it.
StateName = Literal["closed", "open", "half_open", "forced_open", "disabled"]

#: The one judgement of a result, the core's `Assessment`: a success, a
#: failure, ignored (the caller's fault, or not the dependency's), or
#: backpressure (the dependency is up and asks for less traffic: the
#: breaker holds for its wait). `tripwire.http.assess` gives one of the four;
#: a `tripwire.ccxt` rule one of the last three.
Verdict = Literal["success", "failure", "ignored", "backpressure"]

#: A duration in seconds.
Seconds = Union[float, int, timedelta]

#: What `failure_on` / `ignore_on` accept.
ExceptionClasses = Union[Type[BaseException], Tuple[Type[BaseException], ...]]
