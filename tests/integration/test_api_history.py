"""A job's history on real PostgreSQL: pause notes kept with the job, and ListJobVersions with
each change's author (the token), call and fields, secrets redacted."""

from __future__ import annotations

import uuid

import grpc
from google.protobuf import field_mask_pb2

from duetime.admin.v1 import admin_service_pb2 as admin
from duetime.jobs.v1 import job_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from testkit.api import ApiClient, failure
from tests.integration.test_api_jobs import cron_job
from tests.integration.test_api_runs import sql


async def deploy_token(api: ApiClient) -> tuple[str, str]:
    """A second token of the team, made by an operator: its secret and its name."""
    made = await api.admin.CreateToken(
        admin.CreateTokenRequest(
            token=admin.Token(
                role=admin.TOKEN_ROLE_TEAM, team_id=api.team, description="deploy pipeline"
            )
        ),
        metadata=api.auth(api.operator_token),
    )
    return made.secret, made.token.name


def mask(*paths: str) -> field_mask_pb2.FieldMask:
    return field_mask_pb2.FieldMask(paths=list(paths))


async def test_a_pause_note_and_its_author_stay_with_the_job_until_resumed(
    api: ApiClient,
) -> None:
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=cron_job()), metadata=api.auth())).job
    assert not job.HasField("pause")
    secret, token_name = await deploy_token(api)
    note = "warehouse migration until 14:00"
    paused = (
        await api.stub.PauseJob(
            svc.PauseJobRequest(name=job.name, note=note), metadata=api.auth(secret)
        )
    ).job
    assert paused.pause.note == note
    assert paused.pause.principal == job_pb2.Principal(
        token=token_name, description="deploy pipeline"
    )
    assert paused.pause.pause_time == paused.update_time
    got = (await api.stub.GetJob(svc.GetJobRequest(name=job.name), metadata=api.auth())).job
    assert got.pause == paused.pause
    listed = (await api.stub.ListJobs(svc.ListJobsRequest(), metadata=api.auth())).jobs
    assert [j.pause for j in listed] == [paused.pause]
    # An update while paused keeps the note.
    renamed = job_pb2.Job(name=job.name, display_name="renamed")
    updated = (
        await api.stub.UpdateJob(
            svc.UpdateJobRequest(job=renamed, update_mask=mask("display_name")),
            metadata=api.auth(),
        )
    ).job
    assert updated.pause == paused.pause
    resumed = (
        await api.stub.ResumeJob(svc.ResumeJobRequest(name=job.name), metadata=api.auth())
    ).job
    assert not resumed.HasField("pause")

    for bad_note in ("x" * 1001, "two\nlines"):
        bad = await failure(
            api.stub.PauseJob(
                svc.PauseJobRequest(name=job.name, note=bad_note), metadata=api.auth()
            )
        )
        assert (bad.code, list(bad.fields)) == (grpc.StatusCode.INVALID_ARGUMENT, ["note"])


async def test_a_batch_pause_gives_each_job_its_note(api: ApiClient) -> None:
    jobs = [
        (await api.stub.CreateJob(svc.CreateJobRequest(job=cron_job()), metadata=api.auth())).job
        for _ in range(2)
    ]
    done = await api.stub.BatchPauseJobs(
        svc.BatchPauseJobsRequest(names=[j.name for j in jobs], note="freeze week"),
        metadata=api.auth(),
    )
    assert [r.status.code for r in done.results] == [0, 0]
    listed = (await api.stub.ListJobs(svc.ListJobsRequest(), metadata=api.auth())).jobs
    assert [j.pause.note for j in listed] == ["freeze week", "freeze week"]
    bad = await failure(
        api.stub.BatchPauseJobs(
            svc.BatchPauseJobsRequest(filter="nightly", note="\t"), metadata=api.auth()
        )
    )
    assert list(bad.fields) == ["note"]


async def test_versions_list_each_change_with_its_author_fields_and_redacted_secrets(
    api: ApiClient,
) -> None:
    created = cron_job()
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=created), metadata=api.auth())).job
    secret, token_name = await deploy_token(api)
    # A new secret value and a new name; then the URL with the secrets sent back redacted.
    changed = job_pb2.Job(name=job.name, display_name="nightly billing", target=created.target)
    changed.target.http.headers["Authorization"] = "Bearer rotated"
    await api.stub.UpdateJob(
        svc.UpdateJobRequest(job=changed, update_mask=mask("display_name", "target")),
        metadata=api.auth(secret),
    )
    moved = job_pb2.Job(name=job.name, target=job.target)
    moved.target.http.url = "https://billing.internal/v2"
    await api.stub.UpdateJob(
        svc.UpdateJobRequest(job=moved, update_mask=mask("target", "labels")),
        metadata=api.auth(),
    )
    await api.stub.PauseJob(
        svc.PauseJobRequest(name=job.name, note="quarter close"), metadata=api.auth(secret)
    )
    await api.stub.ResumeJob(svc.ResumeJobRequest(name=job.name), metadata=api.auth())
    await api.stub.DeleteJob(svc.DeleteJobRequest(name=job.name), metadata=api.auth(secret))

    # A deleted job's history stays readable, newest first.
    listed = await api.stub.ListJobVersions(
        svc.ListJobVersionsRequest(parent=job.name), metadata=api.auth()
    )
    versions = listed.versions
    assert [(v.version, v.change, list(v.changed_fields)) for v in versions] == [
        (6, svc.JOB_CHANGE_DELETE, []),
        (5, svc.JOB_CHANGE_RESUME, []),
        (4, svc.JOB_CHANGE_PAUSE, []),
        (3, svc.JOB_CHANGE_UPDATE, ["target"]),
        (2, svc.JOB_CHANGE_UPDATE, ["display_name", "target"]),
        (1, svc.JOB_CHANGE_CREATE, []),
    ]
    assert listed.next_page_token == ""
    deploy = job_pb2.Principal(token=token_name, description="deploy pipeline")
    assert [v.principal == deploy for v in versions] == [True, False, True, False, True, False]
    own = versions[-1].principal
    assert own.token.startswith("tokens/")
    assert own.token != token_name
    assert versions[2].note == "quarter close"
    assert versions[0].name == f"{job.name}/versions/6"
    assert versions[1].job.display_name == "nightly billing"
    assert versions[1].job.target.http.url == "https://billing.internal/v2"
    assert versions[-1].job.display_name == "nightly"
    headers = [dict(v.job.target.http.headers) for v in versions]
    assert all(h == {"Authorization": "[REDACTED]", "X-Plain": "[REDACTED]"} for h in headers)
    assert versions[0].create_time.ToDatetime() >= versions[-1].create_time.ToDatetime()

    # Pages of two, each token going on where the last page ended.
    seen, token = [], ""
    while True:
        page = await api.stub.ListJobVersions(
            svc.ListJobVersionsRequest(parent=job.name, page_size=2, page_token=token),
            metadata=api.auth(),
        )
        seen += [v.version for v in page.versions]
        token = page.next_page_token
        if not token:
            break
    assert seen == [6, 5, 4, 3, 2, 1]

    hidden = await failure(
        api.stub.ListJobVersions(
            svc.ListJobVersionsRequest(parent=job.name), metadata=api.auth(api.other_token)
        )
    )
    assert hidden.code == grpc.StatusCode.NOT_FOUND
    bad = await failure(
        api.stub.ListJobVersions(
            svc.ListJobVersionsRequest(parent=job.name, page_token="nonsense"),
            metadata=api.auth(),
        )
    )
    assert list(bad.fields) == ["page_token"]


async def test_versions_made_before_changes_were_recorded_show_them_unknown(
    api: ApiClient,
) -> None:
    job = (await api.stub.CreateJob(svc.CreateJobRequest(job=cron_job()), metadata=api.auth())).job
    renamed = job_pb2.Job(name=job.name, display_name="renamed")
    await api.stub.UpdateJob(
        svc.UpdateJobRequest(job=renamed, update_mask=mask("display_name")), metadata=api.auth()
    )
    # As rows written by a build that predates the history look.
    await sql(
        api.dsn,
        "UPDATE job_versions SET change = NULL, token_id = NULL, token_description = NULL, "
        "changed_fields = NULL, note = NULL WHERE job_id = $1",
        uuid.UUID(job.job_id),
    )
    versions = (
        await api.stub.ListJobVersions(
            svc.ListJobVersionsRequest(parent=job.name), metadata=api.auth()
        )
    ).versions
    assert [(v.change, v.HasField("principal")) for v in versions] == [
        (svc.JOB_CHANGE_UNSPECIFIED, False),
        (svc.JOB_CHANGE_UNSPECIFIED, False),
    ]
    # The fields are found by comparing the definitions.
    assert [list(v.changed_fields) for v in versions] == [["display_name"], []]
