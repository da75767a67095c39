"""Schedules and the one time function of Duetime.

``next_fire_time`` is the only source of fire times; everything else (previews, the
scheduler's advance, misfire catch-up) iterates it. Its DST rules: docs/architecture.md, "DST",
and CronSchedule's comment in proto/duetime/jobs/v1/job.proto.
"""

from duetime_core.schedule.dst import load_zone
from duetime_core.schedule.gaps import shortest_gap
from duetime_core.schedule.jitter import jitter_offset
from duetime_core.schedule.model import Cron, FoldPolicy, GapPolicy, Interval, OneOff, Schedule
from duetime_core.schedule.next_fire import fire_times, next_fire_time
from duetime_core.schedule.validate import (
    is_fixed_time,
    jitter_window_violations,
    schedule_violations,
    validate,
)

__all__ = [
    "Cron",
    "FoldPolicy",
    "GapPolicy",
    "Interval",
    "OneOff",
    "Schedule",
    "fire_times",
    "is_fixed_time",
    "jitter_offset",
    "jitter_window_violations",
    "load_zone",
    "next_fire_time",
    "schedule_violations",
    "shortest_gap",
    "validate",
]
