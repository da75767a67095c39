"""Secrets at rest on real PostgreSQL: re-sealing under a new key while the API keeps changing
jobs, clear documents of older builds sealed too, the old key removed afterwards, and the
scheduler still handing every run the right values; a value whose key is gone refuses the
start cleanly."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta

import asyncpg
import grpc
import pytest
from google.protobuf import field_mask_pb2

from duetime.jobs.v1 import job_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_infra.pg.pool import create_pool
from duetime_infra.pg.teams.signing_keys import add_signing_key, retire_signing_key, team_signing
from duetime_infra.secrets.keyring import new_keyring
from duetime_infra.secrets.rotate import rotate
from duetime_infra.secrets.sealing import SecretBox
from testkit.api import ApiClient, failure, running_api
from testkit.worker_api import WorkerClient, create_job, running_worker_api

pytestmark = pytest.mark.timeout(120)

OLD = new_keyring("old")
NEW = OLD.with_new_key("new")
AFTER = NEW.without("old")


def secret_job(i: int) -> job_pb2.Job:
    job = job_pb2.Job(
        display_name=f"rotation {i}",
        schedule=job_pb2.Schedule(
            cron=job_pb2.CronSchedule(expression="0 0 1 1 *", time_zone="UTC")
        ),
    )
    if i % 3 == 2:
        job.target.container.image = "registry.example.com/task:1"
        job.target.container.env["TOKEN"] = f"env-secret-{i}"
    else:
        job.target.http.url = "https://billing.internal/run"
        job.target.http.headers["Authorization"] = f"Bearer header-secret-{i}"
    return job


async def stored_documents(db: asyncpg.Connection[asyncpg.Record]) -> list[str]:
    rows = await db.fetch(
        "SELECT spec::text AS spec FROM jobs UNION ALL SELECT spec::text FROM job_versions"
    )
    return [r["spec"] for r in rows]


def values_of(document: str) -> list[object]:
    target = json.loads(document)["target"]
    return [*target.get("headers", {}).values(), *target.get("env", {}).values()]


async def started_secrets(worker: WorkerClient, job: job_pb2.Job) -> dict[str, str]:
    run_id = await worker.queue_scheduled_run(job.job_id, await worker.now() - timedelta(seconds=1))
    started = await worker.start(run_id, delivery=f"d-{run_id}")
    assert started.decision == wpb.START_DECISION_STARTED
    target = started.run.target
    return dict(target.http.headers) if target.HasField("http") else dict(target.container.env)


async def update_until(api: ApiClient, jobs: list[job_pb2.Job], stop: asyncio.Event) -> int:
    """Changes the jobs' secrets round after round (keeping one value by ``[REDACTED]``) until
    ``stop``; how many updates were made."""
    made = 0
    while not stop.is_set():
        for i, job in enumerate(jobs):
            current = (
                await api.stub.GetJob(svc.GetJobRequest(name=job.name), metadata=api.auth())
            ).job
            if current.target.HasField("http"):
                current.target.http.headers["X-Round"] = f"round-secret-{made}"
            else:
                current.target.container.env["ROUND"] = f"round-secret-{made}"
            await api.stub.UpdateJob(
                svc.UpdateJobRequest(
                    job=current, update_mask=field_mask_pb2.FieldMask(paths=["target"])
                ),
                metadata=api.auth(),
            )
            made += 1
            jobs[i] = current
    return made


async def test_rotation_while_the_api_writes_then_the_old_key_goes(db_dsn: str) -> None:
    async with running_api(db_dsn, SecretBox(OLD)) as api:
        jobs = [await create_job(api, secret_job(i)) for i in range(30)]
    db = await asyncpg.connect(db_dsn)
    try:
        # Two documents as an older build wrote them: values in clear.
        legacy = jobs[0]
        for table in ("jobs", "job_versions"):
            await db.execute(
                f"UPDATE {table} SET spec = jsonb_set(spec, '{{target,headers}}', $2::jsonb) "
                "WHERE job_id = $1",
                uuid.UUID(legacy.job_id),
                json.dumps({"Authorization": "Bearer legacy-clear"}),
            )
        # Every API runs with the new keyring (new key current) while the rotation goes on.
        async with running_api(db_dsn, SecretBox(NEW)) as api:
            pool = await create_pool(db_dsn, max_size=2)
            stop = asyncio.Event()
            busy = jobs[10:20]
            writer = asyncio.create_task(update_until(api, busy, stop))
            try:
                done = await rotate(pool, SecretBox(NEW), batch_size=7)
            finally:
                stop.set()
                updates = await writer
                await pool.close()
            assert updates > 0
            assert done.resealed >= 60  # every job and its versions
        documents = await stored_documents(db)
        for document in documents:
            assert all(isinstance(v, dict) and v["key_id"] == "new" for v in values_of(document))
            assert "secret-" not in document
            assert "legacy-clear" not in document
        # The old key removed: the scheduler opens every run's values.
        async with running_worker_api(db_dsn, secrets=SecretBox(AFTER)) as worker:
            assert await started_secrets(worker, legacy) == {"Authorization": "Bearer legacy-clear"}
            for i, job in enumerate(jobs[1:10], start=1):
                seen = await started_secrets(worker, job)
                name, prefix = (
                    ("TOKEN", "env") if i % 3 == 2 else ("Authorization", "Bearer header")
                )
                assert seen == {name: f"{prefix}-secret-{i}"}
            for job in busy:
                seen = await started_secrets(worker, job)
                assert any(v.startswith("round-secret-") for v in seen.values())
    finally:
        await db.close()


async def test_a_secret_whose_key_is_gone_refuses_the_start_and_dead_letters(
    db_dsn: str,
) -> None:
    async with running_api(db_dsn, SecretBox(OLD)) as api:
        job = await create_job(api, secret_job(0))
    async with running_worker_api(db_dsn, secrets=SecretBox(AFTER)) as worker:
        single = await worker.queue_scheduled_run(job.job_id, await worker.now())
        refused = await failure(worker.start(single))
        assert (refused.code, refused.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "SECRET_UNREADABLE",
        )
        assert "old" in refused.message
        batched = await worker.queue_scheduled_run(
            job.job_id, await worker.now() - timedelta(seconds=1)
        )
        start = wpb.StartAttemptRequest(run_id=str(batched), delivery_id="d-2", worker_id="w-1")
        batch = await worker.stub.StartAttempts(
            wpb.StartAttemptsRequest(starts=[start]), metadata=worker.auth()
        )
        (result,) = batch.results
        assert (result.error.code, result.error.reason) == (
            "FAILED_PRECONDITION",
            "SECRET_UNREADABLE",
        )
        # Neither holds an attempt nobody runs: each ended at once, dead-lettered.
        for run_id in (single, batched):
            run = await worker.run_row(run_id)
            assert (run["state"], run["reason"]) == ("DEAD_LETTERED", "NON_RETRYABLE")
            assert "not in the keyring" in run["reason_detail"]
            (attempt,) = await worker.attempts(run_id)
            assert (attempt["outcome"], attempt["call_progress"]) == ("FAILED", "NOT_BEGUN")


async def test_rotation_seals_the_teams_signing_keys_again(db_dsn: str) -> None:
    async with running_api(db_dsn, SecretBox(OLD)) as api:
        conn = await asyncpg.connect(db_dsn)
        try:
            kept, key = await add_signing_key(conn, SecretBox(OLD), api.team)
            retired, _ = await add_signing_key(conn, SecretBox(OLD), api.other_team)
            await retire_signing_key(conn, api.other_team, retired.key_id)
        finally:
            await conn.close()
        pool = await create_pool(db_dsn, max_size=2)
        try:
            done = await rotate(pool, SecretBox(NEW))
            assert done.signing_keys == 1
            assert await pool.fetchval(
                "SELECT array_agg(DISTINCT sealed_key_id) FROM team_signing_keys "
                "WHERE retire_time IS NULL"
            ) == ["new"]
            # The old key can go: the keys open without it, as they were.
            opened = await team_signing(pool, SecretBox(AFTER), api.team)
            assert [k.key_id for k in opened.keys] == [kept.key_id]
            assert opened.keys[0].secret == key.secret
            assert opened.keys[0].public_jwk() == key.public_jwk()
            assert (await rotate(pool, SecretBox(AFTER))).signing_keys == 0
        finally:
            await pool.close()
