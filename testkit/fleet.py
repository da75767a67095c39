"""Schedulers as real processes on real etcd and PostgreSQL, and checks over what they claimed."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime
from typing import Any

import aetcd

from duetime.events.v1.events_pb2 import RunDispatch
from duetime_core.jobspec import to_schedule
from duetime_core.schedule import next_fire_time
from duetime_infra.codec.spec_json import spec_from_json
from duetime_infra.pg.pool import Conn
from testkit.polling import eventually as eventually  # bench/ imports it from here
from testkit.processes import Service, enter_together, service

TTL_SECONDS = 3


def etcd_endpoint() -> tuple[str, int]:
    host, port = os.environ["DUETIME_ETCD_ENDPOINT"].rsplit(":", 1)
    return host, int(port)


def scheduler_env(dsn: str, prefix: str, scheduler_id: str) -> dict[str, str]:
    return {
        "DUETIME_PG_DSN": dsn,
        "DUETIME_ETCD_PREFIX": prefix,
        "DUETIME_SCHEDULER_ID": scheduler_id,
        "DUETIME_SCHEDULER_ADDRESS": "127.0.0.1:0",
        "DUETIME_PARTITION_LEASE_TTL": str(TTL_SECONDS),
        "DUETIME_PARTITION_SAFETY_MARGIN": "1",
        "DUETIME_CLAIM_POLL_INTERVAL": "0.1",
    }


@asynccontextmanager
async def schedulers(dsn: str, prefix: str, ids: list[str]) -> AsyncIterator[dict[str, Service]]:
    """Schedulers started at once (each then joins the fleet as it comes up), and stopped at
    once."""
    async with AsyncExitStack() as stack:
        starts = [
            service("duetime_scheduler", scheduler_env(dsn, prefix, i), "DUETIME_SCHEDULER_PORT")
            for i in ids
        ]
        started = await enter_together(stack, starts)
        yield dict(zip(ids, started, strict=True))


def new_prefix() -> str:
    return f"/duetime-test/{uuid.uuid4().hex[:12]}/"


async def owners(prefix: str, endpoint: str = "") -> dict[int, tuple[str, int]]:
    """partition -> (scheduler id, create_revision), as etcd has it now (the environment's
    etcd, or the one at ``endpoint``, host:port)."""
    host, port = endpoint.rsplit(":", 1) if endpoint else etcd_endpoint()
    async with aetcd.Client(host=host, port=int(port)) as client:
        found = await client.get_prefix(f"{prefix}partitions/".encode())
        return {
            int(kv.key.decode().rsplit("/", 1)[1]): (kv.value.decode(), kv.create_revision)
            for kv in found
        }


async def assert_every_occurrence_accounted_once(conn: Conn, *, max_per_job: int = 100_000) -> int:
    """Every scheduled occurrence is accounted for exactly once.

    For every job whose schedule can be read (not ERROR), the runs (ranges expanded) are
    exactly the schedule's occurrences from its creation up to its next run time (a COMPLETED
    one-off: the end of its schedule; a PAUSED job: where its pause began). A SKIPPED DST_GAP
    record names no occurrence (it says a gap dropped one), so it is checked apart: it must
    not coincide with an occurrence. Each QUEUED run has exactly one outbox row. Returns the
    number of occurrences checked.
    """
    jobs = await conn.fetch(
        "SELECT job_id, state, spec, next_run_time, pause_time, create_time FROM jobs "
        "WHERE state <> 'ERROR'"
    )
    checked = 0
    for job in jobs:
        runs = await conn.fetch(
            "SELECT nominal_time, range_end_time, occurrence_count, state, reason FROM runs "
            "WHERE job_id = $1 AND origin = 'SCHEDULE' ORDER BY nominal_time",
            job["job_id"],
        )
        schedule = to_schedule(spec_from_json(_json(job["spec"])).schedule)
        bound: datetime | None = job["next_run_time"]
        if job["state"] == "PAUSED":
            bound = job["pause_time"]
        expected: list[datetime] = []
        cursor: datetime = job["create_time"]
        while len(expected) < max_per_job:
            t = next_fire_time(schedule, cursor)
            if t is None or (bound is not None and t >= bound):
                break
            expected.append(t)
            cursor = t
        seen: list[datetime] = []
        gap_records: list[datetime] = []
        for run in runs:
            if run["reason"] == "DST_GAP":
                assert run["state"] == "SKIPPED", dict(run)
                gap_records.append(run["nominal_time"])
                continue
            seen.append(run["nominal_time"])
            if run["occurrence_count"] > 1:
                last: datetime = run["nominal_time"]
                for _ in range(run["occurrence_count"] - 1):
                    following = next_fire_time(schedule, last)
                    assert following is not None
                    seen.append(following)
                    last = following
                assert last == run["range_end_time"], dict(run)
        assert seen == expected, (job["job_id"], len(seen), len(expected))
        assert not set(gap_records) & set(expected), (job["job_id"], gap_records)
        checked += len(expected)
    payloads = await conn.fetch("SELECT payload FROM outbox")
    dispatched = [RunDispatch.FromString(p["payload"]).run_id for p in payloads]
    queued = await conn.fetch("SELECT run_id FROM runs WHERE state = 'QUEUED'")
    assert sorted(dispatched) == sorted(str(r["run_id"]) for r in queued)
    return checked


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value
