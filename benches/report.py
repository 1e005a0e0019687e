#!/usr/bin/env python3
"""Builds benches/RESULTS.md and benches/chart.svg from one run's outputs:
criterion's estimates under target/criterion, and the tables that
benches/run.sh leaves under target/bench. Standard library only."""

import html
import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
CRITERION = TARGET / "criterion"
TABLES = TARGET / "bench"
COMMAND = "bash benches/run.sh"


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine():
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def estimates():
    """{(group, function, parameter): median ns} for the latest run."""
    found = {}
    for bench in CRITERION.glob("**/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        est = json.loads((bench.parent / "estimates.json").read_text())
        key = (meta["group_id"], meta["function_id"], meta.get("value_str") or "")
        found[key] = est["median"]["point_estimate"]
    return found


def fmt_ns(ns):
    return f"{ns / 1000:.2f} µs" if ns >= 1000 else f"{ns:.1f} ns"


def group_table(est, group, unit_key):
    rows = sorted(((k, v) for k, v in est.items() if k[0] == group), key=lambda kv: kv[1])
    if not rows:
        return ""
    unit = est.get(unit_key)
    out = [f"| {group} | median | × {unit_key[2]} |" if unit else f"| {group} | median | |", "| --- | --- | --- |"]
    for (_, func, param), ns in rows:
        ratio = f"{ns / unit:.2f}" if unit else ""
        name = f"**{func}**, {param}" if func == "tripwire" else f"{func}, {param}"
        out.append(f"| {name} | {fmt_ns(ns)} | {ratio} |")
    return "\n".join(out) + "\n"


def instructions():
    """{path: instructions per call beyond a bare call} from callgrind.md."""
    counted = {}
    try:
        lines = (TABLES / "callgrind.md").read_text().splitlines()
    except OSError:
        return counted
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 2:
            try:
                counted[cells[0]] = float(cells[1])
            except ValueError:
                pass
    return counted


def targets(est):
    """The design's budgets as ratios measured in this run. Success-path
    rows include the guarded call itself, so the bare call measured in the
    same group is taken off before dividing by one fetch_add."""
    def get(group, func, param):
        return est.get((group, func, param))

    checks = []

    def check(name, value, base, limit, minus=None):
        if value is None or base is None:
            checks.append(f"| {name} | not measured | ≤ {limit}× | — |")
            return
        ratio = (value - (minus or 0.0)) / base
        verdict = "met" if ratio <= limit else "**missed**"
        checks.append(f"| {name} | {ratio:.2f}× | ≤ {limit}× | {verdict} |")

    fa = get("closed_success", "baseline", "fetch_add")
    bare = get("closed_success", "baseline", "bare call")
    check("closed success, consecutive, success counted: (tripwire − bare call) ÷ fetch_add",
          get("closed_success", "tripwire", "consecutive"), fa, 1, bare)
    check("closed success, consecutive, no success count: (tripwire − bare call) ÷ fetch_add",
          get("closed_success", "tripwire", "consecutive, no success count"), fa, 1, bare)
    check("closed success, rolling window, CoarseClock: (tripwire − bare call) ÷ fetch_add",
          get("closed_success", "tripwire", "window, CoarseClock"), fa, 2, bare)
    check("closed success, rolling window, CachedClock: (tripwire − bare call) ÷ fetch_add",
          get("closed_success", "tripwire", "window, CachedClock"), fa, 2, bare)
    count_window = get("closed_success", "tripwire", "count window")
    check("closed success, count window (no clock read): (tripwire − bare call) ÷ fetch_add",
          count_window, fa, 2, bare)
    recloser = get("closed_success", "recloser", "default")
    if count_window and recloser:
        speedup = recloser / count_window
        verdict = "met" if speedup >= 3 else "**missed**"
        checks.append(f"| closed success: recloser's default (a count ring) ÷ tripwire's count window, "
                      f"guarded call included | {speedup:.2f}× | ≥ 3× | {verdict} |")
    else:
        checks.append("| closed success: recloser's default ÷ tripwire's count window | not measured | ≥ 3× | — |")
    # The design's "one clock read + 2 ns" for the time window, in ns.
    for clock in ("CoarseClock", "CachedClock"):
        window = get("closed_success", "tripwire", f"window, {clock}")
        read = get("closed_success", "baseline", f"{clock} read")
        if window is None or read is None or bare is None:
            checks.append(f"| closed success, rolling window, {clock}: beyond one clock read | not measured | ≤ 2 ns | — |")
            continue
        extra = window - bare - read
        verdict = "met" if extra <= 2.0 else "**missed**"
        checks.append(f"| closed success, rolling window, {clock}: tripwire − bare call − one {clock} read | "
                      f"{extra:.1f} ns | ≤ 2 ns | {verdict} |")
    check("rejection, CoarseClock ÷ fetch_add",
          get("rejection", "tripwire", "CoarseClock"), get("rejection", "baseline", "fetch_add"), 3)
    check("rejection, CachedClock ÷ fetch_add",
          get("rejection", "tripwire", "CachedClock"), get("rejection", "baseline", "fetch_add"), 2)
    check("two threads, tripwire consecutive ÷ two threads on one fetch_add",
          get("two_threads_success", "tripwire", "consecutive"), get("two_threads_success", "baseline", "fetch_add"), 1)
    check("two threads, tripwire count window (the last 100 calls) ÷ two threads on one fetch_add",
          get("two_threads_success", "tripwire", "count window"), get("two_threads_success", "baseline", "fetch_add"), 1)
    # Not a budget: the count window next to the least a window that writes
    # one shared word per call costs (its successes go to stripes instead).
    counted2 = get("two_threads_success", "tripwire", "count window")
    floor2 = get("two_threads_success", "baseline", "call writing nothing + fetch_add")
    if counted2 and floor2:
        checks.append(f"| two threads, tripwire count window ÷ two threads on a call writing nothing + one "
                      f"shared fetch_add (the least a window writing one shared word per call costs) | {counted2 / floor2:.2f}× "
                      f"| — | finding |")
    for path, label in (("closed", "closed"), ("open", "open, MonotonicClock"), ("open, CachedClock", "open, CachedClock")):
        tw = get("tower_breaker", "tripwire", path)
        peer = get("tower_breaker", "tower-resilience-circuitbreaker", "open" if path.startswith("open") else path)
        name = f"tower layer, {label}: tower-resilience ÷ tripwire"
        if tw and peer:
            verdict = "met" if peer / tw >= 10 else "**missed**"
            checks.append(f"| {name} | {peer / tw:.1f}× | ≥ 10× | {verdict} |")
        else:
            checks.append(f"| {name} | not measured | ≥ 10× | — |")
    plain = get("keyed_closed_call", "baseline", "plain call, one breaker")
    check("keyed breakers: lookup + closed call, one key of 10,000 ÷ a plain call of one breaker",
          get("keyed_closed_call", "tripwire", "Breakers: one key of 10,000"), plain, 3)
    check("keyed breakers: lookup + closed call, the 10,000 keys in turn ÷ a plain call of one breaker",
          get("keyed_closed_call", "tripwire", "Breakers: the 10,000 keys in turn"), plain, 3)
    check("keyed breakers, pinned (many calls under one guard): lookup + closed call, one key of 10,000 ÷ a plain "
          "call of one breaker", get("keyed_closed_call", "tripwire", "Breakers::pin(): one key of 10,000"), plain, 3)
    check("keyed breakers, pinned: lookup + closed call, the 10,000 keys in turn ÷ a plain call of one breaker",
          get("keyed_closed_call", "tripwire", "Breakers::pin(): the 10,000 keys in turn"), plain, 3)
    # The same two keyed budgets in instructions, which repeat from run to
    # run where the times above move with the machine's load.
    counted = instructions()
    for path, label in (("keyed", "keyed breakers"), ("keyed_pinned", "keyed breakers, pinned")):
        check(f"{label}: lookup + closed call, one key of 10,000 ÷ a plain call of one breaker, in instructions "
              f"(callgrind, beyond a bare call)", counted.get(path), counted.get("named_call"), 3)
    # Not budgets: the keyed call next to its map's lookup alone, and what
    # a lookup alone costs in two lock-free maps, next to a plain call.
    keyed = get("keyed_closed_call", "tripwire", "Breakers: one key of 10,000")
    lookups = {name: get("keyed_closed_call", func, param) for name, func, param in (
        ("papaya", "baseline", "papaya get alone, one key of 10,000"),
        ("scc", "scc", "HashIndex peek alone, one key of 10,000"))}
    if keyed and plain and lookups["papaya"]:
        checks.append(f"| keyed breakers: (lookup + closed call − a plain call) ÷ papaya's get alone (the map they "
                      f"sit on) | {(keyed - plain) / lookups['papaya']:.2f}× | — | finding |")
    # The keys in turn miss the caches: next to the same lookups alone plus
    # calls of 10,000 breakers in turn, the memory such calls walk.
    in_turn = get("keyed_closed_call", "tripwire", "Breakers: the 10,000 keys in turn")
    plain_turn = get("keyed_closed_call", "baseline", "plain call, 10,000 breakers in turn")
    papaya_turn = get("keyed_closed_call", "baseline", "papaya get alone, the 10,000 keys in turn")
    if in_turn and plain_turn and papaya_turn:
        checks.append(f"| keyed breakers, the 10,000 keys in turn ÷ (papaya's get alone of the keys in turn + a plain "
                      f"call of 10,000 breakers in turn) | {in_turn / (plain_turn + papaya_turn):.2f}× | — | finding |")
    for name, lookup in lookups.items():
        if lookup and plain:
            checks.append(f"| {name}'s lookup alone (a lock-free map, one key of 10,000, no breaker) ÷ a plain call "
                          f"of one breaker | {lookup / plain:.2f}× | — | finding |")
    check("rate limiter, one limit, CachedClock ÷ fetch_add",
          get("limiter_check", "tripwire", "one limit, CachedClock"), get("limiter_check", "baseline", "fetch_add"), 2)
    limiter = get("limiter_check", "tripwire", "one limit, CachedClock")
    governor = get("limiter_check", "governor", "direct")
    if limiter and governor:
        verdict = "met" if limiter < governor else "**missed**"
        checks.append(f"| rate limiter: tripwire (one limit, CachedClock) ÷ governor's direct limiter | "
                      f"{limiter / governor:.2f}× | < 1× | {verdict} |")
    else:
        checks.append("| rate limiter: tripwire ÷ governor's direct limiter | not measured | < 1× | — |")
    coarse = get("closed_success", "baseline", "CoarseClock read")
    cached = get("closed_success", "baseline", "CachedClock read")
    cas = get("closed_success", "baseline", "compare_exchange")
    note = ""
    if coarse and fa:
        note = (f"\nA rolling window or a rejection reads a clock once: one CoarseClock read alone costs "
                f"{coarse / fa:.2f}× a fetch_add on this machine")
        if cached:
            note += f", one CachedClock read {cached / fa:.2f}×"
        note += "."
        if cas:
            note += (f" Counting a success in the time window exactly takes one compare-and-swap; a load "
                     f"and a compare-and-swap alone cost {cas:.1f} ns here (the baseline row).")
        note += "\n"
    return "| target | this run | budget | |\n| --- | --- | --- | --- |\n" + "\n".join(checks) + "\n" + note


def chart(est, path):
    """Horizontal bars, one panel per group, tripwire highlighted."""
    panels = [("closed_success", "Closed, success path"), ("rejection", "Open, rejection"),
              ("two_threads_success", "Two threads, success path")]
    bar_h, gap, left, width = 18, 4, 330, 420
    y, parts = 10, []
    for group, title in panels:
        rows = sorted(((k, v) for k, v in est.items() if k[0] == group), key=lambda kv: kv[1])
        if not rows:
            continue
        top = max(v for _, v in rows)
        parts.append(f'<text x="10" y="{y + 14}" font-weight="bold">{html.escape(title)} (ns, shorter is faster)</text>')
        y += 24
        for (_, func, param), ns in rows:
            w = max(1.0, width * ns / top)
            colour = "#d9480f" if func == "tripwire" else ("#868e96" if func == "baseline" else "#1c7ed6")
            label = html.escape(f"{func}: {param}")
            parts.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{label}</text>')
            parts.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{colour}"/>')
            parts.append(f'<text x="{left + w + 4:.1f}" y="{y + 13}">{fmt_ns(ns)}</text>')
            y += bar_h + gap
        y += 14
    legend = ('<text x="10" y="{0}"><tspan fill="#d9480f">■ tripwire</tspan>  '
              '<tspan fill="#1c7ed6">■ peer crates</tspan>  <tspan fill="#868e96">■ baselines</tspan></text>').format(y + 6)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 90}" height="{y + 20}" '
           f'font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/>'
           + "".join(parts) + legend + "</svg>\n")
    path.write_text(svg)


def table_file(name):
    p = TABLES / name
    return p.read_text() if p.exists() else f"(not produced in this run: `{p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}` is missing)\n"


def main():
    est = estimates()
    if not est:
        sys.exit(f"no criterion results under {CRITERION}: run {COMMAND}")
    commit = sh("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD")
    # Asked before this report rewrites its own two files.
    # Its own two files do not count: a report rewritten from the same
    # measurements finds them changed by the run that made them.
    changed = sh("git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--", ".",
                 ":!benches/RESULTS.md", ":!benches/chart.svg")
    dirty = " (with uncommitted changes)" if changed else ""
    chart(est, ROOT / "benches" / "chart.svg")
    sections = [
        "# Benchmark results\n",
        "Produced by `" + COMMAND + "`; every figure below comes from that one run.\n",
        "| | |\n| --- | --- |",
        f"| machine | {machine()} |",
        f"| rustc | {sh('rustc', '-V')} |",
        f"| Python | {sh(os.environ.get('PYTHON', 'python3'), '-V')} |",
        f"| commit | {commit}{dirty} |",
        f"| date | {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} |",
        f"| command | `{COMMAND}` |\n",
        "Times are criterion medians; ratios divide by a baseline measured in the same group of the same run. "
        "This machine is a shared 2-core VM: absolute times drift between runs, ratios much less, and the "
        "instruction counts not at all.\n",
        "![tripwire next to peer crates](chart.svg)\n",
        "## Targets\n", targets(est),
        "## One thread: Closed, success path\n", group_table(est, "closed_success", ("closed_success", "baseline", "fetch_add")),
        "## One thread: Open, rejection\n", group_table(est, "rejection", ("rejection", "baseline", "fetch_add")),
        "## Half-Open cycle\n", group_table(est, "half_open_cycle", ("", "", "")),
        "## Through a tower service\n",
        group_table(est, "tower_closed_success", ("tower_closed_success", "baseline", "bare service")),
        "The breaker's tower layer (`BreakerLayer`) and tower-resilience's, each around a bare service, "
        "called through `ready` and `call` on a current-thread tokio runtime, closed and open:\n",
        group_table(est, "tower_breaker", ("tower_breaker", "baseline", "bare service")),
        "## Two threads on one shared object\n",
        "Time per call on each thread while the other thread calls too.\n",
        group_table(est, "two_threads_success", ("two_threads_success", "baseline", "fetch_add")),
        "## Rate limiter: a check that admits, next to governor\n",
        group_table(est, "limiter_check", ("limiter_check", "baseline", "fetch_add")),
        "Two threads on one limiter, time per check on each thread:\n",
        group_table(est, "limiter_two_threads", ("limiter_two_threads", "baseline", "fetch_add")),
        "## Keyed breakers: a lookup by key and a closed call\n",
        "A `Breakers<String>` map holding 10,000 keys, looked up by `&str`, next to a plain call of one "
        "`NamedBreaker` and to the registry's get-or-create by name (behind its `RwLock`), in the same run.\n",
        group_table(est, "keyed_closed_call", ("keyed_closed_call", "baseline", "plain call, one breaker")),
        table_file("keyed_memory.md"),
        "## Other core pieces\n", group_table(est, "pieces", ("pieces", "baseline", "fetch_add")),
        "## The std layer: what each layer adds (sync)\n",
        group_table(est, "layers_sync", ("layers_sync", "baseline", "bare call")),
        "## The std layer: async, on a current-thread tokio runtime\n",
        group_table(est, "layers_async", ("layers_async", "baseline", "bare future")),
        "## Fleet: a guarded call with a Redis link, and how fast news travels\n",
        "One breaker joined to a fleet whose link is up, next to one that is not, in the same run; then "
        "the time from a trip in one process to a refusal in another, through a redis-server on loopback.\n",
        group_table(est, "fleet: closed success", ("fleet: closed success", "tripwire", "not joined")),
        group_table(est, "fleet: rejection", ("fleet: rejection", "tripwire", "not joined")),
        table_file("fleet_latency.md"),
        "## How far the cached clock lags\n",
        "`MonotonicClock` − `CachedClock` over 3 s of back-to-back reads on one thread, fresh reading first "
        "(a preemption between the two reads can only shrink a sample): one period plus the upkeep "
        "thread's scheduling delay.\n",
        table_file("clock_lag.md"),
        "## Memory per breaker\n",
        "`size_of` of a breaker on each storage, which holds only the rolling window its configs may ask for "
        "(a breaker per endpoint, host or symbol).\n",
        table_file("sizes.md"),
        "## Heap growth over one million transitions\n", table_file("heap.md"),
        "## Instructions per call (callgrind)\n", table_file("callgrind.md"),
        "## C ABI next to Rust\n", table_file("c_abi.md"),
        "## Python\n", table_file("python.md"),
    ]
    (ROOT / "benches" / "RESULTS.md").write_text("\n".join(s for s in sections if s is not None))
    print(f"wrote benches/RESULTS.md and benches/chart.svg from {len(est)} measurements")


if __name__ == "__main__":
    main()
