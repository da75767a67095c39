"""Decoding PreviewSchedule's ad-hoc schedule with the same rules CreateJob applies."""

from __future__ import annotations

from datetime import datetime

from google.protobuf.duration_pb2 import Duration

from duetime.jobs.v1 import job_pb2
from duetime_core.jobspec import ScheduleSpec
from duetime_infra.codec.job_codec import read_jitter_window
from duetime_infra.codec.schedule_codec import read_schedule
from duetime_infra.codec.violations import Violations


def decode_preview_schedule(
    msg: job_pb2.Schedule, jitter_window: Duration | None, *, now: datetime
) -> ScheduleSpec:
    v = Violations()
    spec = read_schedule(msg, v, now=now, path="schedule")
    read_jitter_window(jitter_window, spec, v, now=now, path="jitter_window")
    v.raise_if_any()
    assert spec is not None  # read_schedule records a violation whenever it returns None
    return spec
