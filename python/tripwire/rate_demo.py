"""``python -m tripwire.rate_demo``: four bots behind one IP, an exchange
that enforces Binance's weight limits, and three ways to stay under them.

The exchange (``tripwire._fake_exchange`` with ``WeightRules``) allows 6,000
request weight per minute per IP, answers past it with 429 and
``Retry-After``, and bans the IP (418) for 2 minutes after 3 requests sent
while it was asked to back off. Four bot processes on this host poll order
books (weight 5) and balances (weight 20) through ccxt's ``binance`` class,
as fast as they are let, three ways in turn:

- **naive**: ccxt's throttle off;
- **ccxt**: ccxt's own throttle at Binance's documented rate, which each
  process keeps for itself;
- **tripwire**: one ``tripwire.RateLimiter`` in a memory-mapped file that
  the four processes share, in place of ccxt's throttle
  (``tripwire.ccxt.guard(exchange, rate_limiter=...)``).

Every duration is compressed by ``--scale`` (the exchange's minute, its
bans and ccxt's rate alike); every time reported is on the scenario's
clock. The table counts, for each way, the answers by status, the time
the IP spent banned, the requests served and the share of the allowed
weight they used; ``--chart FILE`` draws the weight served in each of the
exchange's windows (SVG).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _fake_exchange as fake

MODES = ("naive", "ccxt", "tripwire")
BOTS = 4
#: Binance's spot limit: request weight per minute per IP, and ccxt's cost
#: of it (ccxt counts a Binance weight of 5 as a cost of 1).
WEIGHT_PER_MINUTE = 6000
COST_PER_WEIGHT = 0.2


@dataclass
class Outcome:
    """What one way came to, as the exchange counted it."""

    mode: str
    ok: int
    too_many: int
    banned: int
    banned_for: float
    share: float
    windows: List[Tuple[int, int, int]]

    def row(self) -> List[str]:
        return [
            self.mode,
            f"{self.ok:,}",
            f"{self.too_many:,}",
            f"{self.banned:,}",
            _clock(self.banned_for),
            f"{self.share:.1%}",
        ]


HEADER = ["way", "requests served (200)", "429s", "418s", "time banned", "share of the allowed weight used"]


def _clock(seconds: float) -> str:
    if seconds <= 0:
        return "0"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def _bot(mode: str, port: int, start_at: float, stop_at: float, scale: float, path: str) -> None:
    """One bot process: polls until ``stop_at`` (wall clock)."""
    import ccxt  # type: ignore[import-untyped, import-not-found, unused-ignore]

    import tripwire
    import tripwire.ccxt

    config = {"apiKey": fake.FakeExchange.api_key, "secret": fake.FakeExchange.secret, "timeout": 5000}
    exchange = fake.point_at(ccxt.binance(dict(config, enableRateLimit=mode == "ccxt")), port)
    if mode == "ccxt":
        # Binance's documented rate (ccxt's default), on the scenario's clock.
        exchange.rateLimit = exchange.rateLimit / scale
    client: Any = exchange
    if mode == "tripwire":
        window = 60.0 / scale
        limit = tripwire.Limit(int(WEIGHT_PER_MINUTE * COST_PER_WEIGHT), window, burst=12)
        limiter = tripwire.RateLimiter.shared(path, [limit])
        # The four processes share the limiter: no header needs reading.
        client = tripwire.ccxt.guard(
            exchange, rate_limiter=limiter, rate_headers={}, retry=False, bulkhead=None, stale_max_age=None
        )
    time.sleep(max(0.0, start_at - time.time()))
    try:
        client.load_markets()
    except ccxt.BaseError:
        pass
    i = 0
    while time.time() < stop_at:
        try:
            if i % 10 == 9:
                client.fetch_balance()
            else:
                client.fetch_order_book("BTC/USDT", 100)
        except tripwire.CircuitOpenError as refused:
            # The breaker holds for a 429's Retry-After: nothing is sent.
            time.sleep(min(refused.retry_after or 0.01, max(0.0, stop_at - time.time())))
        except ccxt.BaseError:
            pass
        i += 1


def run_mode(mode: str, duration: float, scale: float) -> Outcome:
    """Four bots against a fresh exchange for ``duration`` scenario
    seconds, the way ``mode`` says."""
    window = 60.0 / scale
    rules = fake.WeightRules(limit=WEIGHT_PER_MINUTE, window=window, ban_after=3, ban_for=120.0 / scale)
    ctx = multiprocessing.get_context("spawn")
    with fake.FakeExchange(weights=rules) as exchange, tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "binance.limiter")
        # Time for the bots to start (importing ccxt takes a while); they
        # all begin together.
        start_at = time.time() + 4.0
        stop_at = start_at + duration / scale
        bots = [
            ctx.Process(target=_bot, args=(mode, exchange.port, start_at, stop_at, scale, path)) for _ in range(BOTS)
        ]
        for b in bots:
            b.start()
        for b in bots:
            b.join(timeout=stop_at - time.time() + 30)
            if b.is_alive():
                b.kill()
        ledger = exchange.ledger
    first, last = int(start_at // window), int(stop_at // window)
    windows = [tuple(ledger.per_window.get(w, [0, 0, 0])) for w in range(first, last + 1)]
    banned_for = sum(max(0.0, min(end, stop_at) - max(start, start_at)) for start, end in ledger.bans)
    allowed = WEIGHT_PER_MINUTE * (stop_at - start_at) / window
    return Outcome(
        mode=mode,
        ok=ledger.statuses.get(200, 0),
        too_many=ledger.statuses.get(429, 0),
        banned=ledger.statuses.get(418, 0),
        banned_for=banned_for * scale,
        share=ledger.served_weight / allowed,
        windows=[(w[0], w[1], w[2]) for w in windows],
    )


def markdown(outcomes: Sequence[Outcome], duration: float, scale: float) -> str:
    lines = [
        f"{BOTS} bots, {_clock(duration)} on the scenario's clock ({scale:g}× faster), "
        f"{WEIGHT_PER_MINUTE:,} weight a minute allowed",
        "",
        "| " + " | ".join(HEADER) + " |",
        "| --- | " + " | ".join("--:" for _ in HEADER[1:]) + " |",
    ]
    lines += ["| " + " | ".join(o.row()) + " |" for o in outcomes]
    return "\n".join(lines)


def chart(outcomes: Sequence[Outcome], path: str) -> None:
    """The weight served in each of the exchange's windows, one panel per
    way, next to the limit; windows with 429s or 418s marked."""
    width, panel, left, top = 760, 150, 60, 30
    height = top + panel * len(outcomes) + 30
    n = max(len(o.windows) for o in outcomes)
    bar = (width - left - 20) / max(n, 1)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="18" font-size="14">Weight served per exchange minute, {BOTS} bots behind one IP '
        f"(limit {WEIGHT_PER_MINUTE:,})</text>",
    ]
    for k, o in enumerate(outcomes):
        y0 = top + panel * k
        base = y0 + panel - 25
        scale_y = (panel - 45) / (WEIGHT_PER_MINUTE * 1.1)
        out.append(f'<text x="5" y="{y0 + 20}" font-weight="bold">{o.mode}</text>')
        limit_y = base - WEIGHT_PER_MINUTE * scale_y
        out.append(f'<line x1="{left}" y1="{limit_y:.1f}" x2="{width - 20}" y2="{limit_y:.1f}" stroke="#888" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{left - 5}" y="{limit_y + 4:.1f}" text-anchor="end" fill="#888">limit</text>')
        for i, (served, too_many, banned) in enumerate(o.windows):
            x = left + i * bar
            h = served * scale_y
            color = "#c0392b" if banned else "#e67e22" if too_many else "#27ae60"
            out.append(f'<rect x="{x + 1:.1f}" y="{base - h:.1f}" width="{max(bar - 2, 1):.1f}" height="{h:.1f}" fill="{color}"/>')
        out.append(f'<line x1="{left}" y1="{base}" x2="{width - 20}" y2="{base}" stroke="black"/>')
        out.append(
            f'<text x="{left}" y="{base + 16}">{o.too_many:,} × 429, {o.banned:,} × 418, banned {_clock(o.banned_for)}, '
            f"{o.share:.1%} of the allowed weight used</text>"
        )
    legend_y = height - 8
    out.append(f'<text x="{left}" y="{legend_y}" fill="#27ae60">■ served</text>')
    out.append(f'<text x="{left + 80}" y="{legend_y}" fill="#e67e22">■ window with 429s</text>')
    out.append(f'<text x="{left + 220}" y="{legend_y}" fill="#c0392b">■ window with 418s (banned)</text>')
    out.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def _duration(v: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        seconds = float(v[:-1]) * units[v[-1]] if v and v[-1] in units else float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{v!r} is not a duration such as 10m, 90s or 1h") from None
    if not 1 <= seconds <= 86400:
        raise argparse.ArgumentTypeError(f"{v!r} must be between 1s and 24h")
    return seconds


def _positive(v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{v!r} is not a number") from None
    if not 0 < x <= 1000:
        raise argparse.ArgumentTypeError(f"{v!r} must be above 0 and at most 1000")
    return x


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tripwire.rate_demo", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--duration", type=_duration, default=600.0, help="how long each way runs: 10m, 90s (default 10m)")
    p.add_argument("--scale", type=_positive, default=10.0, help="replay this many times faster (default 10)")
    p.add_argument("--only", choices=MODES, action="append", help="run only this way (repeatable)")
    p.add_argument("--chart", metavar="FILE", help="also draw the weight served per window to FILE (SVG)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    try:
        import ccxt  # type: ignore[import-untyped, import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        print("python -m tripwire.rate_demo needs ccxt: pip install 'tripwire[ccxt]'", file=sys.stderr)
        return 2
    outcomes: List[Outcome] = []
    for mode in args.only or MODES:
        if not args.quiet:
            print(f"running {mode} for {args.duration / args.scale:.0f} s …", file=sys.stderr, flush=True)
        outcomes.append(run_mode(mode, args.duration, args.scale))
    print(markdown(outcomes, args.duration, args.scale))
    if args.chart:
        chart(outcomes, args.chart)
        if not args.quiet:
            print(f"chart: {args.chart}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
