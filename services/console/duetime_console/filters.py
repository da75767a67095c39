"""The list pages' search fields turned into the API's AIP-160 filters (ListJobs, ListRuns,
the batch calls), every value quoted (``duetime_client.filters``, as the CLI's options); and
the fields read back from a query string.

A time typed in a search field is on the viewer's clock (their zone) and becomes a UTC
instant in the filter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import TypeVar

from duetime_client.filters import all_of, label_restriction, quoted
from duetime_console.times import zone_of

JOB_STATES = ("ACTIVE", "PAUSED", "COMPLETED", "ERROR")
SCHEDULE_KINDS = ("CRON", "INTERVAL", "AT", "DELAY")
RUN_STATES = (
    "QUEUED", "WAITING", "RUNNING", "RETRY_WAIT", "SUCCEEDED", "DEAD_LETTERED", "MISSED",
    "SKIPPED", "CANCELLED",
)  # fmt: skip
ORIGINS = ("SCHEDULE", "TRIGGER", "BACKFILL")


class BadSearch(ValueError):
    """A search field that cannot be turned into a filter: its name and why."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field, self.why = field, why


S = TypeVar("S", bound="Search")


@dataclass(frozen=True)
class Search:
    """A page's search fields, read from its query string and written back into links."""

    @classmethod
    def of(cls: type[S], query: Mapping[str, str]) -> S:
        return cls(**{f.name: query.get(f.name, "").strip() for f in fields(cls)})

    def query(self) -> dict[str, str]:
        """The non-empty fields, for links that keep the search."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}


@dataclass(frozen=True)
class JobSearch(Search):
    """The jobs page's search fields."""

    q: str = ""
    state: str = ""
    label: str = ""
    schedule: str = ""
    host: str = ""
    # Written by the viewer in the filter syntax itself, ANDed with the rest.
    filter: str = ""

    def to_filter(self) -> str:
        parts = []
        if self.q:
            parts.append(f"display_name:{quoted(self.q)}")
        if self.state in JOB_STATES:
            parts.append(f"state = {self.state}")
        if self.label:
            try:
                parts.append(label_restriction(self.label))
            except ValueError as error:
                raise BadSearch("label", str(error)) from None
        if self.schedule in SCHEDULE_KINDS:
            parts.append(f"schedule = {self.schedule}")
        if self.host:
            parts.append(f"target.host:{quoted(self.host)}")
        if self.filter:
            parts.append(f"({self.filter})")
        return all_of(parts)


@dataclass(frozen=True)
class RunSearch(Search):
    """The runs pages' search fields; ``after`` and ``before`` bound the scheduled (nominal)
    time, typed on the viewer's clock."""

    state: str = ""
    origin: str = ""
    reason: str = ""
    after: str = ""
    before: str = ""
    job: str = ""
    filter: str = ""

    def to_filter(self, zone: str, *, state: str = "") -> str:
        parts = []
        wanted = state or self.state
        if wanted == "NOT_RUN":
            parts.append("state = MISSED OR state = SKIPPED")
        elif wanted in RUN_STATES:
            parts.append(f"state = {wanted}")
        if self.origin in ORIGINS:
            parts.append(f"origin = {self.origin}")
        if self.reason:
            if not self.reason.replace("_", "").isalnum():
                raise BadSearch("reason", "a run reason such as MISFIRE")
            parts.append(f"reason = {self.reason.upper()}")
        for name, op in (("after", ">="), ("before", "<")):
            text = getattr(self, name)
            if text:
                parts.append(f"nominal_time {op} {quoted(utc_instant(text, zone, name))}")
        if self.filter:
            parts.append(f"({self.filter})")
        return all_of(parts)


def utc_instant(text: str, zone: str, field: str) -> str:
    """``2026-12-06T10:30`` on ``zone``'s clock (or an instant with its offset) as RFC 3339
    UTC."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise BadSearch(field, "a date and time such as 2026-12-06T10:30") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone_of(zone))
    try:
        return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except OverflowError:  # the first or last hours of year 1 or 9999, moved into UTC
        raise BadSearch(field, "a date and time between the years 1 and 9999") from None
