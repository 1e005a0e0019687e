"""The breaker against a small sequential reference model (consecutive-
failure mode), driven by hypothesis: random admissions, outcomes in any
order, time passing and manual actions."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, invariant, rule

import tripwire

NS = 1_000_000_000
SLOTS = 10  # probe slots of one half-open generation


def to_ns(seconds: float) -> int:
    """As the extension converts seconds (an f64 product, truncated)."""
    return int(seconds * 1e9)


@dataclass
class Model:
    """The breaker's rules, one step at a time."""

    threshold: int
    open_timeout: int  # ns
    open_timeout_max: int
    probe_timeout: int  # ns
    growth: float
    half_open_max: int
    half_open_successes: int
    now: int
    state: str = "closed"
    generation: int = 0
    count: int = 0  # closed: consecutive failures; open/half-open: re-opens
    probes: int = 0
    passed: int = 0
    issued: int = 0  # half-open: probe slots handed out in this generation
    entered_at: int = 0
    counters: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("successes", "failures", "ignored", "rejected", "transitions"), 0)
    )
    heard: list[tuple[str, str]] = field(default_factory=list)

    def cooldown(self) -> int:
        if self.count == 0 or self.growth <= 1.0:
            return self.open_timeout
        t = float(self.open_timeout)
        for _ in range(self.count):
            t *= self.growth
            if t >= float(self.open_timeout_max):
                return self.open_timeout_max
        return int(t)

    def wait(self) -> int:
        """How long the state waits: Open for its cool-down, Half-Open for
        its probes, until they count as lost."""
        return self.probe_timeout if self.state == "half_open" else self.cooldown()

    def enter(self, state: str, count: int = 0) -> None:
        self.heard.append((self.state, state))
        self.counters["transitions"] += 1
        self.state, self.generation, self.count, self.probes, self.passed = state, self.generation + 1, count, 0, 0
        self.issued = 0

    def acquire(self) -> tuple[int, float | None] | None:
        """(generation, None) when admitted; None and a rejection otherwise."""
        if self.state in ("closed", "disabled"):
            return self.generation, None
        if self.state == "forced_open":
            self.counters["rejected"] += 1
            return None
        if self.state == "half_open" and self.probes < self.half_open_max and self.issued < SLOTS:
            self.probes += 1
            self.issued += 1
            return self.generation, None
        if self.state == "half_open" and self.probes == 0:
            # Every probe slot of the generation used, none in flight: a new
            # generation of slots, keeping the successes so far.
            passed = self.passed
            self.enter("half_open", self.count)
            self.probes, self.issued, self.passed = 1, 1, passed
            self.entered_at = max(self.entered_at, self.now)
            return self.generation, None
        elapsed = self.now - self.entered_at
        if elapsed < self.wait():
            self.counters["rejected"] += 1
            return None
        # Open whose cool-down has passed, or a half-open whose probes were lost.
        self.enter("half_open", self.count)
        self.probes, self.issued = 1, 1
        self.entered_at = max(self.entered_at, self.now)
        return self.generation, None

    def retry_after(self) -> float | None:
        if self.state == "forced_open":
            return None
        return (self.wait() - (self.now - self.entered_at)) / NS

    def record(self, generation: int, outcome: str) -> None:
        self.counters[{"success": "successes", "failure": "failures", "ignored": "ignored"}[outcome]] += 1
        if generation != self.generation:
            return
        if outcome == "success":
            if self.state == "closed":
                self.count = 0
            elif self.state == "half_open":
                if self.passed + 1 >= self.half_open_successes:
                    self.enter("closed")
                else:
                    self.passed += 1
                    self.probes = max(self.probes - 1, 0)
        elif outcome == "failure":
            if self.state == "closed":
                if self.count + 1 >= self.threshold:
                    self.enter("open")
                    self.entered_at = max(self.entered_at, self.now)
                else:
                    self.count += 1
            elif self.state == "half_open":
                self.enter("open", self.count + 1)
                self.entered_at = max(self.entered_at, self.now)
        elif self.state == "half_open" and self.probes > 0:
            self.probes -= 1


class BreakerMachine(RuleBasedStateMachine):
    tickets = Bundle("tickets")

    @initialize(
        threshold=st.integers(1, 3),
        open_timeout_ms=st.integers(1, 5000),
        growth=st.sampled_from([1.0, 1.5, 2.0, 3.0]),
        cap_factor=st.integers(1, 8),
        half_open_max=st.integers(1, 3),
        probe_timeout_ms=st.integers(1, 5000),
        data=st.data(),
    )
    def setup(self, threshold, open_timeout_ms, growth, cap_factor, half_open_max, probe_timeout_ms, data):
        successes = data.draw(st.integers(1, half_open_max), label="half_open_successes")
        open_timeout = open_timeout_ms / 1000
        self.clock = tripwire.ManualClock(1000.0)
        heard: list[tuple[str, str]] = []
        self.heard = heard
        self.breaker = tripwire.Breaker(
            failure_threshold=threshold,
            open_timeout=open_timeout,
            open_timeout_max=open_timeout * cap_factor,
            open_timeout_growth=growth,
            probe_timeout=probe_timeout_ms / 1000,
            half_open_max=half_open_max,
            half_open_successes=successes,
            clock=self.clock,
            on_state_change=lambda _b, old, new: heard.append((old, new)),
        )
        self.model = Model(
            threshold=threshold,
            open_timeout=to_ns(open_timeout),
            open_timeout_max=to_ns(open_timeout * cap_factor),
            probe_timeout=to_ns(probe_timeout_ms / 1000),
            growth=growth,
            half_open_max=half_open_max,
            half_open_successes=successes,
            now=to_ns(1000.0),
        )

    @rule(target=tickets)
    def acquire(self):
        want = self.model.acquire()
        if want is None:
            expected_retry = self.model.retry_after()
            try:
                self.breaker._acquire()
            except tripwire.CircuitOpenError as e:
                assert e.state == self.model.state
                if expected_retry is None:
                    assert e.retry_after is None
                else:
                    assert abs(e.retry_after - expected_retry) < 1e-6
                return None
            raise AssertionError(f"admitted, model says rejected in {self.model.state}")
        ticket = self.breaker._acquire()
        return (ticket, want[0])

    @rule(ticket=consumes(tickets), outcome=st.sampled_from(["success", "failure", "ignored"]))
    def record(self, ticket, outcome):
        if ticket is None:
            return
        real, generation = ticket
        self.breaker._record(real, outcome)
        self.model.record(generation, outcome)

    @rule(outcome=st.sampled_from(["success", "failure", "ignored"]))
    def call(self, outcome):
        """A whole call: admitted (or not), then its outcome at once."""
        ticket = self.acquire()
        if ticket is not None:
            self.record(ticket, outcome)

    @rule(outcome=st.sampled_from(["success", "failure", "ignored"]))
    def call_twice(self, outcome):
        """Two calls in flight at once, ending in the order they began."""
        first, second = self.acquire(), self.acquire()
        for ticket in (first, second):
            if ticket is not None:
                self.record(ticket, outcome)

    @rule(ms=st.integers(0, 20_000))
    def advance(self, ms):
        self.clock.advance(ms / 1000)
        self.model.now += to_ns(ms / 1000)

    @rule()
    def wait_until_a_probe_is_due(self):
        """Jumps to the end of the wait (a cool-down, or a probe timeout), where
        most of the rules live."""
        if self.model.state in ("open", "half_open"):
            left = self.model.entered_at + self.model.wait() - self.model.now
            if left > 0:
                # Whole microseconds, so that both sides convert the same.
                seconds = -(-left // 1000) / 1e6
                self.clock.advance(seconds)
                self.model.now += to_ns(seconds)

    @rule(action=st.sampled_from(["force_open", "disable", "reset"]))
    def manual(self, action):
        getattr(self.breaker, action)()
        self.model.enter({"force_open": "forced_open", "disable": "disabled", "reset": "closed"}[action])

    @invariant()
    def agrees(self):
        if not hasattr(self, "model"):
            return
        m, b = self.model, self.breaker
        assert b.state == m.state
        assert b.generation == m.generation
        s = b.snapshot()
        got = {k: getattr(s, k) for k in m.counters}
        assert got == m.counters
        assert self.heard == m.heard


BreakerMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=50, deadline=None)
TestBreakerModel = BreakerMachine.TestCase
