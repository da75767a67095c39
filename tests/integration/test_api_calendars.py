"""Calendars on the real API and PostgreSQL: the team's calendar calls, a job naming them, and
the claim recording an excluded occurrence SKIPPED (CALENDAR), as ExplainOccurrence, a preview
and a backfill then show it (docs/calendars.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg
import grpc
from google.protobuf import field_mask_pb2

from duetime.jobs.v1 import calendar_pb2, job_pb2, run_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime_infra.pg.dispatch.claims import claim_batch
from testkit.api import ApiClient, at, failure
from testkit.jobs import cron_job
from testkit.time_travel import set_clock, utc
from tests.integration.test_claims import ALL, LOOKAHEAD, claim_all

NEW_YORK = "America/New_York"
# 09:00 in New York in December (EST, UTC-05:00).
DEC_24, DEC_25, DEC_26, DEC_27 = (utc(f"2026-12-{d}T14:00") for d in (24, 25, 26, 27))


def holidays(*dates: str, calendar_id: str = "holidays") -> calendar_pb2.Calendar:
    return calendar_pb2.Calendar(calendar_id=calendar_id, time_zone=NEW_YORK, dates=dates)


async def create_calendar(api: ApiClient, calendar: calendar_pb2.Calendar) -> calendar_pb2.Calendar:
    request = svc.CreateCalendarRequest(calendar=calendar)
    return (await api.stub.CreateCalendar(request, metadata=api.auth())).calendar


async def create_job(api: ApiClient, *calendars: str) -> job_pb2.Job:
    job = cron_job("0 9 * * *", NEW_YORK, excluded_calendars=list(calendars))
    return (await api.stub.CreateJob(svc.CreateJobRequest(job=job), metadata=api.auth())).job


async def runs_of(api: ApiClient, job: job_pb2.Job) -> dict[datetime, run_pb2.Run]:
    request = svc.ListRunsRequest(parent=job.name)
    answer = await api.stub.ListRuns(request, metadata=api.auth())
    return {at(run.nominal_time): run for run in answer.runs}


async def claim_at(pool: asyncpg.Pool[asyncpg.Record], *stops: datetime) -> None:
    for stop in stops:
        await set_clock(pool, stop)
        await claim_all(pool)


async def test_a_teams_calendars_are_created_read_listed_changed_and_refused_when_bad(
    api: ApiClient,
) -> None:
    made = await create_calendar(api, holidays("2026-12-25"))
    assert made.name == f"teams/{api.team}/calendars/holidays"
    assert list(made.dates) == ["2026-12-25"]
    again = await failure(
        api.stub.CreateCalendar(
            svc.CreateCalendarRequest(calendar=holidays("2026-12-26")), metadata=api.auth()
        )
    )
    assert again.code is grpc.StatusCode.ALREADY_EXISTS

    changed = holidays("2026-12-25", "2027-01-01")
    changed.name, changed.etag = made.name, made.etag
    changed.weekdays.append(calendar_pb2.CALENDAR_WEEKDAY_SUNDAY)
    changed.yearly_dates.append("07-04")
    request = svc.UpdateCalendarRequest(calendar=changed)
    updated = (await api.stub.UpdateCalendar(request, metadata=api.auth())).calendar
    assert list(updated.dates) == ["2026-12-25", "2027-01-01"]
    assert list(updated.yearly_dates) == ["07-04"]
    stale = await failure(api.stub.UpdateCalendar(request, metadata=api.auth()))
    assert (stale.code, stale.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")

    listed = await api.stub.ListCalendars(svc.ListCalendarsRequest(), metadata=api.auth())
    assert [c.calendar_id for c in listed.calendars] == ["holidays"]
    theirs = await failure(
        api.stub.GetCalendar(
            svc.GetCalendarRequest(name=made.name), metadata=api.auth(api.other_token)
        )
    )
    assert theirs.code is grpc.StatusCode.NOT_FOUND

    bad = calendar_pb2.Calendar(
        calendar_id="Bad_Id",
        time_zone="Mars/Olympus",
        dates=["2026-13-01"],
        date_ranges=[
            calendar_pb2.CalendarDateRange(start_date="2026-05-02", end_date="2026-05-01")
        ],
        yearly_dates=["02-30"],
    )
    refused = await failure(
        api.stub.CreateCalendar(svc.CreateCalendarRequest(calendar=bad), metadata=api.auth())
    )
    assert refused.code is grpc.StatusCode.INVALID_ARGUMENT
    assert set(refused.fields) == {"calendar.calendar_id"}
    bad.calendar_id = "fine"
    refused = await failure(
        api.stub.CreateCalendar(svc.CreateCalendarRequest(calendar=bad), metadata=api.auth())
    )
    assert set(refused.fields) == {
        "calendar.time_zone",
        "calendar.dates[0]",
        "calendar.date_ranges[0].end_date",
        "calendar.yearly_dates",
    }


async def test_a_job_names_only_calendars_its_team_has_and_they_cannot_go_while_named(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, utc("2026-12-20T12:00"))
    missing = await failure(
        api.stub.CreateJob(
            svc.CreateJobRequest(job=cron_job("0 9 * * *", NEW_YORK, excluded_calendars=["nope"])),
            metadata=api.auth(),
        )
    )
    assert missing.code is grpc.StatusCode.INVALID_ARGUMENT
    assert set(missing.fields) == {"job.excluded_calendars[0]"}

    calendar = await create_calendar(api, holidays("2026-12-25"))
    job = await create_job(api, "holidays")
    assert list(job.excluded_calendars) == ["holidays"]
    got = await api.stub.GetCalendar(
        svc.GetCalendarRequest(name=calendar.name), metadata=api.auth()
    )
    assert list(got.calendar.jobs) == [job.name]

    in_use = await failure(
        api.stub.DeleteCalendar(svc.DeleteCalendarRequest(name=calendar.name), metadata=api.auth())
    )
    assert (in_use.code, in_use.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "CALENDAR_IN_USE")
    assert job.name in in_use.message

    # Taken out of the job, the calendar can go; a dry run shows the day it would run again.
    job.ClearField("excluded_calendars")
    mask = field_mask_pb2.FieldMask(paths=["excluded_calendars"])
    dry = svc.UpdateJobRequest(job=job, update_mask=mask, validate_only=True, preview_count=6)
    told = await api.stub.UpdateJob(dry, metadata=api.auth())
    before = {at(o.nominal_time).day: o.excluded_by_calendar for o in told.current_occurrences}
    after = {at(o.nominal_time).day: o.excluded_by_calendar for o in told.updated_occurrences}
    assert (before[25], after[25]) == ("holidays", "")
    await api.stub.UpdateJob(svc.UpdateJobRequest(job=job, update_mask=mask), metadata=api.auth())
    await api.stub.DeleteCalendar(
        svc.DeleteCalendarRequest(name=calendar.name), metadata=api.auth()
    )
    gone = await failure(
        api.stub.GetCalendar(svc.GetCalendarRequest(name=calendar.name), metadata=api.auth())
    )
    assert gone.code is grpc.StatusCode.NOT_FOUND


async def test_the_claim_skips_an_excluded_day_and_explain_and_preview_say_so(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, utc("2026-12-23T15:00"))
    await create_calendar(api, holidays("2026-12-25"))
    job = await create_job(api, "holidays")

    ahead = svc.ExplainOccurrenceRequest(job=job.name)
    ahead.time.FromDatetime(DEC_25)
    told = await api.stub.ExplainOccurrence(ahead, metadata=api.auth())
    assert told.fate == svc.OCCURRENCE_FATE_NOT_YET_DUE
    assert "Calendar holidays excludes its day" in told.explanation

    request = svc.PreviewScheduleRequest(job=job.name, count=3)
    shown = (await api.stub.PreviewSchedule(request, metadata=api.auth())).occurrences
    assert [(at(o.nominal_time), o.excluded_by_calendar) for o in shown] == [
        (DEC_24, ""),
        (DEC_25, "holidays"),
        (DEC_26, ""),
    ]

    await claim_at(pool, DEC_24, DEC_25, DEC_26)
    runs = await runs_of(api, job)
    assert runs[DEC_24].state == run_pb2.RUN_STATE_QUEUED
    assert runs[DEC_26].state == run_pb2.RUN_STATE_QUEUED
    skipped = runs[DEC_25]
    assert (skipped.state, skipped.reason, skipped.reason_detail) == (
        run_pb2.RUN_STATE_SKIPPED,
        run_pb2.RUN_REASON_CALENDAR,
        "holidays",
    )
    request_explain = svc.ExplainOccurrenceRequest(job=job.name)
    request_explain.time.FromDatetime(DEC_25)
    told = await api.stub.ExplainOccurrence(request_explain, metadata=api.auth())
    assert told.fate == svc.OCCURRENCE_FATE_SKIPPED
    assert "SKIPPED by calendar holidays" in told.explanation


async def test_a_change_applies_to_occurrences_claimed_after_it_only(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, utc("2026-12-23T15:00"))
    calendar = await create_calendar(api, holidays("2026-12-25"))
    job = await create_job(api, "holidays")
    await claim_at(pool, DEC_24, DEC_25)
    # The 27th is claimed a few seconds ahead, within the look-ahead, before the change.
    await claim_at(pool, utc("2026-12-26T14:00"), utc("2026-12-27T13:59:57"))

    changed = holidays("2026-12-24", "2026-12-27", "2026-12-28")
    changed.name = calendar.name
    await api.stub.UpdateCalendar(svc.UpdateCalendarRequest(calendar=changed), metadata=api.auth())
    await claim_at(pool, DEC_27, utc("2026-12-28T14:00"))

    runs = await runs_of(api, job)
    states = {t.day: (r.state, r.reason_detail) for t, r in runs.items()}
    assert states == {
        24: (run_pb2.RUN_STATE_QUEUED, ""),  # claimed before: not revisited
        25: (run_pb2.RUN_STATE_SKIPPED, "holidays"),  # the old rule's record stays
        26: (run_pb2.RUN_STATE_QUEUED, ""),
        27: (run_pb2.RUN_STATE_QUEUED, ""),  # claimed ahead, before the change
        28: (run_pb2.RUN_STATE_SKIPPED, "holidays"),  # the new rule
    }


async def test_a_backfill_records_the_excluded_days_skipped_and_runs_the_rest(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, utc("2026-12-20T12:00"))
    await create_calendar(api, holidays("2026-12-25"))
    job = await create_job(api, "holidays")
    await set_clock(pool, utc("2026-12-28T12:00"))
    request = svc.BackfillJobRequest(name=job.name, request_id="calendar-backfill")
    request.start_time.FromDatetime(DEC_24)
    request.end_time.FromDatetime(DEC_27)
    done = await api.stub.BackfillJob(request, metadata=api.auth())
    assert (done.occurrence_count, done.run_count, done.excluded_count) == (3, 2, 1)
    answer = await api.stub.ListRuns(svc.ListRunsRequest(parent=job.name), metadata=api.auth())
    backfilled = {
        at(r.nominal_time): (r.state, r.reason)
        for r in answer.runs
        if r.origin == run_pb2.RUN_ORIGIN_BACKFILL
    }
    assert backfilled[DEC_25] == (run_pb2.RUN_STATE_SKIPPED, run_pb2.RUN_REASON_CALENDAR)
    assert {t for t, (state, _) in backfilled.items() if state != run_pb2.RUN_STATE_SKIPPED} == {
        DEC_24,
        DEC_26,
    }


async def claimed_with_statements(
    pool: asyncpg.Pool[asyncpg.Record], at: datetime
) -> tuple[int, list[str]]:
    """One claim batch at ``at``: the runs it made and the statements it sent."""
    await set_clock(pool, at)
    sent: list[str] = []

    def log(query: Any) -> None:
        sent.append(query.query)

    async with pool.acquire() as conn:
        conn.add_query_logger(log)
        try:
            result = await claim_batch(
                conn, ALL, lookahead=LOOKAHEAD, batch_size=20, still_owner=lambda: True
            )
        finally:
            conn.remove_query_logger(log)
    return result.runs, sent


async def test_a_claim_reads_its_batchs_calendars_once_and_none_without_them(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, utc("2026-12-23T15:00"))
    for _ in range(3):
        await create_job(api)
    runs, sent = await claimed_with_statements(pool, DEC_24)
    assert runs == 3
    assert not [s for s in sent if "claim_calendars" in s]

    await create_calendar(api, holidays("2026-12-25"))
    await create_calendar(api, holidays("2026-12-26", calendar_id="boxing"))
    for _ in range(3):
        await create_job(api, "holidays", "boxing")
    runs, sent = await claimed_with_statements(pool, DEC_25)
    assert runs == 6  # three runs, three SKIPPED records, in one batch
    assert len([s for s in sent if "claim_calendars" in s]) == 1


async def test_a_late_claim_misses_around_excluded_days_and_accounts_each_once(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, utc("2026-12-22T15:00"))
    await create_calendar(api, holidays("2026-12-25", "2026-12-26"))
    job = await create_job(api, "holidays")
    dec_29 = utc("2026-12-29T14:00")
    await claim_at(pool, dec_29)  # the fleet was down: the 23rd to the 28th are late

    runs = await runs_of(api, job)
    records = {
        run.nominal_time.ToDatetime().day: (
            run.state,
            run.reason,
            run.range_end_time.ToDatetime().day if run.HasField("range_end_time") else None,
            run.occurrence_count,
        )
        for run in runs.values()
    }
    # One record per stretch; a MISSED range holds no excluded day (one a day: each record's
    # range holds exactly the occurrences it counts).
    missed, calendar = run_pb2.RUN_STATE_MISSED, run_pb2.RUN_STATE_SKIPPED
    assert records == {
        23: (missed, run_pb2.RUN_REASON_MISFIRE, 24, 2),
        25: (calendar, run_pb2.RUN_REASON_CALENDAR, 26, 2),
        27: (missed, run_pb2.RUN_REASON_MISFIRE, 28, 2),
        29: (run_pb2.RUN_STATE_QUEUED, run_pb2.RUN_REASON_UNSPECIFIED, None, 1),
    }

    async def fate(day: int) -> svc.ExplainOccurrenceResponse:
        request = svc.ExplainOccurrenceRequest(job=job.name)
        request.time.FromDatetime(utc(f"2026-12-{day}T14:00"))
        return await api.stub.ExplainOccurrence(request, metadata=api.auth())

    for day in (23, 24, 27, 28):
        told = await fate(day)
        assert told.fate == svc.OCCURRENCE_FATE_MISSED
        assert "One record stands for the 2 occurrences" in told.explanation
    for day in (25, 26):
        told = await fate(day)
        assert told.fate == svc.OCCURRENCE_FATE_SKIPPED
        assert "SKIPPED by calendar holidays" in told.explanation
