"""A dispatched run as the worker holds it until its attempt is started: what the starter reads
of a dispatch message, read from it once where it is consumed (``intake.wire``)."""

from __future__ import annotations

from dataclasses import dataclass

from duetime_worker.herd.slots import Flow

# Whose turn a message that does not say is: the normal priority, no team, weight 1.
_NO_ONES = Flow()


@dataclass(frozen=True, slots=True)
class Dispatch:
    run_id: str
    # The run's time in nanoseconds since the epoch, by the scheduler's clock: no attempt starts
    # earlier (the scheduler enforces it). 0: not said, as good as past.
    not_before: int = 0
    # A container target, whose launcher permit is taken before its start; False for an HTTP
    # target and for a message that does not say (an older writer's).
    container: bool = False
    # Whose turn its waits are (priority, team, the team's weight).
    flow: Flow = _NO_ONES
    # The run's nominal time in nanoseconds since the epoch, passed on in its start as a hint
    # (the attempt's beats and report carry the start answer's, the same); None: not said.
    nominal_time: int | None = None
    # Its attempt is asked for at its time, never ahead: the scheduler would answer TOO_EARLY
    # (an overlap policy other than ALLOW). False for a message that does not say.
    at_its_time: bool = False
