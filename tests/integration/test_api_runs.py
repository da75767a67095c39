"""Runs through the job API: triggers with their outbox rows, redrive, pause ranges, preview."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import grpc
from google.protobuf import duration_pb2, timestamp_pb2

from duetime.events.v1 import events_pb2
from duetime.jobs.v1 import job_pb2, run_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime_infra.tracecontext import run_trace_ids
from testkit.api import ApiClient, failure
from tests.integration.test_api_jobs import cron_job


async def sql(dsn: str, query: str, *args: object) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(query, *args))
    finally:
        await conn.close()


async def test_trigger_records_a_queued_run_and_its_outbox_row_once(api: ApiClient) -> None:
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=cron_job()), metadata=api.auth())).job
    request = svc.TriggerJobRequest(name=job.name, request_id="deploy-42")
    run = (await api.stub.TriggerJob(request, metadata=api.auth())).run
    assert run.state == run_pb2.RUN_STATE_QUEUED
    assert run.origin == run_pb2.RUN_ORIGIN_TRIGGER
    assert run.idempotency_key == f"{job.job_id}/trigger/deploy-42"
    assert len(run.trace_id) == 32
    again = (await api.stub.TriggerJob(request, metadata=api.auth())).run
    assert again.run_id == run.run_id

    rows = await sql(api.dsn, "SELECT topic, message_key, payload, headers FROM outbox")
    assert len(rows) == 1
    assert rows[0]["topic"] == "duetime.runs.normal"
    assert bytes(rows[0]["message_key"]) == job.job_id.encode()
    dispatch = events_pb2.RunDispatch.FromString(bytes(rows[0]["payload"]))
    assert (dispatch.run_id, dispatch.idempotency_key) == (run.run_id, run.idempotency_key)
    assert run.trace_id in json.loads(rows[0]["headers"])["traceparent"]

    listed = await api.stub.ListRuns(svc.ListRunsRequest(parent=job.name), metadata=api.auth())
    assert [r.run_id for r in listed.runs] == [run.run_id]
    got = (await api.stub.GetRun(svc.GetRunRequest(name=run.name), metadata=api.auth())).run
    assert got == run

    missing = await failure(
        api.stub.TriggerJob(svc.TriggerJobRequest(name=job.name), metadata=api.auth())
    )
    assert "request_id" in missing.fields
    hidden = await failure(
        api.stub.GetRun(svc.GetRunRequest(name=run.name), metadata=api.auth(api.other_token))
    )
    assert hidden.code == grpc.StatusCode.NOT_FOUND


async def test_redrive_gives_a_dead_lettered_run_a_fresh_budget(api: ApiClient) -> None:
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=cron_job()), metadata=api.auth())).job
    run = (
        await api.stub.TriggerJob(
            svc.TriggerJobRequest(name=job.name, request_id="r1"), metadata=api.auth()
        )
    ).run
    refused = await failure(
        api.stub.RedriveRun(
            svc.RedriveRunRequest(name=run.name, request_id="x"), metadata=api.auth()
        )
    )
    assert (refused.code, refused.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "RUN_NOT_DEAD_LETTERED",
    )
    # Three attempts were spent (as the scheduler would have recorded them).
    await sql(
        api.dsn,
        "UPDATE runs SET state = 'DEAD_LETTERED', attempt = 3, reason = 'ATTEMPTS_EXHAUSTED' "
        "WHERE run_id = $1",
        uuid.UUID(run.run_id),
    )
    request = svc.RedriveRunRequest(name=run.name, request_id="redrive-1")
    redriven = (await api.stub.RedriveRun(request, metadata=api.auth())).run
    assert redriven.state == run_pb2.RUN_STATE_QUEUED
    assert redriven.attempt == 3  # numbers keep rising from here
    assert (await api.stub.RedriveRun(request, metadata=api.auth())).run.run_id == run.run_id
    rows = await sql(
        api.dsn, "SELECT attempt_limit FROM runs WHERE run_id = $1", uuid.UUID(run.run_id)
    )
    assert rows[0]["attempt_limit"] == 3 + 3
    assert len(await sql(api.dsn, "SELECT 1 FROM outbox")) == 2  # trigger + one redrive


async def test_pause_records_one_skipped_range_and_does_not_catch_up(api: ApiClient) -> None:
    every = job_pb2.Job(
        schedule=job_pb2.Schedule(
            interval=job_pb2.IntervalSchedule(interval=duration_pb2.Duration(seconds=60))
        ),
        target=job_pb2.Target(http=job_pb2.HttpTarget(url="https://x.test/")),
    )
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=every), metadata=api.auth())).job
    await api.stub.PauseJob(svc.PauseJobRequest(name=job.name), metadata=api.auth())
    # An hour passes on the database clock.
    await sql(api.dsn, """UPDATE duetime_clock SET "offset" = interval '1 hour'""")
    resumed = (
        await api.stub.ResumeJob(svc.ResumeJobRequest(name=job.name), metadata=api.auth())
    ).job
    runs = (await api.stub.ListRuns(svc.ListRunsRequest(parent=job.name), metadata=api.auth())).runs
    assert len(runs) == 1
    skipped = runs[0]
    assert skipped.state == run_pb2.RUN_STATE_SKIPPED
    assert skipped.reason == run_pb2.RUN_REASON_JOB_PAUSED
    assert skipped.occurrence_count in (59, 60)
    assert skipped.nominal_time == job.next_run_time
    span = skipped.range_end_time.ToDatetime() - skipped.nominal_time.ToDatetime()
    assert span == timedelta(minutes=skipped.occurrence_count - 1)
    # The next run is after the resume, not a catch-up.
    assert resumed.next_run_time.ToDatetime() > skipped.range_end_time.ToDatetime()


async def test_preview_shows_dst_and_jitter(api: ApiClient) -> None:
    start = timestamp_pb2.Timestamp()
    start.FromDatetime(datetime(2026, 3, 6, tzinfo=UTC))
    schedule = job_pb2.Schedule(
        cron=job_pb2.CronSchedule(expression="30 2 * * *", time_zone="America/New_York")
    )
    preview = await api.stub.PreviewSchedule(
        svc.PreviewScheduleRequest(schedule=schedule, start_time=start, count=4),
        metadata=api.auth(),
    )
    locals_ = [o.local_time for o in preview.occurrences]
    assert locals_ == [
        "2026-03-06T02:30:00-05:00",
        "2026-03-07T02:30:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-09T02:30:00-04:00",
    ]
    assert [o.dst_adjustment for o in preview.occurrences][2] == svc.DST_ADJUSTMENT_SHIFTED
    start.FromDatetime(datetime(2026, 10, 31, 12, tzinfo=UTC))
    both = job_pb2.Schedule(
        cron=job_pb2.CronSchedule(
            expression="30 1 * * *",
            time_zone="America/New_York",
            fold_policy=job_pb2.DST_FOLD_POLICY_BOTH,
        )
    )
    preview = await api.stub.PreviewSchedule(
        svc.PreviewScheduleRequest(schedule=both, start_time=start, count=3), metadata=api.auth()
    )
    assert [o.local_time for o in preview.occurrences] == [
        "2026-11-01T01:30:00-04:00",
        "2026-11-01T01:30:00-05:00",
        "2026-11-02T01:30:00-05:00",
    ]
    assert [o.dst_adjustment for o in preview.occurrences][:2] == [
        svc.DST_ADJUSTMENT_FOLD_FIRST_PASS,
        svc.DST_ADJUSTMENT_FOLD_SECOND_PASS,
    ]
    bad = await failure(
        api.stub.PreviewSchedule(
            svc.PreviewScheduleRequest(
                schedule=schedule, jitter_window=duration_pb2.Duration(seconds=86400)
            ),
            metadata=api.auth(),
        )
    )
    assert "jitter_window" in bad.fields

    jittered = cron_job("*/5 * * * *", "UTC")
    jittered.jitter_window.FromTimedelta(timedelta(seconds=30))
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=jittered), metadata=api.auth())).job
    preview = await api.stub.PreviewSchedule(
        svc.PreviewScheduleRequest(job=job.name, count=5), metadata=api.auth()
    )
    assert len(preview.occurrences) == 5
    assert preview.occurrences[0].nominal_time == job.next_run_time
    offsets = [
        o.effective_time.ToDatetime() - o.nominal_time.ToDatetime() for o in preview.occurrences
    ]
    assert all(timedelta(0) <= d < timedelta(seconds=30) for d in offsets)
    assert len(set(offsets)) > 1  # a deterministic spread, not a constant


async def test_a_runs_trace_id_is_read_from_its_trace_context(api: ApiClient) -> None:
    """The trace id column repeated what the traceparent holds: a run is made without it (a
    later schema drops the column), and readers take the id from its trace context: the run's
    own ids (schema 31), so its row keeps the flags alone, with no text beside them."""
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=cron_job()), metadata=api.auth())).job
    request = svc.TriggerJobRequest(name=job.name, request_id="trace-1")
    run = (await api.stub.TriggerJob(request, metadata=api.auth())).run
    (stored,) = await sql(
        api.dsn,
        "SELECT trace_id, traceparent, trace_context FROM runs WHERE run_id = $1",
        uuid.UUID(run.run_id),
    )
    assert (stored["trace_id"], stored["traceparent"]) == ("", "")
    assert stored["trace_context"] == b"\x01"
    got = (await api.stub.GetRun(svc.GetRunRequest(name=run.name), metadata=api.auth())).run
    assert len(got.trace_id) == 32
    assert got.trace_id == run.trace_id == run_trace_ids(uuid.UUID(run.run_id))[:16].hex()
