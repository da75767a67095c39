"""The four services as separate processes (api, scheduler, relay, worker) on a fresh database,
real etcd and Kafka, and a real HTTP target that records every call: jobs of every schedule
kind (one-off, delayed, interval, six-field cron in a named zone) created through the API run
at their time and never before; failures are retried after delays within the job's backoff
bounds; an exhausted run is dead-lettered, published on the dead-letter topic, notified to the
owning team's webhook, and brought back by RedriveRun once its target is fixed.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp

from duetime.events.v1.events_pb2 import DeadLetterEvent
from duetime.jobs.v1 import job_pb2, job_service_pb2, run_pb2
from duetime_core.backoff import backoff_bounds
from duetime_core.jobspec import RetryPolicy
from duetime_core.runkey import rfc3339_utc
from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC
from testkit.http_target import Behaviour, HttpTarget, http_target
from testkit.kafka import Offsets, end_offsets, read_between, shared_bootstrap
from testkit.polling import eventually
from testkit.system import TEAM, Api, http_job, running_system

pytestmark = pytest.mark.timeout(120)

# The target's receive time and the run's effective time come from two clocks of this machine
# (the host's and PostgreSQL's), read at microsecond resolution.
CLOCK_SLACK = timedelta(milliseconds=5)
# From the moment a retry is due to its attempt's start: requeue, relay, Kafka, the worker's
# StartAttempt — generous, for a 2-core machine shared with other tests.
PIPELINE_SLACK = timedelta(seconds=1)
FLAKY_RETRY = RetryPolicy(
    max_attempts=5,
    initial_backoff=timedelta(seconds=1),
    max_backoff=timedelta(seconds=1.5),
    multiplier=2.0,
)
DELAY = timedelta(seconds=2)
CRON = ("*/2 * * * * *", "Europe/Berlin")


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


def ts(value: Timestamp) -> datetime:
    return value.ToDatetime(UTC)


async def states(api: Api, job: job_pb2.Job) -> list[int]:
    return [run.state for run in await api.runs(job)]


async def test_jobs_run_on_time_retry_and_dead_letter(db_dsn: str, target: HttpTarget) -> None:
    began = time.monotonic()
    dead_letters_from = await end_offsets(shared_bootstrap(), [DEAD_LETTER_TOPIC])
    hook = target.on("/team-hook", Behaviour())
    async with running_system(db_dsn, notification_url=hook) as system:
        print(f"four services up in {time.monotonic() - began:.1f} s")
        api = system.api
        worker = system.workers["w1"]
        now = datetime.now(UTC)
        one_off = await api.create(
            http_job("one-off", target.on("/once", Behaviour()), at=now + timedelta(seconds=3))
        )
        interval = await api.create(
            http_job("every-2s", target.on("/every", Behaviour()), every=timedelta(seconds=2))
        )
        delayed = await api.create(
            http_job("delayed", target.on("/delayed", Behaviour()), after=DELAY)
        )
        cron = await api.create(http_job("cron", target.on("/cron", Behaviour()), cron=CRON))
        flaky_job = http_job(
            "flaky",
            target.on("/flaky", Behaviour(fail_first=2)),
            at=now + timedelta(seconds=1),
            max_attempts=FLAKY_RETRY.max_attempts,
        )
        flaky_job.retry_policy.initial_backoff.FromTimedelta(FLAKY_RETRY.initial_backoff)
        flaky_job.retry_policy.max_backoff.FromTimedelta(FLAKY_RETRY.max_backoff)
        flaky = await api.create(flaky_job)
        broken = await api.create(
            http_job(
                "broken",
                target.on("/broken", Behaviour(status=500)),
                at=now + timedelta(seconds=1),
                max_attempts=2,
            )
        )

        async def succeeded(job: job_pb2.Job, count: int) -> bool:
            return (await states(api, job)).count(run_pb2.RUN_STATE_SUCCEEDED) >= count

        async def dead_lettered() -> bool:
            return await states(api, broken) == [run_pb2.RUN_STATE_DEAD_LETTERED]

        took = await eventually(lambda: succeeded(one_off, 1), 30, "the one-off run SUCCEEDED")
        print(f"one-off succeeded {took:.1f} s after creation")
        await eventually(lambda: succeeded(delayed, 1), 30, "the delayed run SUCCEEDED")
        await eventually(lambda: succeeded(interval, 3), 30, "three interval runs SUCCEEDED")
        await eventually(lambda: succeeded(cron, 3), 30, "three cron runs SUCCEEDED")
        await eventually(lambda: succeeded(flaky, 1), 30, "the flaky run SUCCEEDED")
        await eventually(dead_lettered, 30, "the broken run DEAD_LETTERED")

        for job, path in (
            (one_off, "/once"),
            (delayed, "/delayed"),
            (interval, "/every"),
            (cron, "/cron"),
        ):
            await check_on_time(api, target, job, path)
        await check_schedules(api, delayed, cron)
        await check_retry_delays(api, target, flaky)
        await check_dead_letter_notified_and_redriven(api, target, broken, dead_letters_from)
    assert worker.process.returncode == 0, "\n".join(worker.output[-30:])
    print(f"end to end in {time.monotonic() - began:.1f} s")


async def check_on_time(api: Api, target: HttpTarget, job: job_pb2.Job, path: str) -> None:
    """Every succeeded run called the target once, with its run key, never early."""
    calls = {c.headers["Idempotency-Key"]: c for c in target.calls_to(path)}
    succeeded = [r for r in await api.runs(job) if r.state == run_pb2.RUN_STATE_SUCCEEDED]
    assert succeeded
    for run in succeeded:
        call = calls[run.idempotency_key]
        effective = ts(run.effective_time)
        assert call.time >= effective - CLOCK_SLACK, (path, call.time, effective)
        assert call.headers["Duetime-Attempt"] == str(run.attempt)
        assert call.headers["traceparent"]
        assert [a.outcome for a in run.attempts] == [run_pb2.ATTEMPT_OUTCOME_SUCCEEDED]
        assert run.attempts[0].worker == "w1"
    lateness = [(calls[r.idempotency_key].time - ts(r.effective_time)) for r in succeeded]
    print(f"{path}: start lateness max {max(lateness).total_seconds() * 1000:.0f} ms")


async def check_schedules(api: Api, delayed: job_pb2.Job, cron: job_pb2.Job) -> None:
    """The delayed run is due DELAY after the job's creation; the cron runs are every second
    even second after creation, none left out."""
    run_time = ts(delayed.schedule.delay.run_time)
    assert abs(run_time - (ts(delayed.create_time) + DELAY)) < timedelta(seconds=1), run_time
    (run,) = await api.runs(delayed)
    assert ts(run.nominal_time) == run_time
    assert run.idempotency_key == f"{delayed.job_id}/{rfc3339_utc(run_time)}"

    nominal = sorted(ts(r.nominal_time) for r in await api.runs(cron))
    assert nominal[0] > ts(cron.create_time)
    assert nominal[0] - ts(cron.create_time) <= timedelta(seconds=2)
    assert all(t.second % 2 == 0 and t.microsecond == 0 for t in nominal), nominal
    assert all(b - a == timedelta(seconds=2) for a, b in itertools.pairwise(nominal)), nominal


async def check_retry_delays(api: Api, target: HttpTarget, flaky: job_pb2.Job) -> None:
    """Two failures, then success: three attempts, numbered 1, 2, 3, each retry started within
    the backoff bounds after the previous attempt ended (both on the database clock)."""
    (run,) = await api.runs(flaky)
    assert [(a.number, a.outcome) for a in run.attempts] == [
        (1, run_pb2.ATTEMPT_OUTCOME_FAILED),
        (2, run_pb2.ATTEMPT_OUTCOME_FAILED),
        (3, run_pb2.ATTEMPT_OUTCOME_SUCCEEDED),
    ]
    calls = target.calls_to("/flaky")
    assert [c.headers["Duetime-Attempt"] for c in calls] == ["1", "2", "3"]
    assert len({c.headers["Idempotency-Key"] for c in calls}) == 1
    for failed, (previous, following) in enumerate(itertools.pairwise(run.attempts), start=1):
        low, high = backoff_bounds(FLAKY_RETRY, failed)
        delay = ts(following.start_time) - ts(previous.end_time)
        assert low <= delay <= high + PIPELINE_SLACK, (failed, delay, low, high)
        # The target saw the calls at least that far apart (its clock is the host's).
        seen = calls[failed].time - calls[failed - 1].time
        assert seen >= low - CLOCK_SLACK, (failed, seen, low)
        print(f"retry {failed}: waited {delay.total_seconds():.3f} s, bounds [{low}, {high}]")


async def check_dead_letter_notified_and_redriven(
    api: Api, target: HttpTarget, broken: job_pb2.Job, dead_letters_from: Offsets
) -> None:
    (run,) = await api.runs(broken)
    assert [a.outcome for a in run.attempts] == [run_pb2.ATTEMPT_OUTCOME_FAILED] * 2
    assert len(target.calls_to("/broken")) == 2
    hook = target.url("/team-hook")

    # The event is on the dead-letter topic (shared with other tests: found by its run id).
    found: list[DeadLetterEvent] = []

    async def published() -> bool:
        until = await end_offsets(shared_bootstrap(), [DEAD_LETTER_TOPIC])
        records = await read_between(shared_bootstrap(), dead_letters_from, until)
        events = (DeadLetterEvent.FromString(r.value) for r in records)
        found[:] = [e for e in events if e.run_id == run.run_id]
        return bool(found)

    await eventually(published, 30, "the dead-letter event published", interval=0.5)
    (event,) = found
    assert (event.job_id, event.team, event.job_name) == (broken.job_id, TEAM, broken.name)
    assert (event.idempotency_key, event.attempt) == (run.idempotency_key, 2)
    assert (event.reason, event.last_error) == ("ATTEMPTS_EXHAUSTED", "HTTP 500")
    assert event.notification_url == hook
    assert event.notification_signing == job_pb2.CALL_SIGNING_OFF  # the team does not sign

    # The team's webhook got that event as JSON (the URL and signing left out), keyed by run
    # and attempt.
    # Repeats are allowed by at-least-once delivery, but must be the same notification.
    async def notified() -> bool:
        return bool(target.calls_to("/team-hook"))

    took = await eventually(notified, 30, "the team notified")
    print(f"team notified {took:.1f} s after the event was read")
    expected = json_format.MessageToDict(event)
    del expected["notificationUrl"], expected["notificationSigning"]
    assert expected["lastError"] == "HTTP 500"
    notifications = target.calls_to("/team-hook")
    for call in notifications:
        assert call.method == "POST"
        assert call.headers["Idempotency-Key"] == f"dead-letter/{run.run_id}/2"
        assert json.loads(call.body) == expected

    # Fixed, then redriven: SUCCEEDED with a new, higher attempt number.
    target.on("/broken", Behaviour())
    await api.stub.RedriveRun(
        job_service_pb2.RedriveRunRequest(name=run.name, request_id="redrive-1"),
        metadata=api.metadata,
    )

    async def redriven() -> bool:
        return await states(api, broken) == [run_pb2.RUN_STATE_SUCCEEDED]

    await eventually(redriven, 30, "the redriven run SUCCEEDED")
    (run,) = await api.runs(broken)
    assert [(a.number, a.outcome) for a in run.attempts] == [
        (1, run_pb2.ATTEMPT_OUTCOME_FAILED),
        (2, run_pb2.ATTEMPT_OUTCOME_FAILED),
        (3, run_pb2.ATTEMPT_OUTCOME_SUCCEEDED),
    ]
    calls = target.calls_to("/broken")
    assert [c.headers["Duetime-Attempt"] for c in calls] == ["1", "2", "3"]
    assert {c.headers["Idempotency-Key"] for c in calls} == {run.idempotency_key}
    # A succeeded run notifies nobody: every notification is still the dead-letter one.
    assert {c.headers["Idempotency-Key"] for c in target.calls_to("/team-hook")} == {
        f"dead-letter/{run.run_id}/2"
    }
