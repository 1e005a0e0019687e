"""The breaker's states, its three ways of guarding a call, and its
manual modes."""

from __future__ import annotations

import functools
import sys
import traceback

import pytest

import tripwire
from conftest import Boom, fail, trip


def test_closed_breaker_passes_calls_and_counts_them(make_breaker):
    b = make_breaker()
    assert b.call(lambda x, y=0: x + y, 1, y=2) == 3
    assert b.state == "closed"
    s = b.snapshot()
    assert (s.successes, s.failures, s.calls, s.state) == (1, 0, 1, "closed")


def test_trips_after_the_threshold_and_rejects_with_retry_after(make_breaker, clock):
    b = make_breaker(failure_threshold=3, open_timeout=10.0, name="exchange")
    trip(b, 2)
    assert b.state == "closed"
    trip(b, 1)
    assert b.state == "open"
    clock.advance(4.0)
    with pytest.raises(tripwire.CircuitOpenError) as info:
        b.call(lambda: pytest.fail("must not be called"))
    err = info.value
    assert err.retry_after == pytest.approx(6.0)
    assert err.name == "exchange"
    assert err.state == "open"
    assert "'exchange' is open; retry after 6.000s" in str(err)
    assert isinstance(err, tripwire.TripwireError)
    assert b.snapshot().rejected == 1


def test_a_success_resets_the_consecutive_count(make_breaker):
    b = make_breaker(failure_threshold=2)
    for _ in range(5):
        trip(b, 1)
        b.call(lambda: None)
    assert b.state == "closed"


def test_half_open_probe_closes_or_reopens(make_breaker, clock):
    b = make_breaker(failure_threshold=1, open_timeout=5.0)
    trip(b)
    clock.advance(5.0)
    # The probe fails: open again, for a new cool-down.
    trip(b, 1)
    assert b.state == "open"
    clock.advance(5.0)
    assert b.call(lambda: "back") == "back"
    assert b.state == "closed"


def test_half_open_bounds_the_probes(make_breaker, clock):
    b = make_breaker(failure_threshold=1, open_timeout=1.0, half_open_max=2, half_open_successes=2)
    trip(b)
    clock.advance(1.0)
    seen = []

    def probe():
        seen.append(b.state)
        if len(seen) == 1:
            # A second probe is admitted while the first is in flight…
            b.call(probe)
        else:
            # …but not a third while both are.
            with pytest.raises(tripwire.CircuitOpenError) as info:
                b.call(lambda: None)
            assert info.value.state == "half_open"

    b.call(probe)
    assert seen == ["half_open", "half_open"]
    assert b.state == "closed"


def test_cooldown_grows_on_reopen_up_to_the_cap(make_breaker, clock):
    b = make_breaker(failure_threshold=1, open_timeout=1.0, open_timeout_max=3.0, open_timeout_growth=2.0)
    trip(b)
    waits = []
    for _ in range(4):
        with pytest.raises(tripwire.CircuitOpenError) as info:
            b.call(lambda: None)
        waits.append(info.value.retry_after)
        clock.advance(info.value.retry_after)
        trip(b, 1)  # the probe fails
    assert waits == pytest.approx([1.0, 2.0, 3.0, 3.0])


def test_decorator_keeps_metadata_and_binds_as_a_method(make_breaker):
    b = make_breaker()

    @b
    def fetch(symbol: str, *, depth: int = 10) -> str:
        """Fetches an order book."""
        return f"{symbol}:{depth}"

    assert fetch("BTC", depth=5) == "BTC:5"
    assert fetch.__name__ == "fetch"
    assert fetch.__doc__ == "Fetches an order book."
    assert fetch.__wrapped__("ETH") == "ETH:10"
    assert fetch.__qualname__.endswith("fetch")
    assert fetch.breaker is b
    assert isinstance(fetch, tripwire.Guarded)

    class Client:
        def __init__(self) -> None:
            self.calls = 0

        @b
        def get(self, path: str) -> tuple[Client, str]:
            self.calls += 1
            return self, path

    c = Client()
    assert c.get("/time") == (c, "/time")
    assert Client.get(c, "/x") == (c, "/x")
    assert c.calls == 2
    assert b.snapshot().successes == 3


def test_decorating_a_non_callable_is_a_type_error(make_breaker):
    with pytest.raises(TypeError, match="decorates a function"):
        make_breaker()(42)


def test_the_original_exception_is_reraised_unchanged(make_breaker):
    b = make_breaker()
    original = Boom("the very one")

    @b
    def raiser():
        raise original

    with pytest.raises(Boom) as info:
        raiser()
    assert info.value is original
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert frames[-1] == "raiser"
    assert b.snapshot().failures == 1


def test_with_block_records_success_failure_and_reraises(make_breaker):
    b = make_breaker(failure_threshold=2)
    with b as entered:
        assert entered is b
    with pytest.raises(Boom):
        with b:
            raise Boom
    s = b.snapshot()
    assert (s.successes, s.failures) == (1, 1)
    with pytest.raises(Boom):
        with b:
            raise Boom
    with pytest.raises(tripwire.CircuitOpenError):
        with b:
            pytest.fail("the body must not run")


def test_nested_with_blocks_keep_their_own_tickets(make_breaker, clock):
    b = make_breaker(failure_threshold=1, open_timeout=1.0)
    outer = make_breaker()
    with outer:
        with b:
            pass
        with outer:
            pass
    assert outer.snapshot().successes == 2
    assert b.snapshot().successes == 1


def test_exit_without_enter_is_an_error(make_breaker):
    b = make_breaker()
    with pytest.raises(RuntimeError, match="without a matching __enter__"):
        b.__exit__(None, None, None)


def test_classification_failure_on_ignore_on_and_failure_if(make_breaker):
    class Http4xx(Exception):
        pass

    class Response:
        def __init__(self, status: int) -> None:
            self.status_code = status

    b = make_breaker(
        failure_threshold=2,
        failure_on=(Boom, TimeoutError),
        ignore_on=Http4xx,
        failure_if=lambda r: isinstance(r, Response) and r.status_code >= 500,
    )
    for exc in (Http4xx(), ValueError()):
        with pytest.raises(type(exc)):
            b.call(functools.partial(_raise, exc))
    assert b.snapshot().ignored == 2
    r = b.call(Response, 503)
    assert r.status_code == 503
    assert b.snapshot().failures == 1
    with pytest.raises(TimeoutError):
        b.call(functools.partial(_raise, TimeoutError()))
    assert b.state == "open"


def _raise(exc: BaseException) -> None:
    raise exc


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(1), GeneratorExit()])
def test_interruptions_are_neutral_even_with_base_exception_failures(make_breaker, exc):
    b = make_breaker(failure_threshold=1, failure_on=BaseException)
    with pytest.raises(type(exc)):
        b.call(functools.partial(_raise, exc))
    assert b.state == "closed"
    assert b.snapshot().ignored == 1


def test_a_raising_failure_if_propagates_and_counts_as_ignored(make_breaker):
    b = make_breaker(failure_if=lambda r: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        b.call(lambda: 1)
    assert b.snapshot().ignored == 1


def test_manual_modes(make_breaker, clock):
    b = make_breaker(failure_threshold=1, open_timeout=1.0, name="manual")
    b.force_open()
    assert b.state == "forced_open"
    clock.advance(1000.0)
    with pytest.raises(tripwire.CircuitOpenError) as info:
        b.call(lambda: None)
    assert info.value.retry_after is None
    assert info.value.state == "forced_open"
    assert "forced open" in str(info.value)
    b.disable()
    assert b.state == "disabled"
    trip(b, 5)
    assert b.state == "disabled"
    assert b.snapshot().failures == 5
    b.reset()
    assert b.state == "closed"
    trip(b, 1)
    assert b.state == "open"
    b.reset()
    assert b.call(lambda: 7) == 7


def test_stale_outcomes_do_not_move_a_reset_breaker(make_breaker):
    b = make_breaker(failure_threshold=1)

    def slow_failure():
        b.reset()  # an operator resets while the call is in flight
        raise Boom

    with pytest.raises(Boom):
        b.call(slow_failure)
    assert b.state == "closed", "an outcome from before the reset must not trip it"


def test_listeners_hear_each_transition_once_after_it_happened(make_breaker, clock):
    heard = []

    def listener(breaker, old, new):
        heard.append((old, new, breaker.state))

    other = []
    b = make_breaker(
        failure_threshold=1, open_timeout=1.0, on_state_change=listener, listeners=[lambda *a: other.append(a)]
    )
    trip(b)
    clock.advance(1.0)
    b.call(lambda: None)
    b.force_open()
    b.disable()
    b.reset()
    assert heard == [
        ("closed", "open", "open"),
        ("open", "half_open", "half_open"),
        ("half_open", "closed", "closed"),
        ("closed", "forced_open", "forced_open"),
        ("forced_open", "disabled", "disabled"),
        ("disabled", "closed", "closed"),
    ]
    assert [(o, n) for (_, o, n) in other] == [(o, n) for (o, n, _) in heard]
    assert all(a[0] is b for a in other)
    assert b.snapshot().transitions == 6


def test_a_raising_listener_does_not_break_the_call(make_breaker, monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    b = make_breaker(failure_threshold=1, on_state_change=lambda *a: 1 / 0)
    with pytest.raises(Boom):
        b.call(fail)
    assert b.state == "open"
    assert len(seen) == 1 and isinstance(seen[0], ZeroDivisionError)


def test_properties_and_repr(make_breaker, clock):
    b = make_breaker(failure_threshold=4, open_timeout=2.5, half_open_max=3, half_open_successes=2, name="p")
    assert (b.failure_threshold, b.open_timeout, b.open_timeout_max) == (4, 2.5, 2.5)
    assert (b.half_open_max, b.half_open_successes) == (3, 2)
    assert b.name == "p"
    assert b.clock is clock
    assert b.generation == 0
    assert repr(b) == "Breaker(name='p', state=\"closed\")"
    assert tripwire.Breaker().clock is None
    snap = b.snapshot()
    assert snap == b.snapshot()
    assert snap.as_dict() == {
        "successes": 0,
        "failures": 0,
        "ignored": 0,
        "rejected": 0,
        "slow": 0,
        "transitions": 0,
        "capped_holds": 0,
        "calls": 0,
        "state": "closed",
    }


def test_monotonic_clock_breaker_recovers_in_real_time():
    import time

    b = tripwire.Breaker(failure_threshold=1, open_timeout=0.02)
    trip(b)
    with pytest.raises(tripwire.CircuitOpenError):
        b.call(lambda: None)
    time.sleep(0.03)
    assert b.call(lambda: "ok") == "ok"
    assert b.state == "closed"


def test_manual_clock():
    clock = tripwire.ManualClock()
    assert clock.now() == 0.0
    clock.advance(1.5)
    clock.set(1.0)  # never goes back
    assert clock.now() == 1.5
    clock.set(3.0)
    assert clock.now() == 3.0
    assert repr(tripwire.ManualClock(2.0)) == "ManualClock(2.0)"
    with pytest.raises(ValueError, match="seconds"):
        clock.advance(-1.0)


def test_listeners_may_use_the_breaker_they_hear_from(make_breaker, clock):
    """Listeners run after the transition, outside any lock: a listener
    that reads or drives the breaker itself does not deadlock."""
    seen = []

    def listener(breaker, old, new):
        seen.append((new, breaker.snapshot().state))
        if new == "open":
            breaker.reset()

    b = make_breaker(failure_threshold=1, on_state_change=listener)
    trip(b)
    assert seen == [("open", "open"), ("closed", "closed")]
    assert b.state == "closed"


def test_reset_is_the_cores_reset(make_breaker, clock):
    """reset(): the core's manual transition to closed. The trip conditions
    start afresh (consecutive failures, the window, the grown cool-down);
    the transition is reported like any other, from closed too, since it
    starts a new generation; the snapshot's counters are totals since the
    breaker was made (Prometheus counters), so they are kept."""
    heard = []
    b = make_breaker(
        failure_threshold=2,
        open_timeout=1.0,
        open_timeout_max=8.0,
        open_timeout_growth=2.0,
        on_state_change=lambda _, old, new: heard.append((old, new)),
    )
    trip(b)
    clock.advance(1.0)
    with pytest.raises(Boom):
        b.call(fail)  # the probe fails: the cool-down grows to 2 s
    with pytest.raises(tripwire.CircuitOpenError) as info:
        b.call(lambda: None)
    assert info.value.retry_after == 2.0
    before = b.snapshot()
    generation = b.generation
    b.reset()
    assert heard[-1] == ("open", "closed") and b.generation == generation + 1
    trip(b, 1)
    assert b.state == "closed", "one failure after the reset is one, not three"
    trip(b, 1)
    with pytest.raises(tripwire.CircuitOpenError) as info:
        b.call(lambda: None)
    assert info.value.retry_after == 1.0, "the grown cool-down starts over"

    b.reset()
    generation = b.generation
    b.reset()
    assert heard[-1] == ("closed", "closed") and b.generation == generation + 1
    after = b.snapshot()
    assert (after.failures, after.rejected) == (before.failures + 2, before.rejected + 1)
    assert after.transitions == before.transitions + 4 == len(heard)  # reset, trip, reset, reset


def test_a_hold_refuses_every_call_for_its_length_then_probes(make_breaker, clock):
    seen = []
    b = make_breaker(open_timeout=1.0, name="held", on_state_change=lambda _b, f, t: seen.append((f, t)))
    assert b.hold_left is None
    assert b.hold(7.0) is True
    assert b.state == "open" and b.hold_left == pytest.approx(7.0)
    assert b.hold(3.0) is False, "a shorter hold leaves the longer one"
    assert b.hold(0) is False
    clock.advance(2.5)
    with pytest.raises(tripwire.CircuitOpenError) as info:
        b.call(lambda: pytest.fail("must not be called"))
    assert info.value.retry_after == pytest.approx(4.5) and info.value.state == "open"
    assert b.hold(10.0) is True and b.hold_left == pytest.approx(10.0)
    clock.advance(10.0)
    assert b.hold_left is None
    assert b.call(lambda: 1) == 1, "the first call after the hold is a probe"
    assert b.state == "closed"
    assert seen[0] == ("closed", "open") and seen[-1] == ("half_open", "closed")


def test_a_hold_is_capped_and_never_ends_an_operators_state(make_breaker, clock):
    b = make_breaker()
    assert b.hold(10**400) is True
    assert b.hold_left == pytest.approx(3600.0), "at most an hour"
    assert b.snapshot().capped_holds == 1
    b.force_open()
    assert b.hold(5.0) is False and b.state == "forced_open"
    b.disable()
    assert b.hold(5.0) is False and b.state == "disabled"
    for bad, error in ((-1.0, ValueError), (float("nan"), ValueError), ("5", TypeError), (True, TypeError)):
        with pytest.raises(error, match="seconds"):
            b.hold(bad)


def test_a_listener_can_be_added_after_construction(make_breaker, clock):
    heard = []
    b = make_breaker(failure_threshold=1, open_timeout=1.0, on_state_change=lambda *a: heard.append(("first", a)))

    @b.on_state_change
    def later(breaker, old, new):
        heard.append(("later", (breaker, old, new)))

    assert callable(later) and later.__name__ == "later", "a decorator: it returns the listener"
    trip(b)
    assert heard == [("first", (b, "closed", "open")), ("later", (b, "closed", "open"))]
    # A listener adding a listener: heard from the next transition on.
    heard.clear()
    b.on_state_change(lambda *a: b.on_state_change(lambda *x: heard.append(("added", x))))
    b.reset()
    assert [who for who, _ in heard] == ["first", "later"]
    trip(b)
    assert [who for who, _ in heard] == ["first", "later", "first", "later", "added"]
    with pytest.raises(TypeError, match=r"on_state_change must be a callable taking \(breaker, from, to\), got 42"):
        b.on_state_change(42)


def test_a_listener_added_to_a_shared_breaker_hears_this_process_transitions(tmp_path):
    b = tripwire.Breaker.shared(str(tmp_path / "b"), failure_threshold=1)
    seen = []
    b.on_state_change(lambda _b, old, new: seen.append((old, new)))
    trip(b)
    assert seen == [("closed", "open")]


def test_a_probe_past_the_cool_down_keeps_its_slot_until_the_probe_timeout(make_breaker, clock):
    b = make_breaker(failure_threshold=1, open_timeout=1.0, probe_timeout=5.0)
    assert (b.probe_timeout, b.max_hold) == (5.0, 3600.0)
    trip(b)
    clock.advance(1.0)
    probe = b._acquire()
    clock.advance(1.5)  # past the cool-down: the probe is still awaited
    with pytest.raises(tripwire.CircuitOpenError) as refused:
        b._acquire()
    assert refused.value.retry_after == pytest.approx(3.5)
    b._record(probe, "success")
    assert b.state == "closed"
    # A probe nobody records is taken over once the probe timeout has passed.
    trip(b)
    clock.advance(1.0)
    b._acquire()
    clock.advance(5.0)
    b._record(b._acquire(), "success")
    assert b.state == "closed"


def test_max_hold_caps_what_a_server_asks_for(make_breaker):
    b = make_breaker(max_hold=60.0)
    b.hold(86400.0)
    assert b.hold_left == pytest.approx(60.0)
    assert b.snapshot().capped_holds == 1


def test_a_ticket_without_a_start_time_is_an_int_that_records_as_the_ticket(make_breaker, clock):
    b = make_breaker(failure_threshold=1, open_timeout=1.0, half_open_max=2, half_open_successes=2)
    t = b._acquire()
    assert type(t) is int
    b._record(t, "failure")
    assert b.state == "open"
    clock.advance(1.0)
    # Two probes, each an int naming its own slot.
    p1, p2 = b._acquire(), b._acquire()
    assert type(p1) is int and type(p2) is int and p1 != p2
    assert b.state == "half_open"
    # A probe recorded twice takes its slot's outcome once.
    b._record_result(p1, None)
    b._record_result(p1, None)
    assert b.state == "half_open"
    b._record_result(p2, None)
    assert b.state == "closed"


def test_a_ticket_with_a_start_time_is_a_ticket_object(make_breaker, clock):
    b = make_breaker(slow_call=1.0)
    clock.advance(10.0)
    t = b._acquire()
    assert isinstance(t, tripwire.Ticket)
    clock.advance(2.0)
    b._record_result(t, None)
    s = b.snapshot()
    assert (s.successes, s.slow) == (1, 1)


@pytest.mark.parametrize("bad", [-1, 2**64, "0", None, 1.0])
def test_what_is_no_ticket_is_refused(make_breaker, bad):
    b = make_breaker()
    with pytest.raises((TypeError, OverflowError)):
        b._record(bad, "success")
    assert b.snapshot().calls == 0
