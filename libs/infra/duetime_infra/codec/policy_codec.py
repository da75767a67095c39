"""A job's policies: retry, misfire, overlap, priority.

Every field is optional. In RetryPolicy and MisfireSettings a zero (an unset scalar, or a
zero Duration) means "the default", as proto3 cannot tell the two apart for scalars and a
client that fills every field with zeros means the same thing. Responses always carry the
effective values, so what a client reads back is what runs and can be sent back unchanged
(which is also why max_catch_up_* are accepted whatever the misfire policy).
"""

from __future__ import annotations

from datetime import timedelta

from google.protobuf.duration_pb2 import Duration

from duetime.jobs.v1 import job_pb2
from duetime_core.jobspec import (
    Delivery,
    MisfirePolicy,
    MisfireSettings,
    OverlapPolicy,
    Priority,
    RetryPolicy,
)
from duetime_infra.codec.timeconv import timedelta_to_duration
from duetime_infra.codec.violations import (
    Violations,
    format_duration,
    read_duration,
    read_enum,
    read_float,
    read_int,
)

MIN_INITIAL_BACKOFF = timedelta(milliseconds=100)
MAX_INITIAL_BACKOFF = timedelta(hours=1)
MAX_MAX_BACKOFF = timedelta(hours=24)
MIN_THRESHOLD = timedelta(seconds=1)
MAX_THRESHOLD = timedelta(hours=24)
MIN_CATCH_UP_AGE = timedelta(minutes=1)
MAX_CATCH_UP_AGE = timedelta(days=7)

MISFIRE_POLICIES: dict[int, MisfirePolicy] = {
    job_pb2.MISFIRE_POLICY_RUN_ONCE: MisfirePolicy.RUN_ONCE,
    job_pb2.MISFIRE_POLICY_RUN_ALL: MisfirePolicy.RUN_ALL,
    job_pb2.MISFIRE_POLICY_SKIP: MisfirePolicy.SKIP,
}
_MISFIRE_NUMBERS: dict[MisfirePolicy, job_pb2.MisfirePolicy.ValueType] = {
    MisfirePolicy.RUN_ONCE: job_pb2.MISFIRE_POLICY_RUN_ONCE,
    MisfirePolicy.RUN_ALL: job_pb2.MISFIRE_POLICY_RUN_ALL,
    MisfirePolicy.SKIP: job_pb2.MISFIRE_POLICY_SKIP,
}
OVERLAP_POLICIES: dict[int, OverlapPolicy] = {
    job_pb2.OVERLAP_POLICY_ALLOW: OverlapPolicy.ALLOW,
    job_pb2.OVERLAP_POLICY_SKIP: OverlapPolicy.SKIP,
    job_pb2.OVERLAP_POLICY_BUFFER_ONE: OverlapPolicy.BUFFER_ONE,
    job_pb2.OVERLAP_POLICY_CANCEL_PREVIOUS: OverlapPolicy.CANCEL_PREVIOUS,
}
OVERLAP_NUMBERS: dict[OverlapPolicy, job_pb2.OverlapPolicy.ValueType] = {
    OverlapPolicy.ALLOW: job_pb2.OVERLAP_POLICY_ALLOW,
    OverlapPolicy.SKIP: job_pb2.OVERLAP_POLICY_SKIP,
    OverlapPolicy.BUFFER_ONE: job_pb2.OVERLAP_POLICY_BUFFER_ONE,
    OverlapPolicy.CANCEL_PREVIOUS: job_pb2.OVERLAP_POLICY_CANCEL_PREVIOUS,
}
DELIVERIES: dict[int, Delivery] = {
    job_pb2.DELIVERY_AT_LEAST_ONCE: Delivery.AT_LEAST_ONCE,
    job_pb2.DELIVERY_AT_MOST_ONCE: Delivery.AT_MOST_ONCE,
}
DELIVERY_NUMBERS: dict[Delivery, job_pb2.Delivery.ValueType] = {
    Delivery.AT_LEAST_ONCE: job_pb2.DELIVERY_AT_LEAST_ONCE,
    Delivery.AT_MOST_ONCE: job_pb2.DELIVERY_AT_MOST_ONCE,
}
PRIORITIES: dict[int, Priority] = {
    job_pb2.PRIORITY_HIGH: Priority.HIGH,
    job_pb2.PRIORITY_NORMAL: Priority.NORMAL,
    job_pb2.PRIORITY_LOW: Priority.LOW,
}
PRIORITY_NUMBERS: dict[Priority, job_pb2.Priority.ValueType] = {
    Priority.HIGH: job_pb2.PRIORITY_HIGH,
    Priority.NORMAL: job_pb2.PRIORITY_NORMAL,
    Priority.LOW: job_pb2.PRIORITY_LOW,
}


def _optional_duration(
    v: Violations,
    field: str,
    d: Duration,
    default: timedelta,
    *,
    low: timedelta,
    high: timedelta,
) -> timedelta | None:
    """``default`` for an exact zero; otherwise within ``[low, high]`` or None (recorded)."""
    if d.seconds == 0 and d.nanos == 0:
        return default
    return read_duration(v, field, d, low=low, high=high)


def read_retry(msg: job_pb2.RetryPolicy, v: Violations, *, path: str) -> RetryPolicy:
    defaults = RetryPolicy()
    max_attempts = defaults.max_attempts
    if msg.max_attempts != 0:
        max_attempts = (
            read_int(v, f"{path}.max_attempts", msg.max_attempts, low=1, high=100)
            or defaults.max_attempts
        )
    initial = _optional_duration(
        v,
        f"{path}.initial_backoff",
        msg.initial_backoff,
        defaults.initial_backoff,
        low=MIN_INITIAL_BACKOFF,
        high=MAX_INITIAL_BACKOFF,
    )
    maximum = _optional_duration(
        v,
        f"{path}.max_backoff",
        msg.max_backoff,
        defaults.max_backoff,
        low=MIN_INITIAL_BACKOFF,
        high=MAX_MAX_BACKOFF,
    )
    if initial is not None and maximum is not None and maximum < initial:
        unset = msg.max_backoff.seconds == 0 and msg.max_backoff.nanos == 0
        v.add(
            f"{path}.max_backoff",
            f"must be at least initial_backoff ({format_duration(initial)}), got "
            f"{format_duration(maximum)}{' (the default)' if unset else ''}",
        )
    multiplier = defaults.multiplier
    if msg.multiplier != 0:
        multiplier = (
            read_float(v, f"{path}.multiplier", msg.multiplier, low=1.0, high=10.0)
            or defaults.multiplier
        )
    return RetryPolicy(
        max_attempts=max_attempts,
        initial_backoff=initial or defaults.initial_backoff,
        max_backoff=maximum or defaults.max_backoff,
        multiplier=multiplier,
    )


def read_misfire(msg: job_pb2.MisfireSettings, v: Violations, *, path: str) -> MisfireSettings:
    defaults = MisfireSettings()
    policy = read_enum(v, f"{path}.policy", msg.policy, MISFIRE_POLICIES, defaults.policy)
    threshold = _optional_duration(
        v,
        f"{path}.threshold",
        msg.threshold,
        defaults.threshold,
        low=MIN_THRESHOLD,
        high=MAX_THRESHOLD,
    )
    runs = defaults.max_catch_up_runs
    if msg.max_catch_up_runs != 0:
        runs = (
            read_int(v, f"{path}.max_catch_up_runs", msg.max_catch_up_runs, low=1, high=1000)
            or defaults.max_catch_up_runs
        )
    age = _optional_duration(
        v,
        f"{path}.max_catch_up_age",
        msg.max_catch_up_age,
        defaults.max_catch_up_age,
        low=MIN_CATCH_UP_AGE,
        high=MAX_CATCH_UP_AGE,
    )
    return MisfireSettings(
        policy=policy,
        threshold=threshold or defaults.threshold,
        max_catch_up_runs=runs,
        max_catch_up_age=age or defaults.max_catch_up_age,
    )


def encode_retry(retry: RetryPolicy, out: job_pb2.RetryPolicy) -> None:
    out.max_attempts = retry.max_attempts
    timedelta_to_duration(retry.initial_backoff, out.initial_backoff)
    timedelta_to_duration(retry.max_backoff, out.max_backoff)
    out.multiplier = retry.multiplier


def encode_misfire(misfire: MisfireSettings, out: job_pb2.MisfireSettings) -> None:
    out.policy = _MISFIRE_NUMBERS[misfire.policy]
    timedelta_to_duration(misfire.threshold, out.threshold)
    out.max_catch_up_runs = misfire.max_catch_up_runs
    timedelta_to_duration(misfire.max_catch_up_age, out.max_catch_up_age)
