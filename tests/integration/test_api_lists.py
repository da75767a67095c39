"""What a console or a script needs from the job API, on real PostgreSQL: labels, ListJobs and
ListRuns filters (AIP-160), a team's runs across its jobs, each listed job's activity, and
batch pause, resume and redrive with a count first."""

from __future__ import annotations

import itertools
import uuid
from datetime import timedelta

import asyncpg
import grpc
import pytest
from google.protobuf import field_mask_pb2
from google.rpc import code_pb2, error_details_pb2

from duetime.jobs.v1 import job_pb2, run_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from testkit.api import ApiClient, failure


def job(
    name: str,
    *,
    url: str = "https://billing.internal/run",
    labels: dict[str, str] | None = None,
    cron: str = "",
    every: int = 0,
) -> job_pb2.Job:
    message = job_pb2.Job(
        display_name=name,
        target=job_pb2.Target(http=job_pb2.HttpTarget(url=url)),
        labels=labels or {},
    )
    if cron:
        message.schedule.cron.expression, message.schedule.cron.time_zone = cron, "Europe/Paris"
    else:
        message.schedule.interval.interval.FromTimedelta(timedelta(seconds=every or 3600))
    return message


async def create(api: ApiClient, message: job_pb2.Job, token: str | None = None) -> job_pb2.Job:
    request = svc.CreateJobRequest(job=message)
    created: job_pb2.Job = (await api.stub.CreateJob(request, metadata=api.auth(token))).job
    return created


async def listed(api: ApiClient, where: str, **fields: object) -> list[str]:
    request = svc.ListJobsRequest(filter=where, **fields)  # type: ignore[arg-type]
    return [j.display_name for j in (await api.stub.ListJobs(request, metadata=api.auth())).jobs]


async def test_labels_are_kept_checked_and_replaced_whole(api: ApiClient) -> None:
    created = await create(api, job("a", labels={"env": "prod", "team-x": ""}))
    assert dict(created.labels) == {"env": "prod", "team-x": ""}
    bad = await failure(
        api.stub.CreateJob(
            svc.CreateJobRequest(job=job("b", labels={"Env": "x", "ok": "UPPER"})),
            metadata=api.auth(),
        )
    )
    assert bad.code == grpc.StatusCode.INVALID_ARGUMENT
    assert set(bad.fields) == {"job.labels['Env']", "job.labels['ok']"}
    change = job_pb2.Job(name=created.name, labels={"env": "dev"})
    mask = field_mask_pb2.FieldMask(paths=["labels"])
    updated = await api.stub.UpdateJob(
        svc.UpdateJobRequest(job=change, update_mask=mask), metadata=api.auth()
    )
    assert dict(updated.job.labels) == {"env": "dev"}
    assert updated.job.next_run_time == created.next_run_time


async def test_list_jobs_by_filter(api: ApiClient) -> None:
    await create(api, job("nightly invoices", labels={"env": "prod"}, cron="0 2 * * *"))
    await create(api, job("hourly sync", url="https://sync.example.com/x", labels={"env": "dev"}))
    paused = await create(api, job("Weekly report", labels={"env": "prod", "tier": "gold"}))
    await api.stub.PauseJob(svc.PauseJobRequest(name=paused.name), metadata=api.auth())
    await create(api, job("other team's", labels={"env": "prod"}), token=api.other_token)

    assert await listed(api, "labels.env = prod") == ["Weekly report", "nightly invoices"]
    assert await listed(api, 'display_name:"REPORT"') == ["Weekly report"]
    assert await listed(api, "nightly") == ["nightly invoices"]  # a bare word searches names
    assert await listed(api, "state = PAUSED OR schedule = CRON") == [
        "Weekly report",
        "nightly invoices",
    ]
    assert await listed(api, "labels.tier:* AND NOT state = ACTIVE") == ["Weekly report"]
    assert await listed(api, "-labels.env = prod") == ["hourly sync"]
    assert await listed(api, 'target.host = "sync.example.com"') == ["hourly sync"]
    assert await listed(api, 'target.host = "Sync.Example.COM"') == ["hourly sync"]
    assert await listed(api, "target.host:billing labels.env = prod") == [
        "Weekly report",
        "nightly invoices",
    ]
    # With the state field, and page tokens bound to the filter.
    assert await listed(api, "labels.env = prod", state=job_pb2.JOB_STATE_ACTIVE) == [
        "nightly invoices"
    ]
    first = await api.stub.ListJobs(
        svc.ListJobsRequest(filter="labels.env = prod", page_size=1), metadata=api.auth()
    )
    assert [j.display_name for j in first.jobs] == ["Weekly report"]
    following = svc.ListJobsRequest(filter="labels.env = prod", page_token=first.next_page_token)
    assert [
        j.display_name for j in (await api.stub.ListJobs(following, metadata=api.auth())).jobs
    ] == ["nightly invoices"]
    other = svc.ListJobsRequest(filter="labels.env = dev", page_token=first.next_page_token)
    assert (await failure(api.stub.ListJobs(other, metadata=api.auth()))).fields == {
        "page_token": "issued for a different listing or filter; start again without it"
    }


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("state = ACTIVE AND", "ends too early"),
        ("colour = red", 'unknown field "colour"'),
        ("state = SLEEPING", '"SLEEPING" is not one of'),
        ("state > ACTIVE", 'cannot be compared with ">"'),
        ("labels.Env = x", '"labels.Env": not a valid key'),
        ("labels.env:prod", "is not *"),
        ("display_name = = x", 'unexpected "=" at column 16'),
        ("(" * 40 + "a" + ")" * 40, "nested deeper than 32"),
        ('display_name = "\u0000"', "control characters"),
    ],
)
async def test_a_bad_filter_names_the_token_at_fault(api: ApiClient, where: str, says: str) -> None:
    refused = await failure(
        api.stub.ListJobs(svc.ListJobsRequest(filter=where), metadata=api.auth())
    )
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT
    assert says in refused.fields["filter"], refused.fields


async def sql(dsn: str, query: str, *args: object) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(query, *args))
    finally:
        await conn.close()


async def trigger(
    api: ApiClient, created: job_pb2.Job, request_id: str, token: str | None = None
) -> run_pb2.Run:
    request = svc.TriggerJobRequest(name=created.name, request_id=request_id)
    run: run_pb2.Run = (await api.stub.TriggerJob(request, metadata=api.auth(token))).run
    return run


async def dead_letter(api: ApiClient, run: run_pb2.Run) -> None:
    await sql(
        api.dsn,
        "UPDATE runs SET state = 'DEAD_LETTERED', attempt = 3, reason = 'ATTEMPTS_EXHAUSTED' "
        "WHERE run_id = $1",
        uuid.UUID(run.run_id),
    )


async def team_runs(api: ApiClient, where: str = "", **fields: object) -> list[str]:
    request = svc.ListRunsRequest(
        parent=f"teams/{api.team}/jobs/-",
        filter=where,
        **fields,  # type: ignore[arg-type]
    )
    return [
        r.trigger_request_id for r in (await api.stub.ListRuns(request, metadata=api.auth())).runs
    ]


async def test_a_teams_runs_across_its_jobs_latest_first_by_filter(api: ApiClient) -> None:
    one, two = await create(api, job("one")), await create(api, job("two"))
    first = await trigger(api, one, "r1")
    await sql(api.dsn, """UPDATE duetime_clock SET "offset" = interval '1 minute'""")
    second = await trigger(api, two, "r2")
    theirs = await create(api, job("theirs"), token=api.other_token)
    await trigger(api, theirs, "r3", token=api.other_token)
    await dead_letter(api, first)

    assert await team_runs(api) == ["r2", "r1"]
    assert await team_runs(api, "state = DEAD_LETTERED") == ["r1"]
    assert await team_runs(api, "state = QUEUED OR state = DEAD_LETTERED") == ["r2", "r1"]
    after = second.nominal_time.ToJsonString()
    assert await team_runs(api, f'nominal_time >= "{after}"') == ["r2"]
    assert await team_runs(api, f'nominal_time < "{after}" AND origin = TRIGGER') == ["r1"]
    assert await team_runs(api, "origin = SCHEDULE") == []
    assert await team_runs(api, f"job_id = {two.job_id}") == ["r2"]
    assert await team_runs(api, "reason = ATTEMPTS_EXHAUSTED") == ["r1"]
    assert await team_runs(api, state=run_pb2.RUN_STATE_QUEUED) == ["r2"]
    # One job's runs take the same filter.
    request = svc.ListRunsRequest(parent=one.name, filter="state = QUEUED")
    assert list((await api.stub.ListRuns(request, metadata=api.auth())).runs) == []
    # Another team's "-" is not found, like its jobs.
    foreign = svc.ListRunsRequest(parent=f"teams/{api.other_team}/jobs/-")
    assert (await failure(api.stub.ListRuns(foreign, metadata=api.auth()))).code == (
        grpc.StatusCode.NOT_FOUND
    )
    early = 'nominal_time < "0001-01-01T00:00:00+01:00"'
    before_year_one = svc.ListRunsRequest(parent=f"teams/{api.team}/jobs/-", filter=early)
    refused = await failure(api.stub.ListRuns(before_year_one, metadata=api.auth()))
    assert "before year 1" in refused.fields["filter"]
    bad = svc.ListRunsRequest(parent=f"teams/{api.team}/jobs/-", filter='nominal_time > "May"')
    assert (
        "not an RFC 3339 time"
        in (await failure(api.stub.ListRuns(bad, metadata=api.auth()))).fields["filter"]
    )


async def test_listed_jobs_carry_their_latest_runs_and_next_occurrences(api: ApiClient) -> None:
    hourly = await create(api, job("hourly", cron="0 * * * *"))
    paused = await create(api, job("paused"))
    await api.stub.PauseJob(svc.PauseJobRequest(name=paused.name), metadata=api.auth())
    for n in range(4):
        await trigger(api, hourly, f"r{n}")
    request = svc.ListJobsRequest(recent_runs=3, upcoming_runs=5)
    answer = await api.stub.ListJobs(request, metadata=api.auth())
    activity = answer.activities[hourly.name]
    assert [r.trigger_request_id for r in activity.recent_runs] == ["r3", "r2", "r1"]
    upcoming = [o.nominal_time.ToDatetime() for o in activity.upcoming_runs]
    assert upcoming[0] == hourly.next_run_time.ToDatetime()
    assert [b - a for a, b in itertools.pairwise(upcoming)] == [timedelta(hours=1)] * 4
    assert list(answer.activities[paused.name].upcoming_runs) == []
    # None unless asked; more than ten refused by name.
    assert not (await api.stub.ListJobs(svc.ListJobsRequest(), metadata=api.auth())).activities
    refused = await failure(
        api.stub.ListJobs(svc.ListJobsRequest(recent_runs=11), metadata=api.auth())
    )
    assert set(refused.fields) == {"recent_runs"}
    too_long = svc.ListJobsRequest(upcoming_runs=1, page_size=101)
    refused = await failure(api.stub.ListJobs(too_long, metadata=api.auth()))
    assert set(refused.fields) == {"page_size"}


def outcomes(results: list[svc.BatchResult]) -> dict[str, tuple[int, str]]:
    found = {}
    for result in results:
        reason = ""
        for detail in result.status.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason = info.reason
        found[result.name] = (result.status.code, reason)
    return found


async def test_batch_pause_and_resume_count_first_and_report_each_job(api: ApiClient) -> None:
    prod = [await create(api, job(f"p{n}", labels={"env": "prod"})) for n in range(3)]
    dev = await create(api, job("d", labels={"env": "dev"}))
    await api.stub.PauseJob(svc.PauseJobRequest(name=prod[0].name), metadata=api.auth())

    count = svc.BatchPauseJobsRequest(filter="labels.env = prod", validate_only=True)
    assert (await api.stub.BatchPauseJobs(count, metadata=api.auth())).matched == 2
    # The filter is the caller's, as ListJobs reads it, up to its length limit.
    longest = "labels.env = prod".ljust(1000)
    count = svc.BatchPauseJobsRequest(filter=longest, validate_only=True)
    assert (await api.stub.BatchPauseJobs(count, metadata=api.auth())).matched == 2
    assert await listed(api, "", state=job_pb2.JOB_STATE_PAUSED) == ["p0"]  # nothing changed
    done = await api.stub.BatchPauseJobs(
        svc.BatchPauseJobsRequest(filter="labels.env = prod"), metadata=api.auth()
    )
    assert done.matched == 2
    assert outcomes(list(done.results)) == {prod[2].name: (0, ""), prod[1].name: (0, "")}
    assert sorted(await listed(api, "state = PAUSED")) == ["p0", "p1", "p2"]

    # By names: each job's own outcome, as its single call would give it.
    theirs = await create(api, job("theirs"), token=api.other_token)
    named = svc.BatchResumeJobsRequest(names=[prod[0].name, dev.name, theirs.name])
    answer = await api.stub.BatchResumeJobs(named, metadata=api.auth())
    assert answer.matched == 3
    assert outcomes(list(answer.results)) == {
        prod[0].name: (code_pb2.OK, ""),
        dev.name: (code_pb2.FAILED_PRECONDITION, "JOB_NOT_PAUSED"),
        theirs.name: (code_pb2.NOT_FOUND, "JOB_NOT_FOUND"),
    }
    # Exactly one of names and filter, and a malformed name named.
    for request in (
        svc.BatchPauseJobsRequest(),
        svc.BatchPauseJobsRequest(names=[dev.name], filter="state = ACTIVE"),
    ):
        assert set(
            (await failure(api.stub.BatchPauseJobs(request, metadata=api.auth()))).fields
        ) == {"names"}
    malformed = svc.BatchPauseJobsRequest(names=[dev.name, "jobs/x"])
    assert set((await failure(api.stub.BatchPauseJobs(malformed, metadata=api.auth()))).fields) == {
        "names[1]"
    }


async def test_batch_redrive_counts_then_redrives_each_dead_letter_once(api: ApiClient) -> None:
    created = await create(api, job("flaky"))
    runs = [await trigger(api, created, f"r{n}") for n in range(3)]
    for run in runs[:2]:
        await dead_letter(api, run)
    parent = f"teams/{api.team}/jobs/-"
    count = svc.BatchRedriveRunsRequest(
        parent=parent, filter="reason = ATTEMPTS_EXHAUSTED", validate_only=True
    )
    assert (await api.stub.BatchRedriveRuns(count, metadata=api.auth())).matched == 2
    request = svc.BatchRedriveRunsRequest(
        parent=parent, filter="reason = ATTEMPTS_EXHAUSTED", request_id="fix-1"
    )
    answer = await api.stub.BatchRedriveRuns(request, metadata=api.auth())
    assert outcomes(list(answer.results)) == {runs[1].name: (0, ""), runs[0].name: (0, "")}
    assert await team_runs(api, "state = DEAD_LETTERED") == []
    outbox = await sql(api.dsn, "SELECT 1 FROM outbox")
    assert len(outbox) == 3 + 2  # the triggers, then one redrive each
    # Retried by name with the same request id: each run's redrive happened already.
    again = svc.BatchRedriveRunsRequest(names=[r.name for r in runs[:2]], request_id="fix-1")
    replay = await api.stub.BatchRedriveRuns(again, metadata=api.auth())
    assert [r.status.code for r in replay.results] == [0, 0]
    assert len(await sql(api.dsn, "SELECT 1 FROM outbox")) == 5
    # A live run named is refused as its single redrive would be; a request id is required.
    live = svc.BatchRedriveRunsRequest(names=[runs[2].name], request_id="fix-2")
    answer = await api.stub.BatchRedriveRuns(live, metadata=api.auth())
    assert outcomes(list(answer.results)) == {
        runs[2].name: (code_pb2.FAILED_PRECONDITION, "RUN_NOT_DEAD_LETTERED")
    }
    missing = svc.BatchRedriveRunsRequest(names=[runs[2].name])
    assert set((await failure(api.stub.BatchRedriveRuns(missing, metadata=api.auth()))).fields) == {
        "request_id"
    }
