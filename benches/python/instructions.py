"""Instructions per call of the keyed call and the decorated call, counted
by valgrind's callgrind: repeatable where timings of a tenth of a
microsecond move by a tenth between runs.

`python instructions.py --markdown` counts each row in a run of `N` calls
and in one of none, under callgrind, and prints the difference per call
as a Markdown table (`bash benches/python/run.sh` does, when valgrind is
installed); `python instructions.py ROW N` makes `N` calls of one row.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys

import tripwire

from bench import DECORATED, KEYED_BUDGET, KEYED_CALL

N = 100_000


def work(x: int = 1) -> int:
    return x


def rows() -> dict:
    """The bare call, and the bench's decorated and keyed rows, built as
    `bench.py` builds them."""
    b = tripwire.Breaker(failure_threshold=5, open_timeout=30.0)
    keyed = tripwire.Breakers(failure_threshold=5, open_timeout=30.0)
    keys = [f"SYM{i}" for i in range(10_000)]
    for key in keys:
        keyed[key]
    return {
        "bare call": work,
        DECORATED: b(work),
        KEYED_CALL: functools.partial(keyed.call, keys[len(keys) // 2], work),
    }


def run(fn, n: int) -> None:
    for _ in range(n):
        fn()


def count(row: str, n: int) -> int:
    """Instructions of a whole run of this file making `n` calls of `row`."""
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__, row, str(n)],
        capture_output=True, text=True, check=True,
    ).stderr
    return int(next(line for line in out.splitlines() if "Collected" in line).split()[-1])


def markdown() -> None:
    # `rows()` builds every row in each run, so one run of no calls is the
    # setup of all of them.
    setup = count(DECORATED, 0)
    per_call = {row: (count(row, N) - setup) / N for row in rows()}
    bare = per_call["bare call"]
    print("| sync call, counted by callgrind | instructions per call | beyond a bare call | × decorated call |")
    print("| --- | --- | --- | --- |")
    for row, n in per_call.items():
        print(f"| {row} | {n:.0f} | {n - bare:.0f} | {n / per_call[DECORATED]:.2f} |")
    ratio = per_call[KEYED_CALL] / per_call[DECORATED]
    print(f"\nIn instructions, a keyed call is {ratio:.2f}× a decorated call "
          f"(the budget, on time: ≤ {KEYED_BUDGET}×).")


if __name__ == "__main__":
    if sys.argv[1:] == ["--markdown"]:
        if shutil.which("valgrind") is None:
            sys.exit("instructions.py --markdown needs valgrind: apt-get install -y valgrind")
        markdown()
    else:
        run(rows()[sys.argv[1]], int(sys.argv[2]))
