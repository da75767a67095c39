"""Runs held back by their team's quota or by the dispatch credit, and their release in due and
fair order, on real PostgreSQL (claims, the dispatcher and WorkerService in process)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from datetime import datetime, timedelta

import asyncpg
import pytest

from duetime.events.v1 import events_pb2
from duetime.jobs.v1 import job_pb2, run_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_infra.codec.timeconv import datetime_to_timestamp
from duetime_infra.pg.dispatch.admission import DispatchCredit
from duetime_infra.pg.dispatch.claims import claim_batch
from duetime_infra.pg.dispatch.dispatcher import release_held_runs, requeue_due_retries
from duetime_infra.pg.fencing import FencingToken
from duetime_infra.pg.teams.quotas import read_team
from duetime_infra.pg.teams.store import update_team_quota
from testkit.environments import ApiAndWorkers, api_and_workers
from testkit.worker_api import job_message, trigger

ALL = {p: FencingToken(p, 0, 10) for p in range(1024)}
TOKENS = list(ALL.values())
S = timedelta(seconds=1)


class Env(ApiAndWorkers):
    @property
    def pool(self) -> asyncpg.Pool[asyncpg.Record]:
        return self.w.pool

    async def quota(self, team: str, **limits: object) -> None:
        async with self.pool.acquire() as conn:
            await update_team_quota(conn, team, limits)

    async def one_off(self, at: datetime, team: str | None = None, **policy: object) -> str:
        """A job that runs once at ``at``; its id."""
        job = job_message(**policy)  # type: ignore[arg-type]
        job.schedule.Clear()
        datetime_to_timestamp(at, job.schedule.at.run_time)
        token = self.api.other_token if team == self.api.other_team else self.api.token
        created = await self.api.stub.CreateJob(
            svc.CreateJobRequest(job=job), metadata=self.api.auth(token)
        )
        return created.job.job_id

    async def claim(
        self, credit: DispatchCredit | None = None, lookahead: float = 0, ahead: float = 0
    ) -> int:
        """Claims every due job; ``ahead``: a look-ahead grown for a herd (0: none)."""
        if credit is not None:
            credit.new_pass()
        total = 0
        async with self.pool.acquire() as conn:
            while True:
                result = await claim_batch(
                    conn,
                    ALL,
                    lookahead=lookahead * S,
                    batch_size=500,
                    still_owner=lambda: True,
                    credit=credit,
                    ahead=ahead * S if ahead else None,
                )
                total += result.runs
                if not result.full:
                    return total

    async def release(self, credit: DispatchCredit | None = None) -> int:
        if credit is not None:
            credit.new_pass()
        return await release_held_runs(self.pool, TOKENS, timedelta(0), 500, credit=credit)

    async def runs(self, team: str | None = None) -> list[asyncpg.Record]:
        return list(
            await self.pool.fetch(
                "SELECT * FROM runs WHERE ($1::text IS NULL OR team_id = $1) "
                "ORDER BY effective_time, run_id",
                team,
            )
        )

    async def dispatched(self) -> list[events_pb2.RunDispatch]:
        rows = await self.pool.fetch(
            "SELECT payload FROM outbox WHERE topic LIKE 'duetime.runs.%' ORDER BY id"
        )
        return [events_pb2.RunDispatch.FromString(bytes(r["payload"])) for r in rows]

    async def run_through(self, run_id: uuid.UUID) -> None:
        """A worker starts the run and reports success."""
        started = await self.w.start(run_id, delivery=f"d-{run_id}")
        assert started.decision == wpb.START_DECISION_STARTED, started
        await self.w.complete(run_id, started.attempt)

    async def rate_state(self) -> tuple[datetime, object, object, object]:
        """The team's rate limit as stored: rate_tat, the charges ahead, an older build's chain."""
        row = await self.pool.fetchrow(
            "SELECT rate_tat, rate_ahead_at, rate_ahead_n, rate_ahead_from FROM team_usage "
            "WHERE team_id = $1",
            self.api.team,
        )
        assert row is not None
        return row["rate_tat"], row["rate_ahead_at"], row["rate_ahead_n"], row["rate_ahead_from"]

    async def usage(self, team: str) -> asyncpg.Record:
        row = await self.pool.fetchrow(
            "SELECT u.stored_jobs, u.dispatched - f.finished AS in_flight, u.held "
            "FROM team_usage u JOIN team_runs_done f USING (team_id) WHERE team_id = $1",
            team,
        )
        assert row is not None
        return row


@pytest.fixture
async def env(db_dsn: str) -> AsyncIterator[Env]:
    async with api_and_workers(db_dsn) as both:
        yield Env(*both)


def states(runs: list[asyncpg.Record]) -> list[tuple[str, str, str]]:
    return [(r["state"], r["reason"], r["quota_limit"]) for r in runs]


# One dispatched, three held for the rate (four_due_at_one_a_second, claimed).
RATE_HELD = [("QUEUED", "", "")] + [("WAITING", "QUOTA", "RATE")] * 3


async def four_due_at_one_a_second(env: Env) -> datetime:
    """Four one-off runs due a second from now (returned), under a quota of one dispatch a
    second: a rate of 60 a minute, no burst, no concurrency limit."""
    await env.quota(env.api.team, runs_per_minute=60, rate_burst=1, max_running=0)
    now = await env.w.now()
    for _ in range(4):
        await env.one_off(now + S)
    return now


async def test_a_run_held_by_the_concurrency_quota_is_recorded_and_later_run_in_due_order(
    env: Env,
) -> None:
    await env.quota(env.api.team, max_running=1)
    now = await env.w.now()
    for k in range(3):
        await env.one_off(now + S + k * 0.1 * S)
    await env.w.shift_clock(2 * S)
    assert await env.claim() == 3
    runs = await env.runs()
    assert states(runs) == [("QUEUED", "", "")] + [("WAITING", "QUOTA", "CONCURRENCY")] * 2
    assert "max_running" in runs[1]["reason_detail"]
    assert len(await env.dispatched()) == 1
    usage = await env.usage(env.api.team)
    assert (usage["in_flight"], usage["held"]) == (1, 2)
    # The API shows the hold and which limit.
    job_name = f"teams/{env.api.team}/jobs/{runs[1]['job_id']}"
    shown = await env.api.stub.GetRun(
        svc.GetRunRequest(name=f"{job_name}/runs/{runs[1]['run_id']}"), metadata=env.api.auth()
    )
    assert (shown.run.state, shown.run.reason, shown.run.quota_limit) == (
        run_pb2.RUN_STATE_WAITING,
        run_pb2.RUN_REASON_QUOTA,
        run_pb2.QUOTA_LIMIT_CONCURRENCY,
    )
    assert await env.release() == 0  # still one in flight
    await env.run_through(runs[0]["run_id"])
    await env.w.shift_clock(S)
    assert await env.release() == 1
    after = await env.runs()
    assert states(after)[1:] == [("QUEUED", "", "CONCURRENCY"), ("WAITING", "QUOTA", "CONCURRENCY")]
    released = after[1]
    assert released["eligible_time"] > released["effective_time"]
    assert [d.run_id for d in await env.dispatched()][-1] == str(released["run_id"])
    shown = await env.api.stub.GetRun(
        svc.GetRunRequest(name=f"{job_name}/runs/{released['run_id']}"), metadata=env.api.auth()
    )
    delay = shown.run.quota_delay.ToTimedelta()
    assert delay == released["eligible_time"] - released["effective_time"] > S
    await env.run_through(released["run_id"])
    assert await env.release() == 1
    await env.run_through(after[2]["run_id"])
    assert {r["state"] for r in await env.runs()} == {"SUCCEEDED"}
    usage = await env.usage(env.api.team)
    assert (usage["in_flight"], usage["held"]) == (0, 0)


async def test_the_rate_quota_paces_dispatches_and_a_change_applies_without_restart(
    env: Env,
) -> None:
    await four_due_at_one_a_second(env)
    await env.w.shift_clock(S)
    await env.claim()
    assert sorted(states(await env.runs())) == RATE_HELD
    assert await env.release() == 0
    await env.w.shift_clock(S)  # one more dispatch a second
    assert await env.release() == 1
    assert await env.release() == 0
    await env.quota(env.api.team, runs_per_minute=None, rate_burst=None)  # back to defaults
    assert await env.release() == 2
    assert {r["state"] for r in await env.runs()} == {"QUEUED"}
    assert len(await env.dispatched()) == 4


async def test_held_runs_keep_their_rate_while_a_run_claimed_ahead_waits_for_its_time(
    env: Env,
) -> None:
    # A run claimed ahead is charged at its due time; the held runs arriving now must still go
    # at the rate in the meantime, not wait for it (issue 34).
    now = await four_due_at_one_a_second(env)
    ahead = await env.one_off(now + 10 * S)
    await env.w.shift_clock(S)
    assert await env.claim() == 4
    assert sorted(states(await env.runs())) == RATE_HELD
    assert await env.claim(lookahead=10) == 1  # 9 s ahead of its time, and dispatched
    (claimed,) = [r for r in await env.runs() if str(r["job_id"]) == ahead]
    assert (claimed["state"], claimed["effective_time"]) == ("QUEUED", now + 10 * S)
    for _ in range(3):  # one a second, as before the claim
        await env.w.shift_clock(S)
        assert await env.release() == 1
    assert {r["state"] for r in await env.runs()} == {"QUEUED"}
    assert len(await env.dispatched()) == 5


async def test_held_runs_take_the_time_between_runs_claimed_ahead_at_several_times(
    env: Env,
) -> None:
    # One run every 10 s, no burst. Two runs claimed ahead, due at +45 s and +75 s, are
    # charged at those times and kept until then; the held runs go in every 10 s the two
    # leave room for (each takes the slot it falls in and the next), between them too: issue
    # 34 offered only the time before the first (the release at +60 s waited for +90 s). The
    # times are mid-slot so that the clock running on meanwhile changes nothing.
    await env.quota(env.api.team, runs_per_minute=6, rate_burst=1, max_running=0)
    ten = 10 * S
    now = await env.w.now()
    for _ in range(6):
        await env.one_off(now + ten, threshold=timedelta(hours=1))
    first, second = await env.one_off(now + 4.5 * ten), await env.one_off(now + 7.5 * ten)
    await env.w.shift_clock(ten)
    assert await env.claim() == 6
    assert await env.claim(lookahead=70) == 2  # both ahead of their time, and dispatched
    claimed = {str(r["job_id"]): r for r in await env.runs()}
    assert [claimed[j]["state"] for j in (first, second)] == ["QUEUED", "QUEUED"]
    assert await env.rate_state() == (
        now + 8.5 * ten,  # the TAT of every charge in time order, for older builds
        [now + 4.5 * ten, now + 7.5 * ten],
        [1, 1],
        None,
    )
    released = []
    for _ in range(8):  # +20 s to +90 s
        await env.w.shift_clock(ten)
        released.append(await env.release())
    assert released == [1, 1, 0, 0, 1, 0, 0, 1]
    rate_tat, *ahead = await env.rate_state()
    assert rate_tat >= now + 10 * ten
    assert ahead == [None, None, None]  # both charges ahead behind the clock: none is kept


async def test_a_rate_state_an_older_build_wrote_is_read_as_charged_by_its_tat(env: Env) -> None:
    # During a roll an older build charges after rate_tat and may open its own chain: this
    # build then takes everything as charged by rate_tat, never the stale charges ahead.
    await env.quota(env.api.team, runs_per_minute=60, rate_burst=1)
    now = await env.w.now()
    await env.pool.execute(
        "UPDATE team_usage SET rate_tat = $2, rate_gap_tat = $3, rate_ahead_from = $4, "
        "rate_ahead_at = ARRAY[$5::timestamptz], rate_ahead_n = ARRAY[1] WHERE team_id = $1",
        env.api.team,
        now + 9 * S,
        now + S,
        now + 8 * S,
        now + 2 * S,
    )
    read = await read_team(env.pool, env.api.team)
    assert read is not None
    assert (read[0].rate_tat, read[0].rate_ahead) == (now + 9 * S, [])
    # As this build writes it (rate_tat one interval past the charge ahead), they are kept.
    await env.pool.execute(
        "UPDATE team_usage SET rate_tat = $2, rate_ahead_from = NULL WHERE team_id = $1",
        env.api.team,
        now + 3 * S,
    )
    read = await read_team(env.pool, env.api.team)
    assert read is not None
    assert (read[0].rate_tat, read[0].rate_ahead) == (now + S, [(now + 2 * S, 1)])


async def test_a_small_team_starts_ahead_of_the_tail_of_a_big_teams_backlog(env: Env) -> None:
    credit = DispatchCredit(5)
    now = await env.w.now()
    for _ in range(40):
        await env.one_off(now + S)
    # Due well after the big team's: however long the creates take, the first claim sees
    # only the big team's runs.
    for _ in range(2):
        await env.one_off(now + 60 * S, team=env.api.other_team)
    await env.w.shift_clock(S)
    await env.claim(credit)
    big = await env.runs(env.api.team)
    assert sum(r["state"] == "QUEUED" for r in big) == 5
    assert sum(r["reason"] == "FAIR_SHARE" for r in big) == 35
    # Workers start two of the big team's runs; their credit goes to its backlog (nobody
    # else waits), then the small team's runs come due and find no credit left.
    for run in [r for r in big if r["state"] == "QUEUED"][:2]:
        await env.run_through(run["run_id"])
    await env.w.shift_clock(60 * S)
    assert await env.release(credit) == 2
    await env.claim(credit)
    small = await env.runs(env.api.other_team)
    assert states(small) == [("WAITING", "FAIR_SHARE", "")] * 2
    # Three more starts: the small team's runs take the next turns, ahead of the big tail.
    queued = [r for r in await env.runs(env.api.team) if r["state"] == "QUEUED"]
    for run in queued[:3]:
        await env.run_through(run["run_id"])
    assert await env.release(credit) == 3
    order = [d.team for d in await env.dispatched()][-3:]
    assert order.count(env.api.other_team) == 2
    assert {r["state"] for r in await env.runs(env.api.other_team)} == {"QUEUED"}
    small_dispatch = [d for d in await env.dispatched() if d.team == env.api.other_team]
    assert all(d.team_weight == 1 for d in small_dispatch)


async def test_a_herd_claimed_ahead_is_not_held_by_the_credit_nor_a_newcomer_behind_it(
    env: Env,
) -> None:
    credit = DispatchCredit(5)
    await env.quota(env.api.team, runs_per_minute=0)  # the herd spends no rate at its instant
    now = await env.w.now()
    for _ in range(40):
        await env.one_off(now + 30 * S)
    # Claimed 30 s ahead: not due, so none of it counts against the credit, and all of it goes.
    assert await env.claim(credit, lookahead=40) == 40
    herd = await env.runs(env.api.team)
    assert states(herd) == [("QUEUED", "", "")] * 40
    # A backlog due now: the big team's ten and a newcomer's two. The credit bounds what is
    # due and not started (none yet): five go, in fair order, so the newcomer's two are among
    # them, behind at most the credit.
    backlog = [await env.one_off(now + S) for _ in range(10)]
    newcomer = [await env.one_off(now + S, team=env.api.other_team) for _ in range(2)]
    await env.w.shift_clock(S)
    assert await env.claim(credit) == 12
    assert states(await env.runs(env.api.other_team)) == [("QUEUED", "", "")] * 2
    by_job = {str(r["job_id"]): r for r in await env.runs(env.api.team)}
    assert sorted(by_job[j]["state"] for j in backlog) == ["QUEUED"] * 3 + ["WAITING"] * 7
    due_queued = await env.pool.fetchval(
        "SELECT count(*) FROM runs WHERE state = 'QUEUED' AND effective_time <= duetime_now()"
    )
    assert due_queued == 5
    assert len(newcomer) == 2
    # Once the herd's time comes it counts: nothing more goes until the due backlog shrinks.
    await env.w.shift_clock(30 * S)
    assert await env.release(credit) == 0


async def test_runs_claimed_within_the_base_look_ahead_take_credit_a_herd_beyond_it_none(
    env: Env,
) -> None:
    # Workers that start nothing: the runs claimed within the base look-ahead (10 s) are the
    # backlog a newcomer's run would wait behind in Kafka, so they take credit though not yet
    # due; a herd reached only by a look-ahead grown for it takes none until it comes closer.
    credit = DispatchCredit(5, timedelta(seconds=10))
    await env.quota(env.api.team, runs_per_minute=0)
    now = await env.w.now()
    soon = [await env.one_off(now + 5 * S) for _ in range(8)]
    assert await env.claim(credit, lookahead=10) == 8
    by_job = {str(r["job_id"]): r for r in await env.runs(env.api.team)}
    assert sorted(by_job[j]["state"] for j in soon) == ["QUEUED"] * 5 + ["WAITING"] * 3
    assert {by_job[j]["reason"] for j in soon if by_job[j]["state"] == "WAITING"} == {"FAIR_SHARE"}
    herd = [await env.one_off(now + 40 * S) for _ in range(20)]
    assert await env.claim(credit, lookahead=10, ahead=50) == 20
    by_job = {str(r["job_id"]): r for r in await env.runs(env.api.team)}
    assert [by_job[j]["state"] for j in herd] == ["QUEUED"] * 20
    # The herd counts once it is within the base look-ahead.
    counting = DispatchCredit(30, timedelta(seconds=10))
    async with env.pool.acquire() as conn:
        assert await counting.free(conn, ALL, await env.w.now()) == 30 - 5
        await env.w.shift_clock(31 * S)
        counting.new_pass()
        assert await counting.free(conn, ALL, await env.w.now()) == 30 - 5 - 20


async def test_a_held_run_past_its_misfire_threshold_follows_its_policy(env: Env) -> None:
    await env.quota(env.api.team, max_running=1)
    now = await env.w.now()
    threshold = timedelta(seconds=30)
    await env.one_off(now + 0.5 * S)  # first due: it takes the one slot
    skip = await env.one_off(now + S, misfire=job_pb2.MISFIRE_POLICY_SKIP, threshold=threshold)
    once = await env.one_off(now + S, threshold=threshold)  # RUN_ONCE, nothing newer: runs
    await env.w.shift_clock(S)
    await env.claim()
    (queued,) = [r for r in await env.runs() if r["state"] == "QUEUED"]
    await env.run_through(queued["run_id"])
    await env.w.shift_clock(threshold + S)
    assert await env.release() == 2
    after = {str(r["job_id"]): r for r in await env.runs()}
    assert (after[skip]["state"], after[skip]["reason"]) == ("MISSED", "MISFIRE")
    assert "after its effective time" in after[skip]["reason_detail"]
    assert after[once]["state"] == "QUEUED"
    assert [d.job_id for d in await env.dispatched()][-1] == once


async def test_triggers_and_retries_pass_the_quota_too_and_a_held_retry_holds_its_job(
    env: Env,
) -> None:
    job_id = await env.one_off(
        (await env.w.now()) + timedelta(days=1), overlap=job_pb2.OVERLAP_POLICY_SKIP
    )
    job = job_pb2.Job(name=f"teams/{env.api.team}/jobs/{job_id}")
    first = await trigger(env.api, job, "r-1")
    started = await env.w.start(first)
    await env.w.complete(first, started.attempt, wpb.ATTEMPT_RESULT_FAILED, error="boom")
    second = await trigger(env.api, job, "r-2")  # queued while the first waits to retry
    await env.quota(env.api.team, max_running=1)
    await env.w.shift_clock(timedelta(minutes=2))  # the retry is due
    assert await requeue_due_retries(env.pool, TOKENS, timedelta(0), 10) == 1
    retry = await env.w.run_row(first)
    assert (retry["state"], retry["reason"], retry["attempt"]) == ("WAITING", "QUOTA", 1)
    # The held retry still holds the job: the other run, under SKIP, is skipped.
    answer = await env.w.start(second, delivery="d-2")
    assert answer.decision == wpb.START_DECISION_REFUSED
    assert (await env.w.run_row(second))["state"] == "SKIPPED"
    # A trigger past the limit is held like any run, and released with the retry.
    third = await trigger(env.api, job, "r-3")
    assert (await env.w.run_row(third))["state"] == "QUEUED"  # the one run in flight
    fourth = await trigger(env.api, job, "r-4")
    assert (await env.w.run_row(fourth))["state"] == "WAITING"
    await env.quota(env.api.team, max_running=10)
    assert await env.release() == 2
    assert (await env.w.run_row(first))["state"] == "QUEUED"
    assert (await env.w.run_row(fourth))["state"] == "QUEUED"


async def test_usage_counters_match_the_tables_after_every_kind_of_change(env: Env) -> None:
    await env.quota(env.api.team, max_running=2)
    now = await env.w.now()
    ids = [await env.one_off(now + S) for _ in range(4)]
    await env.one_off(now + S, team=env.api.other_team)
    await env.api.stub.DeleteJob(
        svc.DeleteJobRequest(name=f"teams/{env.api.team}/jobs/{ids[3]}"), metadata=env.api.auth()
    )
    await env.w.shift_clock(S)
    await env.claim()
    queued = [r for r in await env.runs(env.api.team) if r["state"] == "QUEUED"]
    await env.run_through(queued[0]["run_id"])
    await env.release()
    for team in (env.api.team, env.api.other_team):
        usage = await env.usage(team)
        counted = await env.pool.fetchrow(
            """SELECT (SELECT count(*) FROM jobs WHERE team_id = $1
                       AND state IN ('ACTIVE', 'PAUSED')) AS stored,
                      (SELECT count(*) FROM runs WHERE team_id = $1
                       AND state IN ('QUEUED', 'RUNNING')) AS in_flight,
                      (SELECT count(*) FROM runs WHERE team_id = $1 AND state = 'WAITING'
                       AND reason IN ('QUOTA', 'FAIR_SHARE')) AS held""",
            team,
        )
        assert counted is not None
        assert (usage["stored_jobs"], usage["in_flight"], usage["held"]) == tuple(counted)


async def on_two_parts(dsn: str, stack: AsyncExitStack) -> tuple[asyncpg.Connection, ...]:
    """Two connections whose statements count finished runs on different parts (a backend
    keeps its part, duetime_runs_done_part)."""
    by_part: dict[int, asyncpg.Connection] = {}
    for _ in range(32):
        conn = await asyncpg.connect(dsn)
        stack.push_async_callback(conn.close)
        by_part.setdefault(await conn.fetchval("SELECT duetime_runs_done_part()"), conn)
        if len(by_part) == 2:
            return tuple(by_part.values())
    raise AssertionError(f"32 backends, all on part {list(by_part)}")


async def test_one_teams_runs_end_in_two_transactions_at_once(env: Env, db_dsn: str) -> None:
    # Two transactions ending one team's runs (two report batches, say) add to the parts of
    # their backends: the second neither waits for the first nor loses its count.
    now = await env.w.now()
    for _ in range(2):
        await env.one_off(now + S)
    await env.w.shift_clock(S)
    assert await env.claim() == 2
    runs = [r["run_id"] for r in await env.runs(env.api.team)]
    assert (await env.usage(env.api.team))["in_flight"] == 2
    end = "UPDATE runs SET state = 'CANCELLED' WHERE run_id = $1"
    async with AsyncExitStack() as stack:
        first, second = await on_two_parts(db_dsn, stack)
        async with first.transaction():
            await first.execute(end, runs[0])
            async with second.transaction():
                await second.execute("SET LOCAL lock_timeout = '5s'")
                await second.execute(end, runs[1])
            assert (await env.usage(env.api.team))["in_flight"] == 1
    assert (await env.usage(env.api.team))["in_flight"] == 0
