"""Changes told before they are made, on real PostgreSQL: UpdateJob's next occurrences before
and after, and what ResumeJob does with a pause's occurrences (skipped, or decided by the
misfire policy, checked against the scheduler's own claim)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import asyncpg
import grpc
from google.protobuf import field_mask_pb2

from duetime.jobs.v1 import job_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from testkit.api import ApiClient, at, failure
from testkit.jobs import cron_job
from testkit.time_travel import set_clock, utc
from tests.integration.test_claims import claim_all

NEW_YORK = "America/New_York"


def times(occurrences: object) -> list[datetime]:
    return [at(o.nominal_time) for o in occurrences]  # type: ignore[attr-defined]


async def test_a_validated_update_shows_the_next_runs_before_and_after_and_changes_nothing(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, utc("2026-03-06T12:00"))
    job = (
        await api.stub.CreateJob(
            svc.CreateJobRequest(job=cron_job("0 3 * * *", NEW_YORK)), metadata=api.auth()
        )
    ).job
    earlier = job_pb2.Job(name=job.name, schedule=job.schedule, etag=job.etag)
    earlier.schedule.cron.expression = "30 2 * * *"
    request = svc.UpdateJobRequest(
        job=earlier,
        update_mask=field_mask_pb2.FieldMask(paths=["schedule"]),
        validate_only=True,
        preview_count=3,
    )
    told = await api.stub.UpdateJob(request, metadata=api.auth())
    assert times(told.current_occurrences) == [
        utc("2026-03-07T08:00"),
        utc("2026-03-08T07:00"),
        utc("2026-03-09T07:00"),
    ]
    # 02:30 on the spring-forward night runs at 03:00 EDT, shifted.
    assert [o.local_time for o in told.updated_occurrences] == [
        "2026-03-07T02:30:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-09T02:30:00-04:00",
    ]
    assert told.updated_occurrences[1].dst_adjustment == svc.DST_ADJUSTMENT_SHIFTED
    assert told.schedule_changed
    assert at(told.job.next_run_time) == utc("2026-03-07T07:30")
    assert told.job.etag == job.etag
    # Nothing was stored: the job, its versions and its runs are as they were.
    stored = (await api.stub.GetJob(svc.GetJobRequest(name=job.name), metadata=api.auth())).job
    assert stored == job
    versions = await pool.fetchval(
        "SELECT count(*) FROM job_versions WHERE job_id = $1", uuid.UUID(job.job_id)
    )
    assert versions == 1
    # Without validate_only the answer has no previews, and the change is made.
    request.validate_only, request.preview_count = False, 0
    made = await api.stub.UpdateJob(request, metadata=api.auth())
    assert not made.current_occurrences
    assert made.job.next_run_time == told.job.next_run_time
    assert made.job.etag != job.etag

    for count, validate in ((3, False), (101, True), (-1, True)):
        bad = await failure(
            api.stub.UpdateJob(
                svc.UpdateJobRequest(
                    job=earlier,
                    update_mask=field_mask_pb2.FieldMask(paths=["display_name"]),
                    validate_only=validate,
                    preview_count=count,
                ),
                metadata=api.auth(),
            )
        )
        assert list(bad.fields) == ["preview_count"]
    # A validated update is checked like any: a stale etag is refused.
    stale = await failure(
        api.stub.UpdateJob(
            svc.UpdateJobRequest(
                job=earlier,
                update_mask=field_mask_pb2.FieldMask(paths=["display_name"]),
                validate_only=True,
            ),
            metadata=api.auth(),
        )
    )
    assert (stale.code, stale.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")


async def paused_for_an_hour(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record], misfire: job_pb2.MisfireSettings
) -> job_pb2.Job:
    """An every-minute job, paused at 12:00:30 (its next run 12:01), now 13:00:30."""
    await set_clock(pool, utc("2026-06-01T12:00:30"))
    every = cron_job("* * * * *", "UTC", misfire=misfire)
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=every), metadata=api.auth())).job
    await api.stub.PauseJob(svc.PauseJobRequest(name=job.name), metadata=api.auth())
    await set_clock(pool, utc("2026-06-01T13:00:30"))
    return job


async def test_a_validated_resume_tells_what_the_pause_covered_and_changes_nothing(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    job = await paused_for_an_hour(api, pool, job_pb2.MisfireSettings())
    request = svc.ResumeJobRequest(name=job.name, validate_only=True)
    told = await api.stub.ResumeJob(request, metadata=api.auth())
    covered = told.paused_occurrences.covered
    assert (at(covered.first_time), at(covered.last_time), covered.count) == (
        utc("2026-06-01T12:01"),
        utc("2026-06-01T13:00"),
        60,
    )
    assert told.paused_occurrences.skipped == covered
    assert not told.paused_occurrences.catch_up_runs
    assert told.job.state == job_pb2.JOB_STATE_ACTIVE
    assert at(told.job.next_run_time) == utc("2026-06-01T13:01")
    stored = (await api.stub.GetJob(svc.GetJobRequest(name=job.name), metadata=api.auth())).job
    assert stored.state == job_pb2.JOB_STATE_PAUSED
    assert await pool.fetchval("SELECT count(*) FROM runs") == 0

    # The resume itself says the same of what it did.
    done = await api.stub.ResumeJob(svc.ResumeJobRequest(name=job.name), metadata=api.auth())
    assert done.paused_occurrences == told.paused_occurrences
    runs = await pool.fetch("SELECT state, reason, occurrence_count FROM runs")
    assert [tuple(r) for r in runs] == [("SKIPPED", "JOB_PAUSED", 60)]


async def test_a_caught_up_resume_is_forecast_as_the_scheduler_then_claims_it(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    misfire = job_pb2.MisfireSettings(policy=job_pb2.MISFIRE_POLICY_RUN_ALL, max_catch_up_runs=5)
    misfire.max_catch_up_age.FromTimedelta(timedelta(minutes=30))
    job = await paused_for_an_hour(api, pool, misfire)
    request = svc.ResumeJobRequest(name=job.name, catch_up=True, validate_only=True)
    told = (await api.stub.ResumeJob(request, metadata=api.auth())).paused_occurrences
    assert told.covered.count == 60
    # 13:00 is within the 60 s threshold: on time. Of the late ones, the five most recent are
    # caught up; those before 12:30:30 are too old; the rest are beyond the count.
    assert times(told.on_time_runs) == [utc("2026-06-01T13:00")]
    assert times(told.catch_up_runs) == [utc(f"2026-06-01T12:{m}") for m in range(55, 60)]
    assert (at(told.too_old.first_time), at(told.too_old.last_time), told.too_old.count) == (
        utc("2026-06-01T12:01"),
        utc("2026-06-01T12:30"),
        30,
    )
    assert (at(told.missed.first_time), at(told.missed.last_time), told.missed.count) == (
        utc("2026-06-01T12:31"),
        utc("2026-06-01T12:54"),
        24,
    )
    assert not told.HasField("skipped")

    request.validate_only = False
    resumed = await api.stub.ResumeJob(request, metadata=api.auth())
    assert at(resumed.job.next_run_time) == utc("2026-06-01T12:01")
    await claim_all(pool)
    rows = await pool.fetch(
        "SELECT nominal_time, state, occurrence_count FROM runs WHERE job_id = $1 "
        "ORDER BY nominal_time",
        uuid.UUID(job.job_id),
    )
    queued = [r["nominal_time"] for r in rows if r["state"] == "QUEUED"]
    assert queued == times(told.catch_up_runs) + times(told.on_time_runs)
    assert sum(r["occurrence_count"] for r in rows if r["state"] == "MISSED") == 54
    assert not [r for r in rows if r["state"] == "SKIPPED"]


async def test_a_caught_up_resume_of_a_skip_job_misses_all_but_the_on_time(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    job = await paused_for_an_hour(
        api, pool, job_pb2.MisfireSettings(policy=job_pb2.MISFIRE_POLICY_SKIP)
    )
    request = svc.ResumeJobRequest(name=job.name, catch_up=True, validate_only=True)
    told = (await api.stub.ResumeJob(request, metadata=api.auth())).paused_occurrences
    assert (told.missed.count, told.too_old.count, len(told.catch_up_runs)) == (59, 0, 0)
    assert times(told.on_time_runs) == [utc("2026-06-01T13:00")]
