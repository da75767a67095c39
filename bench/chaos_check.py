"""The soak's verdict once everything settled: the invariants (as violations) and its figures."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import asyncpg

from bench.chaos_faults import Fault
from bench.chaos_target import ChaosTarget, Recorded
from bench.harness import quantiles
from duetime_core.attempts import AttemptSettings
from duetime_worker.attempt.scheduler_client import RPC_TIMEOUT
from testkit.fleet import assert_every_occurrence_accounted_once
from testkit.invariants import Records, attempt_violations, call_violations, read_records

# Attempts that may end without a call: given back, or lost to a fault before the send.
UNCALLED_OK = ("HANDED_BACK", "LEASE_EXPIRED", "TIMED_OUT", "CANCELLED")
# Outcomes under which a call's answer may never have been reported.
REPORT_LOST = ("LEASE_EXPIRED", "TIMED_OUT", "HANDED_BACK")
FINAL = ("SUCCEEDED", "DEAD_LETTERED", "MISSED", "SKIPPED")


@dataclass
class Figures:
    faults: Counter[str] = field(default_factory=Counter)
    crashes: Counter[str] = field(default_factory=Counter)
    occurrences: int = 0
    runs_by_state: Counter[str] = field(default_factory=Counter)
    lateness: tuple[float, float, float] = (0.0, 0.0, 0.0)
    herd_lateness: tuple[float, float, float] = (0.0, 0.0, 0.0)
    herd_runs: int = 0
    leases_expired: int = 0
    healthy_leases_expired: int = 0
    # The healthy workers' expired leases by the faults under way while they were open.
    healthy_expiry_faults: Counter[str] = field(default_factory=Counter)
    dead_lettered_but_succeeded: int = 0
    repeated_after_success: int = 0
    refused_by_target: int = 0
    violations: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        def q(t: tuple[float, float, float]) -> str:
            return f"p50 {t[0]:.2f} s, p99 {t[1]:.2f} s, max {t[2]:.2f} s"

        return [
            f"faults: {sum(self.faults.values())} ({dict(sorted(self.faults.items()))})",
            f"services that exited by themselves: {dict(self.crashes) or 'none'}",
            f"occurrences: {self.occurrences}; runs by state: {dict(self.runs_by_state)}",
            f"start lateness: {q(self.lateness)}",
            f"herd of {self.herd_runs}: start lateness {q(self.herd_lateness)}",
            f"leases expired: {self.leases_expired}, of which the worker stayed healthy: "
            f"{self.healthy_leases_expired}"
            + (
                f", faults under way: {dict(self.healthy_expiry_faults)}"
                if self.healthy_expiry_faults
                else ""
            ),
            f"dead-lettered runs whose target succeeded: {self.dead_lettered_but_succeeded}",
            f"calls repeated after the target succeeded: {self.repeated_after_success}",
            f"calls the target refused (an older attempt than one seen): {self.refused_by_target}",
            f"invariant violations: {len(self.violations)}",
            *(f"  {v}" for v in self.violations[:40]),
        ]


def unhealthy_spans(faults: Sequence[Fault]) -> dict[str, list[tuple[datetime, datetime]]]:
    """Per service, when it was killed (until back) or frozen (until thawed)."""
    spans: dict[str, list[tuple[datetime, datetime]]] = {}
    for f in faults:
        if f.action in ("kill", "freeze"):
            spans.setdefault(f.target, []).append((f.began, f.ended))
    return spans


def held_from(attempt: asyncpg.Record) -> datetime:
    """The earliest its worker may have held the attempt. The worker counts its lease from when
    it sent the start (``RPC_TIMEOUT`` at most before the scheduler recorded it: a worker frozen
    with its start on the way finds the lease lapsed on waking); one started ahead of its time
    (whose ``start_time`` is its call time) up to ``max_early_start`` before that. A worker
    killed or frozen after asking loses the attempt; when exactly it asked, the record does not
    say."""
    start: datetime = attempt["start_time"]
    ahead = AttemptSettings.max_early_start if attempt["early"] else timedelta(0)
    return start - ahead - timedelta(seconds=RPC_TIMEOUT)


def healthy_expiries(
    records: Records, faults: Sequence[Fault]
) -> tuple[int, list[str], Counter[str]]:
    """Attempts that ended LEASE_EXPIRED; those whose worker was neither killed nor frozen
    while it may have held them (described); and for those, the faults that were under way
    meanwhile, by kind."""
    spans = unhealthy_spans(faults)
    expired, healthy, during = 0, [], Counter[str]()
    for attempts in records.attempts.values():
        for a in attempts:
            if a["outcome"] != "LEASE_EXPIRED":
                continue
            expired += 1
            start, end = held_from(a), a["end_time"]
            if any(b <= end and start <= e for b, e in spans.get(a["worker_id"], [])):
                continue
            healthy.append(
                f"run {a['run_id']} attempt {a['number']} (worker {a['worker_id']}, "
                f"{a['start_time']:%H:%M:%S.%f} to {end:%H:%M:%S.%f}"
                f"{', started ahead' if a['early'] else ''})"
            )
            kinds = sorted({f.kind for f in faults if f.began <= end and start <= f.ended})
            during[", ".join(kinds) or "no fault"] += 1
    return expired, healthy, during


def target_violations(records: Records, target: ChaosTarget, figures: Figures) -> list[str]:
    """No key applied twice, no two calls of a key at once, SUCCEEDED exactly where the target
    applied the effect (or the report of the call that did was lost)."""
    found = [f"{k}: applied {n} times" for k, n in target.applied.items() if n > 1]
    found += [
        f"{c.key}: attempt {c.attempt} overlapped another call"
        for c in target.calls
        if c.overlapped
    ]
    applying: dict[str, Recorded] = {c.key: c for c in target.calls if c.applied}
    successes = Counter(c.key for c in target.calls if c.status == 200)
    figures.repeated_after_success = sum(n - 1 for n in successes.values())
    figures.refused_by_target = sum(c.status == 409 for c in target.calls)
    for run in records.runs:
        key = records.key(run)
        call = applying.get(key)
        if run["state"] == "SUCCEEDED" and call is None:
            found.append(f"{key}: run SUCCEEDED, the target never applied it")
        if call is None or run["state"] == "SUCCEEDED":
            continue
        numbered = {a["number"]: a for a in records.attempts.get(run["run_id"], [])}
        attempt = numbered.get(call.attempt)
        if attempt is None or attempt["outcome"] not in REPORT_LOST:
            outcome = None if attempt is None else attempt["outcome"]
            found.append(
                f"{key}: applied by attempt {call.attempt} ({outcome}), run {run['state']}"
            )
        elif run["state"] == "DEAD_LETTERED":
            figures.dead_lettered_but_succeeded += 1
    return found


async def verdict(
    conn: asyncpg.Connection[asyncpg.Record],
    target: ChaosTarget,
    faults: Sequence[Fault],
    herd: Collection[uuid.UUID],
) -> Figures:
    figures = Figures(faults=Counter(f.kind for f in faults))
    try:
        figures.occurrences = await assert_every_occurrence_accounted_once(conn)
    except AssertionError as e:
        figures.violations.append(f"an occurrence not accounted for once: {e}")
    records = await read_records(conn)
    figures.runs_by_state = Counter(r["state"] for r in records.runs)
    figures.violations += [
        f"run {r['run_id']} left {r['state']}" for r in records.runs if r["state"] not in FINAL
    ]
    figures.violations += attempt_violations(records)
    figures.violations += call_violations(records, target.target_calls(), uncalled_ok=UNCALLED_OK)
    figures.violations += target_violations(records, target, figures)
    figures.leases_expired, healthy, figures.healthy_expiry_faults = healthy_expiries(
        records, faults
    )
    figures.healthy_leases_expired = len(healthy)
    if healthy:
        print("leases expired of healthy workers (first 10):", *healthy[:10], sep="\n  ")
    first: dict[str, datetime] = {}
    for c in target.calls:
        first.setdefault(c.key, c.arrived)
    late, herd_late = [], []
    for run in records.runs:
        arrived = first.get(records.key(run))
        if arrived is not None:
            seconds = (arrived - run["nominal_time"]).total_seconds()
            late.append(seconds)
            if run["job_id"] in herd:
                herd_late.append(seconds)
    if late:
        figures.lateness = quantiles(late)
    if herd_late:
        figures.herd_lateness, figures.herd_runs = quantiles(herd_late), len(herd_late)
    return figures
