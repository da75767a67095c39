"""The ``Schedule`` of a job: at an instant or local time, after a delay, every interval, cron.

The domain keeps the user's own form (``ScheduleSpec``) so a job reads back as it was written;
what the form resolves to (a local time's instant, a delay's run time, an interval's anchor)
is fixed here, at create or update time, with the database clock as "now".
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime, timedelta

from duetime.jobs.v1 import job_pb2
from duetime_core import schedule as schedule_pkg
from duetime_core.ending import end_time_of
from duetime_core.errors import InvalidArgument
from duetime_core.jobspec import (
    AfterDelay,
    AtInstant,
    AtLocal,
    Every,
    ScheduleSpec,
    Series,
    instant_problem,
)
from duetime_core.schedule import load_zone
from duetime_core.schedule.dst import resolve_local
from duetime_core.schedule.model import Cron, FoldPolicy, GapPolicy
from duetime_infra.codec.timeconv import (
    datetime_to_timestamp,
    format_local_time,
    format_rfc3339_utc,
    parse_local_time,
    timedelta_to_duration,
)
from duetime_infra.codec.violations import (
    Violations,
    read_duration,
    read_enum,
    read_int,
    read_timestamp,
)

logger = logging.getLogger(__name__)

MAX_DELAY = timedelta(days=366)
MIN_INTERVAL = timedelta(seconds=1)
MAX_INTERVAL = timedelta(days=366)
MAX_RUNS = 1_000_000_000
_ONE_OFF_HAS_NO_END = "only for interval and cron schedules: a one-off runs once"
_ONE_OFFS = ("at", "delay")

_GAPS: dict[int, GapPolicy] = {
    job_pb2.DST_GAP_POLICY_SHIFT: GapPolicy.SHIFT,
    job_pb2.DST_GAP_POLICY_SKIP: GapPolicy.SKIP,
}
_FOLDS: dict[int, FoldPolicy] = {
    job_pb2.DST_FOLD_POLICY_FIRST: FoldPolicy.FIRST,
    job_pb2.DST_FOLD_POLICY_LAST: FoldPolicy.LAST,
    job_pb2.DST_FOLD_POLICY_BOTH: FoldPolicy.BOTH,
}
_GAP_NUMBERS: dict[GapPolicy, job_pb2.DstGapPolicy.ValueType] = {
    GapPolicy.SHIFT: job_pb2.DST_GAP_POLICY_SHIFT,
    GapPolicy.SKIP: job_pb2.DST_GAP_POLICY_SKIP,
}
_FOLD_NUMBERS: dict[FoldPolicy, job_pb2.DstFoldPolicy.ValueType] = {
    FoldPolicy.FIRST: job_pb2.DST_FOLD_POLICY_FIRST,
    FoldPolicy.LAST: job_pb2.DST_FOLD_POLICY_LAST,
    FoldPolicy.BOTH: job_pb2.DST_FOLD_POLICY_BOTH,
}


def read_schedule(
    msg: job_pb2.Schedule, v: Violations, *, now: datetime, path: str
) -> ScheduleSpec | None:
    """The schedule in the user's form, or None if anything in it is wrong (recorded in ``v``).

    None lets callers skip the checks that need a valid schedule (jitter against the shortest
    gap) instead of evaluating a half-built one.
    """
    before = len(v)
    spec: ScheduleSpec | None
    match msg.WhichOneof("kind"):
        case "at":
            spec = _read_at(msg.at, v, f"{path}.at")
        case "delay":
            spec = _read_delay(msg.delay, v, f"{path}.delay", now)
        case "interval":
            spec = _read_interval(msg.interval, v, f"{path}.interval", now)
        case "cron":
            spec = _read_cron(msg.cron, v, f"{path}.cron")
        case _:
            v.add(path, "required: set one of at, delay, interval or cron")
            spec = None
    if msg.HasField("end_time"):
        spec = _with_end(msg, spec, v, path)
    return spec if len(v) == before else None


def _with_end(
    msg: job_pb2.Schedule, spec: ScheduleSpec | None, v: Violations, path: str
) -> ScheduleSpec | None:
    """``spec`` ending at the message's end_time (inclusive: an occurrence at it runs)."""
    if msg.WhichOneof("kind") in _ONE_OFFS:
        v.add(f"{path}.end_time", _ONE_OFF_HAS_NO_END)
        return None
    end = read_timestamp(v, f"{path}.end_time", msg.end_time)
    if not isinstance(spec, Series) or end is None:
        return None
    if isinstance(spec, Every) and spec.start_time is not None and end < spec.start_time:
        v.add(
            f"{path}.end_time",
            f"must not be before interval.start_time ({format_rfc3339_utc(spec.start_time)}), "
            f"got {format_rfc3339_utc(end)}",
        )
        return None
    return dataclasses.replace(spec, end_time=end)


def read_max_runs(msg: job_pb2.Schedule, v: Violations, *, path: str) -> int | None:
    """The schedule's max_runs (None: no limit)."""
    if not msg.HasField("max_runs"):
        return None
    if msg.WhichOneof("kind") in _ONE_OFFS:
        v.add(f"{path}.max_runs", _ONE_OFF_HAS_NO_END)
        return None
    return read_int(v, f"{path}.max_runs", msg.max_runs, low=1, high=MAX_RUNS)


def _read_at(msg: job_pb2.AtSchedule, v: Violations, path: str) -> ScheduleSpec | None:
    gap = read_enum(v, f"{path}.gap_policy", msg.gap_policy, _GAPS, None)
    fold = read_enum(v, f"{path}.fold_policy", msg.fold_policy, _FOLDS, None)
    has_run_time = msg.HasField("run_time")
    if has_run_time and msg.local_time:
        v.add(path, "set exactly one of run_time or local_time, not both")
        return None
    if has_run_time:
        # The zone and DST policies only qualify a local time; with an instant they would be
        # silently meaningless, which hides a misunderstanding. (Unknown enum numbers were
        # reported above already.)
        for name, is_set in (
            ("time_zone", bool(msg.time_zone)),
            ("gap_policy", msg.gap_policy in _GAPS),
            ("fold_policy", msg.fold_policy in _FOLDS),
        ):
            if is_set:
                v.add(f"{path}.{name}", "only applies with local_time, not run_time")
        at = read_timestamp(v, f"{path}.run_time", msg.run_time)
        return None if at is None else AtInstant(at=at)
    if not msg.local_time:
        v.add(path, "required: set run_time (an instant) or local_time with time_zone")
        return None
    return _read_at_local(msg, v, path, gap, fold)


def _read_at_local(
    msg: job_pb2.AtSchedule,
    v: Violations,
    path: str,
    gap: GapPolicy | None,
    fold: FoldPolicy | None,
) -> AtLocal | None:
    ok = True
    local: datetime | None = None
    try:
        local = parse_local_time(msg.local_time)
    except ValueError as exc:
        v.add(f"{path}.local_time", str(exc))
        ok = False
    if not msg.time_zone:
        v.add(f"{path}.time_zone", "required with local_time")
        ok = False
    else:
        try:
            load_zone(msg.time_zone)
        except ValueError as exc:
            v.add(f"{path}.time_zone", str(exc))
            ok = False
    if fold is FoldPolicy.BOTH:
        v.add(
            f"{path}.fold_policy",
            "DST_FOLD_POLICY_BOTH is not allowed for a one-off: it would run twice",
        )
        ok = False
    if not ok or local is None:
        return None
    try:
        resolved = resolve_local(local, msg.time_zone, gap, fold)
    except ValueError as exc:
        v.add(f"{path}.local_time", str(exc))
        return None
    if resolved is None:
        v.add(
            f"{path}.gap_policy",
            f"local_time does not exist in {msg.time_zone} (a DST gap), so "
            "DST_GAP_POLICY_SKIP would never run the job",
        )
        return None
    problem = instant_problem(resolved)
    if problem is not None:
        v.add(f"{path}.local_time", f"in {msg.time_zone}, {problem}")
        return None
    return AtLocal(local_time=local, time_zone=msg.time_zone, gap=gap, fold=fold, resolved=resolved)


def _read_delay(
    msg: job_pb2.DelaySchedule, v: Violations, path: str, now: datetime
) -> AfterDelay | None:
    # run_time is output only: the delay always counts from this request.
    if not msg.HasField("delay"):
        v.add(f"{path}.delay", "required")
        return None
    delay = read_duration(v, f"{path}.delay", msg.delay, low=timedelta(0), high=MAX_DELAY)
    return None if delay is None else AfterDelay(delay=delay, resolved=now + delay)


def _read_interval(
    msg: job_pb2.IntervalSchedule, v: Violations, path: str, now: datetime
) -> Every | None:
    every: timedelta | None = None
    if not msg.HasField("interval"):
        v.add(f"{path}.interval", "required")
    else:
        every = read_duration(
            v, f"{path}.interval", msg.interval, low=MIN_INTERVAL, high=MAX_INTERVAL
        )
    start: datetime | None = None
    if msg.HasField("start_time"):
        start = read_timestamp(v, f"{path}.start_time", msg.start_time)
        if start is None:
            return None
    if every is None:
        return None
    return Every(interval=every, start_time=start, anchor=start if start is not None else now)


def _read_cron(msg: job_pb2.CronSchedule, v: Violations, path: str) -> Cron | None:
    before = len(v)
    gap = read_enum(v, f"{path}.gap_policy", msg.gap_policy, _GAPS, None)
    fold = read_enum(v, f"{path}.fold_policy", msg.fold_policy, _FOLDS, None)
    if len(v) > before:
        return None
    cron = Cron(expression=msg.expression, time_zone=msg.time_zone, gap=gap, fold=fold)
    try:
        schedule_pkg.validate(cron)
    except InvalidArgument as exc:
        # The schedule package names fields relative to the schedule (``expression``).
        for violation in exc.violations:
            field = f"{path}.{violation.field}" if violation.field else path
            v.add(field, violation.description)
        return None
    except Exception:
        # No input may turn into INTERNAL; a validator crash is a bug to fix there, so it is
        # logged with its traceback, and the request is refused rather than accepted.
        logger.exception("cron validation failed", extra={"action": "cron_validate_crashed"})
        v.add(path, "could not be validated")
        return None
    return cron


def encode_schedule(spec: ScheduleSpec, max_runs: int | None, out: job_pb2.Schedule) -> None:
    """Fill ``out`` with the schedule as the user wrote it (plus output-only resolutions), and
    its end.

    Unset DST policies stay UNSPECIFIED rather than showing SHIFT/FIRST: for a cron
    expression that is not fixed-time the default is "follow elapsed time", which neither
    value names, and UNSPECIFIED reads back as the same job.
    """
    match spec:
        case AtInstant(at=at):
            out.at.SetInParent()
            datetime_to_timestamp(at, out.at.run_time)
        case AtLocal():
            out.at.local_time = format_local_time(spec.local_time)
            out.at.time_zone = spec.time_zone
            out.at.gap_policy = _gap_number(spec.gap)
            out.at.fold_policy = _fold_number(spec.fold)
        case AfterDelay(delay=delay, resolved=resolved):
            timedelta_to_duration(delay, out.delay.delay)
            datetime_to_timestamp(resolved, out.delay.run_time)
        case Every(interval=interval, start_time=start_time, anchor=anchor):
            timedelta_to_duration(interval, out.interval.interval)
            if start_time is not None:
                datetime_to_timestamp(start_time, out.interval.start_time)
            datetime_to_timestamp(anchor, out.interval.anchor_time)
        case Cron():
            out.cron.expression = spec.expression
            out.cron.time_zone = spec.time_zone
            out.cron.gap_policy = _gap_number(spec.gap)
            out.cron.fold_policy = _fold_number(spec.fold)
    end = end_time_of(spec)
    if end is not None:
        datetime_to_timestamp(end, out.end_time)
    if max_runs is not None:
        out.max_runs = max_runs


def _gap_number(gap: GapPolicy | None) -> job_pb2.DstGapPolicy.ValueType:
    return job_pb2.DST_GAP_POLICY_UNSPECIFIED if gap is None else _GAP_NUMBERS[gap]


def _fold_number(fold: FoldPolicy | None) -> job_pb2.DstFoldPolicy.ValueType:
    return job_pb2.DST_FOLD_POLICY_UNSPECIFIED if fold is None else _FOLD_NUMBERS[fold]
