"""PreviewSchedule's ad-hoc schedule, decoded with the same rules CreateJob applies, and the
occurrences a preview answers with."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from google.protobuf.duration_pb2 import Duration
from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

from duetime.jobs.v1 import job_pb2, job_service_pb2
from duetime_core.jobspec import ScheduleSpec
from duetime_core.preview import DstAdjustment, PreviewItem
from duetime_infra.codec.job_codec import read_jitter_window
from duetime_infra.codec.schedule_codec import read_max_runs, read_schedule
from duetime_infra.codec.timeconv import datetime_to_timestamp
from duetime_infra.codec.violations import Violations


def decode_preview_schedule(
    msg: job_pb2.Schedule, jitter_window: Duration | None, *, now: datetime
) -> tuple[ScheduleSpec, int | None]:
    """The schedule and its max_runs."""
    v = Violations()
    spec = read_schedule(msg, v, now=now, path="schedule")
    max_runs = read_max_runs(msg, v, path="schedule")
    read_jitter_window(jitter_window, spec, v, now=now, path="jitter_window")
    v.raise_if_any()
    assert spec is not None  # read_schedule records a violation whenever it returns None
    return spec, max_runs


def encode_occurrence(item: PreviewItem, out: job_service_pb2.ScheduledOccurrence) -> None:
    out.local_time = item.local_time
    datetime_to_timestamp(item.nominal_time, out.nominal_time)
    if item.effective_time is not None:
        datetime_to_timestamp(item.effective_time, out.effective_time)
    out.excluded_by_calendar = item.excluded_by
    if item.dst_adjustment is not DstAdjustment.NONE:
        out.dst_adjustment = job_service_pb2.DstAdjustment.Value(
            f"DST_ADJUSTMENT_{item.dst_adjustment.value}"
        )


def encode_occurrences(
    items: Iterable[PreviewItem],
    out: RepeatedCompositeFieldContainer[job_service_pb2.ScheduledOccurrence],
) -> None:
    for item in items:
        encode_occurrence(item, out.add())
