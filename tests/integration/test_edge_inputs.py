"""Inputs the fuzz test (test_fuzz.py, bench/fuzz) found answered INTERNAL, each refused now as
INVALID_ARGUMENT naming the field, with nothing stored: instants at the ends of protobuf's
range, NUL in text PostgreSQL stores, and an error report holding NUL kept as text."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from duetime.admin.v1 import admin_service_pb2 as admin
from duetime.jobs.v1 import job_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.worker.v1 import worker_service_pb2 as wpb
from testkit.api import failure, running_api
from testkit.fuzz import MAX_SECONDS, MIN_SECONDS, fingerprint
from testkit.worker_api import create_job, job_message, running_worker_api, trigger

pytestmark = pytest.mark.timeout(60)


def at(seconds: int) -> job_pb2.Schedule:
    return job_pb2.Schedule(at=job_pb2.AtSchedule(run_time=Timestamp(seconds=seconds)))


@pytest.mark.parametrize("seconds", [MIN_SECONDS, MIN_SECONDS + 86_400, MAX_SECONDS])
async def test_instants_at_the_ends_of_the_range_are_refused_before_anything_is_stored(
    db_dsn: str, seconds: int
) -> None:
    async with running_api(db_dsn) as api, running_worker_api(db_dsn) as w:
        before = await fingerprint(w.db)
        job = job_message()
        job.schedule.CopyFrom(at(seconds))
        created = await failure(
            api.stub.CreateJob(svc.CreateJobRequest(job=job), metadata=api.auth())
        )
        assert created.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "between 0001-01-04 and 9999-12-28" in created.fields["job.schedule.at.run_time"]
        for request in (
            svc.PreviewScheduleRequest(schedule=at(seconds)),
            svc.PreviewScheduleRequest(
                schedule=job.schedule, start_time=Timestamp(seconds=seconds)
            ),
        ):
            refused = await failure(api.stub.PreviewSchedule(request, metadata=api.auth()))
            assert refused.code == grpc.StatusCode.INVALID_ARGUMENT
        local = job_message()
        local.schedule.at.local_time = "0001-01-01T00:00:00"
        local.schedule.at.time_zone = "Pacific/Kiritimati"
        refused = await failure(
            api.stub.CreateJob(svc.CreateJobRequest(job=local), metadata=api.auth())
        )
        assert "job.schedule.at.local_time" in refused.fields
        assert await fingerprint(w.db) == before


async def test_text_with_nul_is_refused_naming_the_field(db_dsn: str) -> None:
    async with running_api(db_dsn) as api, running_worker_api(db_dsn) as w:
        job = await create_job(api)
        run_id = await trigger(api, job, "r1")
        before = await fingerprint(w.db)
        operator = api.auth(api.operator_token)
        cases = [
            (
                api.admin.CreateToken(
                    admin.CreateTokenRequest(
                        token=admin.Token(role=admin.TOKEN_ROLE_WORKER, description="a\x00b")
                    ),
                    metadata=operator,
                ),
                "token.description",
            ),
            (
                api.admin.CreateTeam(
                    admin.CreateTeamRequest(team=admin.Team(team_id="t-nul", display_name="\x00")),
                    metadata=operator,
                ),
                "team.display_name",
            ),
            (
                api.admin.CreateTeam(
                    admin.CreateTeamRequest(
                        team=admin.Team(team_id="t-url", notification_url="https://h/\x00")
                    ),
                    metadata=operator,
                ),
                "team.notification_url",
            ),
            (w.start(run_id, worker="w\x00"), "worker_id"),
            (w.start(run_id, delivery="d\x00"), "delivery_id"),
        ]
        for call, field in cases:
            refused = await failure(call)
            assert (refused.code, list(refused.fields)) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                [field],
            )
        assert await fingerprint(w.db) == before
        # A worker's error text is diagnostics: kept, its NUL shown as U+FFFD.
        assert (await w.start(run_id)).decision == wpb.START_DECISION_STARTED
        await w.complete(run_id, 1, wpb.ATTEMPT_RESULT_FAILED, error="bad\x00byte")
        (attempt,) = await w.attempts(run_id)
        assert attempt["error"] == "bad\ufffdbyte"
