"""ExplainOccurrence's request read (the time asked, with field-named errors) and its answer
written; and ResumeJob's forecast of the paused occurrences."""

from __future__ import annotations

from collections.abc import Callable

from duetime.jobs.v1 import job_service_pb2, run_pb2
from duetime_core.explain import Asked, DstNote, Explanation
from duetime_core.planning import Occurrence
from duetime_core.preview import PreviewItem
from duetime_core.records import RunRecord
from duetime_core.resume import ResumeForecast
from duetime_core.schedule import load_zone
from duetime_core.schedule.dst import WallKind
from duetime_core.skipped import SkippedSpan
from duetime_infra.codec.policy_codec import encode_misfire
from duetime_infra.codec.preview_codec import encode_occurrence, encode_occurrences
from duetime_infra.codec.timeconv import (
    datetime_to_timestamp,
    parse_local_time,
    timedelta_to_duration,
)
from duetime_infra.codec.violations import Violations, read_timestamp


def read_asked(request: job_service_pb2.ExplainOccurrenceRequest) -> Asked:
    """The time asked: exactly one of ``time`` and ``local_time``, the latter in
    ``time_zone`` (the job's schedule's when empty)."""
    v = Violations()
    has_time, local_text, zone = request.HasField("time"), request.local_time, request.time_zone
    if has_time == bool(local_text):
        v.add("time", "set exactly one of time and local_time")
    if zone:
        try:
            load_zone(zone)
        except ValueError as error:
            v.add("time_zone", str(error))
        if has_time:
            v.add("time_zone", "only with local_time: time is an instant")
    instant = local = None
    if has_time:
        instant = read_timestamp(v, "time", request.time)
    elif local_text:
        try:
            local = parse_local_time(local_text, instant_field="time")
        except ValueError as error:
            v.add("local_time", str(error))
    v.raise_if_any()
    return Asked(zone or None, instant=instant, local=local)


_KINDS = {
    WallKind.GAP: job_service_pb2.DST_TRANSITION_KIND_GAP,
    WallKind.FOLD: job_service_pb2.DST_TRANSITION_KIND_FOLD,
}


def _encode_dst(note: DstNote, out: job_service_pb2.DstTransition) -> None:
    out.kind = _KINDS[note.kind]
    out.time_zone = note.zone
    datetime_to_timestamp(note.at, out.time)
    timedelta_to_duration(note.offset_before, out.utc_offset_before)
    timedelta_to_duration(note.offset_after, out.utc_offset_after)


def encode_explanation(
    found: Explanation, encode_run: Callable[[RunRecord], run_pb2.Run]
) -> job_service_pb2.ExplainOccurrenceResponse:
    out = job_service_pb2.ExplainOccurrenceResponse(
        fate=job_service_pb2.OccurrenceFate.Value(f"OCCURRENCE_FATE_{found.fate.value}"),
        explanation=found.text,
        job_version=found.version,
    )
    datetime_to_timestamp(found.instant, out.time)
    for item, field in (
        (found.occurrence, out.occurrence),
        (found.previous, out.previous_occurrence),
        (found.next, out.next_occurrence),
    ):
        if item is not None:
            encode_occurrence(item, field)
    if found.run is not None:
        out.run.CopyFrom(encode_run(found.run))
    if found.dst is not None:
        _encode_dst(found.dst, out.dst_transition)
    if found.lateness is not None:
        timedelta_to_duration(found.lateness, out.lateness)
    if found.misfire is not None:
        encode_misfire(found.misfire, out.misfire)
    return out


def _span(span: SkippedSpan | None, out: job_service_pb2.OccurrenceSpan) -> None:
    if span is None:
        return
    datetime_to_timestamp(span.first, out.first_time)
    datetime_to_timestamp(span.last, out.last_time)
    out.count = span.count


def encode_forecast(
    forecast: ResumeForecast,
    out: job_service_pb2.PausedOccurrences,
    item: Callable[[Occurrence], PreviewItem],
) -> None:
    """``item`` shows an occurrence as a preview does (local time, DST adjustment)."""
    _span(forecast.covered, out.covered)
    _span(forecast.skipped, out.skipped)
    _span(forecast.too_old, out.too_old)
    _span(forecast.missed, out.missed)
    encode_occurrences((item(o) for o in forecast.catch_up), out.catch_up_runs)
    encode_occurrences((item(o) for o in forecast.on_time), out.on_time_runs)
    out.truncated = forecast.truncated
