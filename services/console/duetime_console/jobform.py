"""The job form: the fields a person fills in for an HTTP job, read into a ``Job`` (each bad
field named, as the API names its own), and a stored job read back into the form.

The form covers the common case (a schedule of any kind and its end, an HTTP target, attempts
and timeout, labels, the calendars it excludes); anything else is edited as YAML
(``duetime_client.jobtext``). A schedule's end time is written on the wall clock of the form's
time zone. On an edit, the form's values go onto the stored job, so what the form does not
show (backoff, misfire, overlap, priority) keeps its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import yaml
from google.protobuf import json_format
from google.protobuf.duration_pb2 import Duration
from starlette.datastructures import FormData

from duetime.jobs.v1 import job_pb2
from duetime_client.describe import parse_duration, span
from duetime_client.jobtext import OUTPUT_ONLY
from duetime_client.status import Violation
from duetime_console.times import zone_of

KINDS = ("cron", "interval", "at", "delay")
METHODS = ("POST", "GET", "PUT", "PATCH", "DELETE")
# The job fields an edit from the form replaces.
FORM_PATHS = [
    "display_name",
    "schedule",
    "target",
    "attempt_timeout",
    "retry_policy",
    "labels",
    "excluded_calendars",
]

DEFAULTS = {
    "display_name": "",
    "kind": "cron",
    "expression": "",
    "time_zone": "UTC",
    "interval": "",
    "at_local": "",
    "delay": "",
    "end_local": "",
    "max_runs": "",
    "url": "",
    "method": "POST",
    "headers": "",
    "body": "",
    "max_attempts": "",
    "attempt_timeout": "",
    "labels": "",
    # The calendars ticked, in the order sent (the first that excludes a day is recorded).
    "excluded_calendars": "",
}


@dataclass
class JobForm:
    """The form's values as text (what is shown back), and what is wrong with them."""

    values: dict[str, str] = field(default_factory=lambda: dict(DEFAULTS))
    problems: list[Violation] = field(default_factory=list)

    @classmethod
    def from_fields(cls, fields: Mapping[str, object]) -> JobForm:
        values = {
            k: (v.strip() if k not in ("body", "headers") else v) if isinstance(v, str) else ""
            for k, v in ((k, fields.get(k, DEFAULTS[k])) for k in DEFAULTS)
        }
        if isinstance(fields, FormData):
            # Each calendar ticked is a value of the one field, in the page's order.
            ticked = [c.strip() for c in fields.getlist("excluded_calendars") if isinstance(c, str)]
            values["excluded_calendars"] = ", ".join(ticked)
        return cls(values)

    @property
    def calendars(self) -> list[str]:
        """The calendars the job excludes, in order."""
        return [c.strip() for c in self.values["excluded_calendars"].split(",") if c.strip()]

    def problem(self, name: str, description: str) -> None:
        self.problems.append(Violation(name, description))

    def schedule(self) -> job_pb2.Schedule:
        v, schedule = self.values, job_pb2.Schedule()
        kind = v["kind"]
        if kind == "cron":
            if not v["expression"]:
                self.problem("expression", "required: a cron expression such as 30 2 * * *")
            schedule.cron.expression, schedule.cron.time_zone = v["expression"], v["time_zone"]
        elif kind == "interval":
            schedule.interval.interval.CopyFrom(self._duration("interval", required=True))
        elif kind == "at":
            if not v["at_local"]:
                self.problem("at_local", "required: the date and time to run at")
            local = v["at_local"]
            schedule.at.local_time = local + ":00" if len(local) == 16 else local
            schedule.at.time_zone = v["time_zone"]
        elif kind == "delay":
            schedule.delay.delay.CopyFrom(self._duration("delay", required=True))
        else:
            self.problem("kind", f"one of {', '.join(KINDS)}")
        self._end(schedule)
        return schedule

    def _end(self, schedule: job_pb2.Schedule) -> None:
        """The schedule's end: its last instant (a wall-clock time in the form's zone) and at
        most how many runs; the API says which kinds may have one."""
        v = self.values
        if v["end_local"]:
            try:
                local = datetime.fromisoformat(v["end_local"])
            except ValueError:
                self.problem("end_local", "a date and time such as 2026-12-31T18:00")
            else:
                end = local.replace(tzinfo=zone_of(v["time_zone"]))
                schedule.end_time.FromDatetime(end.astimezone(UTC))
        if v["max_runs"]:
            if not v["max_runs"].isdigit():
                self.problem("max_runs", "a whole number, at least 1")
            else:
                schedule.max_runs = int(v["max_runs"])

    def target(self, stored: job_pb2.Target | None = None) -> job_pb2.Target:
        v = self.values
        http = job_pb2.HttpTarget(url=v["url"], body=v["body"].encode())
        if v["method"] not in METHODS:
            self.problem("method", f"one of {', '.join(METHODS)}")
        else:
            http.method = job_pb2.HttpMethod.Value("HTTP_METHOD_" + v["method"])
        if not v["url"]:
            self.problem("url", "required: the http(s) URL a run calls")
        for number, line in enumerate(v["headers"].splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, value = line.partition(":")
            if not sep or not name.strip():
                self.problem("headers", f"line {number}: expected Name: value")
                continue
            http.headers[name.strip()] = value.strip()
        return job_pb2.Target(http=http)

    def labels(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for number, line in enumerate(self.values["labels"].replace(",", "\n").splitlines(), 1):
            if not line.strip():
                continue
            key, sep, value = line.partition("=")
            if not sep or not key.strip():
                self.problem("labels", f"item {number}: expected key=value")
                continue
            found[key.strip()] = value.strip()
        return found

    def _duration(self, name: str, *, required: bool = False) -> Duration:
        text = self.values[name]
        if not text:
            if required:
                self.problem(name, "required: a duration such as 90s, 5m or 1h30m")
            return Duration()
        try:
            return parse_duration(text)
        except ValueError as error:
            self.problem(name, str(error))
            return Duration()

    def apply(self, job: job_pb2.Job) -> job_pb2.Job:
        """``job`` (a new one, or a copy of the stored one) with the form's values; check
        ``problems`` before sending it."""
        v = self.values
        job.display_name = v["display_name"]
        job.schedule.CopyFrom(self.schedule())
        job.target.CopyFrom(self.target())
        if v["attempt_timeout"]:
            job.attempt_timeout.CopyFrom(self._duration("attempt_timeout"))
        else:
            job.ClearField("attempt_timeout")
        if v["max_attempts"]:
            if not v["max_attempts"].isdigit():
                self.problem("max_attempts", "a whole number, 1 to 100")
            else:
                job.retry_policy.max_attempts = int(v["max_attempts"])
        elif job.HasField("retry_policy"):
            job.retry_policy.max_attempts = 0
        job.labels.clear()
        job.labels.update(self.labels())
        del job.excluded_calendars[:]
        job.excluded_calendars.extend(self.calendars)
        return job

    @classmethod
    def of_job(cls, job: job_pb2.Job) -> JobForm:
        """The form showing a stored job (header values as the API shows them, redacted)."""
        form = cls()
        v = form.values
        v["display_name"] = job.display_name
        kind = job.schedule.WhichOneof("kind") or "cron"
        v["kind"] = kind
        if kind == "cron":
            v["expression"] = job.schedule.cron.expression
            v["time_zone"] = job.schedule.cron.time_zone
        elif kind == "interval":
            v["interval"] = span(job.schedule.interval.interval.ToTimedelta())
        elif kind == "at":
            v["at_local"] = job.schedule.at.local_time[:16]
            v["time_zone"] = job.schedule.at.time_zone or "UTC"
            if not job.schedule.at.local_time:
                v["at_local"] = job.schedule.at.run_time.ToDatetime().strftime("%Y-%m-%dT%H:%M")
        elif kind == "delay":
            v["delay"] = span(job.schedule.delay.delay.ToTimedelta())
        if job.schedule.HasField("end_time"):
            end = job.schedule.end_time.ToDatetime(UTC).astimezone(zone_of(v["time_zone"]))
            v["end_local"] = end.strftime("%Y-%m-%dT%H:%M:%S" if end.second else "%Y-%m-%dT%H:%M")
        if job.schedule.HasField("max_runs"):
            v["max_runs"] = str(job.schedule.max_runs)
        http = job.target.http
        v["url"] = http.url
        method = job_pb2.HttpMethod.Name(http.method).removeprefix("HTTP_METHOD_")
        v["method"] = "POST" if method == "UNSPECIFIED" else method
        v["headers"] = "\n".join(f"{k}: {val}" for k, val in sorted(http.headers.items()))
        v["body"] = http.body.decode(errors="replace")
        if job.HasField("attempt_timeout"):
            v["attempt_timeout"] = span(job.attempt_timeout.ToTimedelta())
        if job.retry_policy.max_attempts:
            v["max_attempts"] = str(job.retry_policy.max_attempts)
        v["labels"] = ", ".join(f"{k}={val}" for k, val in sorted(job.labels.items()))
        v["excluded_calendars"] = ", ".join(job.excluded_calendars)
        return form


def fits_form(job: job_pb2.Job) -> bool:
    """Whether the form can show the job: an HTTP target (a container one is YAML only)."""
    return job.target.WhichOneof("kind") in (None, "http")


def as_yaml(job: job_pb2.Job) -> str:
    """The job's editable fields as YAML (proto3 JSON names), for the YAML editor."""
    data = json_format.MessageToDict(job)
    fields = job_pb2.Job.DESCRIPTOR.fields_by_camelcase_name
    editable = {k: v for k, v in data.items() if fields[k].name not in OUTPUT_ONLY}
    # Output-only fields of the schedule: the anchor an interval resolved to, a delay's time.
    schedule = editable.get("schedule", {})
    schedule.get("interval", {}).pop("anchorTime", None)
    schedule.get("delay", {}).pop("runTime", None)
    return yaml.safe_dump(editable, sort_keys=False, allow_unicode=True)
