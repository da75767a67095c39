"""The soak's count of leases expired while their worker stayed healthy: an attempt counts only
when no kill or freeze of its worker overlaps the time it may have held it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import asyncpg

from bench.chaos_check import healthy_expiries
from bench.chaos_faults import Fault
from testkit.invariants import Records

T0 = datetime(2026, 12, 6, 19, 0, tzinfo=UTC)


def expired(start: float, *, early: bool = False, worker: str = "w2") -> dict[str, Any]:
    """An attempt that started ``start`` seconds after T0 and expired a 10 s lease later."""
    return {
        "run_id": uuid.uuid4(),
        "number": 1,
        "worker_id": worker,
        "start_time": T0 + timedelta(seconds=start),
        "end_time": T0 + timedelta(seconds=start + 10),
        "outcome": "LEASE_EXPIRED",
        "early": early,
    }


def records(*attempts: dict[str, Any]) -> Records:
    rows = cast(list[asyncpg.Record], list(attempts))
    return Records([], {a["run_id"]: [a] for a in rows}, [])


def fault(action: str, target: str, began: float, ended: float) -> Fault:
    return Fault(action, target, T0 + timedelta(seconds=began), T0 + timedelta(seconds=ended))


def test_an_attempt_of_a_worker_never_faulted_counts_as_healthy() -> None:
    count, healthy, during = healthy_expiries(
        records(expired(60)), [fault("kill", "w1", 55, 58), fault("restart", "postgres", 61, 63)]
    )
    assert (count, len(healthy)) == (1, 1)
    assert during == {"kill w1, restart postgres": 1}


def test_an_attempt_started_ahead_is_held_before_its_call_time() -> None:
    # Its worker took it, then died 6 s before its call time: the lease ran out with it.
    attempt = expired(60, early=True)
    count, healthy, _ = healthy_expiries(records(attempt), [fault("kill", "w2", 54, 56)])
    assert (count, healthy) == (1, [])
    # The same attempt taken at its time would have been healthy: the window is the early one.
    late = expired(60)
    assert len(healthy_expiries(records(late), [fault("kill", "w2", 44, 46)])[1]) == 1


def test_a_start_on_the_way_while_its_worker_froze_is_not_healthy() -> None:
    # Frozen with its start request sent: the scheduler recorded the start after the thaw.
    attempt = expired(42.06)
    _, healthy, _ = healthy_expiries(records(attempt), [fault("freeze", "w2", 30, 42)])
    assert healthy == []
    assert len(healthy_expiries(records(attempt), [fault("freeze", "w1", 30, 42)])[1]) == 1


def test_attempts_that_did_not_expire_are_not_counted() -> None:
    ended = expired(10) | {"outcome": "SUCCEEDED"}
    assert healthy_expiries(records(ended), []) == (0, [], {})
