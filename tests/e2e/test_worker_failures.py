"""Workers failing in every way a process can, with the four services as processes on a fresh
database, real etcd and Kafka, and a real HTTP target:

- killed (SIGKILL) mid-attempt: the lease expires, another worker runs a higher attempt with the
  same idempotency key, and the run SUCCEEDS;
- frozen (SIGSTOP) past its lease: another worker takes over and finishes, and the woken worker
  neither records its stale outcome nor dies;
- a two-hour attempt on a 60 s lease, across two hours of the database clock, is kept alive by
  heartbeats and SUCCEEDS;
- stopped (SIGTERM) mid-attempt: the attempt is handed back without spending the run's budget;
- started while Kafka is down: it waits for the broker, then consumes;
- cut off from the scheduler (frozen) mid-call: it stops the call when its lease runs out by its
  own clock and reports nothing;
- at most once: a run whose worker is killed mid-call, or whose call times out, is not called
  again (DEAD_LETTERED, OUTCOME_UNKNOWN), while one whose connection is refused before anything
  is sent is retried, and one that answers succeeds.
- frozen between an attempt's start and its send, past the lease: woken, it sends nothing of
  that attempt's call.
"""

from __future__ import annotations

import asyncio
import itertools
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import pytest
from aiokafka.partitioner import murmur2

from duetime.jobs.v1 import job_pb2, run_pb2
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_core.jobspec import Priority
from duetime_infra.codec.attempt_token import ATTEMPT_METADATA_KEY
from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC, DISPATCH_TOPICS
from testkit.api import failure
from testkit.http_target import Behaviour, HttpTarget, http_target
from testkit.jobs import shift_clock
from testkit.kafka import (
    PrivateKafka,
    create_topics,
    end_offsets,
    free_port,
    shared_bootstrap,
)
from testkit.polling import eventually
from testkit.processes import Service, service
from testkit.system import System, http_job, running_system
from testkit.tls import service_channel

pytestmark = pytest.mark.timeout(150)

# Short attempt leases (the scheduler's) and beats well inside them (the workers').
SHORT_LEASE = {"DUETIME_ATTEMPT_LEASE": "4"}
FAST_BEATS = {"DUETIME_HEARTBEAT_INTERVAL": "0.5"}
LEASE_EXPIRED = run_pb2.ATTEMPT_OUTCOME_LEASE_EXPIRED
SUCCEEDED = run_pb2.ATTEMPT_OUTCOME_SUCCEEDED
HANDED_BACK = run_pb2.ATTEMPT_OUTCOME_HANDED_BACK


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


@pytest.fixture
async def db(db_dsn: str) -> AsyncIterator[asyncpg.Pool[asyncpg.Record]]:
    pool = await asyncpg.create_pool(db_dsn, min_size=1, max_size=2)
    try:
        yield pool
    finally:
        await pool.close()


def soon() -> datetime:
    return datetime.now(UTC) + timedelta(seconds=1)


async def only_run(system: System, job: job_pb2.Job) -> run_pb2.Run:
    (run,) = await system.api.runs(job)
    return run


def run_in(system: System, job: job_pb2.Job, state: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        runs = await system.api.runs(job)
        return len(runs) == 1 and runs[0].state == state

    return check


def calls_to(target: HttpTarget, path: str, count: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return len(target.calls_to(path)) >= count

    return check


def cut_off(target: HttpTarget, count: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return len(target.abandoned) >= count

    return check


def logged(worker: Service, action: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return any(f'"action": "{action}"' in line for line in worker.output)

    return check


async def holder_of_attempt(db: asyncpg.Pool[asyncpg.Record], job: job_pb2.Job) -> str:
    """The worker holding the job's open attempt."""
    worker: str | None = await db.fetchval(
        "SELECT a.worker_id FROM run_attempts a JOIN runs r USING (run_id, nominal_time) "
        "WHERE r.job_id = $1 AND a.end_time IS NULL",
        uuid.UUID(job.job_id),
    )
    assert worker is not None
    return worker


async def held_by_one_of_two(
    system: System, db: asyncpg.Pool[asyncpg.Record], target: HttpTarget, path: str, **job: Any
) -> tuple[job_pb2.Job, str, str]:
    """A job whose first call to ``path`` hangs, created and called: the job, the worker
    holding its attempt, and the other worker."""
    url = target.on(path, Behaviour(delay=120, slow_first=1))
    created = await system.api.create(http_job(path.strip("/"), url, at=soon(), **job))
    await eventually(calls_to(target, path, 1), 30, "the first attempt called the target")
    holder = await holder_of_attempt(db, created)
    (other,) = set(system.workers) - {holder}
    return created, holder, other


async def attempt_rows(db: asyncpg.Pool[asyncpg.Record], run_id: str) -> list[asyncpg.Record]:
    return list(
        await db.fetch(
            "SELECT number, worker_id, start_time, lease_expire_time, end_time, outcome "
            "FROM run_attempts WHERE run_id = $1 ORDER BY number",
            uuid.UUID(run_id),
        )
    )


def assert_never_two_open(rows: list[asyncpg.Record]) -> None:
    """Each attempt was closed before the next one started (on the database clock)."""
    for earlier, later in itertools.pairwise(rows):
        assert earlier["end_time"] is not None, dict(earlier)
        assert earlier["end_time"] <= later["start_time"], (dict(earlier), dict(later))


def assert_one_key_rising_attempts(target: HttpTarget, path: str, run: run_pb2.Run) -> None:
    calls = target.calls_to(path)
    assert [c.headers["Duetime-Attempt"] for c in calls] == [str(a.number) for a in run.attempts]
    assert {c.headers["Idempotency-Key"] for c in calls} == {run.idempotency_key}


async def test_a_worker_killed_mid_attempt_is_replaced_by_a_higher_attempt(
    db_dsn: str, db: asyncpg.Pool[asyncpg.Record], target: HttpTarget
) -> None:
    async with running_system(
        db_dsn, workers=2, scheduler_extra=SHORT_LEASE, worker_extra=FAST_BEATS
    ) as system:
        job, victim, survivor = await held_by_one_of_two(system, db, target, "/killed")
        system.workers[victim].process.kill()
        killed = time.monotonic()
        await eventually(run_in(system, job, run_pb2.RUN_STATE_SUCCEEDED), 60, "run SUCCEEDED")
        print(f"succeeded {time.monotonic() - killed:.1f} s after the kill")
        run = await only_run(system, job)
        assert [(a.number, a.outcome, a.worker) for a in run.attempts] == [
            (1, LEASE_EXPIRED, victim),
            (2, SUCCEEDED, survivor),
        ]
        assert_one_key_rising_attempts(target, "/killed", run)
        assert_never_two_open(await attempt_rows(db, run.run_id))


async def kafka_partition(job: job_pb2.Job) -> int:
    """The dispatch topic's partition the job's runs are published to (keyed by job id)."""
    topic = DISPATCH_TOPICS[Priority.NORMAL]
    count = len(await end_offsets(shared_bootstrap(), [topic]))
    index: int = murmur2(job.job_id.encode()) & 0x7FFFFFFF
    return index % count


async def beside(
    system: System, holder: job_pb2.Job, make: Callable[[int], job_pb2.Job]
) -> tuple[job_pb2.Job, int]:
    """A job made by ``make`` whose runs share the holder's Kafka partition, and its number
    (``make`` is given 0, 1, ...). The others made on the way are deleted; a run of one may
    still be called (its delete can land after its pre-call beat), so each needs its own
    target path."""
    wanted = await kafka_partition(holder)
    for n in itertools.count():
        job = await system.api.create(make(n))
        if await kafka_partition(job) == wanted:
            return job, n
        await system.api.delete(job)
    raise AssertionError("unreachable")


@pytest.mark.parametrize("moment", ["between the call and the report", "before the call"])
async def test_a_worker_restarted_under_its_id_never_calls_an_attempt_again(
    db_dsn: str, db: asyncpg.Pool[asyncpg.Record], target: HttpTarget, moment: str
) -> None:
    # Killed with -9 and restarted under the same id (a pod's container restarting), a worker
    # gets its started run's message again: its offset was not committed, because an earlier
    # message of the partition (a run held until its time) was still unanswered. The attempt
    # may have reached the target: the new process is refused it, the attempt ends (at its
    # lease, or unbegun: no beat came before its call), and a higher one runs.
    # A lease the restart fits in: the new process asks while the attempt is still open. A
    # look-ahead past the held run's time, so it is claimed (and held) at once.
    scheduler = {"DUETIME_ATTEMPT_LEASE": "10", "DUETIME_CLAIM_LOOKAHEAD": "30"}
    async with running_system(
        db_dsn, workers=1, scheduler_extra=scheduler, worker_extra=FAST_BEATS
    ) as system:
        held = target.on("/held", Behaviour())
        at = datetime.now(UTC) + timedelta(seconds=25)
        holder = http_job("held", held, at=at)
        holder.overlap_policy = job_pb2.OVERLAP_POLICY_SKIP  # never started ahead: held
        holder = await system.api.create(holder)
        await eventually(lambda: run_exists(db, holder), 30, "the held run claimed")

        def restarted(
            behaviour: Behaviour, at: Callable[[], datetime]
        ) -> Callable[[int], job_pb2.Job]:
            return lambda n: http_job("restarted", target.on(f"/restarted-{n}", behaviour), at=at())

        if moment == "before the call":
            ahead = datetime.now(UTC) + timedelta(seconds=8)
            job, n = await beside(system, holder, restarted(Behaviour(), lambda: ahead))
            # Started ahead of its time (early), held until then, killed meanwhile.
            await eventually(lambda: open_attempt(db, job), 3, "the attempt started ahead")
        else:
            slow = Behaviour(delay=120, slow_first=1)
            job, n = await beside(system, holder, restarted(slow, soon))
            await eventually(calls_to(target, f"/restarted-{n}", 1), 30, "the first call")
        system.workers["w1"].process.kill()
        await system.workers["w1"].process.wait()
        await system.start_worker("w1")
        await eventually(run_in(system, job, run_pb2.RUN_STATE_SUCCEEDED), 60, "run SUCCEEDED")
        run = await only_run(system, job)
        calls = [c.headers["Duetime-Attempt"] for c in target.calls_to(f"/restarted-{n}")]
        assert len(calls) == len(set(calls)), f"an attempt number called twice: {calls}"
        if moment == "before the call":
            # No beat came before its call time: the scheduler knows it was never called.
            assert [a.outcome for a in run.attempts] == [HANDED_BACK, SUCCEEDED]
            assert calls == ["2"]
        else:
            assert [a.outcome for a in run.attempts] == [LEASE_EXPIRED, SUCCEEDED]
            assert calls == ["1", "2"]
        assert_never_two_open(await attempt_rows(db, run.run_id))


async def run_exists(db: asyncpg.Pool[asyncpg.Record], job: job_pb2.Job) -> bool:
    found = await db.fetchval("SELECT count(*) FROM runs WHERE job_id = $1", uuid.UUID(job.job_id))
    return bool(found)


async def open_attempt(db: asyncpg.Pool[asyncpg.Record], job: job_pb2.Job) -> bool:
    found = await db.fetchval(
        "SELECT count(*) FROM run_attempts a JOIN runs r USING (run_id, nominal_time) "
        "WHERE r.job_id = $1 AND a.end_time IS NULL",
        uuid.UUID(job.job_id),
    )
    return bool(found)


async def test_a_frozen_worker_cannot_record_its_stale_outcome_and_keeps_working(
    db_dsn: str, db: asyncpg.Pool[asyncpg.Record], target: HttpTarget
) -> None:
    async with running_system(
        db_dsn, workers=2, scheduler_extra=SHORT_LEASE, worker_extra=FAST_BEATS
    ) as system:
        job, victim_id, survivor_id = await held_by_one_of_two(system, db, target, "/frozen")
        victim, survivor = system.workers[victim_id], system.workers[survivor_id]
        victim.process.send_signal(signal.SIGSTOP)
        try:
            await eventually(
                run_in(system, job, run_pb2.RUN_STATE_SUCCEEDED), 60, "the survivor finished"
            )
            run = await only_run(system, job)
            before = await attempt_rows(db, run.run_id)
        finally:
            victim.process.send_signal(signal.SIGCONT)

        # Awake, the victim finds its lease gone: it stops the call and reports nothing.
        await eventually(logged(victim, "lease_lost"), 30, "the woken worker dropped its attempt")
        await eventually(cut_off(target, 1), 10, "its call was cut off")
        assert not await logged(victim, "attempt_finished")()
        # Had it reported (the fencing token of its closed attempt), the report is refused.
        channel = service_channel(system.scheduler.address)
        try:
            stub: worker_service_pb2_grpc.WorkerServiceAsyncStub = (
                worker_service_pb2_grpc.WorkerServiceStub(channel)
            )
            stale = await failure(
                stub.CompleteAttempt(
                    wpb.CompleteAttemptRequest(
                        run_id=run.run_id,
                        result=wpb.ATTEMPT_RESULT_FAILED,
                        error="stale",
                        worker_id=victim_id,
                    ),
                    metadata=(
                        ("authorization", f"Bearer {system.worker_token}"),
                        (ATTEMPT_METADATA_KEY, "1"),
                    ),
                )
            )
        finally:
            await channel.close()
        assert (stale.code, stale.reason) == (grpc.StatusCode.ABORTED, "STALE_ATTEMPT")
        # The run is the newer attempt's, unchanged.
        final = await only_run(system, job)
        assert final.state == run_pb2.RUN_STATE_SUCCEEDED
        assert [(a.number, a.outcome, a.worker) for a in final.attempts] == [
            (1, LEASE_EXPIRED, victim_id),
            (2, SUCCEEDED, survivor_id),
        ]
        after = await attempt_rows(db, run.run_id)
        assert after == before
        assert_never_two_open(after)
        assert_one_key_rising_attempts(target, "/frozen", final)

        # The woken worker keeps working: with the other one gone, it runs the next job.
        survivor.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(survivor.process.wait(), 20) == 0
        later = await system.api.create(
            http_job("later", target.on("/later", Behaviour()), at=soon())
        )
        await eventually(
            run_in(system, later, run_pb2.RUN_STATE_SUCCEEDED), 60, "the woken worker ran it"
        )
        assert [a.worker for a in (await only_run(system, later)).attempts] == [victim_id]
        assert victim.process.returncode is None


async def test_a_two_hour_attempt_on_a_60_s_lease_is_kept_alive_by_heartbeats(
    db_dsn: str, db: asyncpg.Pool[asyncpg.Record], target: HttpTarget
) -> None:
    began = time.monotonic()
    # The default 60 s lease; beats often, so that each clock step is renewed quickly.
    async with running_system(db_dsn, worker_extra={"DUETIME_HEARTBEAT_INTERVAL": "0.1"}) as system:
        release = asyncio.Event()
        url = target.on("/long", Behaviour(hold=release))
        job = await system.api.create(
            http_job("two hours", url, at=soon(), attempt_timeout=timedelta(hours=3))
        )
        await eventually(calls_to(target, "/long", 1), 30, "the attempt called the target")
        (run,) = await system.api.runs(job)
        start = (await attempt_rows(db, run.run_id))[0]["start_time"]

        async def lease_left() -> timedelta:
            (attempt,) = await attempt_rows(db, run.run_id)
            assert attempt["end_time"] is None, dict(attempt)  # never reaped
            left: timedelta = attempt["lease_expire_time"] - await db.fetchval(
                "SELECT duetime_now()"
            )
            return left

        async def renewed() -> bool:
            return await lease_left() > timedelta(seconds=30)

        # Steps of 50 s on a 60 s lease: each leaves at most 10 s of lease, and the next step
        # waits for a heartbeat to renew it to a full lease again.
        steps = 0
        while await db.fetchval("SELECT duetime_now()") - start < timedelta(hours=2):
            await shift_clock(db, timedelta(seconds=50))
            steps += 1
            await eventually(renewed, 8, f"a heartbeat renewed the lease after step {steps}")
        print(f"{steps} clock steps over two hours in {time.monotonic() - began:.1f} s")

        release.set()
        await eventually(run_in(system, job, run_pb2.RUN_STATE_SUCCEEDED), 30, "run SUCCEEDED")
        (attempt,) = await attempt_rows(db, run.run_id)
        assert (attempt["number"], attempt["outcome"]) == (1, "SUCCEEDED")
        assert attempt["end_time"] - attempt["start_time"] >= timedelta(hours=2)
        assert len(target.calls_to("/long")) == 1
    print(f"two hours of database clock in {time.monotonic() - began:.1f} s of real time")


async def test_a_stopping_worker_hands_back_without_spending_the_budget(
    db_dsn: str, db: asyncpg.Pool[asyncpg.Record], target: HttpTarget
) -> None:
    async with running_system(db_dsn, workers=2, worker_extra=FAST_BEATS) as system:
        job, stopping_id, other_id = await held_by_one_of_two(
            system, db, target, "/deploy", max_attempts=1
        )
        stopping = system.workers[stopping_id]
        stopping.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(stopping.process.wait(), 20) == 0
        await eventually(run_in(system, job, run_pb2.RUN_STATE_SUCCEEDED), 60, "run SUCCEEDED")
        run = await only_run(system, job)
        assert [(a.number, a.outcome, a.worker) for a in run.attempts] == [
            (1, HANDED_BACK, stopping_id),
            (2, SUCCEEDED, other_id),
        ]
        assert target.abandoned == target.calls_to("/deploy")[:1]
        assert_one_key_rising_attempts(target, "/deploy", run)
        assert_never_two_open(await attempt_rows(db, run.run_id))


async def test_a_worker_started_while_kafka_is_down_waits_for_it(
    db_dsn: str, target: HttpTarget, tmp_path: Path
) -> None:
    kafka = PrivateKafka(tmp_path)
    await kafka.format()
    await kafka.start()
    try:
        await create_topics(kafka.bootstrap, [*DISPATCH_TOPICS.values(), DEAD_LETTER_TOPIC])
        private = {"DUETIME_KAFKA_BOOTSTRAP": kafka.bootstrap}
        async with running_system(db_dsn, workers=0, relay_extra=private) as system:
            await kafka.stop()
            env = system.worker_env("w-patient", private)
            async with service("duetime_worker", env, "DUETIME_WORKER_PORT") as worker:

                async def retrying() -> bool:
                    tries = sum('"action": "kafka_unreachable"' in x for x in worker.output)
                    return tries >= 3 and worker.process.returncode is None

                await eventually(retrying, 30, "the worker kept trying to reach Kafka")
                await kafka.start()
                job = await system.api.create(
                    http_job("after the outage", target.on("/up", Behaviour()), at=soon())
                )
                await eventually(
                    run_in(system, job, run_pb2.RUN_STATE_SUCCEEDED), 90, "run SUCCEEDED"
                )
                assert await logged(worker, "kafka_reachable")()
                assert [a.worker for a in (await only_run(system, job)).attempts] == ["w-patient"]
            assert worker.process.returncode == 0
    finally:
        await kafka.stop()


async def test_a_worker_cut_off_from_the_scheduler_gives_up_its_call_at_its_lease(
    db_dsn: str, db: asyncpg.Pool[asyncpg.Record], target: HttpTarget
) -> None:
    async with running_system(
        db_dsn, scheduler_extra=SHORT_LEASE, worker_extra=FAST_BEATS
    ) as system:
        worker = system.workers["w1"]
        url = target.on("/cut", Behaviour(delay=120, slow_first=1))
        job = await system.api.create(http_job("cut off", url, at=soon()))
        await eventually(calls_to(target, "/cut", 1), 30, "the first attempt called")
        scheduler = system.scheduler.process
        scheduler.send_signal(signal.SIGSTOP)
        frozen = time.monotonic()
        try:
            # At its lease (4 s, also for an attempt started ahead), well before the call's own
            # 10 s timeout, the worker gives the call up and reports nothing.
            await eventually(logged(worker, "lease_lost"), 8, "the worker gave up at its lease")
            gave_up = time.monotonic() - frozen
            # pyreqwest does not abort a request given up: the target sees it leave at the
            # call's own timeout at the latest.
            await eventually(cut_off(target, 1), 20, "the call's connection closed")
            left = time.monotonic() - frozen
        finally:
            scheduler.send_signal(signal.SIGCONT)
        print(f"gave up {gave_up:.1f} s, call left {left:.1f} s after the scheduler froze")
        # The scheduler, back, expires the attempt itself and the run is retried.
        await eventually(run_in(system, job, run_pb2.RUN_STATE_SUCCEEDED), 60, "run SUCCEEDED")
        run = await only_run(system, job)
        assert [(a.number, a.outcome) for a in run.attempts] == [(1, LEASE_EXPIRED), (2, SUCCEEDED)]
        assert not any(
            '"attempt": 1' in line and ("report_" in line or "attempt_finished" in line)
            for line in worker.output
        )
        assert_one_key_rising_attempts(target, "/cut", run)
        assert_never_two_open(await attempt_rows(db, run.run_id))


AT_MOST_ONCE: dict[str, Any] = {"delivery": job_pb2.DELIVERY_AT_MOST_ONCE}
OUTCOME_UNKNOWN = (run_pb2.RUN_STATE_DEAD_LETTERED, run_pb2.RUN_REASON_OUTCOME_UNKNOWN)


async def test_at_most_once_runs_are_never_called_twice_but_retried_before_any_call(
    db_dsn: str, db: asyncpg.Pool[asyncpg.Record], target: HttpTarget
) -> None:
    async with running_system(
        db_dsn, workers=2, scheduler_extra=SHORT_LEASE, worker_extra=FAST_BEATS
    ) as system:
        api = system.api
        refused_url = f"http://127.0.0.1:{free_port()}/refused"  # nothing listens there
        refused = await api.create(http_job("refused", refused_url, at=soon(), **AT_MOST_ONCE))
        answered = await api.create(
            http_job("answered", target.on("/answered", Behaviour()), at=soon(), **AT_MOST_ONCE)
        )
        slow = await api.create(
            http_job(
                "slow",
                target.on("/slow", Behaviour(delay=5)),
                at=soon(),
                attempt_timeout=timedelta(seconds=1),
                **AT_MOST_ONCE,
            )
        )
        await eventually(run_in(system, refused, run_pb2.RUN_STATE_DEAD_LETTERED), 30, "refused")
        await eventually(run_in(system, answered, run_pb2.RUN_STATE_SUCCEEDED), 30, "answered")
        await eventually(run_in(system, slow, run_pb2.RUN_STATE_DEAD_LETTERED), 30, "slow")
        # Refused before anything was sent: every attempt of the budget was made.
        run = await only_run(system, refused)
        assert run.reason == run_pb2.RUN_REASON_ATTEMPTS_EXHAUSTED
        assert [a.outcome for a in run.attempts] == [run_pb2.ATTEMPT_OUTCOME_FAILED] * 3
        assert all("cannot connect" in a.error for a in run.attempts)
        # Sent, and timed out without an answer: not called again.
        run = await only_run(system, slow)
        assert (run.state, run.reason) == OUTCOME_UNKNOWN
        assert [a.outcome for a in run.attempts] == [run_pb2.ATTEMPT_OUTCOME_TIMED_OUT]
        assert len(target.calls_to("/slow")) == 1
        assert len(target.calls_to("/answered")) == 1

        # Killed mid-call: its lease expires after the call was announced; never called again,
        # though another worker is there to take a retry.
        job, victim, _ = await held_by_one_of_two(system, db, target, "/killed", **AT_MOST_ONCE)
        system.workers[victim].process.kill()
        await eventually(run_in(system, job, run_pb2.RUN_STATE_DEAD_LETTERED), 30, "killed")
        run = await only_run(system, job)
        assert (run.state, run.reason) == OUTCOME_UNKNOWN
        assert [(a.number, a.outcome) for a in run.attempts] == [(1, LEASE_EXPIRED)]
        assert len(target.calls_to("/killed")) == 1
        assert (
            await db.fetchval(
                "SELECT call_progress FROM run_attempts WHERE run_id = $1", uuid.UUID(run.run_id)
            )
            == "BEGUN"
        )


async def test_a_worker_frozen_between_start_and_send_sends_nothing_once_woken(
    db_dsn: str, db: asyncpg.Pool[asyncpg.Record], target: HttpTarget
) -> None:
    # One connection to the target's host, held by a first call: the second job's attempt is
    # started and waits for that connection when the worker freezes. Both leases expire; the
    # held call is answered while the worker is still frozen, so on waking the connection is
    # free at once and the waiting call's next step would be its send.
    held = asyncio.Event()
    async with running_system(
        db_dsn,
        scheduler_extra=SHORT_LEASE,
        worker_extra={**FAST_BEATS, "DUETIME_HTTP_CONNECTIONS_PER_HOST": "1"},
    ) as system:
        worker = system.workers["w1"]
        holder = target.on("/holder", Behaviour(hold=held, slow_first=1))
        await system.api.create(http_job("holder", holder, at=soon()))
        await eventually(calls_to(target, "/holder", 1), 30, "the first call holds the host")
        waiting = target.on("/waiting", Behaviour())
        job = await system.api.create(http_job("waiting", waiting, at=soon()))
        run_id = await eventually_open_attempt(db, job)
        worker.process.send_signal(signal.SIGSTOP)
        try:

            async def expired() -> bool:
                rows = await attempt_rows(db, run_id)
                return bool(rows) and rows[0]["outcome"] == "LEASE_EXPIRED"

            await eventually(expired, 30, "the waiting attempt's lease expired")
            held.set()
        finally:
            worker.process.send_signal(signal.SIGCONT)
        await eventually(run_in(system, job, run_pb2.RUN_STATE_SUCCEEDED), 60, "run SUCCEEDED")
        run = await only_run(system, job)
        assert [(a.number, a.outcome) for a in run.attempts] == [(1, LEASE_EXPIRED), (2, SUCCEEDED)]
        # The expired attempt never reached the target; its retry did, once.
        assert [c.headers["Duetime-Attempt"] for c in target.calls_to("/waiting")] == ["2"]
        assert await logged(worker, "lease_lost")()
        assert_never_two_open(await attempt_rows(db, run_id))


async def eventually_open_attempt(db: asyncpg.Pool[asyncpg.Record], job: job_pb2.Job) -> str:
    """The run id of the job's first attempt, once it is open and its call may have begun: an
    attempt started ahead of its time counts once its call-time beat is in (a worker frozen
    before that beat never called, and its attempt is handed back rather than expired: the
    reaper's ``never_called`` in ``reaper_attempt_lock``)."""
    found: list[str] = []

    async def open_attempt() -> bool:
        run_id = await db.fetchval(
            "SELECT a.run_id FROM run_attempts a JOIN runs r USING (run_id, nominal_time) "
            "WHERE r.job_id = $1 AND a.number = 1 AND a.end_time IS NULL AND NOT "
            "duetime_never_called(a.early, a.start_time, a.call_progress, a.beat_time, "
            "a.worker_id)",
            uuid.UUID(job.job_id),
        )
        if run_id is not None:
            found.append(str(run_id))
        return bool(found)

    await eventually(open_attempt, 30, "the attempt started, its call due")
    return found[0]
