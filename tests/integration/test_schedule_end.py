"""A schedule that ends, on real PostgreSQL: the claims stop at end_time or after max_runs runs
and complete the job with its reason in the transaction of its last run; the API refuses bad
ends by field; previews, the next run and ExplainOccurrence respect the end; an update that
moves the end runs a completed job again. New York's fall-back night of 2026 (01:00-02:00 twice,
EDT 05:00-06:00Z then EST 06:00-07:00Z) tests an end between a fold's two passes."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import asyncpg
import grpc
from google.protobuf import field_mask_pb2

from duetime.jobs.v1 import job_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from testkit.api import ApiClient, at, failure
from testkit.jobs import cron_job, interval_job
from testkit.time_travel import set_clock, utc
from tests.integration.test_claims import claim_all

T0 = utc("2026-06-01T12:00")
MINUTE = timedelta(minutes=1)
NEW_YORK = "America/New_York"


def every_minute(**end: object) -> job_pb2.Job:
    """Every minute from T0 + 1 minute, with ``end_time`` and ``max_runs`` as given."""
    job = interval_job(60)
    job.schedule.interval.start_time.FromDatetime(T0 + MINUTE)
    if "end_time" in end:
        assert isinstance(end["end_time"], datetime)
        job.schedule.end_time.FromDatetime(end["end_time"])
    if "max_runs" in end:
        assert isinstance(end["max_runs"], int)
        job.schedule.max_runs = end["max_runs"]
    return job


async def create(api: ApiClient, job: job_pb2.Job) -> job_pb2.Job:
    return (await api.stub.CreateJob(svc.CreateJobRequest(job=job), metadata=api.auth())).job


async def get(api: ApiClient, job: job_pb2.Job) -> job_pb2.Job:
    return (await api.stub.GetJob(svc.GetJobRequest(name=job.name), metadata=api.auth())).job


async def preview(api: ApiClient, job: job_pb2.Job, count: int = 10) -> list[datetime]:
    request = svc.PreviewScheduleRequest(job=job.name, count=count)
    answer = await api.stub.PreviewSchedule(request, metadata=api.auth())
    return [at(o.nominal_time) for o in answer.occurrences]


async def runs(pool: asyncpg.Pool[asyncpg.Record], job: job_pb2.Job) -> list[tuple[str, datetime]]:
    rows = await pool.fetch(
        "SELECT state, nominal_time FROM runs WHERE job_id = $1 ORDER BY nominal_time",
        uuid.UUID(job.job_id),
    )
    return [(r["state"], r["nominal_time"]) for r in rows]


async def claim_at(pool: asyncpg.Pool[asyncpg.Record], *stops: datetime) -> None:
    for stop in stops:
        await set_clock(pool, stop)
        await claim_all(pool)


async def update(
    api: ApiClient, job: job_pb2.Job, *, validate_only: bool = False
) -> svc.UpdateJobResponse:
    request = svc.UpdateJobRequest(
        job=job,
        update_mask=field_mask_pb2.FieldMask(paths=["schedule"]),
        validate_only=validate_only,
    )
    return await api.stub.UpdateJob(request, metadata=api.auth())


async def test_max_runs_3_runs_3_times_and_the_third_claim_completes_the_job(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, T0)
    job = await create(api, every_minute(max_runs=3))
    assert await preview(api, job) == [T0 + k * MINUTE for k in (1, 2, 3)]
    await claim_at(pool, T0 + MINUTE, T0 + 2 * MINUTE)
    assert await preview(api, job) == [T0 + 3 * MINUTE]
    middle = await get(api, job)
    assert (middle.state, middle.scheduled_runs) == (job_pb2.JOB_STATE_ACTIVE, 2)
    assert at(middle.next_run_time) == T0 + 3 * MINUTE

    await claim_at(pool, T0 + 3 * MINUTE)  # the third run: the same claim completes the job
    done = await get(api, job)
    assert done.state == job_pb2.JOB_STATE_COMPLETED
    assert done.state_reason == "the schedule ended: it made 3 runs, max_runs is 3"
    assert done.scheduled_runs == 3
    assert not done.HasField("next_run_time")
    assert await preview(api, job) == []
    await claim_at(pool, T0 + 10 * MINUTE)
    assert await runs(pool, job) == [("QUEUED", T0 + k * MINUTE) for k in (1, 2, 3)]


async def test_missed_occurrences_do_not_count_toward_max_runs(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, T0)
    job = every_minute(max_runs=2)
    job.misfire.policy = job_pb2.MISFIRE_POLICY_SKIP
    job = await create(api, job)
    await claim_at(pool, T0 + 30 * MINUTE + timedelta(seconds=30))  # down: 29 late, 1 on time
    after_outage = await get(api, job)
    assert (after_outage.state, after_outage.scheduled_runs) == (job_pb2.JOB_STATE_ACTIVE, 1)
    await claim_at(pool, T0 + 31 * MINUTE)
    assert [state for state, _ in await runs(pool, job)] == ["MISSED", "QUEUED", "QUEUED"]
    assert (await get(api, job)).state == job_pb2.JOB_STATE_COMPLETED


async def test_end_time_stops_the_claims_and_its_last_occurrence_completes_the_job(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, T0)
    end = T0 + 3 * MINUTE + timedelta(seconds=30)
    job = await create(api, every_minute(end_time=end))
    assert await preview(api, job) == [T0 + k * MINUTE for k in (1, 2, 3)]
    await claim_at(pool, T0 + MINUTE, T0 + 2 * MINUTE, T0 + 3 * MINUTE)
    done = await get(api, job)
    assert done.state == job_pb2.JOB_STATE_COMPLETED
    assert done.state_reason == (
        "the schedule ended: no occurrence is left by its end_time, 2026-06-01T12:03:30Z"
    )
    assert (done.scheduled_runs, done.HasField("next_run_time")) == (3, False)
    await claim_at(pool, T0 + 10 * MINUTE)
    assert await runs(pool, job) == [("QUEUED", T0 + k * MINUTE) for k in (1, 2, 3)]

    after = svc.ExplainOccurrenceRequest(job=job.name)
    after.time.FromDatetime(T0 + 5 * MINUTE)
    told = await api.stub.ExplainOccurrence(after, metadata=api.auth())
    assert told.fate == svc.OCCURRENCE_FATE_NOT_AN_OCCURRENCE
    assert "The schedule ended at its end_time, 2026-06-01 12:03:30Z" in told.explanation
    assert at(told.previous_occurrence.nominal_time) == T0 + 3 * MINUTE
    assert not told.HasField("next_occurrence")


async def test_an_occurrence_after_the_last_run_is_explained_as_past_the_end(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, T0)
    job = await create(api, every_minute(max_runs=3))
    ahead = svc.ExplainOccurrenceRequest(job=job.name)
    ahead.time.FromDatetime(T0 + 4 * MINUTE)  # the 4th occurrence: there will be no 4th run
    told = await api.stub.ExplainOccurrence(ahead, metadata=api.auth())
    assert told.fate == svc.OCCURRENCE_FATE_NOT_AN_OCCURRENCE
    assert "its last run is the one at 2026-06-01 12:03:00Z" in told.explanation
    await claim_at(pool, T0 + MINUTE, T0 + 2 * MINUTE, T0 + 3 * MINUTE)
    told = await api.stub.ExplainOccurrence(ahead, metadata=api.auth())
    assert told.fate == svc.OCCURRENCE_FATE_NOT_AN_OCCURRENCE
    assert "max_runs 3, its last run was the one at 2026-06-01 12:03:00Z" in told.explanation
    assert at(told.previous_occurrence.nominal_time) == T0 + 3 * MINUTE
    third = svc.ExplainOccurrenceRequest(job=job.name)
    third.time.FromDatetime(T0 + 3 * MINUTE)
    assert (await api.stub.ExplainOccurrence(third, metadata=api.auth())).fate == (
        svc.OCCURRENCE_FATE_RAN
    )


async def test_an_end_between_the_two_passes_of_a_fold(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    """01:30 on 2026-11-01 in New York happens at 05:30Z (EDT) and 06:30Z (EST); under fold
    policy BOTH, an end at 06:00Z keeps the first pass only."""
    await set_clock(pool, utc("2026-10-30T12:00"))
    job = cron_job("30 1 * * *", NEW_YORK)
    job.schedule.cron.fold_policy = job_pb2.DST_FOLD_POLICY_BOTH
    job.schedule.end_time.FromDatetime(utc("2026-11-01T06:00"))
    job = await create(api, job)
    request = svc.PreviewScheduleRequest(job=job.name, count=10)
    shown = (await api.stub.PreviewSchedule(request, metadata=api.auth())).occurrences
    assert [(at(o.nominal_time), o.dst_adjustment) for o in shown] == [
        (utc("2026-10-31T05:30"), svc.DST_ADJUSTMENT_UNSPECIFIED),
        (utc("2026-11-01T05:30"), svc.DST_ADJUSTMENT_FOLD_FIRST_PASS),
    ]
    await claim_at(pool, utc("2026-10-31T05:30"), utc("2026-11-01T05:30"))
    done = await get(api, job)
    assert done.state == job_pb2.JOB_STATE_COMPLETED
    assert "end_time, 2026-11-01T06:00:00Z" in done.state_reason
    await claim_at(pool, utc("2026-11-01T06:30"), utc("2026-11-02T06:30"))
    assert await runs(pool, job) == [
        ("QUEUED", utc("2026-10-31T05:30")),
        ("QUEUED", utc("2026-11-01T05:30")),
    ]
    second_pass = svc.ExplainOccurrenceRequest(job=job.name)
    second_pass.time.FromDatetime(utc("2026-11-01T06:30"))
    told = await api.stub.ExplainOccurrence(second_pass, metadata=api.auth())
    assert told.fate == svc.OCCURRENCE_FATE_NOT_AN_OCCURRENCE
    assert "ended at its end_time" in told.explanation


async def test_a_shifted_occurrence_at_the_end_time_still_runs(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    """02:30 on 2026-03-08 does not exist in New York; under SHIFT it runs at 03:00 EDT
    (07:00Z), which is the end_time itself."""
    await set_clock(pool, utc("2026-03-07T12:00"))
    job = cron_job("30 2 * * *", NEW_YORK)
    job.schedule.end_time.FromDatetime(utc("2026-03-08T07:00"))
    job = await create(api, job)
    assert await preview(api, job) == [utc("2026-03-08T07:00")]
    await claim_at(pool, utc("2026-03-08T07:00"))
    assert await runs(pool, job) == [("QUEUED", utc("2026-03-08T07:00"))]
    assert (await get(api, job)).state == job_pb2.JOB_STATE_COMPLETED


async def test_bad_ends_are_refused_naming_the_field(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, T0)
    before_start = every_minute(end_time=T0, max_runs=0)
    refused = await failure(
        api.stub.CreateJob(svc.CreateJobRequest(job=before_start), metadata=api.auth())
    )
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT
    assert set(refused.fields) == {"job.schedule.end_time", "job.schedule.max_runs"}
    assert "must not be before interval.start_time" in refused.fields["job.schedule.end_time"]
    assert "must be between 1 and" in refused.fields["job.schedule.max_runs"]

    ended = cron_job("0 * * * *", "UTC")
    ended.schedule.end_time.FromDatetime(T0 - MINUTE)
    refused = await failure(
        api.stub.CreateJob(svc.CreateJobRequest(job=ended), metadata=api.auth())
    )
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.fields == {
        "job.schedule.end_time": "the schedule has no occurrence left by its end_time: "
        "the job would never run"
    }

    one_off = interval_job(60)
    one_off.schedule.delay.delay.seconds = 60
    one_off.schedule.max_runs = 1
    refused = await failure(
        api.stub.CreateJob(svc.CreateJobRequest(job=one_off), metadata=api.auth())
    )
    assert set(refused.fields) == {"job.schedule.max_runs"}

    schedule = every_minute(max_runs=-1).schedule
    refused = await failure(
        api.stub.PreviewSchedule(svc.PreviewScheduleRequest(schedule=schedule), metadata=api.auth())
    )
    assert set(refused.fields) == {"schedule.max_runs"}


async def test_a_preview_of_a_schedule_not_stored_respects_its_end(api: ApiClient) -> None:
    schedule = every_minute(end_time=T0 + 5 * MINUTE, max_runs=3).schedule
    request = svc.PreviewScheduleRequest(schedule=schedule, count=10)
    request.start_time.FromDatetime(T0)
    shown = (await api.stub.PreviewSchedule(request, metadata=api.auth())).occurrences
    assert [at(o.nominal_time) for o in shown] == [T0 + k * MINUTE for k in (1, 2, 3)]
    request.schedule.ClearField("max_runs")
    shown = (await api.stub.PreviewSchedule(request, metadata=api.auth())).occurrences
    assert [at(o.nominal_time) for o in shown] == [T0 + k * MINUTE for k in range(1, 6)]


async def test_raising_max_runs_runs_a_completed_job_again_from_now(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, T0)
    job = await create(api, every_minute(max_runs=1))
    await claim_at(pool, T0 + MINUTE)
    done = await get(api, job)
    assert done.state == job_pb2.JOB_STATE_COMPLETED

    # Applied again unchanged: still completed, its reason kept.
    again = await update(api, done)
    assert not again.schedule_changed
    assert (again.job.state, again.job.state_reason) == (done.state, done.state_reason)

    await set_clock(pool, T0 + 10 * MINUTE + timedelta(seconds=10))
    raised = job_pb2.Job()
    raised.CopyFrom(again.job)
    raised.schedule.max_runs = 3
    told = await update(api, raised, validate_only=True)
    assert [at(o.nominal_time) for o in told.updated_occurrences] == [
        T0 + 11 * MINUTE,
        T0 + 12 * MINUTE,
    ]
    assert (await get(api, job)).state == job_pb2.JOB_STATE_COMPLETED  # nothing changed yet
    made = await update(api, raised)
    assert made.schedule_changed
    assert made.job.state == job_pb2.JOB_STATE_ACTIVE
    assert made.job.state_reason == ""
    assert at(made.job.next_run_time) == T0 + 11 * MINUTE  # from now: no catch-up
    assert at(made.job.schedule.interval.anchor_time) == T0 + MINUTE  # the series kept
    await claim_at(pool, T0 + 11 * MINUTE, T0 + 12 * MINUTE, T0 + 13 * MINUTE)
    assert [t for _, t in await runs(pool, job)] == [T0 + k * MINUTE for k in (1, 11, 12)]
    assert (await get(api, job)).state == job_pb2.JOB_STATE_COMPLETED


async def test_an_end_moved_before_the_next_run_completes_an_active_job(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, T0)
    job = await create(api, every_minute())
    await claim_at(pool, T0 + MINUTE, T0 + 2 * MINUTE)
    lowered = job_pb2.Job()
    lowered.CopyFrom(await get(api, job))
    lowered.schedule.max_runs = 2
    made = await update(api, lowered)
    assert made.job.state == job_pb2.JOB_STATE_COMPLETED
    assert made.job.state_reason == "the schedule ended: it made 2 runs, max_runs is 2"

    other = await create(api, every_minute())
    extended = job_pb2.Job()
    extended.CopyFrom(other)
    extended.schedule.end_time.FromDatetime(T0 + 30 * MINUTE)
    kept = await update(api, extended)
    assert kept.job.state == job_pb2.JOB_STATE_ACTIVE
    assert kept.job.next_run_time == other.next_run_time  # the pending occurrence stays
    assert at(kept.job.schedule.end_time) == T0 + 30 * MINUTE


async def test_a_resume_after_the_end_completes_the_job(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, T0)
    job = await create(api, every_minute(end_time=T0 + 5 * MINUTE))
    await api.stub.PauseJob(svc.PauseJobRequest(name=job.name), metadata=api.auth())
    await set_clock(pool, T0 + 10 * MINUTE)
    resumed = await api.stub.ResumeJob(svc.ResumeJobRequest(name=job.name), metadata=api.auth())
    assert resumed.job.state == job_pb2.JOB_STATE_COMPLETED
    assert "end_time" in resumed.job.state_reason
    assert resumed.paused_occurrences.skipped.count == 5
