"""Threads are never serialised by a breaker or a bulkhead."""

from __future__ import annotations

import threading
import time

import tripwire

THREADS = 8
CALLS = 50
SLEEP = 0.001


def run_threads(target) -> float:
    barrier = threading.Barrier(THREADS)

    def worker() -> None:
        barrier.wait()
        for _ in range(CALLS):
            target()

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def test_guarded_calls_run_in_parallel():
    b = tripwire.Breaker()

    @b
    def io() -> None:
        time.sleep(SLEEP)

    elapsed = run_threads(io)
    serialised = THREADS * CALLS * SLEEP  # 0.4 s
    assert elapsed < 0.25, f"{elapsed:.3f}s: calls were serialised ({serialised}s if one at a time)"
    s = b.snapshot()
    assert (s.successes, s.calls) == (THREADS * CALLS, THREADS * CALLS)


def test_with_blocks_run_in_parallel_and_pair_per_thread():
    b = tripwire.Breaker()

    def io() -> None:
        with b:
            time.sleep(SLEEP)

    assert run_threads(io) < 0.25
    assert b.snapshot().successes == THREADS * CALLS


def test_concurrent_failures_trip_exactly_once():
    heard = []
    b = tripwire.Breaker(failure_threshold=50, on_state_change=lambda _b, f, t: heard.append((f, t)))

    def fail() -> None:
        try:
            b.call(_raise)
        except (ValueError, tripwire.CircuitOpenError):
            pass

    run_threads(fail)
    assert heard == [("closed", "open")]
    s = b.snapshot()
    assert s.failures >= 50 and s.failures + s.rejected == THREADS * CALLS


def _raise() -> None:
    raise ValueError


def test_bulkhead_caps_in_flight_across_threads():
    bh = tripwire.Bulkhead(3, max_wait=5.0)
    now = [0]
    peak = [0]
    lock = threading.Lock()  # the test's own bookkeeping, not tripwire's

    def io() -> None:
        with bh:
            with lock:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
            time.sleep(0.0005)
            with lock:
                now[0] -= 1

    run_threads(io)
    assert peak[0] == 3
    assert bh.in_flight == 0


def test_interleaved_threads_never_swap_tickets():
    """Thread A enters a block, the breaker is reset, thread B enters one,
    and A leaves with a failure while B's block is open: A's ticket is of
    the older generation, so the breaker stays closed."""
    b = tripwire.Breaker(failure_threshold=1)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def thread_a() -> None:
        try:
            with b:
                a_in.set()
                b_in.wait(5)
                raise ZeroDivisionError
        except ZeroDivisionError:
            a_out.set()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    def thread_b() -> None:
        a_in.wait(5)
        b.reset()
        with b:
            b_in.set()
            a_out.wait(5)

    threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert b.state == "closed"
    s = b.snapshot()
    assert (s.successes, s.failures) == (1, 1)
