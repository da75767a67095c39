"""When a worker's full heartbeat goes: the herd governor's hold weighs the leases it renews."""

from __future__ import annotations

from duetime_worker.attempt.beat_schedule import BeatSchedule
from duetime_worker.attempt.lifecycle import Attempt, Key
from duetime_worker.herd.governor import Herd
from duetime_worker.herd.knobs import URGENT_SPACING


def test_a_full_beat_is_held_whatever_the_short_leases_of_attempts_it_leaves_out() -> None:
    # An attempt started ahead holds a short lease from its call time and is not in a full beat
    # until its call begins: it must not make a busy worker send one it does not need.
    herd = Herd(full_beat_hold=5.0)
    herd.report_begins()  # busy: a report to send
    calling = Attempt("calling", 1, lease_deadline=100.0)
    ahead = Attempt("ahead", 1, lease_deadline=2.5, ahead=True)
    active: dict[Key, Attempt] = {calling.key: calling, ahead.key: ahead}
    schedule = BeatSchedule(1.0, active, herd)
    schedule.going(0.0, full=True)
    # Due at 1.0, asked at 1.5: held, asked again after the urgent spacing.
    assert schedule.next_beat(1.5, fresh_wanted=False) == (1.5 + URGENT_SPACING, True)
    # Once its call began the beat renews it, and its short lease lets the beat go now.
    ahead.call_begins(0)
    assert schedule.next_beat(1.5, fresh_wanted=False) == (1.0, True)
