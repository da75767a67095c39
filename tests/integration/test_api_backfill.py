"""BackfillJob on the real API and PostgreSQL: the count first, one run per occurrence and
request, SKIP_RAN, ONE_AT_A_TIME, the cap and bad ranges, and the team's rate quota pacing the
runs (with the dispatcher's release of held runs and WorkerService in process)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import grpc
import pytest

from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.jobs.v1 import run_pb2
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_core.backfill import MAX_BACKFILL_RUNS
from duetime_core.schedule import Cron, next_fire_time
from duetime_infra.codec.timeconv import datetime_to_timestamp, timestamp_to_datetime
from testkit.api import ApiClient, failure, running_api
from testkit.environments import api_and_workers
from testkit.polling import eventually
from tests.integration.test_api_jobs import cron_job
from tests.integration.test_api_runs import sql
from tests.integration.test_dispatch_quotas import Env

# America/New_York falls back on 2025-11-02 at 06:00 UTC: 01:00-02:00 local happens twice.
FALL_START = datetime(2025, 11, 1, 12, tzinfo=UTC)
FALL_END = datetime(2025, 11, 3, 0, tzinfo=UTC)


@pytest.fixture
async def api(db_dsn: str) -> AsyncIterator[ApiClient]:
    async with running_api(db_dsn) as client:
        yield client


def backfill_request(
    name: str,
    start: datetime | None,
    end: datetime | None,
    request_id: str = "",
    *,
    overlap: int = 0,
    validate_only: bool = False,
) -> svc.BackfillJobRequest:
    request = svc.BackfillJobRequest(
        name=name,
        request_id=request_id,
        overlap=overlap,  # type: ignore[arg-type]
        validate_only=validate_only,
    )
    if start is not None:
        datetime_to_timestamp(start, request.start_time)
    if end is not None:
        datetime_to_timestamp(end, request.end_time)
    return request


def expected(expression: str, zone: str, start: datetime, end: datetime) -> list[datetime]:
    """The schedule's occurrences in [start, end), from the scheduler's own search."""
    found = []
    moment = next_fire_time(Cron(expression, zone), start - timedelta(microseconds=1))
    while moment is not None and moment < end:
        found.append(moment)
        moment = next_fire_time(Cron(expression, zone), moment)
    return found


async def create(api: ApiClient, expression: str = "0 * * * *") -> tuple[str, str]:
    job = cron_job(expression)
    created = await api.stub.CreateJob(svc.CreateJobRequest(job=job), metadata=api.auth())
    return created.job.name, created.job.job_id


async def backfill_runs(api: ApiClient, job_id: str) -> list[tuple[datetime, str, str]]:
    rows = await sql(
        api.dsn,
        "SELECT nominal_time, origin, state FROM runs WHERE job_id = $1 AND origin <> 'SCHEDULE' "
        "ORDER BY nominal_time, origin",
        uuid.UUID(job_id),
    )
    return [(r["nominal_time"], r["origin"], r["state"]) for r in rows]


async def test_a_backfill_counts_first_then_makes_one_run_per_occurrence_once(
    api: ApiClient,
) -> None:
    name, job_id = await create(api)
    times = expected("0 * * * *", "America/New_York", FALL_START, FALL_END)
    assert len(times) == 36  # both 01:00s of the fall-back night

    counted = await api.stub.BackfillJob(
        backfill_request(name, FALL_START, FALL_END, validate_only=True), metadata=api.auth()
    )
    assert (counted.occurrence_count, counted.run_count, counted.skipped_count) == (36, 36, 0)
    assert timestamp_to_datetime(counted.first_occurrence_time) == times[0]
    assert timestamp_to_datetime(counted.last_occurrence_time) == times[-1]
    assert await backfill_runs(api, job_id) == []

    request = backfill_request(name, FALL_START, FALL_END, "fill-1")
    done = await api.stub.BackfillJob(request, metadata=api.auth())
    assert (done.occurrence_count, done.run_count) == (36, 36)
    made = await backfill_runs(api, job_id)
    assert [t for t, _, _ in made] == times
    assert {(o, s) for _, o, s in made} == {("BACKFILL:fill-1", "QUEUED")}
    outbox = await sql(api.dsn, "SELECT count(*) AS n FROM outbox")
    assert outbox[0]["n"] == 36

    again = await api.stub.BackfillJob(request, metadata=api.auth())
    assert (again.occurrence_count, again.run_count) == (36, 36)
    assert len(await backfill_runs(api, job_id)) == 36
    assert (await sql(api.dsn, "SELECT count(*) AS n FROM outbox"))[0]["n"] == 36
    reused = await failure(
        api.stub.BackfillJob(
            backfill_request(name, FALL_START, FALL_END - timedelta(hours=1), "fill-1"),
            metadata=api.auth(),
        )
    )
    assert reused.code == grpc.StatusCode.ALREADY_EXISTS

    listed = await api.stub.ListRuns(
        svc.ListRunsRequest(parent=name, filter="origin = BACKFILL", page_size=100),
        metadata=api.auth(),
    )
    assert len(listed.runs) == 36
    run = listed.runs[0]
    assert run.origin == run_pb2.RUN_ORIGIN_BACKFILL
    assert run.backfill_request_id == "fill-1"
    nominal = timestamp_to_datetime(run.nominal_time).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert run.idempotency_key == f"{job_id}/backfill/fill-1/{nominal}"


async def test_skip_ran_leaves_out_only_occurrences_that_succeeded_or_are_active(
    api: ApiClient,
) -> None:
    name, job_id = await create(api)
    first_half = FALL_START + timedelta(hours=12)
    await api.stub.BackfillJob(
        backfill_request(name, FALL_START, first_half, "a"), metadata=api.auth()
    )
    # Of the first backfill's 12 runs: 3 failed for good, 2 succeeded, the rest still queued.
    await sql(
        api.dsn,
        "UPDATE runs SET state = CASE WHEN nominal_time < $2 THEN 'DEAD_LETTERED' "
        "ELSE 'SUCCEEDED' END WHERE job_id = $1 AND nominal_time < $3",
        uuid.UUID(job_id),
        FALL_START + timedelta(hours=3),
        FALL_START + timedelta(hours=5),
    )
    skip = svc.BACKFILL_OVERLAP_SKIP_RAN
    counting = backfill_request(name, FALL_START, FALL_END, validate_only=True, overlap=skip)
    counted = await api.stub.BackfillJob(counting, metadata=api.auth())
    assert (counted.occurrence_count, counted.run_count, counted.skipped_count) == (36, 27, 9)

    # Two SKIP_RAN backfills of the same range at once, held together on the team's usage row
    # (their admission locks it) until both wait: no occurrence gets a second run.
    # Connections for both in the API's pool first: a new one is slow on a busy server.
    await asyncio.gather(*(api.stub.BackfillJob(counting, metadata=api.auth()) for _ in range(4)))
    blocker = await asyncpg.connect(api.dsn)
    try:
        held = blocker.transaction()
        await held.start()
        await blocker.execute("SELECT 1 FROM team_usage WHERE team_id = $1 FOR UPDATE", api.team)
        calls = [
            asyncio.ensure_future(
                api.stub.BackfillJob(
                    backfill_request(name, FALL_START, FALL_END, rid, overlap=skip),
                    metadata=api.auth(),
                )
            )
            for rid in ("b", "c")
        ]

        async def both_wait() -> bool:
            waiting = await blocker.fetchval(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            return int(waiting) == 2

        await eventually(both_wait, 10, "both backfills waiting")
        await held.rollback()
        both = await asyncio.gather(*calls)
    finally:
        await blocker.close()
    assert sorted(r.run_count for r in both) == [0, 27]
    made = await backfill_runs(api, job_id)
    active_or_done = [t for t, _, s in made if s != "DEAD_LETTERED"]
    assert len(active_or_done) == len(set(active_or_done)) == 36
    failed_again = [
        t for t, o, _ in made if o != "BACKFILL:a" and t < FALL_START + timedelta(hours=3)
    ]
    assert len(failed_again) == 3


async def test_bad_ranges_and_requests_are_refused_naming_the_field_and_write_nothing(
    api: ApiClient,
) -> None:
    name, job_id = await create(api, "* * * * *")
    now = datetime.now(UTC)
    cases = [
        (backfill_request(name, None, FALL_END, "x"), "start_time"),
        (backfill_request(name, FALL_START, None, "x"), "end_time"),
        (backfill_request(name, FALL_END, FALL_START, "x"), "end_time"),
        (backfill_request(name, FALL_START, now + timedelta(hours=1), "x"), "end_time"),
        (backfill_request(name, datetime(2015, 1, 1, tzinfo=UTC), FALL_END, "x"), "end_time"),
        (backfill_request(name, FALL_START, FALL_END), "request_id"),
        (backfill_request(name, FALL_START, FALL_END, "x", overlap=7), "overlap"),
        (backfill_request(name.replace(job_id, "nope"), FALL_START, FALL_END, "x"), "name"),
    ]
    for request, field in cases:
        refused = await failure(api.stub.BackfillJob(request, metadata=api.auth()))
        assert refused.code == grpc.StatusCode.INVALID_ARGUMENT, (field, refused)
        assert field in refused.fields, (field, refused)

    # Every minute for eight days: 11,520 occurrences, past the cap.
    start = datetime(2025, 3, 1, tzinfo=UTC)
    request = backfill_request(name, start, start + timedelta(days=8), "x")
    refused = await failure(api.stub.BackfillJob(request, metadata=api.auth()))
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "11520" in refused.fields["end_time"]
    assert str(MAX_BACKFILL_RUNS) in refused.fields["end_time"]
    assert await backfill_runs(api, job_id) == []

    other = await failure(
        api.stub.BackfillJob(
            backfill_request(name, FALL_START, FALL_END, "x"), metadata=api.auth(api.other_token)
        )
    )
    assert other.code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED)


async def test_a_paused_job_is_backfilled_and_a_deleted_one_is_not_found(api: ApiClient) -> None:
    name, _ = await create(api)
    job = (await api.stub.GetJob(svc.GetJobRequest(name=name), metadata=api.auth())).job
    await api.stub.PauseJob(svc.PauseJobRequest(name=name, etag=job.etag), metadata=api.auth())
    done = await api.stub.BackfillJob(
        backfill_request(name, FALL_START, FALL_START + timedelta(hours=3), "p"),
        metadata=api.auth(),
    )
    assert done.run_count == 3
    job = (await api.stub.GetJob(svc.GetJobRequest(name=name), metadata=api.auth())).job
    await api.stub.DeleteJob(svc.DeleteJobRequest(name=name, etag=job.etag), metadata=api.auth())
    gone = await failure(
        api.stub.BackfillJob(backfill_request(name, FALL_START, FALL_END, "d"), metadata=api.auth())
    )
    assert gone.code == grpc.StatusCode.NOT_FOUND


@pytest.fixture
async def env(db_dsn: str) -> AsyncIterator[Env]:
    async with api_and_workers(db_dsn) as both:
        yield Env(*both)


async def test_one_at_a_time_runs_each_occurrence_after_the_previous_ended(env: Env) -> None:
    name, _ = await create(env.api)
    done = await env.api.stub.BackfillJob(
        backfill_request(
            name,
            FALL_START,
            FALL_START + timedelta(hours=3),
            "one",
            overlap=svc.BACKFILL_OVERLAP_ONE_AT_A_TIME,
        ),
        metadata=env.api.auth(),
    )
    assert done.run_count == 3
    order = []
    for _ in range(3):
        runs = [r for r in await env.runs() if r["origin"] == "BACKFILL:one"]
        queued = [r for r in runs if r["state"] == "QUEUED"]
        assert len(queued) == 1, [(r["state"], r["reason"]) for r in runs]
        waiting = [r for r in runs if r["state"] == "WAITING"]
        assert all(r["reason"] == "BACKFILL_TURN" for r in waiting)
        assert all(r["nominal_time"] > queued[0]["nominal_time"] for r in waiting)
        order.append(queued[0]["nominal_time"])
        await env.run_through(queued[0]["run_id"])
    assert order == sorted(order)
    assert {r["state"] for r in await env.runs() if r["origin"] == "BACKFILL:one"} == {"SUCCEEDED"}


async def test_a_backfill_is_paced_by_the_teams_rate_quota(env: Env) -> None:
    """300 occurrences under 20 dispatches a second (burst 5): the dispatcher's release of
    held runs lets them go at that rate, within 5 %, oldest occurrence first."""
    rate, burst, count = 20, 5, 300
    await env.quota(env.api.team, runs_per_minute=rate * 60, rate_burst=burst)
    name, _ = await create(env.api, "* * * * *")
    start = FALL_START
    done = await env.api.stub.BackfillJob(
        backfill_request(name, start, start + timedelta(minutes=count), "paced"),
        metadata=env.api.auth(),
    )
    assert done.run_count == count
    deadline = asyncio.get_running_loop().time() + 60
    while len(await env.dispatched()) < count:
        assert asyncio.get_running_loop().time() < deadline, "not all dispatched in time"
        await env.release()
        await asyncio.sleep(0.01)
    sent = await env.dispatched()
    assert len(sent) == count
    assert len({d.run_id for d in sent}) == count
    nominal = [d.nominal_time.ToDatetime() for d in sent]
    assert nominal == sorted(nominal)
    enqueued = [d.enqueue_time.ToDatetime() for d in sent]
    span = (enqueued[-1] - enqueued[0]).total_seconds()
    ideal = (count - burst) / rate
    assert ideal * 0.95 <= span <= ideal * 1.05, (span, ideal)
    # And never faster than the quota, over any stretch: GCRA's bound.
    for i, at in enumerate(enqueued):
        allowed = burst + rate * (at - enqueued[0]).total_seconds()
        assert i + 1 <= allowed * 1.05 + 1, (i, at)
    started = await env.w.start(uuid.UUID(sent[0].run_id), delivery="d-0")
    assert started.decision == wpb.START_DECISION_STARTED


async def test_an_occurrence_a_backfill_ran_explains_as_such(api: ApiClient) -> None:
    name, job_id = await create(api)
    await api.stub.BackfillJob(
        backfill_request(name, FALL_START, FALL_START + timedelta(hours=2), "e1"),
        metadata=api.auth(),
    )
    request = svc.ExplainOccurrenceRequest(job=name)
    request.time.FromDatetime(FALL_START)
    alone = await api.stub.ExplainOccurrence(request, metadata=api.auth())
    assert alone.fate == svc.OCCURRENCE_FATE_RAN
    assert alone.run.origin == run_pb2.RUN_ORIGIN_BACKFILL
    assert "It was run by a backfill (request e1), not on schedule." in alone.explanation

    # The schedule's own run of the instant stands for it; the backfill's is told beside it.
    await sql(
        api.dsn,
        "INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time, effective_time, "
        "origin, state, attempt_limit, job_version) "
        "SELECT gen_random_uuid(), job_id, team_id, partition, nominal_time, effective_time, "
        "'SCHEDULE', 'MISSED', attempt_limit, job_version FROM runs "
        "WHERE job_id = $1 AND nominal_time = $2",
        uuid.UUID(job_id),
        FALL_START,
    )
    both = await api.stub.ExplainOccurrence(request, metadata=api.auth())
    assert both.fate == svc.OCCURRENCE_FATE_MISSED
    assert both.run.origin == run_pb2.RUN_ORIGIN_SCHEDULE
    assert "A backfill (request e1) ran it again: that run is QUEUED." in both.explanation
