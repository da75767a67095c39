"""The console's search fields as the API's filters (every value quoted, times on the viewer's
clock), the job and calendar forms read into a job and a calendar (each bad field named), and
schedules in words."""

from __future__ import annotations

import pytest
from starlette.datastructures import FormData

from duetime.jobs.v1 import calendar_pb2, job_pb2
from duetime_client.filters import quoted
from duetime_console import jobform
from duetime_console.calendarform import CalendarForm, form_field
from duetime_console.filters import BadSearch, JobSearch, RunSearch
from duetime_console.jobform import JobForm
from duetime_console.text import schedule_words
from duetime_core.filtering import All, Op, Restriction, parse_filter


def test_a_typed_value_is_quoted_whatever_it_holds() -> None:
    search = JobSearch(q='say "hi" \\ AND state = PAUSED', label="env=prod", host="billing")
    text = search.to_filter()
    assert text == (
        f'display_name:{quoted(search.q)} AND labels.env = "prod" AND target.host:"billing"'
    )
    # The API's own parser reads three restrictions, the typed text one value.
    assert parse_filter(text) == All(
        (
            Restriction(("display_name",), Op.HAS, search.q),
            Restriction(("labels", "env"), Op.EQ, "prod"),
            Restriction(("target", "host"), Op.HAS, "billing"),
        )
    )


def test_a_label_key_alone_asks_for_jobs_that_have_it_and_a_bad_key_is_named() -> None:
    assert JobSearch(label="team").to_filter() == "labels.team:*"
    with pytest.raises(BadSearch) as bad:
        JobSearch(label="a b=c").to_filter()
    assert bad.value.field == "label"


def test_a_scheduled_time_range_is_typed_on_the_viewers_clock() -> None:
    # The night New York falls back: 01:30 happens twice (the first pass, EDT, is taken), and
    # the next midnight is on standard time.
    search = RunSearch(after="2026-11-01T01:30", before="2026-11-02T00:00", origin="TRIGGER")
    assert search.to_filter("America/New_York") == (
        'origin = TRIGGER AND nominal_time >= "2026-11-01T05:30:00Z" '
        'AND nominal_time < "2026-11-02T05:00:00Z"'
    )
    assert RunSearch(state="NOT_RUN").to_filter("UTC") == "(state = MISSED OR state = SKIPPED)"
    with pytest.raises(BadSearch) as bad:
        RunSearch(after="yesterday").to_filter("UTC")
    assert bad.value.field == "after"


def test_the_form_reads_into_a_job_and_names_each_bad_field() -> None:
    form = JobForm.from_fields(
        {
            "display_name": "report",
            "kind": "cron",
            "expression": "30 2 * * *",
            "time_zone": "Europe/Paris",
            "url": "https://reports.internal/run",
            "method": "PUT",
            "headers": "Authorization: Bearer x\nX-Team: search",
            "max_attempts": "5",
            "attempt_timeout": "1m30s",
            "labels": "env=prod, owner=search",
        }
    )
    job = form.apply(job_pb2.Job())
    assert not form.problems
    assert job.schedule.cron.time_zone == "Europe/Paris"
    assert job.target.http.method == job_pb2.HTTP_METHOD_PUT
    assert dict(job.target.http.headers) == {"Authorization": "Bearer x", "X-Team": "search"}
    assert job.attempt_timeout.seconds == 90
    assert dict(job.labels) == {"env": "prod", "owner": "search"}
    assert JobForm.of_job(job).values["headers"] == "Authorization: Bearer x\nX-Team: search"

    bad = JobForm.from_fields(
        {"kind": "interval", "interval": "soon", "headers": "no colon", "max_attempts": "x"}
    )
    bad.apply(job_pb2.Job())
    assert [p.field for p in bad.problems] == ["interval", "url", "headers", "max_attempts"]


def test_the_calendars_ticked_on_the_job_form_are_excluded_in_their_order() -> None:
    fields = FormData(
        [("excluded_calendars", "work"), ("excluded_calendars", "holidays"), ("kind", "cron")]
    )
    form = JobForm.from_fields(fields)
    job = form.apply(job_pb2.Job(excluded_calendars=["old"]))
    assert list(job.excluded_calendars) == ["work", "holidays"]
    assert JobForm.of_job(job).values["excluded_calendars"] == "work, holidays"
    # None ticked: the job excludes none (the edit's mask names the field).
    assert not JobForm.from_fields(FormData([])).apply(job).excluded_calendars
    assert "excluded_calendars" in jobform.FORM_PATHS


def test_the_calendar_form_reads_each_rule_and_back() -> None:
    fields = {
        "calendar_id": "work",
        "time_zone": "America/New_York",
        "dates": "2099-12-25, 2099-12-31\n",
        "date_ranges": "2099-08-10..2099-08-21\n\n2099-09-01 to 2099-09-02",
        "yearly_dates": "07-04\n12-26",
    }
    form = CalendarForm.from_fields(fields, ["SATURDAY", "SUNDAY"])
    calendar = form.calendar()
    assert not form.problems
    assert list(calendar.weekdays) == [
        calendar_pb2.CALENDAR_WEEKDAY_SATURDAY,
        calendar_pb2.CALENDAR_WEEKDAY_SUNDAY,
    ]
    assert list(calendar.dates) == ["2099-12-25", "2099-12-31"]
    assert [(r.start_date, r.end_date) for r in calendar.date_ranges] == [
        ("2099-08-10", "2099-08-21"),
        ("2099-09-01", "2099-09-02"),
    ]
    assert list(calendar.yearly_dates) == ["07-04", "12-26"]
    shown = CalendarForm.of_calendar(calendar)
    assert shown.values["date_ranges"] == "2099-08-10..2099-08-21\n2099-09-01..2099-09-02"
    assert shown.weekdays == ["SATURDAY", "SUNDAY"]


def test_the_calendar_form_names_what_it_cannot_read_as_the_api_would() -> None:
    form = CalendarForm.from_fields(
        {"date_ranges": "\n2099-08-10..2099-08-21\n2099-08-30"}, ["MOONDAY"]
    )
    form.calendar()
    assert [p.field for p in form.problems] == ["calendar.weekdays", "calendar.date_ranges[1]"]
    assert form.invalid == {"weekdays", "date_ranges"}
    assert form_field("calendar.date_ranges[0].end_date") == "date_ranges"
    assert form_field("calendar.time_zone") == "time_zone"


def test_a_schedule_reads_in_words_with_its_zone() -> None:
    cron = job_pb2.Schedule(
        cron=job_pb2.CronSchedule(expression="0 9 * * MON-FRI", time_zone="Asia/Tokyo")
    )
    assert schedule_words(cron) == "At 09:00, Monday through Friday (Asia/Tokyo)"
    odd = job_pb2.Schedule(cron=job_pb2.CronSchedule(expression="not cron", time_zone="UTC"))
    assert schedule_words(odd) == "not cron (UTC)"
