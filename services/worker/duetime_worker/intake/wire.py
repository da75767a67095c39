"""The intake's edge with the dispatch topics: a ``RunDispatch`` read into the worker's
``Dispatch`` once, where its message is consumed; nothing past the consumer sees the message."""

from __future__ import annotations

from duetime.events.v1.events_pb2 import TARGET_KIND_CONTAINER, RunDispatch
from duetime_core.jobspec import Priority
from duetime_infra.codec.policy_codec import PRIORITIES
from duetime_worker.herd.slots import Flow
from duetime_worker.intake.dispatch import Dispatch


def dispatch_of(message: RunDispatch) -> Dispatch:
    """The message's run, its time (an unset time reads as 0, as good as past), its target's
    kind, its turn (weight 1 from older writers, which do not say it; a priority unknown to
    this build reads as normal), its nominal time and whether it starts at its time."""
    return Dispatch(
        run_id=message.run_id,
        not_before=message.effective_time.ToNanoseconds(),
        container=message.target_kind == TARGET_KIND_CONTAINER,
        flow=Flow(
            PRIORITIES.get(message.priority, Priority.NORMAL),
            message.team,
            message.team_weight or 1,
        ),
        nominal_time=(
            message.nominal_time.ToNanoseconds() if message.HasField("nominal_time") else None
        ),
        at_its_time=message.starts_at_its_time,
    )
