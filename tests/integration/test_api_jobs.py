"""The job API against real PostgreSQL: lifecycle, validation, idempotency, isolation."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import grpc
from google.protobuf import duration_pb2, field_mask_pb2

from duetime.jobs.v1 import job_pb2, run_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime_core.jobspec import HttpTarget
from duetime_core.schedule import next_fire_time
from duetime_core.schedule.model import Cron
from duetime_infra.admin import create_worker_token
from duetime_infra.codec.spec_json import spec_from_json
from testkit.api import ApiClient, failure
from testkit.secrets import secret_box


def cron_job(expression: str = "30 2 * * *", zone: str = "America/New_York") -> job_pb2.Job:
    return job_pb2.Job(
        display_name="nightly",
        schedule=job_pb2.Schedule(cron=job_pb2.CronSchedule(expression=expression, time_zone=zone)),
        target=job_pb2.Target(
            http=job_pb2.HttpTarget(
                url="https://billing.internal/run",
                headers={"Authorization": "Bearer s3cret", "X-Plain": "v"},
            )
        ),
    )


async def count(dsn: str, table: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval(f"SELECT count(*) FROM {table}"))
    finally:
        await conn.close()


async def db_now(dsn: str) -> datetime:
    conn = await asyncpg.connect(dsn)
    try:
        value: datetime = await conn.fetchval("SELECT duetime_now()")
        return value
    finally:
        await conn.close()


async def test_lifecycle_create_get_list_update_pause_resume_delete(api: ApiClient) -> None:
    created = (
        await api.stub.CreateJob(svc.CreateJobRequest(job=cron_job()), metadata=api.auth())
    ).job
    assert created.name == api.job_name(created.job_id)
    assert created.state == job_pb2.JOB_STATE_ACTIVE
    assert created.team == api.team
    # The next run time is the time code's answer from the creation instant.
    expected = next_fire_time(
        Cron("30 2 * * *", "America/New_York"), created.create_time.ToDatetime(UTC)
    )
    assert created.next_run_time.ToDatetime(UTC) == expected
    # Defaults are spelled out for readers.
    assert created.retry_policy.max_attempts == 3
    assert created.misfire.policy == job_pb2.MISFIRE_POLICY_RUN_ONCE
    assert created.target.http.method == job_pb2.HTTP_METHOD_POST

    got = (await api.stub.GetJob(svc.GetJobRequest(name=created.name), metadata=api.auth())).job
    assert got == created

    listed = await api.stub.ListJobs(svc.ListJobsRequest(), metadata=api.auth())
    assert [j.job_id for j in listed.jobs] == [created.job_id]

    update = job_pb2.Job(name=created.name, etag=created.etag, display_name="renamed")
    update.schedule.cron.expression = "0 9 * * MON-FRI"
    update.schedule.cron.time_zone = "Europe/London"
    updated = (
        await api.stub.UpdateJob(
            svc.UpdateJobRequest(
                job=update, update_mask=field_mask_pb2.FieldMask(paths=["display_name", "schedule"])
            ),
            metadata=api.auth(),
        )
    ).job
    assert updated.display_name == "renamed"
    assert updated.schedule.cron.time_zone == "Europe/London"
    assert updated.etag != created.etag
    # Unmasked fields are untouched, secrets included (checked in the store below).
    assert updated.target.http.url == created.target.http.url
    local = updated.next_run_time.ToDatetime(UTC)
    assert (local.hour, local.minute) in {(8, 0), (9, 0)}
    assert local.weekday() < 5

    paused = (
        await api.stub.PauseJob(svc.PauseJobRequest(name=created.name), metadata=api.auth())
    ).job
    assert paused.state == job_pb2.JOB_STATE_PAUSED
    bad = await failure(
        api.stub.PauseJob(svc.PauseJobRequest(name=created.name), metadata=api.auth())
    )
    assert (bad.code, bad.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "JOB_NOT_ACTIVE")
    resumed = (
        await api.stub.ResumeJob(svc.ResumeJobRequest(name=created.name), metadata=api.auth())
    ).job
    assert resumed.state == job_pb2.JOB_STATE_ACTIVE
    assert resumed.next_run_time.ToDatetime(UTC) > resumed.update_time.ToDatetime(UTC) - timedelta(
        seconds=1
    )
    bad = await failure(
        api.stub.ResumeJob(svc.ResumeJobRequest(name=created.name), metadata=api.auth())
    )
    assert (bad.code, bad.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "JOB_NOT_PAUSED")

    await api.stub.DeleteJob(svc.DeleteJobRequest(name=created.name), metadata=api.auth())
    gone = await failure(api.stub.GetJob(svc.GetJobRequest(name=created.name), metadata=api.auth()))
    assert (gone.code, gone.reason) == (grpc.StatusCode.NOT_FOUND, "JOB_NOT_FOUND")
    assert not (await api.stub.ListJobs(svc.ListJobsRequest(), metadata=api.auth())).jobs


async def test_every_bad_field_is_named_and_nothing_is_stored(api: ApiClient) -> None:
    job = job_pb2.Job(
        schedule=job_pb2.Schedule(
            cron=job_pb2.CronSchedule(expression="61 * * * *", time_zone="Mars/Base")
        ),
        target=job_pb2.Target(
            http=job_pb2.HttpTarget(
                url="ftp://example.com/x", method=job_pb2.HttpMethod.ValueType(42)
            )
        ),
        attempt_timeout=duration_pb2.Duration(seconds=0, nanos=1000),
        retry_policy=job_pb2.RetryPolicy(max_attempts=1000, multiplier=0.5),
        priority=job_pb2.Priority.ValueType(17),
    )
    bad = await failure(api.stub.CreateJob(svc.CreateJobRequest(job=job), metadata=api.auth()))
    assert bad.code == grpc.StatusCode.INVALID_ARGUMENT
    for field in (
        "job.schedule.cron.expression",
        "job.schedule.cron.time_zone",
        "job.target.http.url",
        "job.target.http.method",
        "job.attempt_timeout",
        "job.retry_policy.max_attempts",
        "job.retry_policy.multiplier",
        "job.priority",
    ):
        assert field in bad.fields, (field, bad.fields)
    assert await count(api.dsn, "jobs") == 0

    for job, field in [
        (job_pb2.Job(), "job.schedule"),
        (
            job_pb2.Job(schedule=job_pb2.Schedule(interval=job_pb2.IntervalSchedule())),
            "job.schedule.interval.interval",
        ),
        (
            job_pb2.Job(
                schedule=job_pb2.Schedule(
                    at=job_pb2.AtSchedule(local_time="tomorrow", time_zone="UTC")
                )
            ),
            "job.schedule.at.local_time",
        ),
        (
            job_pb2.Job(
                target=job_pb2.Target(
                    http=job_pb2.HttpTarget(url="https://x.test", body=b"x" * 70_000)
                )
            ),
            "job.target.http.body",
        ),
    ]:
        bad = await failure(api.stub.CreateJob(svc.CreateJobRequest(job=job), metadata=api.auth()))
        assert bad.code == grpc.StatusCode.INVALID_ARGUMENT
        assert field in bad.fields, (field, bad.fields)
    missing = await failure(api.stub.CreateJob(svc.CreateJobRequest(), metadata=api.auth()))
    assert "job" in missing.fields
    assert await count(api.dsn, "jobs") == 0


async def test_create_is_idempotent_by_request_id(api: ApiClient) -> None:
    request = svc.CreateJobRequest(job=cron_job(), request_id="create-1")
    first = (await api.stub.CreateJob(request, metadata=api.auth())).job
    again = (await api.stub.CreateJob(request, metadata=api.auth())).job
    assert again.job_id == first.job_id
    # Secret values take no part in the comparison: nothing of them is kept, not even a digest.
    other_secret = svc.CreateJobRequest(job=cron_job(), request_id="create-1")
    other_secret.job.target.http.headers["Authorization"] = "Bearer another"
    assert (await api.stub.CreateJob(other_secret, metadata=api.auth())).job.job_id == first.job_id
    assert await count(api.dsn, "jobs") == 1
    reused = await failure(
        api.stub.CreateJob(
            svc.CreateJobRequest(job=cron_job("0 * * * *"), request_id="create-1"),
            metadata=api.auth(),
        )
    )
    assert (reused.code, reused.reason) == (grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED")
    # Another team's identical request_id is its own.
    other = (await api.stub.CreateJob(request, metadata=api.auth(api.other_token))).job
    assert other.job_id != first.job_id


async def test_teams_are_isolated_and_calls_authenticated(api: ApiClient) -> None:
    mine = (await api.stub.CreateJob(svc.CreateJobRequest(job=cron_job()), metadata=api.auth())).job
    for name in (mine.name, api.job_name(mine.job_id, api.other_team)):
        hidden = await failure(
            api.stub.GetJob(svc.GetJobRequest(name=name), metadata=api.auth(api.other_token))
        )
        assert (hidden.code, hidden.reason) == (grpc.StatusCode.NOT_FOUND, "JOB_NOT_FOUND")
    hidden = await failure(
        api.stub.PauseJob(
            svc.PauseJobRequest(name=api.job_name(mine.job_id, api.other_team)),
            metadata=api.auth(api.other_token),
        )
    )
    assert hidden.code == grpc.StatusCode.NOT_FOUND
    assert not (
        await api.stub.ListJobs(svc.ListJobsRequest(), metadata=api.auth(api.other_token))
    ).jobs
    anonymous = await failure(api.stub.GetJob(svc.GetJobRequest(name=mine.name)))
    assert (anonymous.code, anonymous.reason) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "MISSING_CREDENTIALS",
    )
    forged = await failure(
        api.stub.GetJob(svc.GetJobRequest(name=mine.name), metadata=api.auth("nope"))
    )
    assert (forged.code, forged.reason) == (grpc.StatusCode.UNAUTHENTICATED, "INVALID_TOKEN")


async def test_stale_etag_is_aborted_and_changes_nothing(api: ApiClient) -> None:
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=cron_job()), metadata=api.auth())).job
    await api.stub.PauseJob(svc.PauseJobRequest(name=job.name, etag=job.etag), metadata=api.auth())
    stale = await failure(
        api.stub.ResumeJob(svc.ResumeJobRequest(name=job.name, etag=job.etag), metadata=api.auth())
    )
    assert (stale.code, stale.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")
    current = (await api.stub.GetJob(svc.GetJobRequest(name=job.name), metadata=api.auth())).job
    assert current.state == job_pb2.JOB_STATE_PAUSED


async def test_header_values_are_redacted_and_kept_across_updates(api: ApiClient) -> None:
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=cron_job()), metadata=api.auth())).job
    assert dict(job.target.http.headers) == {"Authorization": "[REDACTED]", "X-Plain": "[REDACTED]"}
    # A read-modify-write that sends the redacted values back keeps the stored secrets.
    job.target.http.url = "https://billing.internal/v2"
    job.target.http.headers["X-New"] = "fresh"
    await api.stub.UpdateJob(
        svc.UpdateJobRequest(job=job, update_mask=field_mask_pb2.FieldMask(paths=["target"])),
        metadata=api.auth(),
    )
    conn = await asyncpg.connect(api.dsn)
    try:
        documents = await conn.fetch(
            "SELECT spec::text AS spec FROM job_versions WHERE job_id = $1 ORDER BY version",
            uuid.UUID(job.job_id),
        )
        current = await conn.fetchval(
            "SELECT spec::text FROM jobs WHERE job_id = $1", uuid.UUID(job.job_id)
        )
    finally:
        await conn.close()
    assert [d["spec"] for d in documents][-1] == current
    assert "billing.internal/v2" in current
    # Stored sealed: no value in clear, in the job or in any of its versions...
    for document in [d["spec"] for d in documents]:
        for clear in ("s3cret", "Bearer", "fresh"):
            assert clear not in document
    # ...and the kept ones still open to what was first sent.
    target = secret_box().open_target(
        uuid.UUID(job.job_id), spec_from_json(json.loads(current)).target
    )
    assert isinstance(target, HttpTarget)
    assert target.headers == {"Authorization": "Bearer s3cret", "X-Plain": "v", "X-New": "fresh"}


async def test_list_pagination_tokens_are_bound_to_their_filter(api: ApiClient) -> None:
    names = set()
    for i in range(5):
        job = cron_job(f"{i} 3 * * *")
        names.add(
            (await api.stub.CreateJob(svc.CreateJobRequest(job=job), metadata=api.auth())).job.name
        )
    seen: list[str] = []
    token = ""
    while True:
        page = await api.stub.ListJobs(
            svc.ListJobsRequest(page_size=2, page_token=token), metadata=api.auth()
        )
        seen += [j.name for j in page.jobs]
        token = page.next_page_token
        if not token:
            break
        other = await failure(
            api.stub.ListJobs(
                svc.ListJobsRequest(page_size=2, page_token=token, state=job_pb2.JOB_STATE_PAUSED),
                metadata=api.auth(),
            )
        )
        assert "page_token" in other.fields
    assert sorted(seen) == sorted(names)
    assert len(seen) == 5


async def test_delay_and_interval_schedules(api: ApiClient) -> None:
    delayed = job_pb2.Job(
        schedule=job_pb2.Schedule(
            delay=job_pb2.DelaySchedule(delay=duration_pb2.Duration(seconds=90))
        ),
        target=job_pb2.Target(http=job_pb2.HttpTarget(url="https://x.test/")),
    )
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=delayed), metadata=api.auth())).job
    assert job.next_run_time.ToDatetime() - job.create_time.ToDatetime() == timedelta(seconds=90)
    assert job.schedule.delay.run_time == job.next_run_time
    every = job_pb2.Job(
        schedule=job_pb2.Schedule(
            interval=job_pb2.IntervalSchedule(interval=duration_pb2.Duration(seconds=300))
        ),
        target=job_pb2.Target(http=job_pb2.HttpTarget(url="https://x.test/")),
    )
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=every), metadata=api.auth())).job
    assert job.next_run_time.ToDatetime() - job.create_time.ToDatetime() == timedelta(seconds=300)


async def test_worker_tokens_cannot_call_the_job_api(api: ApiClient) -> None:
    conn = await asyncpg.connect(api.dsn)
    try:
        worker_token = await create_worker_token(conn)
    finally:
        await conn.close()
    refused = await failure(
        api.stub.ListJobs(svc.ListJobsRequest(), metadata=api.auth(worker_token))
    )
    assert (refused.code, refused.reason) == (grpc.StatusCode.PERMISSION_DENIED, "WRONG_TOKEN_ROLE")


async def test_request_ids_expire_after_a_day(api: ApiClient) -> None:
    request = svc.CreateJobRequest(job=cron_job(), request_id="daily")
    first = (await api.stub.CreateJob(request, metadata=api.auth())).job
    conn = await asyncpg.connect(api.dsn)
    try:
        await conn.execute("""UPDATE duetime_clock SET "offset" = interval '25 hours'""")
        later = (await api.stub.CreateJob(request, metadata=api.auth())).job
        assert later.job_id != first.job_id
        await conn.execute("""UPDATE duetime_clock SET "offset" = interval '40 hours'""")
        fresh = svc.CreateJobRequest(job=cron_job(), request_id="fresh")
        await api.stub.CreateJob(fresh, metadata=api.auth())
        await conn.execute("""UPDATE duetime_clock SET "offset" = interval '50 hours'""")
        await conn.execute("SELECT duetime_maintain_partitions()")
        kept = await conn.fetch("SELECT request_id FROM request_ids")
        assert [r["request_id"] for r in kept] == ["fresh"]
    finally:
        await conn.close()


async def test_updates_never_drop_a_due_occurrence(api: ApiClient) -> None:
    every = job_pb2.Job(
        schedule=job_pb2.Schedule(
            interval=job_pb2.IntervalSchedule(interval=duration_pb2.Duration(seconds=60))
        ),
        target=job_pb2.Target(http=job_pb2.HttpTarget(url="https://x.test/")),
    )
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=every), metadata=api.auth())).job
    conn = await asyncpg.connect(api.dsn)
    try:
        # The fleet is down: ten minutes pass and nothing is claimed.
        await conn.execute("""UPDATE duetime_clock SET "offset" = interval '10 minutes'""")
        renamed = job_pb2.Job(name=job.name, display_name="renamed")
        mask = field_mask_pb2.FieldMask(paths=["display_name"])
        updated = (
            await api.stub.UpdateJob(
                svc.UpdateJobRequest(job=renamed, update_mask=mask), metadata=api.auth()
            )
        ).job
        # A rename keeps the pending occurrence for the scheduler (and its misfire policy).
        assert updated.next_run_time == job.next_run_time
        new_schedule = job_pb2.Job(name=job.name)
        new_schedule.schedule.cron.expression = "0 * * * *"
        new_schedule.schedule.cron.time_zone = "UTC"
        mask = field_mask_pb2.FieldMask(paths=["schedule"])
        await api.stub.UpdateJob(
            svc.UpdateJobRequest(job=new_schedule, update_mask=mask), metadata=api.auth()
        )
        # A new schedule records what the old one left due, rather than dropping it.
        runs = (
            await api.stub.ListRuns(svc.ListRunsRequest(parent=job.name), metadata=api.auth())
        ).runs
        assert len(runs) == 1
        assert runs[0].state == run_pb2.RUN_STATE_SKIPPED
        assert runs[0].reason == run_pb2.RUN_REASON_JOB_UPDATED
        assert runs[0].nominal_time == job.next_run_time
        assert runs[0].occurrence_count in (9, 10)
    finally:
        await conn.close()


def _interval_job(seconds: int) -> job_pb2.Job:
    return job_pb2.Job(
        schedule=job_pb2.Schedule(
            interval=job_pb2.IntervalSchedule(interval=duration_pb2.Duration(seconds=seconds))
        ),
        target=job_pb2.Target(http=job_pb2.HttpTarget(url="https://x.test/")),
    )


async def _apply_schedule(
    api: ApiClient, name: str, schedule: job_pb2.Schedule
) -> svc.UpdateJobResponse:
    job = job_pb2.Job(name=name)
    job.schedule.CopyFrom(schedule)
    request = svc.UpdateJobRequest(
        job=job, update_mask=field_mask_pb2.FieldMask(paths=["schedule"])
    )
    response: svc.UpdateJobResponse = await api.stub.UpdateJob(request, metadata=api.auth())
    return response


async def _shift_clock(dsn: str, seconds: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            """UPDATE duetime_clock SET "offset" = "offset" + make_interval(secs => $1)""",
            seconds,
        )
    finally:
        await conn.close()


async def test_reapplying_an_unchanged_interval_keeps_its_anchor_and_next_run(
    api: ApiClient,
) -> None:
    created = (
        await api.stub.CreateJob(svc.CreateJobRequest(job=_interval_job(30)), metadata=api.auth())
    ).job
    # The anchor the server chose is shown, and the next run is one interval after it.
    assert created.schedule.interval.HasField("anchor_time")
    assert not created.schedule.interval.HasField("start_time")
    anchor = created.schedule.interval.anchor_time.ToDatetime()
    assert created.next_run_time.ToDatetime() - anchor == timedelta(seconds=30)
    # A team's CI applies the same job file every 20 s, more often than the interval.
    for _ in range(3):
        await _shift_clock(api.dsn, 20)
        answer = await _apply_schedule(api, created.name, _interval_job(30).schedule)
        assert not answer.schedule_changed
        assert answer.job.next_run_time == created.next_run_time
        assert answer.previous_next_run_time == created.next_run_time
        assert answer.job.schedule.interval.anchor_time == created.schedule.interval.anchor_time
    # So does the job read back and applied whole, as `jobs get -o yaml` then `jobs update`.
    read = (await api.stub.GetJob(svc.GetJobRequest(name=created.name), metadata=api.auth())).job
    answer = await _apply_schedule(api, created.name, read.schedule)
    assert not answer.schedule_changed
    assert answer.job.next_run_time == created.next_run_time


async def test_a_changed_schedule_says_how_the_next_run_moved(api: ApiClient) -> None:
    created = (
        await api.stub.CreateJob(svc.CreateJobRequest(job=_interval_job(30)), metadata=api.auth())
    ).job
    await _shift_clock(api.dsn, 10)
    now = await db_now(api.dsn)
    answer = await _apply_schedule(api, created.name, _interval_job(300).schedule)
    assert answer.schedule_changed
    assert answer.previous_next_run_time == created.next_run_time
    # A changed interval is anchored at the update, as documented.
    moved_to = answer.job.next_run_time.ToDatetime(tzinfo=UTC)
    assert timedelta(seconds=299) <= moved_to - now <= timedelta(seconds=301)
    assert answer.job.schedule.interval.anchor_time.ToDatetime(tzinfo=UTC) == moved_to - timedelta(
        seconds=300
    )


async def test_reapplying_a_delay_or_a_cron_keeps_the_next_run(api: ApiClient) -> None:
    delayed = job_pb2.Job(
        schedule=job_pb2.Schedule(
            delay=job_pb2.DelaySchedule(delay=duration_pb2.Duration(seconds=90))
        ),
        target=job_pb2.Target(http=job_pb2.HttpTarget(url="https://x.test/")),
    )
    for job in (delayed, cron_job("*/5 * * * *", "Europe/Berlin")):
        created = (await api.stub.CreateJob(svc.CreateJobRequest(job=job), metadata=api.auth())).job
        await _shift_clock(api.dsn, 30)
        answer = await _apply_schedule(api, created.name, job.schedule)
        assert not answer.schedule_changed
        assert answer.job.next_run_time == created.next_run_time
        assert answer.job.schedule == created.schedule


async def test_a_parent_names_the_callers_own_team_only(api: ApiClient) -> None:
    mine = f"teams/{api.team}"
    created = (
        await api.stub.CreateJob(
            svc.CreateJobRequest(parent=mine, job=cron_job()), metadata=api.auth()
        )
    ).job
    listed = (await api.stub.ListJobs(svc.ListJobsRequest(parent=mine), metadata=api.auth())).jobs
    assert [job.name for job in listed] == [created.name]
    other = f"teams/{api.other_team}"
    for call in (
        api.stub.CreateJob(svc.CreateJobRequest(parent=other, job=cron_job()), metadata=api.auth()),
        api.stub.ListJobs(svc.ListJobsRequest(parent=other), metadata=api.auth()),
    ):
        hidden = await failure(call)
        assert (hidden.code, hidden.reason) == (grpc.StatusCode.NOT_FOUND, "TEAM_NOT_FOUND")
    for call in (
        api.stub.CreateJob(
            svc.CreateJobRequest(parent="team-a", job=cron_job()), metadata=api.auth()
        ),
        api.stub.ListJobs(svc.ListJobsRequest(parent="teams/a/jobs"), metadata=api.auth()),
    ):
        bad = await failure(call)
        assert bad.code == grpc.StatusCode.INVALID_ARGUMENT
        assert bad.fields == {"parent": "must be teams/{team_id}"}
    # Nothing was created in either team by the refused calls.
    assert await count(api.dsn, "jobs") == 1


async def test_a_job_id_alone_names_a_job_of_the_callers_team(api: ApiClient) -> None:
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=cron_job()), metadata=api.auth())).job
    by_id = svc.GetJobRequest(job_id=job.job_id)
    assert (await api.stub.GetJob(by_id, metadata=api.auth())).job == job
    paused = await api.stub.PauseJob(svc.PauseJobRequest(job_id=job.job_id), metadata=api.auth())
    assert paused.job.state == job_pb2.JOB_STATE_PAUSED
    resumed = await api.stub.ResumeJob(
        svc.ResumeJobRequest(job_id=job.job_id, etag=paused.job.etag), metadata=api.auth()
    )
    assert resumed.job.state == job_pb2.JOB_STATE_ACTIVE
    runs = await api.stub.ListRuns(svc.ListRunsRequest(job_id=job.job_id), metadata=api.auth())
    assert list(runs.runs) == []
    # Another team's token finds no job of that id in its own team.
    hidden = await failure(api.stub.GetJob(by_id, metadata=api.auth(api.other_token)))
    assert (hidden.code, hidden.reason) == (grpc.StatusCode.NOT_FOUND, "JOB_NOT_FOUND")

    both = await failure(
        api.stub.GetJob(svc.GetJobRequest(name=job.name, job_id=job.job_id), metadata=api.auth())
    )
    assert both.fields == {"job_id": "set either name or job_id, not both"}
    both = await failure(
        api.stub.ListRuns(
            svc.ListRunsRequest(parent=job.name, job_id=job.job_id), metadata=api.auth()
        )
    )
    assert both.fields == {"job_id": "set either parent or job_id, not both"}
    not_uuid = await failure(
        api.stub.DeleteJob(svc.DeleteJobRequest(job_id="nightly"), metadata=api.auth())
    )
    assert not_uuid.code == grpc.StatusCode.INVALID_ARGUMENT
    assert not_uuid.fields == {"job_id": "job id 'nightly' is not a UUID"}
    neither = await failure(api.stub.DeleteJob(svc.DeleteJobRequest(), metadata=api.auth()))
    assert set(neither.fields) == {"name"}

    await api.stub.DeleteJob(svc.DeleteJobRequest(job_id=job.job_id), metadata=api.auth())
    gone = await failure(api.stub.GetJob(by_id, metadata=api.auth()))
    assert (gone.code, gone.reason) == (grpc.StatusCode.NOT_FOUND, "JOB_NOT_FOUND")
