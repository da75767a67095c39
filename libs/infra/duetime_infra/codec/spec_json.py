"""``JobSpec`` <-> the JSON document stored in ``jobs.spec`` (jsonb).

The document outlives the code that wrote it, so it is versioned (``"v": 1``), spells every
field out with a stable name, and never depends on Python reprs:

* durations are integer microseconds, in fields ending ``_us``;
* instants are RFC 3339 UTC strings with six fractional digits (``...T20:30:00.000000Z``);
* local times are ``YYYY-MM-DDTHH:MM:SS[.ffffff]`` without offset;
* bytes are standard base64, in fields ending ``_base64``;
* enums are the domain's UPPER_SNAKE values (``RUN_ONCE``), DST policies ``null`` when unset.

Header and env values are stored sealed (``duetime_infra.secrets``), each as
``{"key_id": ..., "sealed_base64": ...}``; a plain string is a value written in clear by an
older build, still read (``duetime-ops secrets rotate`` seals it). Writing a clear
value is refused. ``delivery`` is absent from older documents (at least once), ``labels`` too
(none), and so are a series' ``end_time`` and the job's ``max_runs`` (no end), and
``excluded_calendars`` (none; written only when there are some). The round trip
is exact: ``spec_from_json(spec_to_json(s)) == s``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, TypeVar

from duetime_core.jobspec import (
    AfterDelay,
    AtInstant,
    AtLocal,
    CallSigning,
    ContainerTarget,
    Delivery,
    Every,
    HttpMethod,
    HttpTarget,
    JobSpec,
    MisfirePolicy,
    MisfireSettings,
    OverlapPolicy,
    Priority,
    RetryPolicy,
    ScheduleSpec,
    Sealed,
    SecretValue,
    Target,
)
from duetime_core.schedule.model import Cron, FoldPolicy, GapPolicy
from duetime_infra.codec.timeconv import (
    format_local_time,
    format_rfc3339_utc,
    micros,
    parse_local_time,
    parse_rfc3339_utc,
)

SPEC_JSON_VERSION = 1

_E = TypeVar("_E", bound=StrEnum)


def spec_to_json(spec: JobSpec) -> dict[str, Any]:
    """The stored document of ``spec`` (json.dumps-able as is)."""
    doc: dict[str, Any] = {
        "v": SPEC_JSON_VERSION,
        "display_name": spec.display_name,
        "schedule": _schedule_to_json(spec.schedule),
        "target": _target_to_json(spec.target),
        "attempt_timeout_us": micros(spec.attempt_timeout),
        "retry": {
            "max_attempts": spec.retry.max_attempts,
            "initial_backoff_us": micros(spec.retry.initial_backoff),
            "max_backoff_us": micros(spec.retry.max_backoff),
            "multiplier": spec.retry.multiplier,
        },
        "misfire": {
            "policy": spec.misfire.policy.value,
            "threshold_us": micros(spec.misfire.threshold),
            "max_catch_up_runs": spec.misfire.max_catch_up_runs,
            "max_catch_up_age_us": micros(spec.misfire.max_catch_up_age),
        },
        "overlap": spec.overlap.value,
        "jitter_window_us": micros(spec.jitter_window),
        "priority": spec.priority.value,
        "delivery": spec.delivery.value,
        "labels": dict(spec.labels),
    }
    if spec.max_runs is not None:
        doc["max_runs"] = spec.max_runs
    if spec.excluded_calendars:
        doc["excluded_calendars"] = list(spec.excluded_calendars)
    return doc


def _schedule_to_json(spec: ScheduleSpec) -> dict[str, Any]:
    match spec:
        case AtInstant(at=at):
            return {"kind": "at_instant", "at": format_rfc3339_utc(at)}
        case AtLocal():
            return {
                "kind": "at_local",
                "local_time": format_local_time(spec.local_time),
                "time_zone": spec.time_zone,
                "gap": None if spec.gap is None else spec.gap.value,
                "fold": None if spec.fold is None else spec.fold.value,
                "resolved": format_rfc3339_utc(spec.resolved),
            }
        case AfterDelay(delay=delay, resolved=resolved):
            return {
                "kind": "after_delay",
                "delay_us": micros(delay),
                "resolved": format_rfc3339_utc(resolved),
            }
        case Every(interval=interval, start_time=start_time, anchor=anchor):
            return _ending(
                spec.end_time,
                {
                    "kind": "every",
                    "interval_us": micros(interval),
                    "start_time": None if start_time is None else format_rfc3339_utc(start_time),
                    "anchor": format_rfc3339_utc(anchor),
                },
            )
        case Cron():
            return _ending(
                spec.end_time,
                {
                    "kind": "cron",
                    "expression": spec.expression,
                    "time_zone": spec.time_zone,
                    "gap": None if spec.gap is None else spec.gap.value,
                    "fold": None if spec.fold is None else spec.fold.value,
                },
            )


def _ending(end_time: datetime | None, doc: dict[str, Any]) -> dict[str, Any]:
    """A series' document with its end_time, when it has one (absent otherwise, as before)."""
    if end_time is not None:
        doc["end_time"] = format_rfc3339_utc(end_time)
    return doc


def _target_to_json(target: Target) -> dict[str, Any]:
    match target:
        case HttpTarget():
            return {
                "kind": "http",
                "method": target.method.value,
                "url": target.url,
                "headers": _secrets_to_json(target.headers),
                "body_base64": base64.b64encode(target.body).decode("ascii"),
                **_signing_to_json(target),
            }
        case ContainerTarget():
            return {
                "kind": "container",
                "image": target.image,
                "command": list(target.command),
                "args": list(target.args),
                "env": _secrets_to_json(target.env),
            }


def _signing_to_json(target: HttpTarget) -> dict[str, Any]:
    """The signing keys, present only when set (documents of jobs that do not sign are as
    before)."""
    out: dict[str, Any] = {}
    if target.signing is not None:
        out["signing"] = target.signing.value
    if target.token_audience:
        out["token_audience"] = target.token_audience
    return out


def _secrets_to_json(values: Mapping[str, SecretValue]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in values.items():
        if not isinstance(value, Sealed):
            raise ValueError("secret values must be sealed before they are stored")
        out[name] = {
            "key_id": value.key_id,
            "sealed_base64": base64.b64encode(value.data).decode("ascii"),
        }
    return out


def spec_from_json(doc: Mapping[str, Any]) -> JobSpec:
    """The JobSpec a stored document describes; ValueError if it is not one this code reads."""
    version = doc.get("v")
    if version != SPEC_JSON_VERSION:
        raise ValueError(f"unsupported job spec document version {version!r}")
    try:
        retry = _obj(doc, "retry")
        misfire = _obj(doc, "misfire")
        return JobSpec(
            display_name=_str(doc, "display_name"),
            schedule=_schedule_from_json(_obj(doc, "schedule")),
            target=_target_from_json(_obj(doc, "target")),
            attempt_timeout=_us(doc, "attempt_timeout_us"),
            retry=RetryPolicy(
                max_attempts=_int(retry, "max_attempts"),
                initial_backoff=_us(retry, "initial_backoff_us"),
                max_backoff=_us(retry, "max_backoff_us"),
                multiplier=_float(retry, "multiplier"),
            ),
            misfire=MisfireSettings(
                policy=_enum(misfire, "policy", MisfirePolicy),
                threshold=_us(misfire, "threshold_us"),
                max_catch_up_runs=_int(misfire, "max_catch_up_runs"),
                max_catch_up_age=_us(misfire, "max_catch_up_age_us"),
            ),
            overlap=_enum(doc, "overlap", OverlapPolicy),
            jitter_window=_us(doc, "jitter_window_us"),
            priority=_enum(doc, "priority", Priority),
            delivery=Delivery(doc.get("delivery", Delivery.AT_LEAST_ONCE.value)),
            labels=_labels(doc),
            max_runs=None if doc.get("max_runs") is None else _int(doc, "max_runs"),
            excluded_calendars=_calendars(doc),
        )
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise ValueError(f"malformed job spec document: {exc}") from exc


def _labels(doc: Mapping[str, Any]) -> dict[str, str]:
    """Absent from older documents: none."""
    labels = doc.get("labels", {})
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise ValueError("labels: expected an object of strings")
    return dict(labels)


def _calendars(doc: Mapping[str, Any]) -> tuple[str, ...]:
    """Absent from older documents and from jobs without calendars: none."""
    names = doc.get("excluded_calendars", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError("excluded_calendars: expected an array of strings")
    return tuple(names)


def _schedule_from_json(d: Mapping[str, Any]) -> ScheduleSpec:
    kind = _str(d, "kind")
    if kind == "at_instant":
        return AtInstant(at=_instant(d, "at"))
    if kind == "at_local":
        return AtLocal(
            local_time=parse_local_time(_str(d, "local_time")),
            time_zone=_str(d, "time_zone"),
            gap=_optional_enum(d, "gap", GapPolicy),
            fold=_optional_enum(d, "fold", FoldPolicy),
            resolved=_instant(d, "resolved"),
        )
    if kind == "after_delay":
        return AfterDelay(delay=_us(d, "delay_us"), resolved=_instant(d, "resolved"))
    if kind == "every":
        return Every(
            interval=_us(d, "interval_us"),
            start_time=_optional_instant_of(d, "start_time"),
            anchor=_instant(d, "anchor"),
            end_time=_optional_instant_of(d, "end_time"),
        )
    if kind == "cron":
        return Cron(
            expression=_str(d, "expression"),
            time_zone=_str(d, "time_zone"),
            gap=_optional_enum(d, "gap", GapPolicy),
            fold=_optional_enum(d, "fold", FoldPolicy),
            end_time=_optional_instant_of(d, "end_time"),
        )
    raise ValueError(f"unknown schedule kind {kind!r}")


def _target_from_json(d: Mapping[str, Any]) -> Target:
    kind = _str(d, "kind")
    if kind == "http":
        return HttpTarget(
            method=_enum(d, "method", HttpMethod),
            url=_str(d, "url"),
            headers=_secret_map(d, "headers"),
            body=base64.b64decode(_str(d, "body_base64"), validate=True),
            signing=_optional_enum(d, "signing", CallSigning),
            token_audience=_str(d, "token_audience") if "token_audience" in d else "",
        )
    if kind == "container":
        return ContainerTarget(
            image=_str(d, "image"),
            command=_str_list(d, "command"),
            args=_str_list(d, "args"),
            env=_secret_map(d, "env"),
        )
    raise ValueError(f"unknown target kind {kind!r}")


# Typed readers: a document edited by hand or by a future version fails loudly, naming the key.


def _get(d: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = d[key]
    # bool is an int to Python, never to this document.
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TypeError(f"{key}: expected {kind}, got {type(value).__name__}")
    return value


def _obj(d: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value: Mapping[str, Any] = _get(d, key, dict)
    return value


def _str(d: Mapping[str, Any], key: str) -> str:
    value: str = _get(d, key, str)
    return value


def _int(d: Mapping[str, Any], key: str) -> int:
    value: int = _get(d, key, int)
    return value


def _float(d: Mapping[str, Any], key: str) -> float:
    # jsonb may hand a whole-number float back without its ".0".
    return float(_get(d, key, (int, float)))


def _us(d: Mapping[str, Any], key: str) -> timedelta:
    return timedelta(microseconds=_int(d, key))


def _instant(d: Mapping[str, Any], key: str) -> datetime:
    return parse_rfc3339_utc(_str(d, key))


def _optional_instant_of(d: Mapping[str, Any], key: str) -> datetime | None:
    """Absent or null: none."""
    return None if d.get(key) is None else _instant(d, key)


def _enum(d: Mapping[str, Any], key: str, kind: type[_E]) -> _E:
    return kind(_str(d, key))


def _optional_enum(d: Mapping[str, Any], key: str, kind: type[_E]) -> _E | None:
    return None if d.get(key) is None else _enum(d, key, kind)


def _str_list(d: Mapping[str, Any], key: str) -> tuple[str, ...]:
    items: list[Any] = _get(d, key, list)
    if not all(isinstance(item, str) for item in items):
        raise TypeError(f"{key}: expected a list of strings")
    return tuple(items)


def _secret_map(d: Mapping[str, Any], key: str) -> dict[str, SecretValue]:
    items: dict[Any, Any] = _get(d, key, dict)
    out: dict[str, SecretValue] = {}
    for name, value in items.items():
        if isinstance(value, str):  # written in clear by an older build
            out[name] = value
        elif isinstance(value, dict):
            data = base64.b64decode(_str(value, "sealed_base64"), validate=True)
            out[name] = Sealed(_str(value, "key_id"), data)
        else:
            raise TypeError(f"{key}: expected sealed values")
    return out
