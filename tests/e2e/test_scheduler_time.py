"""Scheduler processes on real etcd and PostgreSQL, under a shifted database clock.

Every process reads "now" from ``duetime_now()`` (statement time + the offset in
``duetime_clock``), so moving that offset moves the whole fleet through a DST night, an outage
or a pause. Jobs are created through the API's own code (``JobOperations``), after the clock was
put where the story starts, since a job's first run time is computed from the clock at creation.

The expected run lists are written by hand, as UTC instants, from the rules the contract states
(job.proto's CronSchedule, MisfireSettings and RunState comments); America/New_York is UTC-5
(EST) and UTC-4 (EDT). In 2026 the clocks jump 02:00 EST -> 03:00 EDT at 07:00Z on 8 March, and
fall back 02:00 EDT -> 01:00 EST at 06:00Z on 1 November (01:00-02:00 local happens twice:
05:00Z-06:00Z, then 06:00Z-07:00Z).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeAlias

import asyncpg
import pytest
from google.protobuf.duration_pb2 import Duration

from duetime.jobs.v1 import job_pb2
from duetime_api.jobs import JobOperations
from duetime_core.attempts import AttemptSettings
from duetime_infra.pg.attempts.results import StartAnswer, StartRequest, StartResult
from duetime_infra.pg.attempts.store import AttemptStore
from duetime_infra.pg.jobs.store import JobStore
from duetime_infra.pg.pool import create_pool
from testkit.fleet import (
    assert_every_occurrence_accounted_once,
    new_prefix,
    schedulers,
)
from testkit.jobs import TEAM, create_jobs, cron_job, interval_job
from testkit.polling import eventually
from testkit.secrets import secret_box
from testkit.time_travel import (
    RunRow,
    advance_through,
    all_next_after,
    assert_no_duplicate_runs,
    db_now,
    every,
    fleet_ready,
    nothing_due,
    runs_of,
    set_clock,
    utc,
)

NY = "America/New_York"
MINUTE = timedelta(minutes=1)
HALF_HOUR = timedelta(minutes=30)
HOUR = timedelta(hours=1)
# The largest misfire threshold the contract allows. Each clock jump below is at most 12 h, so
# every occurrence is claimed well within it: the runs of a DST night are all on time, and what
# the lists show is DST resolution alone, not misfire handling (MISFIRE_POLICY_RUN_ALL would
# instead mark them as catch-up runs at LOW priority, bounded by count and age).
ON_TIME_ALL_DAY = job_pb2.MisfireSettings(threshold=Duration(seconds=24 * 3600))

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"
# (nominal time, state, reason) of one run.
Seen = tuple[datetime, str, str]


@pytest.fixture
async def pool(db_dsn: str) -> AsyncIterator[Pool]:
    pool = await create_pool(db_dsn, max_size=4)
    yield pool
    await pool.close()


def queued(*instants: str) -> list[Seen]:
    return [(utc(t), "QUEUED", "") for t in instants]


def queued_at(instants: Sequence[datetime]) -> list[Seen]:
    return [(t, "QUEUED", "") for t in instants]


def gap_skipped(instant: str) -> Seen:
    return (utc(instant), "SKIPPED", "DST_GAP")


@dataclass(frozen=True)
class NightJob:
    name: str
    expression: str
    expected: list[Seen]
    gap: job_pb2.DstGapPolicy.ValueType = job_pb2.DST_GAP_POLICY_UNSPECIFIED
    fold: job_pb2.DstFoldPolicy.ValueType = job_pb2.DST_FOLD_POLICY_UNSPECIFIED

    def job(self) -> job_pb2.Job:
        job = cron_job(self.expression, NY, display_name=self.name, misfire=ON_TIME_ALL_DAY)
        job.schedule.cron.gap_policy = self.gap
        job.schedule.cron.fold_policy = self.fold
        return job


async def _through_the_night(
    db_dsn: str,
    pool: Pool,
    jobs: list[NightJob],
    created_at: datetime,
    stops: list[datetime],
) -> dict[str, list[RunRow]]:
    """Creates ``jobs`` with the clock at ``created_at``, then moves two running schedulers
    through ``stops``; returns each job's runs once every job is claimed past the last stop."""
    await set_clock(pool, created_at)
    records = await create_jobs(pool, [j.job() for j in jobs])
    prefix = new_prefix()
    async with schedulers(db_dsn, prefix, ["s1", "s2"]):
        await eventually(lambda: fleet_ready(pool, prefix, {"s1", "s2"}), 20, "two-way split")
        await advance_through(pool, stops)
        await eventually(lambda: all_next_after(pool, stops[-1]), 20, "claimed past the night")
    return {j.name: await runs_of(pool, r.job_id) for j, r in zip(jobs, records, strict=True)}


def _assert_runs(jobs: list[NightJob], runs: dict[str, list[RunRow]]) -> None:
    for job in jobs:
        got = runs[job.name]
        assert [(r.nominal_time, r.state, r.reason) for r in got] == job.expected, job.name
        # One run per occurrence, no jitter, no catch-up: claimed on time at normal priority.
        assert all(r.occurrence_count == 1 for r in got), job.name
        assert all(r.effective_time == r.nominal_time for r in got), job.name
        assert all(r.priority == "NORMAL" for r in got), job.name


async def _assert_consistent(pool: Pool) -> int:
    async with pool.acquire() as conn:
        await assert_no_duplicate_runs(conn)
        return await assert_every_occurrence_accounted_once(conn)


# The spring-forward night, 2026-03-08. Jobs are created at 12:00 EST on the 6th, so the daily
# jobs have a normal occurrence before the night (the 7th) and after it (the 9th).
SPRING_CREATED = utc("2026-03-06T17:00")  # Fri 6 Mar 12:00 EST
SPRING_STOPS = [
    utc("2026-03-07T05:00"),  # Sat 00:00 EST
    utc("2026-03-07T17:00"),  # Sat 12:00 EST
    utc("2026-03-08T05:00"),  # Sun 00:00 EST
    utc("2026-03-08T06:15"),  # 01:15 EST
    utc("2026-03-08T06:45"),  # 01:45 EST, a quarter of an hour before the jump
    utc("2026-03-08T07:15"),  # 03:15 EDT, just after it
    utc("2026-03-08T08:00"),  # 04:00 EDT
    utc("2026-03-08T16:00"),  # 12:00 EDT
    utc("2026-03-09T04:00"),  # Mon 00:00 EDT
    utc("2026-03-09T16:00"),  # Mon 12:00 EDT
]
# 02:30 on the 7th (EST), the gap's end 03:00 EDT on the 8th, 02:30 EDT on the 9th.
SPRING_AT_0230_SHIFTED = queued("2026-03-07T07:30", "2026-03-08T07:00", "2026-03-09T06:30")
# 01:30 exists every night: EST, EST, then EDT.
SPRING_AT_0130 = queued("2026-03-07T06:30", "2026-03-08T06:30", "2026-03-09T05:30")
SPRING_JOBS = [
    NightJob("0230-gap-shift", "30 2 * * *", SPRING_AT_0230_SHIFTED),
    NightJob(
        "0230-gap-skip",
        "30 2 * * *",
        [
            *queued("2026-03-07T07:30"),
            gap_skipped("2026-03-08T07:00"),  # recorded at the gap's end; no run at all
            *queued("2026-03-09T06:30"),
        ],
        gap=job_pb2.DST_GAP_POLICY_SKIP,
    ),
    NightJob("0130-fold-first", "30 1 * * *", SPRING_AT_0130),
    NightJob("0130-fold-last", "30 1 * * *", SPRING_AT_0130, fold=job_pb2.DST_FOLD_POLICY_LAST),
    NightJob("0130-fold-both", "30 1 * * *", SPRING_AT_0130, fold=job_pb2.DST_FOLD_POLICY_BOTH),
    # Every 30 minutes of real time: in UTC simply every :00 and :30, so ... 01:30 EST (06:30Z)
    # is followed by 03:00 EDT (07:00Z); nothing in the gap.
    NightJob(
        "every-30-min",
        "*/30 * * * *",
        queued_at(every(utc("2026-03-06T17:30"), utc("2026-03-09T16:00"), HALF_HOUR)),
    ),
    # Hourly at :30: 01:30 EST (06:30Z), then 03:30 EDT (07:30Z): an hour of real time.
    NightJob(
        "hourly-at-30",
        "30 * * * *",
        queued_at(every(utc("2026-03-06T17:30"), utc("2026-03-09T15:30"), HOUR)),
    ),
    # Six fields (seconds first): still a fixed local time, 02:30:00, shifted like the first.
    NightJob("six-field-023000", "0 30 2 * * *", SPRING_AT_0230_SHIFTED),
    # 02:00 and 02:30 both fall in the gap and shift to the same instant: one run.
    NightJob(
        "0200-and-0230",
        "0,30 2 * * *",
        queued(
            "2026-03-07T07:00",
            "2026-03-07T07:30",
            "2026-03-08T07:00",
            "2026-03-09T06:00",
            "2026-03-09T06:30",
        ),
    ),
]


@pytest.mark.timeout(180)
async def test_spring_forward_night_of_new_york_end_to_end(db_dsn: str, pool: Pool) -> None:
    runs = await _through_the_night(db_dsn, pool, SPRING_JOBS, SPRING_CREATED, SPRING_STOPS)
    # The night itself, spelled out (local wall clock in the comments).
    night = [
        r.nominal_time
        for r in runs["every-30-min"]
        if utc("2026-03-08T05:00") <= r.nominal_time <= utc("2026-03-08T08:00")
    ]
    assert night == [
        utc("2026-03-08T05:00"),  # 00:00 EST
        utc("2026-03-08T05:30"),  # 00:30 EST
        utc("2026-03-08T06:00"),  # 01:00 EST
        utc("2026-03-08T06:30"),  # 01:30 EST
        utc("2026-03-08T07:00"),  # 03:00 EDT
        utc("2026-03-08T07:30"),  # 03:30 EDT
        utc("2026-03-08T08:00"),  # 04:00 EDT
    ]
    hourly_night = [
        r.nominal_time
        for r in runs["hourly-at-30"]
        if utc("2026-03-08T05:00") <= r.nominal_time <= utc("2026-03-08T09:00")
    ]
    assert hourly_night == [
        utc("2026-03-08T05:30"),  # 00:30 EST
        utc("2026-03-08T06:30"),  # 01:30 EST
        utc("2026-03-08T07:30"),  # 03:30 EDT
        utc("2026-03-08T08:30"),  # 04:30 EDT
    ]
    _assert_runs(SPRING_JOBS, runs)
    assert await _assert_consistent(pool) == sum(
        1 for j in SPRING_JOBS for seen in j.expected if seen[2] != "DST_GAP"
    )


# The fall-back night, 2026-11-01.
FALL_CREATED = utc("2026-10-30T16:00")  # Fri 30 Oct 12:00 EDT
FALL_STOPS = [
    utc("2026-10-31T04:00"),  # Sat 00:00 EDT
    utc("2026-10-31T16:00"),  # Sat 12:00 EDT
    utc("2026-11-01T04:00"),  # Sun 00:00 EDT
    utc("2026-11-01T05:15"),  # 01:15 EDT, first pass of the repeated hour
    utc("2026-11-01T05:45"),  # 01:45 EDT
    utc("2026-11-01T06:15"),  # 01:15 EST, second pass
    utc("2026-11-01T06:45"),  # 01:45 EST
    utc("2026-11-01T08:00"),  # 03:00 EST
    utc("2026-11-01T17:00"),  # 12:00 EST
    utc("2026-11-02T05:00"),  # Mon 00:00 EST
    utc("2026-11-02T17:00"),  # Mon 12:00 EST
]
# 02:30 happens once every night: EDT, then EST, EST.
FALL_AT_0230 = queued("2026-10-31T06:30", "2026-11-01T07:30", "2026-11-02T07:30")
FALL_JOBS = [
    NightJob("0230-gap-shift", "30 2 * * *", FALL_AT_0230),
    NightJob("0230-gap-skip", "30 2 * * *", FALL_AT_0230, gap=job_pb2.DST_GAP_POLICY_SKIP),
    # 01:30 on the 1st is 05:30Z (EDT) and again 06:30Z (EST).
    NightJob(
        "0130-fold-first",
        "30 1 * * *",
        queued("2026-10-31T05:30", "2026-11-01T05:30", "2026-11-02T06:30"),
    ),
    NightJob(
        "0130-fold-last",
        "30 1 * * *",
        queued("2026-10-31T05:30", "2026-11-01T06:30", "2026-11-02T06:30"),
        fold=job_pb2.DST_FOLD_POLICY_LAST,
    ),
    NightJob(
        "0130-fold-both",
        "30 1 * * *",
        queued("2026-10-31T05:30", "2026-11-01T05:30", "2026-11-01T06:30", "2026-11-02T06:30"),
        fold=job_pb2.DST_FOLD_POLICY_BOTH,
    ),
    # Real elapsed time: every 30 minutes through both passes of 01:00-02:00.
    NightJob(
        "every-30-min",
        "*/30 * * * *",
        queued_at(every(utc("2026-10-30T16:30"), utc("2026-11-02T17:00"), HALF_HOUR)),
    ),
    # Both passes of 01:30 (05:30Z EDT, 06:30Z EST), then 02:30 EST (07:30Z).
    NightJob(
        "hourly-at-30",
        "30 * * * *",
        queued_at(every(utc("2026-10-30T16:30"), utc("2026-11-02T16:30"), HOUR)),
    ),
    NightJob("six-field-023000", "0 30 2 * * *", FALL_AT_0230),
    NightJob(
        "0200-and-0230",
        "0,30 2 * * *",
        queued(
            "2026-10-31T06:00",
            "2026-10-31T06:30",
            "2026-11-01T07:00",
            "2026-11-01T07:30",
            "2026-11-02T07:00",
            "2026-11-02T07:30",
        ),
    ),
]


@pytest.mark.timeout(180)
async def test_fall_back_night_of_new_york_end_to_end(db_dsn: str, pool: Pool) -> None:
    runs = await _through_the_night(db_dsn, pool, FALL_JOBS, FALL_CREATED, FALL_STOPS)
    night = [
        r.nominal_time
        for r in runs["every-30-min"]
        if utc("2026-11-01T04:30") <= r.nominal_time <= utc("2026-11-01T07:30")
    ]
    assert night == [
        utc("2026-11-01T04:30"),  # 00:30 EDT
        utc("2026-11-01T05:00"),  # 01:00 EDT
        utc("2026-11-01T05:30"),  # 01:30 EDT
        utc("2026-11-01T06:00"),  # 01:00 EST
        utc("2026-11-01T06:30"),  # 01:30 EST
        utc("2026-11-01T07:00"),  # 02:00 EST
        utc("2026-11-01T07:30"),  # 02:30 EST
    ]
    hourly_night = [
        r.nominal_time
        for r in runs["hourly-at-30"]
        if utc("2026-11-01T04:00") <= r.nominal_time <= utc("2026-11-01T08:00")
    ]
    assert hourly_night == [
        utc("2026-11-01T04:30"),  # 00:30 EDT
        utc("2026-11-01T05:30"),  # 01:30 EDT
        utc("2026-11-01T06:30"),  # 01:30 EST
        utc("2026-11-01T07:30"),  # 02:30 EST
    ]
    _assert_runs(FALL_JOBS, runs)
    expected_total = sum(len(j.expected) for j in FALL_JOBS)
    assert await _assert_consistent(pool) == expected_total
    async with pool.acquire() as conn:
        assert await assert_every_occurrence_accounted_once(conn) == expected_total


@pytest.mark.timeout(180)
async def test_gap_skip_is_recorded_for_a_job_created_just_before_the_gap(
    db_dsn: str, pool: Pool
) -> None:
    """DST_GAP_POLICY_SKIP: "Do not run; the occurrence is recorded as SKIPPED with reason
    DST_GAP" (job.proto). A job created on Saturday 7 March at noon, after that day's 02:30,
    must still get its record for the 02:30 that Sunday's gap drops, like a job created a day
    earlier does (test above)."""
    jobs = [
        NightJob("0230-gap-shift", "30 2 * * *", queued("2026-03-08T07:00", "2026-03-09T06:30")),
        NightJob(
            "0230-gap-skip",
            "30 2 * * *",
            [gap_skipped("2026-03-08T07:00"), *queued("2026-03-09T06:30")],
            gap=job_pb2.DST_GAP_POLICY_SKIP,
        ),
    ]
    stops = [
        utc("2026-03-08T05:00"),  # Sun 00:00 EST
        utc("2026-03-08T16:00"),  # Sun 12:00 EDT
        utc("2026-03-09T04:00"),  # Mon 00:00 EDT
        utc("2026-03-09T16:00"),  # Mon 12:00 EDT
    ]
    created = utc("2026-03-07T17:00")  # Sat 7 Mar 12:00 EST
    runs = await _through_the_night(db_dsn, pool, jobs, created, stops)
    _assert_runs(jobs, runs)
    await _assert_consistent(pool)


# ---------------------------------------------------------------------------------------------
# The fleet down across a window.

Expected = tuple[datetime, str, str, int, datetime | None, str]


def on_time(*instants: datetime, priority: str = "NORMAL") -> list[Expected]:
    return [(t, "QUEUED", "", 1, None, priority) for t in instants]


def caught_up(instants: list[datetime]) -> list[Expected]:
    """Misfired occurrences run anyway (RUN_ALL), dispatched behind current work."""
    return on_time(*instants, priority="LOW")


def missed(first: str, last: str, count: int) -> Expected:
    return (utc(first), "MISSED", "MISFIRE", count, utc(last), "NORMAL")


def _misfire(
    policy: job_pb2.MisfirePolicy.ValueType, catch_up: int = 0, age_minutes: int = 0
) -> job_pb2.MisfireSettings:
    settings = job_pb2.MisfireSettings(policy=policy, max_catch_up_runs=catch_up)
    if age_minutes:
        settings.max_catch_up_age.FromTimedelta(timedelta(minutes=age_minutes))
    return settings


RUN_ONCE = job_pb2.MISFIRE_POLICY_UNSPECIFIED  # the default
SKIP = job_pb2.MISFIRE_POLICY_SKIP
RUN_ALL = job_pb2.MISFIRE_POLICY_RUN_ALL

OUTAGE_CREATED = utc("2026-06-15T08:59:30")
# Before the outage the clock moves in steps shorter than the 60 s misfire threshold, and the
# fleet claims 09:00, 09:01 and 09:02 on time.
BEFORE_OUTAGE = [utc("2026-06-15T09:00:20"), utc("2026-06-15T09:01:20"), utc("2026-06-15T09:02:20")]
# While every scheduler is down the clock moves 2 h 2' 45" forward, to 11:05:05. When the fleet
# is back (it claims within seconds, so before 11:05:55, when 11:06 enters the look-ahead) the
# misfire line, now - 60 s, lies between 11:04 (missed) and 11:05 (on time).
AFTER_OUTAGE = utc("2026-06-15T11:05:05")
EVERY_MINUTE_BEFORE = on_time(
    utc("2026-06-15T09:00"), utc("2026-06-15T09:01"), utc("2026-06-15T09:02")
)
EVERY_MINUTE_RUN_ONCE = [
    *EVERY_MINUTE_BEFORE,
    missed("2026-06-15T09:03", "2026-06-15T11:04", 122),
    *on_time(utc("2026-06-15T11:05")),
]
EVERY_MINUTE_SKIP = EVERY_MINUTE_RUN_ONCE  # an on-time run exists: RUN_ONCE runs no misfire
EVERY_MINUTE_RUN_ALL_5 = [
    *EVERY_MINUTE_BEFORE,
    missed("2026-06-15T09:03", "2026-06-15T10:59", 117),
    *caught_up(every(utc("2026-06-15T11:00"), utc("2026-06-15T11:04"), MINUTE)),
    *on_time(utc("2026-06-15T11:05")),
]
# At most 1,000 runs, none older than 30 minutes: 10:36 .. 11:04 (29) run, the rest MISSED.
EVERY_MINUTE_RUN_ALL_30_MIN = [
    *EVERY_MINUTE_BEFORE,
    missed("2026-06-15T09:03", "2026-06-15T10:35", 93),
    *caught_up(every(utc("2026-06-15T10:36"), utc("2026-06-15T11:04"), MINUTE)),
    *on_time(utc("2026-06-15T11:05")),
]
# Every 10 minutes: no occurrence is on time when the fleet is back (11:00 is 5' late, 11:10
# is not due), so RUN_ONCE runs the latest missed one now and SKIP runs none.
TEN_MINUTES_RUN_ONCE = [
    *on_time(utc("2026-06-15T09:00")),
    missed("2026-06-15T09:10", "2026-06-15T10:50", 11),
    *on_time(utc("2026-06-15T11:00")),
]
TEN_MINUTES_SKIP = [
    *on_time(utc("2026-06-15T09:00")),
    missed("2026-06-15T09:10", "2026-06-15T11:00", 12),
]
TEN_MINUTES_RUN_ALL_5 = [
    *on_time(utc("2026-06-15T09:00")),
    missed("2026-06-15T09:10", "2026-06-15T10:10", 7),
    *caught_up(every(utc("2026-06-15T10:20"), utc("2026-06-15T11:00"), timedelta(minutes=10))),
]


def _outage_jobs() -> dict[str, tuple[job_pb2.Job, list[Expected]]]:
    def interval(misfire: job_pb2.MisfireSettings) -> job_pb2.Job:
        job = interval_job(60, misfire=misfire)
        job.schedule.interval.start_time.FromDatetime(utc("2026-06-15T09:00"))
        return job

    def cron(expression: str, misfire: job_pb2.MisfireSettings) -> job_pb2.Job:
        return cron_job(expression, "UTC", misfire=misfire)

    jobs: dict[str, tuple[job_pb2.Job, list[Expected]]] = {}
    for kind, build in (
        ("interval-60s", interval),
        ("cron-every-minute", lambda m: cron("* * * * *", m)),
    ):
        jobs[f"{kind}-run-once"] = (build(_misfire(RUN_ONCE)), EVERY_MINUTE_RUN_ONCE)
        jobs[f"{kind}-skip"] = (build(_misfire(SKIP)), EVERY_MINUTE_SKIP)
        jobs[f"{kind}-run-all-5"] = (build(_misfire(RUN_ALL, 5)), EVERY_MINUTE_RUN_ALL_5)
        jobs[f"{kind}-run-all-30min"] = (
            build(_misfire(RUN_ALL, 1000, age_minutes=30)),
            EVERY_MINUTE_RUN_ALL_30_MIN,
        )
    jobs["cron-10min-run-once"] = (cron("*/10 * * * *", _misfire(RUN_ONCE)), TEN_MINUTES_RUN_ONCE)
    jobs["cron-10min-skip"] = (cron("*/10 * * * *", _misfire(SKIP)), TEN_MINUTES_SKIP)
    jobs["cron-10min-run-all-5"] = (
        cron("*/10 * * * *", _misfire(RUN_ALL, 5, age_minutes=60 * 24)),
        TEN_MINUTES_RUN_ALL_5,
    )
    return jobs


@pytest.mark.timeout(180)
async def test_fleet_down_across_a_window_follows_each_jobs_misfire_policy(
    db_dsn: str, pool: Pool
) -> None:
    await set_clock(pool, OUTAGE_CREATED)
    jobs = _outage_jobs()
    records = dict(
        zip(jobs, await create_jobs(pool, [job for job, _ in jobs.values()]), strict=True)
    )
    prefix = new_prefix()
    ids = ["s1", "s2"]
    async with schedulers(db_dsn, prefix, ids) as fleet:
        await eventually(lambda: fleet_ready(pool, prefix, ids), 20, "two-way split")
        await advance_through(pool, BEFORE_OUTAGE, what="before the outage:")
    # Every scheduler got SIGTERM and exited.
    assert all(s.process.returncode is not None for s in fleet.values())
    pending = {
        name: await pool.fetchval("SELECT next_run_time FROM jobs WHERE job_id = $1", r.job_id)
        for name, r in records.items()
    }
    assert pending == {
        name: utc("2026-06-15T09:10") if "10min" in name else utc("2026-06-15T09:03")
        for name in jobs
    }, "the fleet was too slow to stop before 09:02:55 (look-ahead of 09:03)"

    await set_clock(pool, AFTER_OUTAGE)
    async with schedulers(db_dsn, prefix, ids):
        await eventually(lambda: nothing_due(pool), 30, "claims after the outage")
    back_at = await db_now(pool)

    for name, (_, expected) in jobs.items():
        runs = await runs_of(pool, records[name].job_id)
        got = [
            (r.nominal_time, r.state, r.reason, r.occurrence_count, r.range_end_time, r.priority)
            for r in runs
            if r.nominal_time <= utc("2026-06-15T11:05")
        ]
        assert got == expected, name
        # Anything claimed later (real time went on) is an ordinary on-time run.
        later = [r for r in runs if r.nominal_time > utc("2026-06-15T11:05")]
        assert all(r.state == "QUEUED" and r.priority == "NORMAL" for r in later), name
        # The first claim after the outage made the records; it happened before 11:05:55,
        # the assumption behind the hand-written lists.
        first_claim = min(r.create_time for r in runs if r.create_time > AFTER_OUTAGE)
        assert first_claim < utc("2026-06-15T11:05:55"), (name, first_claim, back_at)
    async with pool.acquire() as conn:
        await assert_no_duplicate_runs(conn)
        checked = await assert_every_occurrence_accounted_once(conn)
    # 8 every-minute jobs with 126+ occurrences (09:00 .. 11:05), 3 ten-minute ones with 13.
    assert checked >= 8 * 126 + 3 * 13


# ---------------------------------------------------------------------------------------------
# One-off and paused jobs.


@pytest.mark.timeout(180)
async def test_one_off_completes_and_paused_job_is_not_claimed_until_resumed(
    db_dsn: str, pool: Pool
) -> None:
    await set_clock(pool, utc("2026-06-15T08:59:30"))
    one_off = job_pb2.Job(
        target=job_pb2.Target(http=job_pb2.HttpTarget(url="https://target.test/hook")),
        display_name="one-off",
    )
    one_off.schedule.at.run_time.FromDatetime(utc("2026-06-15T09:00:10"))
    delayed = job_pb2.Job(
        target=job_pb2.Target(http=job_pb2.HttpTarget(url="https://target.test/hook")),
        display_name="delayed",
    )
    delayed.schedule.delay.delay.FromTimedelta(timedelta(seconds=40))  # ~09:00:10
    paused = cron_job("* * * * *", "UTC", display_name="paused")
    control = cron_job("* * * * *", "UTC", display_name="control", misfire=ON_TIME_ALL_DAY)
    one_off_r, delayed_r, paused_r, control_r = await create_jobs(
        pool, [one_off, delayed, paused, control]
    )
    service = JobOperations(JobStore(pool, secret_box()))
    prefix = new_prefix()
    # One scheduler owns every partition: once it has claimed the control job after a jump,
    # it has also passed over the paused job's partition.
    async with schedulers(db_dsn, prefix, ["solo"]):
        await eventually(lambda: fleet_ready(pool, prefix, {"solo"}), 20, "partitions owned")
        assert await _job_state(pool, one_off_r.job_id) == ("ACTIVE", utc("2026-06-15T09:00:10"))
        assert await runs_of(pool, one_off_r.job_id) == []

        await advance_through(pool, [utc("2026-06-15T09:00:20")])
        for record in (one_off_r, delayed_r):
            assert await _job_state(pool, record.job_id) == ("COMPLETED", None)
            runs = await runs_of(pool, record.job_id)
            assert [(r.state, r.occurrence_count) for r in runs] == [("QUEUED", 1)]
        assert (await runs_of(pool, one_off_r.job_id))[0].nominal_time == utc("2026-06-15T09:00:10")

        paused_record = await service.pause(TEAM, paused_r.job_id, "")
        assert paused_record.pause_time == utc("2026-06-15T09:01")
        # Ten minutes go by with the scheduler running.
        await set_clock(pool, utc("2026-06-15T09:10:20"))
        await eventually(
            lambda: _next_run_is(pool, control_r.job_id, utc("2026-06-15T09:11")),
            20,
            "control claimed after the jump",
        )
        assert await _job_state(pool, paused_r.job_id) == ("PAUSED", None)
        assert [r.nominal_time for r in await runs_of(pool, paused_r.job_id)] == [
            utc("2026-06-15T09:00")
        ]

        resumed = (await service.resume(TEAM, paused_r.job_id, "")).record
        assert resumed.next_run_time == utc("2026-06-15T09:11")
        await advance_through(pool, [utc("2026-06-15T09:11:20")])

    got = [
        (r.nominal_time, r.state, r.reason, r.occurrence_count, r.range_end_time)
        for r in await runs_of(pool, paused_r.job_id)
    ]
    assert got == [
        (utc("2026-06-15T09:00"), "QUEUED", "", 1, None),
        # 09:01 .. 09:10: one record for the paused stretch, not caught up on resume.
        (utc("2026-06-15T09:01"), "SKIPPED", "JOB_PAUSED", 10, utc("2026-06-15T09:10")),
        (utc("2026-06-15T09:11"), "QUEUED", "", 1, None),
    ]
    control_runs = await runs_of(pool, control_r.job_id)
    assert [r.nominal_time for r in control_runs] == every(
        utc("2026-06-15T09:00"), utc("2026-06-15T09:11"), MINUTE
    )
    assert await _assert_consistent(pool) == 2 + 12 + 12


async def _job_state(pool: Pool, job_id: uuid.UUID) -> tuple[str, datetime | None]:
    row = await pool.fetchrow("SELECT state, next_run_time FROM jobs WHERE job_id = $1", job_id)
    assert row is not None
    return row["state"], row["next_run_time"]


async def _next_run_is(pool: Pool, job_id: uuid.UUID, at: datetime) -> bool:
    return bool(await _job_state(pool, job_id) == ("ACTIVE", at))


# ---------------------------------------------------------------------------------------------
# A job whose schedule cannot be computed.


@dataclass(frozen=True)
class Corruption:
    path: tuple[str, ...]  # jsonb_set path into the stored spec document
    value: str
    gap: job_pb2.DstGapPolicy.ValueType = job_pb2.DST_GAP_POLICY_UNSPECIFIED


CORRUPTIONS = {
    "bad-expression": Corruption(("schedule", "expression"), "61 5 * * *"),
    "unknown-zone": Corruption(("schedule", "time_zone"), "Mars/Olympus_Mons"),
    "bad-expression-gap-skip": Corruption(
        ("schedule", "expression"), "61 5 * * *", job_pb2.DST_GAP_POLICY_SKIP
    ),
    "unknown-zone-gap-skip": Corruption(
        ("schedule", "time_zone"), "Mars/Olympus_Mons", job_pb2.DST_GAP_POLICY_SKIP
    ),
    # A schedule document this code cannot read (as a newer version might write one).
    "unreadable-schedule": Corruption(("schedule", "kind"), "rrule"),
}
HEALTHY = 200


@pytest.mark.timeout(180)
@pytest.mark.parametrize("corruption", list(CORRUPTIONS.values()), ids=list(CORRUPTIONS))
async def test_a_job_whose_schedule_cannot_be_computed_errors_alone(
    db_dsn: str, pool: Pool, corruption: Corruption
) -> None:
    await set_clock(pool, utc("2026-06-15T08:59:30"))
    # 05:00 New York (EDT) is 09:00Z, when every healthy job is due too: one batch.
    broken_job = cron_job("0 5 * * *", NY, display_name="broken")
    broken_job.schedule.cron.gap_policy = corruption.gap
    broken, *healthy = await create_jobs(
        pool, [broken_job, *(cron_job("* * * * *", "UTC") for _ in range(HEALTHY))]
    )
    healthy_ids = [r.job_id for r in healthy]
    await pool.execute(
        "UPDATE jobs SET spec = jsonb_set(spec, $2::text[], to_jsonb($3::text)) WHERE job_id = $1",
        broken.job_id,
        list(corruption.path),
        corruption.value,
    )
    assert await _job_state(pool, broken.job_id) == ("ACTIVE", utc("2026-06-15T09:00"))

    async def claimed_through(at: datetime) -> bool:
        ok = await pool.fetchval(
            "SELECT count(*) FROM jobs WHERE job_id = ANY($1) AND next_run_time = $2",
            healthy_ids,
            at,
        )
        errored = await _job_state(pool, broken.job_id)
        return int(ok) == HEALTHY and errored[0] == "ERROR"

    prefix = new_prefix()
    async with schedulers(db_dsn, prefix, ["solo"]) as fleet:
        await eventually(lambda: fleet_ready(pool, prefix, {"solo"}), 20, "partitions owned")
        await set_clock(pool, utc("2026-06-15T09:00:20"))
        try:
            await eventually(
                lambda: claimed_through(utc("2026-06-15T09:01")),
                15,
                "healthy jobs claimed and the broken one in ERROR",
            )
            # The claim loop keeps going: the next minute is claimed too.
            await set_clock(pool, utc("2026-06-15T09:01:20"))
            await eventually(
                lambda: claimed_through(utc("2026-06-15T09:02")), 15, "the next minute claimed"
            )
        except AssertionError as failure:
            claimed = await pool.fetchval("SELECT count(*) FROM runs")
            failures = [line for line in fleet["solo"].output if "claim_failed" in line]
            last = json.loads(failures[-1]).get("exception", "") if failures else ""
            raise AssertionError(
                f"{failure}; {claimed} runs claimed; the scheduler logged "
                f"{len(failures)} failed claim passes, the last ending in: "
                f"{last.splitlines()[-1:]}"
            ) from failure

    row = await pool.fetchrow(
        "SELECT state, state_reason, next_run_time FROM jobs WHERE job_id = $1", broken.job_id
    )
    assert row is not None
    assert row["state"] == "ERROR"
    assert row["state_reason"], "an ERROR job says why"
    assert row["next_run_time"] is None
    print(f"state_reason: {row['state_reason']}")
    # Nothing after the pending occurrence (computed at creation, before the corruption).
    broken_runs = await runs_of(pool, broken.job_id)
    assert all(r.nominal_time == utc("2026-06-15T09:00") for r in broken_runs)
    async with pool.acquire() as conn:
        await assert_no_duplicate_runs(conn)
        assert await assert_every_occurrence_accounted_once(conn) == 2 * HEALTHY


# ---------------------------------------------------------------------------------------------
# The clock past the weeks of run history the maintenance created.


@pytest.mark.timeout(180)
async def test_start_attempt_finds_a_run_while_maintenance_moves_it_out_of_runs_default(
    db_dsn: str, pool: Pool
) -> None:
    """A run claimed in a week without its own partition lands in ``runs_default``; the next
    history maintenance moves it into the new week's partition. A StartAttempt for that run
    arriving meanwhile must still find it (it waits on the move's locks, then reads)."""
    # Relative to real time, where the template's partitions are: the scheduler starts with
    # the clock eight weeks ahead, so its first maintenance pass creates that week (which
    # tells us it ran) and retires the template's; the clock then goes back ten weeks before
    # real time, to a week without a partition and with none old enough to retire (retiring
    # one would lock the whole runs table and hide the race).
    real_now: datetime = await pool.fetchval("SELECT statement_timestamp()")
    await set_clock(pool, real_now + timedelta(weeks=8))
    due = (real_now - timedelta(weeks=10)).replace(hour=9, minute=0, second=0, microsecond=0)
    prefix = new_prefix()
    async with schedulers(db_dsn, prefix, ["solo"]):
        await eventually(lambda: fleet_ready(pool, prefix, {"solo"}), 20, "partitions owned")
        await set_clock(pool, due - timedelta(seconds=30))
        (record,) = await create_jobs(pool, [cron_job("* * * * *", "UTC", misfire=ON_TIME_ALL_DAY)])
        await advance_through(pool, [due + timedelta(seconds=20)])
    claimed = await pool.fetchrow(
        "SELECT run_id, tableoid::regclass::text AS part FROM runs WHERE job_id = $1",
        record.job_id,
    )
    assert claimed is not None
    assert claimed["part"] == "runs_default"

    mover = await asyncpg.connect(db_dsn)
    starter_pool = await create_pool(db_dsn, max_size=2)
    start: asyncio.Task[StartResult] | None = None
    try:
        # The hourly maintenance (as the owner of partition 0 runs it), not yet committed: it
        # has created the run's week and moved the run there.
        moving = mover.transaction()
        await moving.start()
        await mover.execute("SELECT duetime_maintain_partitions()")
        store = AttemptStore(starter_pool, AttemptSettings())
        start = asyncio.create_task(_start_one(store, claimed["run_id"]))
        await eventually(lambda: _someone_waits_on_a_lock(pool), 10, "StartAttempt waiting")
        await moving.commit()
        result = await asyncio.wait_for(start, 10)
        again = await _start_one(store, claimed["run_id"])
    finally:
        if start is not None and not start.done():
            start.cancel()
        await mover.close()
        await starter_pool.close()
    where = await pool.fetchval(
        "SELECT tableoid::regclass::text FROM runs WHERE run_id = $1", claimed["run_id"]
    )
    assert (result.answer, result.refusal) == (StartAnswer.STARTED, ""), (
        f"the run, QUEUED in {where} all along, was not found; a second start just after: "
        f"{again.answer.value} {again.refusal}"
    )


async def _start_one(store: AttemptStore, run_id: uuid.UUID) -> StartResult:
    (result,) = await store.start_many([StartRequest(run_id, "d-1", "w-1")])
    assert isinstance(result, StartResult), result
    return result


async def _someone_waits_on_a_lock(pool: Pool) -> bool:
    waiting = await pool.fetchval(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    return int(waiting) > 0
