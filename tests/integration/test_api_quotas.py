"""Team quotas at the API, and the operator contract (AdminService), on real PostgreSQL."""

from __future__ import annotations

import asyncpg
import grpc
from google.protobuf import field_mask_pb2

from duetime.admin.v1 import admin_service_pb2 as admin
from duetime.jobs.v1 import job_pb2, quota_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime_infra.admin import create_worker_token
from testkit.api import ApiClient, failure
from testkit.jobs import interval_job


def op(api: ApiClient) -> tuple[tuple[str, str], ...]:
    return api.auth(api.operator_token)


async def set_quota(api: ApiClient, team: str, **limits: int | None) -> admin.Team:
    """Sets (or, with None, resets) the team's limits through AdminService."""
    quota = admin.QuotaOverrides()
    for name, value in limits.items():
        if value is not None:
            setattr(quota, name, value)
    response = await api.admin.UpdateTeamQuota(
        admin.UpdateTeamQuotaRequest(
            name=f"teams/{team}",
            quota=quota,
            update_mask=field_mask_pb2.FieldMask(paths=list(limits)),
        ),
        metadata=op(api),
    )
    return response.team


async def stored(api: ApiClient) -> dict[str, int]:
    conn = await asyncpg.connect(api.dsn)
    try:
        rows = await conn.fetch("SELECT state, count(*) AS n FROM jobs GROUP BY state")
        return {r["state"]: r["n"] for r in rows}
    finally:
        await conn.close()


async def create(api: ApiClient, job: job_pb2.Job) -> job_pb2.Job:
    return (await api.stub.CreateJob(svc.CreateJobRequest(job=job), metadata=api.auth())).job


async def test_jobs_past_the_stored_jobs_quota_are_refused_with_quota_failure_and_not_stored(
    api: ApiClient,
) -> None:
    await set_quota(api, api.team, max_stored_jobs=2)
    first = await create(api, interval_job(60))
    await create(api, interval_job(60))
    refused = await failure(
        api.stub.CreateJob(svc.CreateJobRequest(job=interval_job(60)), metadata=api.auth())
    )
    assert refused.code is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refused.reason == "STORED_JOBS_QUOTA"
    assert refused.quotas == {"max_stored_jobs": {"limit": "2", "usage": "2"}}
    assert await stored(api) == {"ACTIVE": 2}
    # A paused job still counts; a deleted one frees its place.
    paused = (
        await api.stub.PauseJob(svc.PauseJobRequest(name=first.name), metadata=api.auth())
    ).job
    assert (
        await failure(
            api.stub.CreateJob(svc.CreateJobRequest(job=interval_job(60)), metadata=api.auth())
        )
    ).code is grpc.StatusCode.RESOURCE_EXHAUSTED
    await api.stub.DeleteJob(svc.DeleteJobRequest(name=paused.name), metadata=api.auth())
    await create(api, interval_job(60))
    assert await stored(api) == {"ACTIVE": 2, "DELETED": 1}


async def test_resume_is_refused_while_the_team_is_over_a_lowered_quota(api: ApiClient) -> None:
    jobs = [await create(api, interval_job(60)) for _ in range(3)]
    paused = (
        await api.stub.PauseJob(svc.PauseJobRequest(name=jobs[0].name), metadata=api.auth())
    ).job
    await set_quota(api, api.team, max_stored_jobs=2)
    refused = await failure(
        api.stub.ResumeJob(svc.ResumeJobRequest(name=paused.name), metadata=api.auth())
    )
    assert refused.code is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refused.quotas["max_stored_jobs"] == {"limit": "2", "usage": "3"}
    again = (await api.stub.GetJob(svc.GetJobRequest(name=paused.name), metadata=api.auth())).job
    assert again.state == job_pb2.JOB_STATE_PAUSED
    assert again.etag == paused.etag
    await set_quota(api, api.team, max_stored_jobs=None)  # back to the default
    resumed = (
        await api.stub.ResumeJob(svc.ResumeJobRequest(name=paused.name), metadata=api.auth())
    ).job
    assert resumed.state == job_pb2.JOB_STATE_ACTIVE


async def test_a_priority_above_the_teams_grant_is_refused_until_an_operator_grants_it(
    api: ApiClient,
) -> None:
    high = interval_job(60, priority=job_pb2.PRIORITY_HIGH)
    refused = await failure(api.stub.CreateJob(svc.CreateJobRequest(job=high), metadata=api.auth()))
    assert refused.code is grpc.StatusCode.PERMISSION_DENIED
    assert refused.reason == "PRIORITY_NOT_GRANTED"
    assert refused.quotas == {"max_priority": {"limit": "NORMAL", "usage": "HIGH"}}
    assert await stored(api) == {}
    normal = await create(api, interval_job(60))
    raised = job_pb2.Job(name=normal.name, priority=job_pb2.PRIORITY_HIGH)
    update = svc.UpdateJobRequest(
        job=raised, update_mask=field_mask_pb2.FieldMask(paths=["priority"])
    )
    assert (
        await failure(api.stub.UpdateJob(update, metadata=api.auth()))
    ).code is grpc.StatusCode.PERMISSION_DENIED
    unchanged = (
        await api.stub.GetJob(svc.GetJobRequest(name=normal.name), metadata=api.auth())
    ).job
    assert (unchanged.priority, unchanged.etag) == (job_pb2.PRIORITY_NORMAL, normal.etag)
    # The grant takes effect at once, without a restart.
    await set_quota(api, api.team, max_priority=job_pb2.PRIORITY_HIGH)
    assert (await api.stub.UpdateJob(update, metadata=api.auth())).job.priority == (
        job_pb2.PRIORITY_HIGH
    )
    await create(api, high)
    # The other team was granted nothing.
    other = await failure(
        api.stub.CreateJob(svc.CreateJobRequest(job=high), metadata=api.auth(api.other_token))
    )
    assert other.code is grpc.StatusCode.PERMISSION_DENIED


async def test_a_team_reads_its_own_quota_and_usage(api: ApiClient) -> None:
    await set_quota(api, api.team, max_stored_jobs=10, runs_per_minute=120, rate_burst=4)
    await create(api, interval_job(60))
    response = await api.stub.GetTeamQuota(svc.GetTeamQuotaRequest(), metadata=api.auth())
    assert response.name == f"teams/{api.team}"
    assert (response.quota.max_stored_jobs, response.quota.runs_per_minute) == (10, 120)
    assert response.quota.max_priority == job_pb2.PRIORITY_NORMAL
    assert (response.usage.stored_jobs, response.usage.rate_available) == (1, 4)
    other = await failure(
        api.stub.GetTeamQuota(
            svc.GetTeamQuotaRequest(name=f"teams/{api.other_team}"), metadata=api.auth()
        )
    )
    assert other.code is grpc.StatusCode.NOT_FOUND


async def test_the_operator_contract_is_refused_to_team_and_worker_tokens(api: ApiClient) -> None:
    conn = await asyncpg.connect(api.dsn)
    try:
        worker = await create_worker_token(conn)
    finally:
        await conn.close()
    for token in (api.token, worker):
        refused = await failure(
            api.admin.ListTeams(admin.ListTeamsRequest(), metadata=api.auth(token))
        )
        assert (refused.code, refused.reason) == (
            grpc.StatusCode.PERMISSION_DENIED,
            "WRONG_TOKEN_ROLE",
        )
    assert (
        await failure(
            api.stub.ListJobs(svc.ListJobsRequest(), metadata=api.auth(api.operator_token))
        )
    ).code is grpc.StatusCode.PERMISSION_DENIED


async def test_operators_manage_teams_tokens_and_the_default_quota(api: ApiClient) -> None:
    made = (
        await api.admin.CreateTeam(
            admin.CreateTeamRequest(
                team=admin.Team(team_id="search", display_name="Search", notification_url="")
            ),
            metadata=op(api),
        )
    ).team
    assert (made.name, made.quota.weight, made.usage.stored_jobs) == ("teams/search", 1, 0)
    assert not made.quota_overrides.HasField("weight")
    exists = await failure(
        api.admin.CreateTeam(
            admin.CreateTeamRequest(team=admin.Team(team_id="search")), metadata=op(api)
        )
    )
    assert exists.code is grpc.StatusCode.ALREADY_EXISTS
    bad = await failure(
        api.admin.CreateTeam(
            admin.CreateTeamRequest(team=admin.Team(team_id="Bad Id", notification_url="ftp:x")),
            metadata=op(api),
        )
    )
    assert set(bad.fields) == {"team.team_id", "team.notification_url"}
    bad_quota = await failure(
        api.admin.UpdateTeamQuota(
            admin.UpdateTeamQuotaRequest(
                name="teams/search",
                quota=admin.QuotaOverrides(weight=0, rate_burst=0),
                update_mask=field_mask_pb2.FieldMask(paths=["weight", "rate_burst", "nope"]),
            ),
            metadata=op(api),
        )
    )
    assert set(bad_quota.fields) == {"quota.weight", "quota.rate_burst", "update_mask"}
    team = await set_quota(api, "search", weight=5, max_running=7)
    assert (team.quota.weight, team.quota.max_running, team.quota_overrides.weight) == (5, 7, 5)

    created = await api.admin.CreateToken(
        admin.CreateTokenRequest(
            token=admin.Token(role=admin.TOKEN_ROLE_TEAM, team_id="search", description="ci")
        ),
        metadata=op(api),
    )
    assert created.secret.startswith("dtt_")
    jobs = await api.stub.ListJobs(svc.ListJobsRequest(), metadata=api.auth(created.secret))
    assert list(jobs.jobs) == []
    listed = await api.admin.ListTokens(admin.ListTokensRequest(team_id="search"), metadata=op(api))
    assert [t.name for t in listed.tokens] == [created.token.name]
    revoked = await api.admin.RevokeToken(
        admin.RevokeTokenRequest(name=created.token.name), metadata=op(api)
    )
    assert revoked.token.HasField("revoke_time")
    assert (
        await api.admin.ListTokens(admin.ListTokensRequest(team_id="search"), metadata=op(api))
    ).tokens == []

    pages: list[str] = []
    token = ""
    while True:
        page = await api.admin.ListTeams(
            admin.ListTeamsRequest(page_size=2, page_token=token), metadata=op(api)
        )
        pages.extend(t.team_id for t in page.teams)
        token = page.next_page_token
        if not token:
            break
    assert pages == ["search", "team-a", "team-b"]

    defaults = await api.admin.UpdateQuotaDefaults(
        admin.UpdateQuotaDefaultsRequest(
            quota=quota_pb2.TeamQuota(max_stored_jobs=1),
            update_mask=field_mask_pb2.FieldMask(paths=["max_stored_jobs"]),
        ),
        metadata=op(api),
    )
    assert defaults.quota.max_stored_jobs == 1
    await create(api, interval_job(60))
    assert (
        await failure(
            api.stub.CreateJob(svc.CreateJobRequest(job=interval_job(60)), metadata=api.auth())
        )
    ).code is grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_a_worker_token_is_bound_to_a_worker_id_prefix_and_no_other_token_is(
    api: ApiClient,
) -> None:
    def create(role: admin.TokenRole.ValueType, prefix: str) -> admin.CreateTokenRequest:
        return admin.CreateTokenRequest(
            token=admin.Token(
                role=role,
                worker_id_prefix=prefix,
                team_id=api.team if role == admin.TOKEN_ROLE_TEAM else "",
            )
        )

    created = await api.admin.CreateToken(
        create(admin.TOKEN_ROLE_WORKER, "fleet-a-"), metadata=op(api)
    )
    assert created.secret.startswith("dtw_")
    assert created.token.worker_id_prefix == "fleet-a-"
    listed = await api.admin.ListTokens(admin.ListTokensRequest(), metadata=op(api))
    assert {t.token_id: t.worker_id_prefix for t in listed.tokens}[created.token.token_id] == (
        "fleet-a-"
    )
    for role in (admin.TOKEN_ROLE_TEAM, admin.TOKEN_ROLE_OPERATOR):
        bad = await failure(api.admin.CreateToken(create(role, "fleet-a-"), metadata=op(api)))
        assert (bad.code, set(bad.fields)) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            {"token.worker_id_prefix"},
        )
    control = create(admin.TOKEN_ROLE_WORKER, "a\nb")
    bad = await failure(api.admin.CreateToken(control, metadata=op(api)))
    assert set(bad.fields) == {"token.worker_id_prefix"}
