"""bench/noisy: one team's flood beside small teams, and a team held to its rate quota.

The four services run as processes (two workers) on a Kafka broker of the bench's own and call
an HTTP target in a process of its own, which listens on two hosts (127.0.0.1, the flood's, and
127.0.0.2); jobs are seeded straight into the database (one-off HTTP jobs, the target path
naming the team). The small teams come in four groups of ``--teams`` teams with ``--per-team``
runs each: due at random over the minute after the flood's instant (``spread``) or over its
first ``--inside`` seconds, inside the flood's drain (``inside``); calling a host of their own
(``own host``) or the flood's (``flood's host``, where they share its connection limits).
Cases, each on a fresh database, in one invocation so they compare within one machine's day:

- ``small``: the small teams alone (the baseline);
- ``flood``: the same small teams, plus one team's runs due at the instant, once for each size
  of ``--flood``;
- ``fifo``: each flood alone with no dispatch credit (as before fairness: every run claimed goes
  to Kafka in due order) — the reference drain time;
- ``rate``: one team with ``--rate`` runs per minute (burst ``--burst``) and enough runs due
  at once to keep it busy for ``--rate-minutes`` minutes.

Reported: start lateness by the target's clock from each run's effective time and from its
eligible time (when its own team's quota let it go), p50 / p99 / max, for each group of small
teams and the flooding team; each group's p99 beside each flood against its p99 alone (the
target: at most 1 s more), and how many of the ``inside`` runs were due before the flood's last
call; each flood's drain against its ``fifo`` drain (the target: within 10 %); Jain's fairness
index per 10 s window of the flood (each team's starts against its max-min fair share of that
window's starts, its demand being its runs due at least 1 s before the window ends and not
started before it began: 1.0 means every team got its fair share); the rated team's starts per
minute; and correctness: runs lost, started early, called twice.

    uv run python -m bench.noisy [--flood 10000 ...] [--teams 50] [--per-team 5] [--window 60]
                                 [--inside 5] [--rate 600] [--burst 10] [--rate-minutes 5]
                                 [--cases small flood fifo rate] [--workers 2] [--credit N]
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from bench.harness import (
    Call,
    CpuMeter,
    SeedJob,
    bench_parser,
    bench_system,
    bench_workspace,
    ms,
    options_from,
    quantiles,
    seed_jobs,
    system_processes,
    target_process,
)
from duetime_core.runkey import RunKey
from duetime_infra.kafka.topics import DISPATCH_TOPICS
from duetime_infra.pg.teams import store as team_store
from testkit.databases import create_database, drop_database
from testkit.fleet import eventually
from testkit.kafka import Offsets, end_offsets, read_between, shared_bootstrap

FLOOD_TEAM = "flood"
RATED_TEAM = "rated"
PROMISE = 5.0
WINDOW = 10.0
GRACE = 1.0
# The small teams' p99 beside a flood may exceed their p99 alone by this much at most.
MARGIN = 1.0
# The flood's drain beside the small teams may exceed its FIFO drain by this share at most.
DRAIN_SHARE = 1.10
# The target's two hosts: the flood calls the first.
FLOOD_HOST, OTHER_HOST = "127.0.0.1", "127.0.0.2"


@dataclass(frozen=True)
class Group:
    """Small teams due the same way, calling the same host."""

    timing: str  # "spread" over the window, or "inside" the flood's first seconds
    shared: bool  # calling the flood's host

    @property
    def label(self) -> str:
        host = "flood's host" if self.shared else "own host"
        return f"{self.timing}, {host}"

    def team(self, i: int) -> str:
        return f"{self.timing}-{'shared' if self.shared else 'own'}-{i:02d}"


GROUPS = [Group(t, shared) for t in ("spread", "inside") for shared in (False, True)]


@dataclass(frozen=True)
class Options:
    flood: list[int]
    teams: int
    per_team: int
    window: float
    inside: float
    rate: int
    burst: int
    rate_minutes: int
    workers: int
    lead: float
    # The scheduler's dispatch credit in the fair cases; None: its default.
    credit: int | None = None


@dataclass(frozen=True)
class Start:
    """One run as it happened: its team, when it was due and eligible, when it was called."""

    team: str
    effective: datetime
    eligible: datetime
    claimed: datetime  # the run's row written, by the database clock
    published: datetime | None  # its first dispatch's Kafka timestamp
    started: datetime  # the first attempt's start, by the database clock
    arrival: datetime
    early: bool  # its first attempt started ahead of its time

    @property
    def late(self) -> float:
        return (self.arrival - self.effective).total_seconds()

    @property
    def late_eligible(self) -> float:
        return (self.arrival - self.eligible).total_seconds()


@dataclass
class Outcome:
    case: str
    at: datetime
    starts: list[Start] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def of(self, teams: set[str] | None = None) -> list[Start]:
        return [s for s in self.starts if teams is None or s.team in teams]

    def drain(self, team: str) -> float:
        return max((s.arrival - self.at).total_seconds() for s in self.of({team}))

    def last_call(self, team: str) -> datetime:
        return max(s.arrival for s in self.of({team}))


def small_teams(options: Options, group: Group | None = None) -> list[str]:
    """The small teams of ``group`` (None: of every group)."""
    groups = GROUPS if group is None else [group]
    return [g.team(i) for g in groups for i in range(options.teams)]


def small_jobs(options: Options, at: datetime, url: str) -> list[SeedJob]:
    """The small teams' runs, at the same offsets in every case (a seeded draw); ``url`` has
    ``{host}`` and ``{team}`` to fill."""
    rng = random.Random(7)
    jobs = []
    for group in GROUPS:
        host = FLOOD_HOST if group.shared else OTHER_HOST
        within = options.window if group.timing == "spread" else options.inside
        for team in small_teams(options, group):
            for _ in range(options.per_team):
                offset = timedelta(seconds=round(rng.uniform(0, within), 3))
                jobs.append(SeedJob(team, at + offset, url.format(host=host, team=team)))
    return jobs


def flood_of(case: str) -> int:
    """The flood's size in a case named ``flood N`` or ``fifo N``; 0 for the others."""
    kind, _, size = case.partition(" ")
    return int(size) if kind in ("flood", "fifo") else 0


async def run_case(case: str, options: Options, template: str, tmp: Path) -> Outcome:
    name = f"duetime_bench_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template)
    kind = case.split()[0]
    try:
        async with (
            target_process(tmp) as target,
            bench_system(
                dsn, workers=options.workers, scheduler_extra=credit_env(kind, options)
            ) as s,
        ):
            url = f"http://{{host}}:{target.port}/noisy/{{team}}"
            now: datetime = await asyncpg_now(dsn)
            at = (now + timedelta(seconds=options.lead)).replace(microsecond=0)
            jobs: list[SeedJob] = []
            if kind in ("small", "flood"):
                jobs += small_jobs(options, at, url)
            if kind in ("flood", "fifo"):
                flood_url = url.format(host=FLOOD_HOST, team=FLOOD_TEAM)
                jobs += [SeedJob(FLOOD_TEAM, at, flood_url)] * flood_of(case)
            if kind == "rate":
                rated_url = url.format(host=FLOOD_HOST, team=RATED_TEAM)
                jobs += [SeedJob(RATED_TEAM, at, rated_url)] * (
                    options.rate * options.rate_minutes + options.burst
                )
            offsets = await end_offsets(shared_bootstrap(), sorted(DISPATCH_TOPICS.values()))
            await seed_jobs(dsn, jobs)
            if kind == "rate":
                conn = await asyncpg.connect(dsn)
                try:
                    await team_store.update_team_quota(
                        conn,
                        RATED_TEAM,
                        {"runs_per_minute": options.rate, "rate_burst": options.burst},
                    )
                finally:
                    await conn.close()
            meter = CpuMeter(await system_processes(s, tmp / "kafka", target))
            print(f"  {case}: {len(jobs):,} runs seeded, the first due in {options.lead:.0f} s")
            outcome = await watch(dsn, case, at, len(jobs), options)
            meter.stop()
            await target.stop()
            meter.report(len(jobs))
            published = await publish_times(offsets)
            await account(dsn, outcome, target.calls, published, len(jobs))
            return outcome
    finally:
        await drop_database(name)


def credit_env(kind: str, options: Options) -> dict[str, str]:
    """The reference (``fifo``) runs with no dispatch credit, as before fairness: every run
    claimed goes to Kafka in due order."""
    if kind == "fifo":
        return {"DUETIME_DISPATCH_CREDIT": "0"}
    if options.credit is not None:
        return {"DUETIME_DISPATCH_CREDIT": str(options.credit)}
    return {}


async def asyncpg_now(dsn: str) -> datetime:
    conn = await asyncpg.connect(dsn)
    try:
        offset: timedelta = await conn.fetchval('SELECT "offset" FROM duetime_clock')
        assert offset == timedelta(0), "the bench compares the database clock with the host's"
        now: datetime = await conn.fetchval("SELECT duetime_now()")
        return now
    finally:
        await conn.close()


async def watch(dsn: str, case: str, at: datetime, runs: int, options: Options) -> Outcome:
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=2)
    try:

        async def all_finished() -> bool:
            done = await pool.fetchval(
                "SELECT count(*) FROM runs WHERE state IN ('SUCCEEDED', 'DEAD_LETTERED')"
            )
            return int(done) == runs

        patience = options.lead + options.window + 300 + 60 * options.rate_minutes
        await eventually(all_finished, patience, f"all {runs:,} runs finished", interval=0.5)
    finally:
        await pool.close()
    return Outcome(case, at)


async def publish_times(start: Offsets) -> dict[str, datetime]:
    """When each run's first dispatch from ``start`` on reached Kafka (its record's timestamp)."""
    bootstrap = shared_bootstrap()
    ends = await end_offsets(bootstrap, sorted(DISPATCH_TOPICS.values()))
    first: dict[str, datetime] = {}
    for record in await read_between(bootstrap, start, ends):
        run_id = record.dispatch.run_id
        at = datetime.fromtimestamp(record.timestamp_ms / 1000, UTC)
        first[run_id] = min(at, first.get(run_id, at))
    return first


async def account(
    dsn: str,
    outcome: Outcome,
    calls: Sequence[Call],
    published: Mapping[str, datetime],
    runs: int,
) -> None:
    """Matches the target's calls with the runs: lateness, and what went wrong."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT r.run_id, r.job_id, r.nominal_time, r.team_id, r.state, r.effective_time, "
            "coalesce(greatest(r.eligible_time, r.effective_time), r.effective_time) AS eligible, "
            "r.create_time, a.start_time, a.early FROM runs r "
            "LEFT JOIN run_attempts a ON a.run_id = r.run_id AND a.nominal_time = r.nominal_time "
            "AND a.number = 1"
        )
    finally:
        await conn.close()
    by_key = {RunKey.scheduled(r["job_id"], r["nominal_time"]).canonical(): r for r in rows}
    first: dict[str, Call] = {}
    repeated = 0
    for call in sorted(calls, key=lambda c: c.time):
        if call.idempotency_key in first:
            repeated += 1
            continue
        first[call.idempotency_key] = call
    if len(rows) != runs:
        outcome.problems.append(f"{runs - len(rows)} runs missing")
    states = Counter(r["state"] for r in rows)
    if states != {"SUCCEEDED": runs}:
        outcome.problems.append(f"run states {dict(states)}")
    if repeated:
        outcome.problems.append(f"{repeated} repeated calls")
    for key, row in by_key.items():
        found = first.get(key)
        if found is None:
            outcome.problems.append(f"run {key} never called")
            continue
        outcome.starts.append(
            Start(
                row["team_id"],
                row["effective_time"],
                row["eligible"],
                row["create_time"],
                published.get(str(row["run_id"])),
                row["start_time"],
                found.time,
                bool(row["early"]),
            )
        )
    early = sum(s.late < 0 for s in outcome.starts)
    if early:
        outcome.problems.append(f"{early} runs called before their effective time")


def water_fill(demand: dict[str, int], capacity: int) -> dict[str, float]:
    """Max-min fair shares of ``capacity`` among ``demand``."""
    shares = dict.fromkeys(demand, 0.0)
    left, active = float(capacity), {t for t, d in demand.items() if d > 0}
    while left > 1e-9 and active:
        each = left / len(active)
        for team in sorted(active, key=lambda t: demand[t]):
            give = min(each, demand[team] - shares[team])
            shares[team] += give
            left -= give
        active = {t for t in active if demand[t] - shares[t] > 1e-9}
    return shares


def jain_by_window(outcome: Outcome) -> list[tuple[float, float, int]]:
    """(window start after the instant, Jain's index, teams in it), per 10 s window."""
    starts = outcome.starts
    end = max((s.arrival - outcome.at).total_seconds() for s in starts)
    found = []
    a = 0.0
    while a < end:
        lo, hi = outcome.at + timedelta(seconds=a), outcome.at + timedelta(seconds=a + WINDOW)
        pending = [s for s in starts if s.eligible <= hi - timedelta(seconds=GRACE)]
        pending = [s for s in pending if s.arrival >= lo]
        demand = Counter(s.team for s in pending)
        served = Counter(s.team for s in pending if s.arrival < hi)
        shares = water_fill(dict(demand), sum(served.values()))
        x = [served[t] / shares[t] for t in demand if shares[t] > 0]
        if x:
            found.append((a, sum(x) ** 2 / (len(x) * sum(v * v for v in x)), len(x)))
        a += WINDOW
    return found


def report_lateness(label: str, starts: list[Start]) -> None:
    late = [s.late for s in starts]
    eligible = [s.late_eligible for s in starts]
    claimed = [(s.claimed - s.effective).total_seconds() for s in starts]
    published = [(s.published - s.effective).total_seconds() for s in starts if s.published]
    started = [(s.started - s.effective).total_seconds() for s in starts]
    called = [(s.arrival - s.started).total_seconds() for s in starts]
    print(f"    {label:<26} from effective {ms(late)}")
    ahead = sum(s.early for s in starts)
    print(f"    {'':<26} from eligible  {ms(eligible)}  (runs {len(starts):,}, {ahead:,} ahead)")
    print(f"    {'':<26} hops from effective: claimed {ms(claimed)}")
    print(f"    {'':<26}                      published {ms(published)}")
    print(f"    {'':<26}          attempt's start {ms(started)}")
    print(f"    {'':<26}       start to the call      {ms(called)}")


def per_minute(outcome: Outcome, team: str, minutes: int) -> list[int]:
    counts = Counter(
        int((s.arrival - outcome.at).total_seconds() // 60) for s in outcome.of({team})
    )
    return [counts.get(m, 0) for m in range(minutes)]


def summarise(outcomes: dict[str, Outcome], options: Options) -> None:
    print("\nsummary")
    for outcome in outcomes.values():
        print(f"  {outcome.case}: {'ok' if not outcome.problems else outcome.problems[:5]}")
    for case, outcome in outcomes.items():
        if case == "small" or case.startswith("flood"):
            print(f"  {case}:")
            for group in GROUPS:
                report_lateness(group.label, outcome.of(set(small_teams(options, group))))
        if case.startswith("flood"):
            report_lateness("flood team", outcome.of({FLOOD_TEAM}))
            small = small_teams(options)
            worst = max((max(s.late for s in outcome.of({t})), t) for t in small)
            print(f"    worst small team: {worst[1]} max {worst[0]:.2f} s")
            inside = [s for s in outcome.of(set(small)) if s.team.startswith("inside")]
            last = outcome.last_call(FLOOD_TEAM)
            due_inside = sum(s.effective < last for s in inside)
            print(
                f"    inside runs due before the flood's last call: {due_inside} of {len(inside)}"
            )
            windows = jain_by_window(outcome)
            shown = " ".join(f"{a:.0f}s:{j:.3f}({n})" for a, j, n in windows)
            print(f"    Jain's index per 10 s window (start:index(teams)): {shown}")
        if case.startswith("fifo"):
            print(f"  {case} (no dispatch credit):")
            report_lateness("flood team", outcome.of({FLOOD_TEAM}))
    compare(outcomes, options)
    if "rate" in outcomes:
        counts = per_minute(outcomes["rate"], RATED_TEAM, options.rate_minutes)
        print(
            f"  rated team ({options.rate}/min, burst {options.burst}) starts per minute: "
            f"{counts} (target {options.rate} +/- 5 %, the first minute plus the burst)"
        )
        report_lateness("rated team", outcomes["rate"].of({RATED_TEAM}))


def compare(outcomes: dict[str, Outcome], options: Options) -> None:
    """Each group's p99 beside each flood against its p99 alone, and each flood's drain
    against its FIFO drain, with the targets."""
    floods = [c for c in outcomes if c.startswith("flood")]
    if "small" in outcomes and floods:
        print(
            f"  small teams' p99 from effective, alone and beside each flood (target: <= alone "
            f"+ {MARGIN:.0f} s)"
        )
        print(f"    {'group':<26} {'alone':>8}" + "".join(f" {c:>23}" for c in floods))
        for group in [*GROUPS, None]:
            teams = set(small_teams(options, group))
            alone = p99(outcomes["small"].of(teams))
            cells = []
            for case in floods:
                beside = p99(outcomes[case].of(teams))
                mark = "ok" if beside <= alone + MARGIN else "MISSED"
                cells.append(f"{beside:7.2f} s {beside - alone:+6.2f} {mark:>6}")
            label = group.label if group is not None else "all small teams"
            print(f"    {label:<26} {alone:6.2f} s" + "".join(f" {c:>23}" for c in cells))
    for case in floods:
        fifo = f"fifo {flood_of(case)}"
        if fifo in outcomes:
            fair, alone = outcomes[case].drain(FLOOD_TEAM), outcomes[fifo].drain(FLOOD_TEAM)
            mark = "ok" if fair <= alone * DRAIN_SHARE else "MISSED"
            print(
                f"  {case}: drain {fair:.2f} s beside the small teams vs {alone:.2f} s alone "
                f"(FIFO): {fair / alone:.3f}x (target <= {DRAIN_SHARE:.2f}x) {mark}"
            )


def p99(starts: list[Start]) -> float:
    return quantiles([s.late for s in starts])[1]


async def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--flood", type=int, nargs="+", default=[10_000])
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--per-team", type=int, default=5)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument(
        "--inside", type=float, default=5.0, help="seconds after the flood's instant"
    )
    parser.add_argument("--rate", type=int, default=600)
    parser.add_argument("--burst", type=int, default=10)
    parser.add_argument("--rate-minutes", type=int, default=5)
    parser.add_argument("--credit", type=int, help="the scheduler's dispatch credit (fair cases)")
    parser.add_argument(
        "--cases",
        nargs="+",
        default=["small", "flood", "fifo", "rate"],
        choices=["small", "flood", "fifo", "rate"],
    )
    args = parser.parse_args()
    options = options_from(Options, args)
    print(f"bench/noisy {options} at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC", flush=True)
    outcomes: dict[str, Outcome] = {}
    async with bench_workspace("duetime-noisy-") as (template, tmp):
        for kind in args.cases:
            sizes = options.flood if kind in ("flood", "fifo") else [0]
            for size in sizes:
                case = f"{kind} {size}" if size else kind
                outcomes[case] = await run_case(case, options, template, tmp)
    summarise(outcomes, options)


if __name__ == "__main__":
    asyncio.run(main())
