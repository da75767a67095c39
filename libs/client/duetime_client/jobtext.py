"""Jobs written as text: the proto3 JSON form of ``duetime.jobs.v1.Job``, as JSON or YAML, for
the CLI's job files and the console's pasted jobs.

They are parsed by protobuf's ``json_format``, so names and value forms are the contract's
(``retryPolicy`` or ``retry_policy``, enums by name); durations are also taken as people
write them (``5m``, ``1h30m``, ``2d``), turned into proto3 JSON (``"300s"``) first. Text that
does not parse fails like the server's INVALID_ARGUMENT: with the path of the bad field
(``job.retry_policy.max_attempts``) and why (``JobTextError``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.duration_pb2 import Duration

from duetime.jobs.v1 import job_pb2
from duetime_client.describe import parse_duration

# Fields the server sets: a job saved from a read carries them; an update leaves them out.
OUTPUT_ONLY = frozenset(
    {"name", "job_id", "team", "state", "state_reason", "next_run_time", "create_time",
     "update_time", "etag", "pause", "scheduled_runs"}
)  # fmt: skip


class JobTextError(ValueError):
    """Text that is not a job: the field at fault (``job`` for the whole) and why."""

    def __init__(self, field: str, description: str) -> None:
        super().__init__(f"{field}: {description}")
        self.field, self.description = field, description


class _Loader(yaml.SafeLoader):
    """YAML without implicit timestamps: ``runTime: 2026-12-24T09:00:00Z`` stays the string
    the contract expects instead of becoming a datetime."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}

_STEP = re.compile(r"^Failed to parse (\w+) field: ")
_UNKNOWN = re.compile(r'has no field named "([^"]+)"')
_WHERE = re.compile(r'\s*at "?(Job(?:\.\w+)*)"?\.*(?=$|\n)')


_STEP = re.compile(r"^Failed to parse (\w+) field: ")
_UNKNOWN = re.compile(r'has no field named "([^"]+)"')
_WHERE = re.compile(r'\s*at "?(Job(?:\.\w+)*)"?\.*(?=$|\n)')


def read_mapping(text: str, *, as_json: bool = False) -> dict[str, Any]:
    """The job's fields from ``text``: JSON when ``as_json``, otherwise YAML (a superset of
    JSON). A response saved from a read (``{job: {...}}``) is unwrapped, so it can be edited
    and given back."""
    try:
        data = json.loads(text) if as_json else yaml.load(text, Loader=_Loader)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise JobTextError("job", f"does not parse: {_syntax(error)}") from None
    if isinstance(data, dict) and list(data) == ["job"] and isinstance(data["job"], dict):
        data = data["job"]
    if not isinstance(data, dict):
        raise JobTextError("job", "expected an object with the job's fields")
    return data


def _syntax(error: Exception) -> str:
    """A parser's complaint on one line, with where it is."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{error.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(error).splitlines()[0]


def parse_job(data: dict[str, Any]) -> job_pb2.Job:
    job = job_pb2.Job()
    try:
        json_format.ParseDict(_json_durations(job.DESCRIPTOR, data, "job"), job)
    except _BadDuration as bad:
        raise JobTextError(*bad.args) from None
    except json_format.ParseError as error:
        raise JobTextError(*explain(str(error), data)) from None
    return job


def update_paths(data: dict[str, Any]) -> list[str]:
    """The update mask for the fields ``data`` gives (by JSON or proto name), less the
    output-only ones."""
    fields = job_pb2.Job.DESCRIPTOR.fields_by_camelcase_name
    paths = [fields[key].name if key in fields else key for key in data]
    return [path for path in dict.fromkeys(paths) if path not in OUTPUT_ONLY]


class _BadDuration(Exception):
    """A duration that does not parse: its field's path and why."""


def _json_durations(descriptor: Descriptor, node: Any, path: str) -> Any:
    """``node``, the file's value of a ``descriptor`` message at ``path``, with each duration
    written as a string in any form ``parse_duration`` takes rewritten in proto3 JSON. Other
    values are left for json_format to take or refuse."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key, value in node.items():
        field = descriptor.fields_by_camelcase_name.get(key) or descriptor.fields_by_name.get(key)
        if field is None or field.message_type is None or field.message_type.GetOptions().map_entry:
            continue
        message, where = field.message_type, f"{path}.{field.name}"
        if isinstance(value, list):
            out[key] = [_json_value(message, item, f"{where}[{i}]") for i, item in enumerate(value)]
        else:
            out[key] = _json_value(message, value, where)
    return out


def _json_value(descriptor: Descriptor, value: Any, path: str) -> Any:
    if descriptor.full_name != Duration.DESCRIPTOR.full_name:
        return _json_durations(descriptor, value, path)
    if not isinstance(value, str):
        return value
    try:
        return parse_duration(value).ToJsonString()
    except ValueError as error:
        raise _BadDuration(path, str(error)) from None


def explain(message: str, data: dict[str, Any]) -> tuple[str, str]:
    """Turns json_format's ``Failed to parse a field: Failed to parse b field: why ... at
    Job.a.b`` into the field's proto path as the server names it (``job.a.b``) and the why.

    The path comes from the message's ``at Job...`` tail when it has one; otherwise from its
    chain of ``Failed to parse`` steps, which leaves out oneof members (``schedule.cron``):
    those are found in the data itself.
    """
    names: list[str] = []
    while match := _STEP.match(message):
        names.append(match[1])
        message = message[match.end() :]
    where = _WHERE.search(message)
    if where:
        names = where[1].split(".")[1:]
    walk = _Walk(job_pb2.Job.DESCRIPTOR, data)
    for name in names:
        walk.step(name)
    why = (_WHERE.sub("", message).split("\n")[0]).rstrip(".") or message
    unknown = _UNKNOWN.search(message)
    if unknown and walk.descriptor is not None:
        known = ", ".join(f.json_name for f in walk.descriptor.fields)
        if not isinstance(walk.node, dict):
            return walk.path, f"expected an object ({walk.descriptor.name}: {known})"
        return f"{walk.path}.{unknown[1]}", f"unknown field; {walk.descriptor.name} has {known}"
    if walk.field is not None and walk.field.enum_type is not None:
        why += "; expected one of " + ", ".join(v.name for v in walk.field.enum_type.values[1:])
    return walk.path, why


class _Walk:
    """Follows JSON names (``retryPolicy``) down the descriptors and the data, keeping the
    proto path (``job.retry_policy``)."""

    def __init__(self, descriptor: Descriptor, data: Any) -> None:
        self.names = ["job"]
        self.descriptor: Descriptor | None = descriptor
        self.field: FieldDescriptor | None = None
        self.node = data

    @property
    def path(self) -> str:
        return ".".join(self.names)

    def step(self, name: str) -> None:
        field = self._field(name)
        if field is None:
            hop = self._oneof_member_holding(name)
            if hop is not None:
                self._enter(hop)
                field = self._field(name)
        if field is None:
            self.names.append(name)
            self.descriptor, self.field, self.node = None, None, None
        else:
            self._enter(field)

    def _field(self, name: str) -> FieldDescriptor | None:
        if self.descriptor is None:
            return None
        found = self.descriptor.fields_by_camelcase_name.get(name)
        return found or self.descriptor.fields_by_name.get(name)

    def _value(self, field: FieldDescriptor) -> Any:
        if not isinstance(self.node, dict):
            return None
        return self.node.get(field.json_name, self.node.get(field.name))

    def _oneof_member_holding(self, name: str) -> FieldDescriptor | None:
        for field in self.descriptor.fields if self.descriptor is not None else []:
            value = self._value(field)
            if field.containing_oneof is not None and isinstance(value, dict):
                message = field.message_type
                if message is not None and name in (
                    *message.fields_by_camelcase_name,
                    *message.fields_by_name,
                ):
                    return field
        return None

    def _enter(self, field: FieldDescriptor) -> None:
        self.names.append(field.name)
        self.field = field
        self.node = self._value(field)
        self.descriptor = _message_of(field)


def _message_of(field: FieldDescriptor | None) -> Descriptor | None:
    if field is None or field.message_type is None:
        return None
    entry = field.message_type
    if entry.GetOptions().map_entry:
        value = entry.fields_by_name["value"]
        return value.message_type
    return entry
