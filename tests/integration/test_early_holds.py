"""An early attempt held by its worker process's record, on real PostgreSQL: the pre-call beat
of the process that started it grants it a lease with no write to its row, the reaper honours
that lease (and writes it into the row once the short lease from the call time is past), and
a process restarted under the same worker id holds none of its predecessor's attempts."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import grpc
import pytest
from grpc import aio

from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_core.attempts import NEVER_CALLED
from duetime_infra.pg.attempts.reaper import reap_expired_attempts
from duetime_infra.pg.fencing import FencingToken
from testkit.environments import ApiAndWorkers, api_and_workers
from testkit.worker_api import as_datetime, create_job, exchange, job_message

S = timedelta(seconds=1)
LEASE = timedelta(seconds=60)  # the attempt service's default lease
STARTED = wpb.START_DECISION_STARTED
TOKENS = [FencingToken(p, 0, 1) for p in range(1024)]
RECORD = (
    "SELECT beat_time, lease FROM worker_incarnation_beats"
    " WHERE worker_id = 'w-1' AND incarnation = $1"
)


@pytest.fixture
async def env(db_dsn: str) -> AsyncIterator[ApiAndWorkers]:
    async with api_and_workers(db_dsn) as both:
        yield both


async def start(env: ApiAndWorkers, run_id: uuid.UUID, incarnation: str) -> None:
    request = wpb.StartAttemptRequest(
        run_id=str(run_id), delivery_id=f"d-{run_id}@{incarnation}", worker_id="w-1", early=True
    )
    response = await env.w.stub.StartAttempt(request, metadata=env.w.auth())
    assert response.decision == STARTED


def beat(incarnation: str, *runs: uuid.UUID) -> wpb.HeartbeatRequest:
    return wpb.HeartbeatRequest(
        worker_id="w-1",
        incarnation=incarnation,
        attempts=[wpb.AttemptRef(run_id=str(r), attempt=1) for r in runs],
    )


def leases(response: wpb.HeartbeatResponse) -> list[datetime]:
    assert [d.directive for d in response.directives] == [wpb.DIRECTIVE_CONTINUE] * len(
        response.directives
    )
    return [as_datetime(d.lease_expire_time) for d in response.directives]


async def row_versions(env: ApiAndWorkers, *runs: uuid.UUID) -> list[tuple[object, datetime]]:
    return [(a["xmin"], a["lease_expire_time"]) for r in runs for a in await env.w.attempts(r)]


async def two_early_runs(env: ApiAndWorkers, incarnation: str) -> tuple[datetime, list[uuid.UUID]]:
    """Two runs started ahead by ``incarnation``, due 6 s and 12 s from now (the clock's now)."""
    job = await create_job(env.api, job_message(max_attempts=1))
    now = await env.w.now()
    runs = [await env.w.queue_scheduled_run(job.job_id, now + d * S) for d in (6, 12)]
    for run_id in runs:
        await start(env, run_id, incarnation)
    return now, runs


async def test_a_pre_call_beat_holds_its_process_attempts_without_writing_them(
    env: ApiAndWorkers,
) -> None:
    now, (first, later) = await two_early_runs(env, "p-1")
    started = await row_versions(env, first, later)
    stream = env.w.stub.Heartbeat(metadata=env.w.auth())
    # Before either window: the short leases from the call times stand, unwritten.
    answer = await exchange(stream, beat("p-1", first, later))
    assert leases(answer) == [now + 16 * S, now + 22 * S]
    assert await env.w.pool.fetchrow(RECORD, "p-1") is None
    await env.w.shift_clock(2.5 * S)  # the first call's window opened 4 s before it
    answer = await exchange(stream, beat("p-1", first, later))
    beat_time = as_datetime(answer.server_time)
    # The first is held a lease from the process's record; the later one's window is shut.
    assert leases(answer) == [beat_time + LEASE, now + 22 * S]
    record = await env.w.pool.fetchrow(RECORD, "p-1")
    assert record is not None
    assert tuple(record) == (beat_time, LEASE)
    assert await row_versions(env, first, later) == started
    await env.w.shift_clock(6 * S)  # the later window opens: the record moves on, rows stay
    answer = await exchange(stream, beat("p-1", first, later))
    moved = as_datetime(answer.server_time)
    # A hold counts from the call time at the latest: the first's call was due at now + 6 s.
    assert leases(answer) == [now + 6 * S + LEASE, moved + LEASE]
    assert await row_versions(env, first, later) == started
    stream.cancel()


async def test_the_reaper_honours_a_hold_then_ends_the_attempt_when_it_runs_out(
    env: ApiAndWorkers,
) -> None:
    now, (first, later) = await two_early_runs(env, "p-1")
    await env.w.shift_clock(2.5 * S)
    stream = env.w.stub.Heartbeat(metadata=env.w.auth())
    answer = await exchange(stream, beat("p-1", first))
    stream.cancel()
    held_until = as_datetime(answer.server_time) + LEASE
    # Past the short lease from its call time, its call may still be going: held, and the
    # hold written into the row so the scan by lease no longer finds it.
    await env.w.shift_clock(6 * S + 10 * S + S - 2.5 * S)
    assert await env.w.now() > now + 16 * S
    assert await reap_expired_attempts(env.w.pool, TOKENS, 100) == 0
    (attempt,) = await env.w.attempts(first)
    assert (attempt["end_time"], attempt["lease_expire_time"]) == (None, held_until)
    await env.w.shift_clock(held_until - await env.w.now() + S)  # the worker went meanwhile
    assert await reap_expired_attempts(env.w.pool, TOKENS, 100) == 2
    (attempt,) = await env.w.attempts(first)
    assert attempt["outcome"] == "LEASE_EXPIRED"  # its call may have begun
    # The later one's window opened after the process's last beat: never called.
    (unbegun,) = await env.w.attempts(later)
    assert (unbegun["outcome"], unbegun["error"]) == ("HANDED_BACK", NEVER_CALLED)


async def test_a_restarted_process_holds_none_of_its_predecessors_attempts(
    env: ApiAndWorkers,
) -> None:
    jobs = [await create_job(env.api, job_message(max_attempts=1)) for _ in range(2)]
    now = await env.w.now()
    old, new = [await env.w.queue_scheduled_run(job.job_id, now + 3 * S) for job in jobs]
    await start(env, old, "p-old")
    await start(env, new, "p-new")
    # The old process is gone; the new one, under the same worker id, beats for its own.
    await env.w.shift_clock(1.5 * S)
    stream = env.w.stub.Heartbeat(metadata=env.w.auth())
    answer = await exchange(stream, beat("p-new", new))
    stream.cancel()
    assert leases(answer) == [as_datetime(answer.server_time) + LEASE]
    await env.w.shift_clock(12 * S)  # past both short leases from the call time
    assert await reap_expired_attempts(env.w.pool, TOKENS, 100) == 1
    (ended,) = await env.w.attempts(old)
    # A beat of its worker id came within its window: its call may have begun.
    assert ended["outcome"] == "LEASE_EXPIRED"
    (held,) = await env.w.attempts(new)
    assert held["end_time"] is None


async def test_a_beat_naming_no_process_renews_each_early_attempt(env: ApiAndWorkers) -> None:
    _, (first, later) = await two_early_runs(env, "p-1")
    started = await row_versions(env, first, later)
    stream = env.w.stub.Heartbeat(metadata=env.w.auth())
    await env.w.shift_clock(2.5 * S)
    answer = await exchange(stream, beat("", first, later))  # an older worker's beat
    stream.cancel()
    beat_time = as_datetime(answer.server_time)
    assert leases(answer) == [beat_time + LEASE] * 2
    assert [lease for _, lease in await row_versions(env, first, later)] == [beat_time + LEASE] * 2
    assert await row_versions(env, first, later) != started
    # Its record is still the proof that the first call may have begun.
    assert await env.w.pool.fetchrow(RECORD, "") is not None


@pytest.mark.parametrize("incarnation", ["x" * 65, "a@b"])
async def test_a_beat_naming_a_bad_incarnation_is_refused_by_field(
    env: ApiAndWorkers, incarnation: str
) -> None:
    stream = env.w.stub.Heartbeat(metadata=env.w.auth())
    with pytest.raises(aio.AioRpcError) as refused:
        await exchange(stream, beat(incarnation, uuid.uuid4()))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "incarnation" in str(refused.value.details())
