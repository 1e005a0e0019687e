"""ccxt exchanges behind a breaker, a bulkhead and retry, in one call.

Install with ``pip install 'tripwire[ccxt]'``. Works with ccxt's sync
classes and with ``ccxt.async_support``::

    import ccxt.async_support as ccxt
    from tripwire.ccxt import guard

    binance = guard(ccxt.binance({"apiKey": KEY, "secret": SECRET}))
    book = await binance.stale.fetch_order_book("BTC/USDT")  # Cached(value, age, stale)
    balance = await binance.fetch_balance()                  # never stale: down means an error

Every unified method of the exchange (``fetch_*``, ``create_*``,
``edit_*``, ``cancel_*``, ``withdraw``, ``transfer``, ``set_*``,
``load_markets``) is guarded, composed outermost first as: stale fallback
(``.stale`` only) → retry → breaker → bulkhead → the ccxt call, whose own
``timeout`` (milliseconds, ccxt's option) bounds each attempt and counts as
a failure (``RequestTimeout``). Everything else (attributes, helpers such
as ``amount_to_precision``, ``close``, the implicit ``public_get_*``
methods) is the exchange's own, unguarded.

**Endpoint groups.** Each guarded method belongs to a group: ``"market"``
(public market data: ``fetch_order_book``, ``fetch_ticker``,
``fetch_ohlcv``, ``load_markets``, …), ``"account"`` (private reads:
``fetch_balance``, ``fetch_order``, ``fetch_open_orders``,
``fetch_my_trades``, ``fetch_positions``, …, and any ``fetch_*`` not known
to be market data) or ``"trading"`` (anything
that places, changes or cancels orders or moves funds). One breaker guards
the whole exchange, or one per group with ``per_group=True`` (a rate limit
on order placement then leaves market data flowing). ``groups=`` moves a
method to another group or guards an implicit one
(``groups={"private_post_order_oco": "trading"}``).

**A breaker per symbol or per endpoint.** With ``per_symbol=True`` each
market symbol has a breaker of its own (``tripwire.Breakers``, named
``"<name>/symbols"``): a market-data call's symbol is its first positional
argument, or its ``symbol=`` keyword, when that is a ``str``
(``fetch_ticker``, ``fetch_order_book``, ``fetch_ohlcv``,
``fetch_trades``, …), so a delisted or broken market trips only its own
breaker and the others keep flowing. A call without a symbol
(``load_markets``, ``fetch_tickers`` with a list, account and trading
calls) goes through its group's breaker, as without the option. With
``per_endpoint=True`` each guarded method has a breaker of its own, keyed
by its name (``"<name>/endpoints"``); with both, a market-data call with a
symbol is keyed by ``(method, symbol)``. ``guarded.keyed`` is the map
(None without either option): ``guarded.keyed["BTC/USDT"]``,
``guarded.keyed.counts()``; ``keyed=`` takes its ``capacity``,
``idle_after`` and ``label_cap``.

**What counts.** ccxt's exceptions are judged by the most specific rule
that matches (the exception's class first, then its bases in order):

| ccxt exception | verdict | retried |
| --- | --- | --- |
| ``NetworkError``, ``RequestTimeout``, ``ExchangeNotAvailable``, ``OnMaintenance``, other ``OperationFailed`` | failure | yes |
| ``RateLimitExceeded``, ``DDoSProtection`` (429, 418) | backpressure: the breaker holds, refusing every call for the server's ``Retry-After`` (its ``open_timeout`` when none is sent), and the error's ``retry_after`` says how long | never: the caller gets it at once |
| ``AuthenticationError``, ``PermissionDenied``, ``InsufficientFunds``, ``InvalidOrder``, ``BadSymbol``, ``BadRequest`` | ignored: the caller's fault | never |
| ``InvalidNonce`` (a ``NetworkError``: the local clock is off, the exchange is fine) | ignored | never |
| any other ``ExchangeError``, and every non-ccxt exception | ignored: the exchange answered | never |

The verdicts are ``tripwire.Verdict``'s words, as ``tripwire.http`` gives
them for a response. ``rules=`` adds or overrides rules
(``{ccxt.InvalidNonce: "failure"}``), each ``"failure"``,
``"backpressure"`` or ``"ignored"``.
Cancellation and interrupts are always neutral.

**Retries.** Market data and account reads are retried (3 attempts,
full-jitter backoff from 0.2 s capped at 2 s, a retry budget of 20 % of
recent calls, a 10 s deadline; ``retry={...}`` takes ``tripwire.retry``'s
arguments, ``retry=False`` turns retries off). The trading group is never
retried unless ``retry_trading=True``: an order whose answer was lost may
have been placed. Backpressure is never retried: the caller gets the error
with its ``retry_after`` at once, and the hold refuses the calls that follow.

**Stale data.** ``guarded.stale.<method>(...)`` (market data only) returns
``tripwire.Cached(value, age, stale)``: the fresh value, or, when the
exchange is down or refused, the last good value of the same call (same
method and arguments) with its age, if younger than ``stale_max_age``.
With such a value at hand, a stale read makes one attempt and never waits:
a failure, a refusal or a 429 returns the stale value at once, where a
plain read would pause for a backoff and try again, or raise the 429
(without one, it reads as a plain read does).
Balances, orders and trading are never served stale:
``guarded.stale.fetch_balance`` raises ``TypeError``.

**Refusals.** An open breaker raises ``ExchangeCircuitOpen``: a
``tripwire.CircuitOpenError`` (with ``retry_after``) and a
``ccxt.ExchangeNotAvailable`` at once, so a bot's ``except
ccxt.NetworkError`` keeps working. The call is not made.

**Rate limits.** ``guard(exchange, rate_limiter=tripwire.RateLimiter(...))``
replaces ccxt's own throttle, which is per process and reads no header, by
a limiter that can be shared: ccxt asks it before every request with the
endpoint's weight (its ``cost``), and waits its turn; the weight the server
reports used (Binance's ``X-MBX-USED-WEIGHT-1M``) is read after every
response, so the next calls slow down at once when other clients on the
same IP have spent the budget.

``Retry-After`` is read from the response of the very call that failed
(``guard`` wraps the exchange's ``on_rest_response`` to see it), not from
``last_response_headers``, which concurrent calls overwrite.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import math
import re
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Generator, Literal, Mapping, Optional, Tuple, Type, Union

from . import _tripwire
from ._errors import CircuitOpenError, TripwireError
from ._fallback import Cached, StaleCache
from ._limiter import RateLimiter
from ._retry import Retry, no_pauses
from ._tripwire import Breaker, Breakers, Bulkhead, RetryBudget, Ticket
from ._types import Verdict

try:
    import ccxt  # type: ignore[import-untyped, import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError("tripwire.ccxt needs ccxt: pip install 'tripwire[ccxt]'") from None

__all__ = [
    "ACCOUNT",
    "BACKPRESSURE",
    "DEFAULT_RULES",
    "FAILURE",
    "IGNORED",
    "MARKET",
    "TRADING",
    "ExchangeCircuitOpen",
    "GuardedExchange",
    "group_of",
    "guard",
    "retry_after_from_headers",
]

Group = Literal["market", "account", "trading"]

FAILURE: Verdict = "failure"
BACKPRESSURE: Verdict = "backpressure"
IGNORED: Verdict = "ignored"
MARKET: Group = "market"
ACCOUNT: Group = "account"
TRADING: Group = "trading"
GROUPS: Tuple[Group, ...] = (MARKET, ACCOUNT, TRADING)

#: The default rules; the most specific class that matches wins.
DEFAULT_RULES: Mapping[Type[BaseException], Verdict] = {
    ccxt.OperationFailed: FAILURE,
    ccxt.NetworkError: FAILURE,
    ccxt.RequestTimeout: FAILURE,
    ccxt.ExchangeNotAvailable: FAILURE,
    ccxt.OnMaintenance: FAILURE,
    ccxt.RateLimitExceeded: BACKPRESSURE,
    ccxt.DDoSProtection: BACKPRESSURE,
    ccxt.InvalidNonce: IGNORED,
    ccxt.ExchangeError: IGNORED,
    ccxt.AuthenticationError: IGNORED,
    ccxt.PermissionDenied: IGNORED,
    ccxt.InsufficientFunds: IGNORED,
    ccxt.InvalidOrder: IGNORED,
    ccxt.BadSymbol: IGNORED,
    ccxt.BadRequest: IGNORED,
}

#: A rule's verdicts: an exception is never a success.
_VERDICTS = (FAILURE, BACKPRESSURE, IGNORED)


class ExchangeCircuitOpen(CircuitOpenError, ccxt.ExchangeNotAvailable):  # type: ignore[misc]
    """The exchange's breaker refused the call, which was not made: a
    ``tripwire.CircuitOpenError`` (``retry_after``, ``name``, ``state``)
    that ccxt code also catches as ``ccxt.ExchangeNotAvailable``. Its
    arguments, message and fields are CircuitOpenError's."""


# -- endpoint groups -----------------------------------------------------------

#: Public market data: the reads that may be served stale. Any other
#: ``fetch_*`` is taken for a private read (never stale), the safe side.
_MARKET_READS = frozenset({
    "load_markets", "fetch_markets", "fetch_currencies", "fetch_status", "fetch_time",
    "fetch_order_book", "fetch_order_books", "fetch_l2_order_book", "fetch_l3_order_book",
    "fetch_ticker", "fetch_tickers", "fetch_bids_asks", "fetch_last_prices", "fetch_mark_price",
    "fetch_mark_prices", "fetch_trades", "fetch_funding_rate", "fetch_funding_rates",
    "fetch_funding_rate_history", "fetch_funding_interval", "fetch_funding_intervals",
    "fetch_open_interest", "fetch_open_interests", "fetch_open_interest_history", "fetch_liquidations",
    "fetch_long_short_ratio", "fetch_long_short_ratio_history", "fetch_leverage_tiers",
    "fetch_market_leverage_tiers", "fetch_greeks", "fetch_all_greeks", "fetch_option", "fetch_option_chain",
    "fetch_volatility_history", "fetch_settlement_history", "fetch_borrow_rate", "fetch_borrow_rates",
    "fetch_borrow_rate_history", "fetch_cross_borrow_rate", "fetch_cross_borrow_rates",
    "fetch_isolated_borrow_rate", "fetch_isolated_borrow_rates", "fetch_trading_limits",
})
_OHLCV = re.compile(r"fetch_(\w+_)?ohlcv")
_TRADING_PREFIXES = ("create_", "edit_", "cancel_", "set_", "borrow_", "repay_", "add_margin", "reduce_margin")
_TRADING_NAMES = frozenset({"withdraw", "transfer", "close_position", "close_all_positions"})


def group_of(name: str) -> Optional[Group]:
    """The group of ccxt's unified method ``name`` (snake_case; a ``_ws``
    variant goes with its REST method), or None if it makes no request of
    its own (helpers, attributes, implicit methods)."""
    base = name[:-3] if name.endswith("_ws") else name
    if base in _TRADING_NAMES or base.startswith(_TRADING_PREFIXES):
        return TRADING
    if base in _MARKET_READS or _OHLCV.fullmatch(base):
        return MARKET
    if base.startswith("fetch_"):
        return ACCOUNT
    return None


# -- Retry-After -----------------------------------------------------------------

def retry_after_from_headers(headers: Optional[Mapping[str, Any]], now: Optional[float] = None) -> Optional[float]:
    """The wait a response asks for, in seconds, read by the core
    (``tripwire::http::retry_after``): ``Retry-After`` (whole seconds, or an
    HTTP date), else ``RateLimit-Reset``, else ``X-RateLimit-Reset``
    (seconds, or a Unix time when that large). None when no header says, or
    none can be read; a date or reset already past is 0. ``now``: the Unix
    time dates are measured from (default: the wall clock)."""
    return _tripwire._retry_after(headers, now)


#: The headers of the response the current call (thread or task) received
#: last; set by the hook on the exchange's ``on_rest_response``.
_response_headers: contextvars.ContextVar[Optional[Mapping[str, Any]]] = contextvars.ContextVar(
    "tripwire_ccxt_response_headers", default=None
)


def _watch_responses(exchange: Any) -> None:
    """Makes the exchange report each response's headers to the call that
    received it, and the counts its server reports to its rate limiter, if
    it has one (once per exchange object)."""
    original = exchange.on_rest_response
    if getattr(original, "_tripwire_watch", False):
        return

    @functools.wraps(original)
    def on_rest_response(code: Any, reason: Any, url: Any, method: Any, headers: Any, body: Any, *rest: Any) -> Any:
        _response_headers.set(headers)
        counts = getattr(exchange, "_tripwire_counts", None)
        if counts is not None:
            if str(code) in ("429", "418"):
                # Refused despite the limiter (someone else spent the
                # budget): its first limit counts as spent for a period.
                counts[0].observe_used(0, counts[0].limits[0].units)
            elif headers:
                _observe(counts[0], counts[1], headers)
        return original(code, reason, url, method, headers, body, *rest)

    on_rest_response._tripwire_watch = True  # type: ignore[attr-defined]
    exchange.on_rest_response = on_rest_response


#: Binance's interval suffixes (``-1M``, ``-10S``, ``-1D``): seconds per unit.
_INTERVAL = re.compile(r"-(\d+)([smhd])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _window_left(name: str, now: float) -> Optional[float]:
    """The seconds left in the fixed window a Binance header's interval
    names (its windows start on multiples of the interval since the Unix
    epoch, in UTC), or None for a header that names none."""
    m = _INTERVAL.search(name)
    if m is None or int(m.group(1)) == 0:
        return None
    window = int(m.group(1)) * _UNIT[m.group(2)]
    return window - now % window


def _observe(limiter: RateLimiter, sources: Mapping[str, int], headers: Mapping[str, Any]) -> None:
    """Tells ``limiter`` what the server counted: each header of
    ``sources`` (lower-case name → limit) that holds a whole number, with
    the time left in its window when its name gives the interval, so that
    the limiter's own paced requests, which the server counts too, are not
    taken for someone else's. A value that is not a whole number is
    ignored: it can neither raise nor lower the count."""
    lowered = {str(k).lower(): v for k, v in headers.items()}
    now = time.time()
    for name, limit in sources.items():
        value = str(lowered.get(name, "")).strip()
        if value.isascii() and value.isdigit():
            limiter.observe_used(limit, int(value), _window_left(name, now))


def _cost(limiter: RateLimiter, cost: Any) -> Union[int, Tuple[int, ...]]:
    """ccxt's cost of a request (its endpoint's weight, a float; None: 1),
    rounded up, on the limiter's first limit; 0 on the others."""
    weight = 1 if cost is None else max(0, math.ceil(float(cost)))
    n = len(limiter.limits)
    return weight if n == 1 else (weight,) + (0,) * (n - 1)


def _throttle_with(exchange: Any, limiter: RateLimiter, sources: Mapping[str, int]) -> None:
    """Replaces the exchange's own throttle (ccxt calls it before every
    request, with the endpoint's cost) by ``limiter``'s wait, and has it
    learn from the counts in ``sources``."""
    exchange.enableRateLimit = True
    exchange._tripwire_counts = (limiter, dict(sources))
    if inspect.iscoroutinefunction(exchange.throttle):

        async def throttle_async(cost: Any = None) -> None:
            await limiter.wait_async(_cost(limiter, cost))

        exchange.throttle = throttle_async
    else:

        def throttle(cost: Any = None) -> None:
            limiter.wait(_cost(limiter, cost))

        exchange.throttle = throttle


#: The headers Binance reports its used request weight in, per exchange id
#: prefix: read into the limiter's first limit unless ``rate_headers`` says
#: otherwise.
_USED_WEIGHT = {"binance": {"x-mbx-used-weight-1m": 0}}


# -- the guarded exchange --------------------------------------------------------

_DEFAULT_RETRY: Mapping[str, Any] = {"attempts": 3, "base": 0.2, "cap": 2.0, "jitter": "full", "deadline": 10.0}


class GuardedExchange:
    """A ccxt exchange behind tripwire (what ``guard`` returns); see the
    module's doc. ``exchange``: the ccxt object; ``breakers``: the breaker
    of each group (the same one for all three unless ``per_group``);
    ``bulkhead``, ``cache``: the bulkhead (or None) and the stale cache."""

    __slots__ = (
        "_groups",
        "_max_retry_after",
        "_methods",
        "_retry",
        "_retry_trading",
        "_rules",
        "_stale_methods",
        "breakers",
        "bulkhead",
        "_per_endpoint",
        "_per_symbol",
        "cache",
        "exchange",
        "keyed",
    )

    def __init__(
        self,
        exchange: Any,
        *,
        per_group: bool = False,
        per_symbol: bool = False,
        per_endpoint: bool = False,
        keyed: Optional[Mapping[str, Any]] = None,
        name: Optional[str] = None,
        breaker: Optional[Mapping[str, Any]] = None,
        bulkhead: Optional[int] = 16,
        max_wait: Optional[float] = None,
        retry: Union[bool, Mapping[str, Any]] = True,
        retry_trading: bool = False,
        stale_max_age: Optional[float] = 60.0,
        groups: Optional[Mapping[str, str]] = None,
        rules: Optional[Mapping[Type[BaseException], str]] = None,
        max_retry_after: float = 300.0,
        rate_limiter: Optional[RateLimiter] = None,
        rate_headers: Optional[Mapping[str, int]] = None,
    ) -> None:
        if not hasattr(exchange, "on_rest_response") or not hasattr(exchange, "id"):
            raise TypeError(f"guard() takes a ccxt exchange object, got {exchange!r}")
        self.exchange = exchange
        self._groups: Dict[str, Group] = {}
        for method, group in (groups or {}).items():
            if group not in GROUPS:
                raise ValueError(f"groups[{method!r}] must be one of {GROUPS}, got {group!r}")
            self._groups[method] = group
        self._rules: Dict[Type[BaseException], Verdict] = dict(DEFAULT_RULES)
        for cls, verdict in (rules or {}).items():
            if not (isinstance(cls, type) and issubclass(cls, BaseException)):
                raise TypeError(f"rules keys must be exception classes, got {cls!r}")
            if verdict not in _VERDICTS:
                raise ValueError(f"rules[{cls.__name__}] must be one of {_VERDICTS}, got {verdict!r}")
            self._rules[cls] = verdict
        if not (max_retry_after >= 0 and max_retry_after != float("inf")):
            raise ValueError(f"max_retry_after must be a finite number of seconds >= 0, got {max_retry_after!r}")
        self._max_retry_after = float(max_retry_after)

        base = name if name is not None else f"ccxt/{exchange.id}"
        options = {"failure_threshold": 5, "open_timeout": 30.0, **(breaker or {})}
        if per_group:
            self.breakers: Dict[Group, Breaker] = {g: Breaker(name=f"{base}/{g}", **options) for g in GROUPS}
        else:
            one = Breaker(name=base, **options)
            self.breakers = {g: one for g in GROUPS}
        self._per_symbol = bool(per_symbol)
        self._per_endpoint = bool(per_endpoint)
        self.keyed: Optional[Breakers[Any]] = None
        if per_symbol or per_endpoint:
            kind = "symbols" if not per_endpoint else "endpoints" if not per_symbol else "endpoint-symbols"
            self.keyed = Breakers(name=f"{base}/{kind}", **{**options, **(keyed or {})})
        elif keyed is not None:
            raise TypeError("keyed needs per_symbol or per_endpoint")
        self.bulkhead = None if bulkhead is None else Bulkhead(bulkhead, max_wait=max_wait, name=base)
        self._retry: Optional[Retry] = self._make_retry(retry)
        self._retry_trading = retry_trading
        self.cache = StaleCache(max_age=stale_max_age)
        self._methods: Dict[str, Callable[..., Any]] = {}
        self._stale_methods: Dict[str, Callable[..., Any]] = {}
        if rate_limiter is not None:
            if not isinstance(rate_limiter, RateLimiter):
                raise TypeError(f"rate_limiter must be a tripwire.RateLimiter, got {type(rate_limiter).__name__}")
            if rate_headers is None:
                rate_headers = next((h for p, h in _USED_WEIGHT.items() if str(exchange.id).startswith(p)), {})
            n = len(rate_limiter.limits)
            for header, limit in rate_headers.items():
                if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit < n:
                    raise ValueError(f"rate_headers[{header!r}] must be a limit's index, 0 to {n - 1}, got {limit!r}")
            _throttle_with(exchange, rate_limiter, {h.lower(): i for h, i in rate_headers.items()})
        elif rate_headers is not None:
            raise TypeError("rate_headers needs a rate_limiter")
        _watch_responses(exchange)

    def _make_retry(self, retry: Union[bool, Mapping[str, Any]]) -> Optional[Retry]:
        if retry is False:
            return None
        if retry is True:
            options: Dict[str, Any] = dict(_DEFAULT_RETRY)
        elif isinstance(retry, Mapping):
            options = {**_DEFAULT_RETRY, **retry}
        else:
            raise TypeError(f"retry must be True, False or a mapping of tripwire.retry arguments, got {retry!r}")
        options.setdefault("budget", RetryBudget(0.2))
        theirs = options.pop("retry_if", None)

        # Only the exchange's failure is asked again: backpressure (429, 418)
        # is answered by the hold it placed, and the caller gets it at once.
        def retry_if(exc: BaseException) -> bool:
            return self.verdict(exc) == FAILURE and (theirs is None or bool(theirs(exc)))

        return Retry(retry_if=retry_if, **options)

    # -- judging ---------------------------------------------------------------

    def verdict(self, exc: BaseException) -> Verdict:
        """``"failure"``, ``"backpressure"`` or ``"ignored"``: the most
        specific rule for ``exc``'s class."""
        if not isinstance(exc, Exception) or isinstance(exc, TripwireError):
            return IGNORED
        for cls in type(exc).__mro__:
            verdict = self._rules.get(cls)
            if verdict is not None:
                return verdict
        return IGNORED

    def group(self, method: str) -> Optional[Group]:
        """The group of ``method``, ``groups=`` first; None if unguarded."""
        return self._groups.get(method) or group_of(method)

    def _settle(self, breaker: Breaker, ticket: Ticket | int, exc: BaseException) -> None:
        """Records how an admitted call that raised ``exc`` ended.
        Backpressure is recorded as the core settles it: ignored (the
        exchange is up, it asked for less traffic), and the breaker held open
        for the server's wait (its ``open_timeout`` when no header says),
        which the error carries as ``retry_after``."""
        verdict = self.verdict(exc)
        if verdict == BACKPRESSURE:
            breaker._record(ticket, "ignored")
            asked = retry_after_from_headers(_response_headers.get())
            wait = breaker.open_timeout if asked is None else min(asked, self._max_retry_after)
            breaker.hold(wait)
            if asked is not None:
                exc.retry_after = wait  # type: ignore[attr-defined]
        else:
            breaker._record(ticket, "failure" if verdict == FAILURE else "ignored")

    def _admit(self, breaker: Breaker) -> Ticket | int:
        try:
            return breaker._acquire()
        except CircuitOpenError as e:
            raise ExchangeCircuitOpen(*e.args) from None

    # -- the wrappers ------------------------------------------------------------

    def _breaker_of(self, name: str, group: Group) -> Callable[[Tuple[Any, ...], Mapping[str, Any]], Breaker]:
        """The breaker of each call of method ``name``: its group's, or with
        ``per_symbol`` / ``per_endpoint`` its key's in ``keyed``."""
        keyed = self.keyed
        fixed = self.breakers[group]
        if keyed is None:
            return lambda args, kwargs: fixed
        by_symbol = self._per_symbol and group == MARKET
        endpoint = name if self._per_endpoint else None

        def breaker_of(args: Tuple[Any, ...], kwargs: Mapping[str, Any]) -> Breaker:
            symbol = _symbol(args, kwargs) if by_symbol else None
            if symbol is None:
                return fixed if endpoint is None else keyed[endpoint]
            return keyed[symbol if endpoint is None else (endpoint, symbol)]

        return breaker_of

    def _attempt_sync(
        self, breaker_of: Callable[[Tuple[Any, ...], Mapping[str, Any]], Breaker], method: Callable[..., Any]
    ) -> Callable[..., Any]:
        bulkhead = self.bulkhead

        def attempt(*args: Any, **kwargs: Any) -> Any:
            breaker = breaker_of(args, kwargs)
            ticket = self._admit(breaker)
            _response_headers.set(None)
            try:
                if bulkhead is None:
                    result = method(*args, **kwargs)
                else:
                    with bulkhead:
                        result = method(*args, **kwargs)
            except BaseException as exc:
                self._settle(breaker, ticket, exc)
                raise
            breaker._record(ticket, "success")
            return result

        return attempt

    def _attempt_async(
        self, breaker_of: Callable[[Tuple[Any, ...], Mapping[str, Any]], Breaker], method: Callable[..., Any]
    ) -> Callable[..., Any]:
        bulkhead = self.bulkhead

        async def attempt(*args: Any, **kwargs: Any) -> Any:
            breaker = breaker_of(args, kwargs)
            ticket = self._admit(breaker)
            _response_headers.set(None)
            try:
                if bulkhead is None:
                    result = method(*args, **kwargs)
                    if inspect.isawaitable(result):
                        result = await result
                else:
                    async with bulkhead:
                        result = method(*args, **kwargs)
                        if inspect.isawaitable(result):
                            result = await result
            except BaseException as exc:
                self._settle(breaker, ticket, exc)
                raise
            breaker._record(ticket, "success")
            return result

        return attempt

    def _guarded(self, name: str, group: Group, method: Callable[..., Any]) -> Callable[..., Any]:
        """``method`` with retry → breaker → bulkhead; market data results
        are kept for ``.stale``."""
        breaker_of = self._breaker_of(name, group)
        retry = self._retry if group != TRADING or self._retry_trading else None
        keep = self.cache.put if group == MARKET else None
        # By the exchange's flavour, not the method's: ccxt's implicit
        # methods are plain functions that return coroutines.
        if self.is_async:
            attempt = self._attempt_async(breaker_of, method)
            retried = attempt if retry is None else functools.partial(retry.call_async, attempt)

            @functools.wraps(method)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                result = await retried(*args, **kwargs)
                if keep is not None:
                    keep(_key(name, args, kwargs), result)
                return result

            return guarded_async

        attempt = self._attempt_sync(breaker_of, method)
        retried = attempt if retry is None else functools.partial(retry.call, attempt)

        @functools.wraps(method)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            result = retried(*args, **kwargs)
            if keep is not None:
                keep(_key(name, args, kwargs), result)
            return result

        return guarded

    def _serves_stale(self, exc: BaseException) -> bool:
        """Whether ``exc`` may be answered with stale data: the exchange is
        down, slow, holding us off, or one of our guards refused."""
        return isinstance(exc, TripwireError) or self.verdict(exc) != IGNORED

    def _stale(self, name: str) -> Callable[..., Any]:
        fn = self._stale_methods.get(name)
        if fn is not None:
            return fn
        group = self.group(name)
        if group != MARKET:
            kind = "unguarded" if group is None else f"{group} data"
            raise TypeError(
                f"{name} is {kind}: only market data is served stale; call it without .stale"
            )
        guarded = getattr(self, name)
        cache = self.cache
        serves_stale = self._serves_stale
        if self.is_async:

            @functools.wraps(guarded)
            async def stale_async(*args: Any, **kwargs: Any) -> Cached[Any]:
                key = _key(name, args, kwargs)
                try:
                    if cache.get(key) is None:
                        value = await guarded(*args, **kwargs)
                    else:
                        with no_pauses():
                            value = await guarded(*args, **kwargs)
                except Exception as exc:
                    cached = cache.get(key) if serves_stale(exc) else None
                    if cached is None:
                        raise
                    return cached
                return Cached(value, 0.0, False)

            fn = stale_async
        else:

            @functools.wraps(guarded)
            def stale(*args: Any, **kwargs: Any) -> Cached[Any]:
                key = _key(name, args, kwargs)
                try:
                    if cache.get(key) is None:
                        value = guarded(*args, **kwargs)
                    else:
                        with no_pauses():
                            value = guarded(*args, **kwargs)
                except Exception as exc:
                    cached = cache.get(key) if serves_stale(exc) else None
                    if cached is None:
                        raise
                    return cached
                return Cached(value, 0.0, False)

            fn = stale
        self._stale_methods[name] = fn
        return fn

    @property
    def stale(self) -> _StaleView:
        """Market data with its age: ``guarded.stale.fetch_order_book(...)``
        returns ``tripwire.Cached``, the last good value when the exchange
        is down (see the module's doc)."""
        return _StaleView(self)

    @property
    def is_async(self) -> bool:
        """Whether the exchange is one of ``ccxt.async_support``'s (its
        guarded methods are then coroutine functions)."""
        return inspect.iscoroutinefunction(type(self.exchange).fetch)

    @property
    def breaker(self) -> Breaker:
        """The breaker of the whole exchange (the market group's with
        ``per_group``)."""
        return self.breakers[MARKET]

    def __getattr__(self, name: str) -> Any:
        # Only reached for names that are not the wrapper's own (or, while
        # the wrapper is built or copied, its slots not yet set).
        if name.startswith("__") or name in GuardedExchange.__slots__:
            raise AttributeError(name)
        value = getattr(self.exchange, name)
        group = self.group(name)
        if group is None or not callable(value):
            return value
        fn = self._methods.get(name)
        if fn is None:
            fn = self._guarded(name, group, value)
            self._methods[name] = fn
        return fn

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(self.exchange)))

    async def __aenter__(self) -> GuardedExchange:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Closes an async exchange's HTTP session (``await exchange.close()``)."""
        await self.exchange.close()

    def __repr__(self) -> str:
        return f"<GuardedExchange {self.exchange.id!r} breaker={self.breaker.state}>"


if TYPE_CHECKING:

    class _StaleRead(Cached[Any]):
        """What a ``.stale`` method returns, for the type checkers only: a
        ``tripwire.Cached`` from a sync exchange, one to ``await`` from an
        ``async_support`` exchange (which flavour an exchange is, its
        untyped ccxt class cannot tell them)."""

        def __await__(self) -> Generator[Any, None, Cached[Any]]: ...


class _StaleView:
    """``guarded.stale``: the market-data methods, returning ``Cached``."""

    __slots__ = ("_guarded",)

    def __init__(self, guarded: GuardedExchange) -> None:
        self._guarded = guarded

    def __getattr__(self, name: str) -> Callable[..., _StaleRead]:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._guarded._stale(name)


def _symbol(args: Tuple[Any, ...], kwargs: Mapping[str, Any]) -> Optional[str]:
    """A market-data call's symbol: its ``symbol=`` keyword, else its first
    positional argument, if that is a ``str``; None otherwise."""
    symbol = kwargs.get("symbol", args[0] if args else None)
    return symbol if isinstance(symbol, str) else None


def _key(name: str, args: Tuple[Any, ...], kwargs: Mapping[str, Any]) -> Tuple[str, str]:
    """The stale cache's key of one call: the method and its arguments."""
    return name, repr((args, sorted(kwargs.items())))


def guard(exchange: Any, **options: Any) -> GuardedExchange:
    """``exchange`` (a ccxt exchange object, sync or ``async_support``)
    behind a breaker, a bulkhead and retry, with stale market data on
    ``.stale``. Options (all keyword):

    - ``per_group``: a breaker per endpoint group (market, account,
      trading) instead of one for the exchange.
    - ``per_symbol``: a breaker per market symbol for market-data calls
      that name one; ``per_endpoint``: a breaker per method; both: per
      ``(method, symbol)``. Calls that fall under neither use the group's
      breaker. ``keyed``: ``tripwire.Breakers`` settings of that map
      (``capacity``, ``idle_after``, ``label_cap``).
    - ``name``: the breakers' name (default ``"ccxt/<exchange id>"``;
      groups add ``"/<group>"``), as Prometheus shows it.
    - ``breaker``: ``tripwire.Breaker`` arguments (default
      ``failure_threshold=5, open_timeout=30.0``).
    - ``bulkhead``: calls in flight at most (default 16; None: no cap),
      ``max_wait``: seconds a call may wait for a slot (default: none).
    - ``retry``: ``tripwire.retry`` arguments, or False; ``retry_trading``:
      also retry the trading group (default False).
    - ``stale_max_age``: how old stale market data may be (seconds,
      default 60; None: never stale).
    - ``groups``: ``{method: group}`` overrides; ``rules``: ``{exception
      class: "failure" | "backpressure" | "ignored"}`` overrides.
    - ``max_retry_after``: the longest ``Retry-After`` taken as given
      (seconds, default 300); a longer one is cut to it.
    - ``rate_limiter``: a ``tripwire.RateLimiter`` that replaces ccxt's own
      per-process throttle: before every request ccxt asks it for the
      endpoint's cost (ccxt's weight, rounded up, on the limiter's first
      limit) and waits its turn; share one limiter (or one in shared memory)
      between every exchange object that spends the same budget.
      ``rate_headers``: ``{header: limit index}`` whose whole-number value
      is the weight the server counted, read after every response
      (default for Binance: ``{"x-mbx-used-weight-1m": 0}``).
      A 429 or 418 despite the limiter counts its first limit as spent
      for a period, besides the breaker's hold.
    """
    return GuardedExchange(exchange, **options)
