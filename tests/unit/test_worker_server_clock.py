"""The worker's estimate of the scheduler's clock: on the monotonic clock, the least-lagging
recent sample, following a server clock that moved once its old samples age out."""

from __future__ import annotations

import time

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from duetime_worker.attempt.server_clock import ServerClock

# The server's clock runs this far ahead of the worker's monotonic clock.
OFFSET = 1_000_000.0


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def at(seconds: float) -> Timestamp:
    stamp = Timestamp()
    stamp.FromNanoseconds(round(seconds * 1e9))
    return stamp


def answer(clock: ServerClock, mono: FakeMonotonic, lag: float) -> None:
    """An answer whose server time was read ``lag`` seconds before it arrives now."""
    clock.observe(at(mono.now + OFFSET - lag))


def test_unknown_until_the_first_answer() -> None:
    clock = ServerClock(FakeMonotonic())
    assert clock.offset() is None
    assert clock.seconds_until(at(OFFSET + 100)) == 0.0
    clock.observe(Timestamp())  # an answer without a server time is no sample
    assert clock.offset() is None


def test_a_slow_answer_does_not_make_held_messages_late() -> None:
    mono = FakeMonotonic()
    clock = ServerClock(mono, window=30)
    answer(clock, mono, lag=0.01)
    mono.now += 1
    answer(clock, mono, lag=3.0)  # a batch's server time read early in a busy transaction
    due = at(mono.now + OFFSET + 2)
    # By the least-lagging sample: 2 s to go (less its 10 ms lag), not 5 s.
    assert clock.seconds_until(due) == pytest.approx(2.01)
    mono.now += 2.01
    assert clock.seconds_until(due) == 0.0


def test_never_early_by_the_estimate() -> None:
    mono = FakeMonotonic()
    clock = ServerClock(mono)
    for lag in (0.5, 0.2, 0.3, 0.05, 0.4):
        answer(clock, mono, lag)
        mono.now += 0.7
        # The estimate is at or below the true offset: the server's clock is never ahead of it.
        offset = clock.offset()
        assert offset is not None
        assert offset <= OFFSET
    assert clock.offset() == pytest.approx(OFFSET - 0.05)


def test_the_wall_clock_plays_no_part(monkeypatch: pytest.MonkeyPatch) -> None:
    mono = FakeMonotonic()
    clock = ServerClock(mono)
    answer(clock, mono, lag=0.0)
    due = at(mono.now + OFFSET + 10)
    assert clock.seconds_until(due) == pytest.approx(10)
    # The host's clock steps an hour (NTP, an operator) while the monotonic clock moves 4 s:
    # neither the estimate nor a new sample taken meanwhile follows the step.
    wall, wall_ns = time.time(), time.time_ns()
    monkeypatch.setattr(time, "time", lambda: wall + 3600)
    monkeypatch.setattr(time, "time_ns", lambda: wall_ns + 3600 * 10**9)
    mono.now += 4
    assert clock.seconds_until(due) == pytest.approx(6)
    answer(clock, mono, lag=0.0)
    monkeypatch.setattr(time, "time", lambda: wall - 3600)
    monkeypatch.setattr(time, "time_ns", lambda: wall_ns - 3600 * 10**9)
    assert clock.offset() == pytest.approx(OFFSET)
    assert clock.seconds_until(due) == pytest.approx(6)


def test_old_samples_age_out_so_a_server_clock_step_back_is_followed() -> None:
    mono = FakeMonotonic()
    clock = ServerClock(mono, window=30)
    answer(clock, mono, lag=0.0)
    mono.now += 1
    clock.observe(at(mono.now + OFFSET - 5))  # the server's clock stepped back 5 s
    assert clock.offset() == pytest.approx(OFFSET)  # within the window: the larger sample
    mono.now += 30
    assert clock.offset() == pytest.approx(OFFSET - 5)
    mono.now += 1000  # no answer for long: the latest sample still counts
    assert clock.offset() == pytest.approx(OFFSET - 5)


def test_now_is_the_server_time_estimated_or_the_host_clock_before_any_answer() -> None:
    mono = FakeMonotonic()
    clock = ServerClock(mono)
    before = time.time_ns()
    assert before <= clock.now_ns() <= time.time_ns()
    answer(clock, mono, lag=0.0)
    mono.now += 3
    assert clock.now_ns() == int((mono.now + OFFSET) * 1e9)
