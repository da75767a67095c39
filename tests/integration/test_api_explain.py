"""ExplainOccurrence on real PostgreSQL: the records claims, pauses and updates leave, read back
as an answer, across New York's DST nights of 2026 (2026-03-08 02:00 -> 03:00, 2026-11-01
02:00 -> 01:00)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import asyncpg
import grpc
from google.protobuf import field_mask_pb2

from duetime.jobs.v1 import job_pb2, run_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from testkit.api import ApiClient, at, failure
from testkit.jobs import cron_job
from testkit.time_travel import set_clock, utc
from tests.integration.test_claims import claim_all

NEW_YORK = "America/New_York"
HOUR = timedelta(hours=1)


async def create(api: ApiClient, job: job_pb2.Job) -> job_pb2.Job:
    return (await api.stub.CreateJob(svc.CreateJobRequest(job=job), metadata=api.auth())).job


async def claim_through(pool: asyncpg.Pool[asyncpg.Record], *stops: datetime) -> None:
    """The scheduler's claims, with the clock put at each stop in turn."""
    for stop in stops:
        await set_clock(pool, stop)
        await claim_all(pool)


async def succeed(pool: asyncpg.Pool[asyncpg.Record], job_id: str, nominal: datetime) -> None:
    """As a worker's first attempt would leave the run: started and succeeded."""
    run = await pool.fetchrow(
        "UPDATE runs SET state = 'SUCCEEDED', attempt = 1, first_start_time = effective_time, "
        "attempt_worker_id = 'worker-1', attempt_start_time = effective_time, "
        "attempt_lease_expire_time = effective_time + interval '1 minute', "
        "attempt_deadline = effective_time + interval '5 minutes', "
        "attempt_end_time = effective_time + interval '2 seconds', "
        "attempt_outcome = 'SUCCEEDED', attempt_error = '', attempt_cancel_reason = '', "
        "attempt_early = false "
        "WHERE job_id = $1 AND nominal_time = $2 RETURNING run_id",
        uuid.UUID(job_id),
        nominal,
    )
    assert run is not None


async def explain(
    api: ApiClient, job: job_pb2.Job, *, time: datetime | None = None, local: str = ""
) -> svc.ExplainOccurrenceResponse:
    request = svc.ExplainOccurrenceRequest(job=job.name, local_time=local)
    if time is not None:
        request.time.FromDatetime(time)
    return await api.stub.ExplainOccurrence(request, metadata=api.auth())


async def test_the_spring_forward_night_shifted_skipped_and_no_occurrence(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, utc("2026-03-06T12:00"))
    shifted = await create(api, cron_job("30 2 * * *", NEW_YORK))
    skipping = cron_job("30 2 * * *", NEW_YORK)
    skipping.schedule.cron.gap_policy = job_pb2.DST_GAP_POLICY_SKIP
    skipping = await create(api, skipping)
    await claim_through(
        pool, utc("2026-03-07T07:30"), utc("2026-03-08T07:00"), utc("2026-03-09T06:31")
    )
    await succeed(pool, shifted.job_id, utc("2026-03-08T07:00"))

    # 02:30 did not exist; under SHIFT the occurrence ran at 03:00 EDT, the gap's end.
    ran = await explain(api, shifted, local="2026-03-08T02:30")
    assert ran.fate == svc.OCCURRENCE_FATE_RAN
    assert at(ran.time) == utc("2026-03-08T07:00")
    assert ran.run.state == run_pb2.RUN_STATE_SUCCEEDED
    assert [a.outcome for a in ran.run.attempts] == [run_pb2.ATTEMPT_OUTCOME_SUCCEEDED]
    assert ran.occurrence.local_time == "2026-03-08T03:00:00-04:00"
    assert ran.occurrence.dst_adjustment == svc.DST_ADJUSTMENT_SHIFTED
    gap = ran.dst_transition
    assert (gap.kind, at(gap.time), gap.time_zone) == (
        svc.DST_TRANSITION_KIND_GAP,
        utc("2026-03-08T07:00"),
        NEW_YORK,
    )
    assert (gap.utc_offset_before.seconds, gap.utc_offset_after.seconds) == (-5 * 3600, -4 * 3600)
    assert "2026-03-08 02:30:00 did not exist" in ran.explanation
    assert "SHIFT" in ran.explanation
    assert "succeeded" in ran.explanation

    # Under SKIP it was recorded SKIPPED (DST_GAP) at the gap's end.
    skipped = await explain(api, skipping, local="2026-03-08T02:30")
    assert skipped.fate == svc.OCCURRENCE_FATE_SKIPPED
    assert skipped.run.reason == run_pb2.RUN_REASON_DST_GAP
    assert at(skipped.run.nominal_time) == utc("2026-03-08T07:00")

    # 02:15 is no time this schedule names, gap or not: the nearest ones either side.
    none = await explain(api, shifted, local="2026-03-08T02:15")
    assert none.fate == svc.OCCURRENCE_FATE_NOT_AN_OCCURRENCE
    assert at(none.previous_occurrence.nominal_time) == utc("2026-03-07T07:30")
    assert at(none.next_occurrence.nominal_time) == utc("2026-03-08T07:00")
    assert none.dst_transition.kind == svc.DST_TRANSITION_KIND_GAP
    assert not none.HasField("run")

    # The day before, an ordinary occurrence, asked as an instant: its run, still queued.
    queued = await explain(api, shifted, time=utc("2026-03-07T07:30"))
    assert (queued.fate, queued.run.state) == (svc.OCCURRENCE_FATE_RAN, run_pb2.RUN_STATE_QUEUED)
    assert not queued.HasField("dst_transition")
    # The next one is not due yet.
    due = await explain(api, shifted, local="2026-03-10T02:30")
    assert due.fate == svc.OCCURRENCE_FATE_NOT_YET_DUE
    assert due.occurrence.nominal_time == (await job_of(api, shifted)).next_run_time


async def job_of(api: ApiClient, job: job_pb2.Job) -> job_pb2.Job:
    return (await api.stub.GetJob(svc.GetJobRequest(name=job.name), metadata=api.auth())).job


async def test_the_fall_back_night_runs_the_first_pass_and_explains_the_second(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, utc("2026-10-31T12:00"))
    job = await create(api, cron_job("30 1 * * *", NEW_YORK))
    await claim_through(pool, utc("2026-11-01T05:30"), utc("2026-11-02T06:31"))

    first = await explain(api, job, local="2026-11-01T01:30")
    assert first.fate == svc.OCCURRENCE_FATE_RAN
    assert at(first.time) == utc("2026-11-01T05:30")
    assert first.occurrence.dst_adjustment == svc.DST_ADJUSTMENT_FOLD_FIRST_PASS
    assert first.dst_transition.kind == svc.DST_TRANSITION_KIND_FOLD
    assert at(first.dst_transition.time) == utc("2026-11-01T06:00")
    assert "happened twice" in first.explanation
    assert "FIRST" in first.explanation

    second = await explain(api, job, time=utc("2026-11-01T06:30"))
    assert second.fate == svc.OCCURRENCE_FATE_NOT_AN_OCCURRENCE
    assert at(second.previous_occurrence.nominal_time) == utc("2026-11-01T05:30")
    assert at(second.next_occurrence.nominal_time) == utc("2026-11-02T06:30")
    assert second.dst_transition.kind == svc.DST_TRANSITION_KIND_FOLD
    assert "first pass only" in second.explanation


async def test_a_paused_stretch_is_one_skipped_range_record_and_before_that_a_pending_skip(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, utc("2026-06-01T12:00"))
    job = await create(api, cron_job("*/15 * * * *", "UTC"))
    await api.stub.PauseJob(
        svc.PauseJobRequest(name=job.name, note="warehouse migration"), metadata=api.auth()
    )
    await set_clock(pool, utc("2026-06-01T14:05"))
    # Still paused: skipped, recorded only when the job resumes.
    pending = await explain(api, job, time=utc("2026-06-01T13:00"))
    assert pending.fate == svc.OCCURRENCE_FATE_SKIPPED
    assert not pending.HasField("run")
    assert "warehouse migration" in pending.explanation
    ahead = await explain(api, job, time=utc("2026-06-01T15:00"))
    assert ahead.fate == svc.OCCURRENCE_FATE_NOT_YET_DUE
    assert "paused" in ahead.explanation

    await api.stub.ResumeJob(svc.ResumeJobRequest(name=job.name), metadata=api.auth())
    inside = await explain(api, job, time=utc("2026-06-01T13:00"))
    assert inside.fate == svc.OCCURRENCE_FATE_SKIPPED
    assert inside.run.reason == run_pb2.RUN_REASON_JOB_PAUSED
    # One record stands for the whole stretch, 12:15 to 14:00: eight occurrences.
    assert (at(inside.run.nominal_time), at(inside.run.range_end_time)) == (
        utc("2026-06-01T12:15"),
        utc("2026-06-01T14:00"),
    )
    assert inside.run.occurrence_count == 8
    assert "8 occurrences" in inside.explanation
    # Inside the range but no occurrence: the range does not stand for it.
    between = await explain(api, job, time=utc("2026-06-01T13:07"))
    assert between.fate == svc.OCCURRENCE_FATE_NOT_AN_OCCURRENCE
    assert at(between.previous_occurrence.nominal_time) == utc("2026-06-01T13:00")
    # Before the job existed.
    before = await explain(api, job, time=utc("2026-06-01T11:45"))
    assert before.fate == svc.OCCURRENCE_FATE_UNRECORDED
    assert "did not exist yet" in before.explanation


async def test_missed_occurrences_name_their_lateness_and_policy(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, utc("2026-06-01T12:00:30"))
    job = cron_job("* * * * *", "UTC")
    job.misfire.policy = job_pb2.MISFIRE_POLICY_SKIP
    job = await create(api, job)
    # The fleet was down for an hour: the claim finds the stretch late.
    await claim_through(pool, utc("2026-06-01T13:00:45"))
    missed = await explain(api, job, time=utc("2026-06-01T12:30"))
    assert missed.fate == svc.OCCURRENCE_FATE_MISSED
    assert missed.run.state == run_pb2.RUN_STATE_MISSED
    assert missed.run.occurrence_count > 1
    assert missed.misfire.policy == job_pb2.MISFIRE_POLICY_SKIP
    late = missed.lateness.ToTimedelta()
    assert timedelta(minutes=30) <= late < timedelta(minutes=31)
    assert "under SKIP" in missed.explanation


async def test_the_schedule_in_force_then_decides_not_todays(
    api: ApiClient, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await set_clock(pool, utc("2026-06-01T00:00"))
    job = await create(api, cron_job("0 3 * * *", "UTC"))
    await claim_through(pool, utc("2026-06-01T03:00"), utc("2026-06-02T03:00"))
    later = job_pb2.Job(name=job.name, schedule=job.schedule)
    later.schedule.cron.expression = "0 4 * * *"
    await api.stub.UpdateJob(
        svc.UpdateJobRequest(job=later, update_mask=field_mask_pb2.FieldMask(paths=["schedule"])),
        metadata=api.auth(),
    )
    old = await explain(api, job, time=utc("2026-06-01T03:00"))
    assert (old.fate, old.job_version) == (svc.OCCURRENCE_FATE_RAN, 1)
    # 04:00 on June 1st was no occurrence then, though it would be today.
    then = await explain(api, job, time=utc("2026-06-01T04:00"))
    assert (then.fate, then.job_version) == (svc.OCCURRENCE_FATE_NOT_AN_OCCURRENCE, 1)
    assert "as in force then" in then.explanation
    assert (
        "as in force then"
        not in (await explain(api, job, time=utc("2026-06-03T03:30"))).explanation
    )
    now = await explain(api, job, time=utc("2026-06-03T04:00"))
    assert (now.fate, now.job_version) == (svc.OCCURRENCE_FATE_NOT_YET_DUE, 2)


async def test_bad_requests_name_their_field(api: ApiClient) -> None:
    job = await create(api, cron_job("30 2 * * *", NEW_YORK))
    both = svc.ExplainOccurrenceRequest(job=job.name, local_time="2026-03-08T02:30")
    both.time.FromDatetime(utc("2026-03-08T07:00"))
    cases = [
        (both, "time"),
        (svc.ExplainOccurrenceRequest(job=job.name), "time"),
        (svc.ExplainOccurrenceRequest(job=job.name, local_time="08/03/2026"), "local_time"),
        (svc.ExplainOccurrenceRequest(job=job.name, local_time="2026-03-08T02:30Z"), "local_time"),
        (
            svc.ExplainOccurrenceRequest(
                job=job.name, local_time="2026-03-08T02:30", time_zone="Mars/Olympus"
            ),
            "time_zone",
        ),
        (svc.ExplainOccurrenceRequest(job="jobs/x", local_time="2026-03-08T02:30"), "job"),
        (svc.ExplainOccurrenceRequest(job=job.name, local_time="9999-12-31T23:00"), "local_time"),
    ]
    for request, field in cases:
        bad = await failure(api.stub.ExplainOccurrence(request, metadata=api.auth()))
        assert (bad.code, list(bad.fields)) == (grpc.StatusCode.INVALID_ARGUMENT, [field]), request
    hidden = await failure(
        api.stub.ExplainOccurrence(
            svc.ExplainOccurrenceRequest(job=job.name, local_time="2026-03-08T02:30"),
            metadata=api.auth(api.other_token),
        )
    )
    assert hidden.code == grpc.StatusCode.NOT_FOUND
