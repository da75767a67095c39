"""The benches' PgQueuer peer on real processes: jobs enqueued with their due times are stored
at them (read back from ``execute_after``), and the consumer calls the target once for each,
none before its time."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from bench.harness import CpuFigures, herd_outcome
from bench.pgqueuer_peer import PgqSettings, enqueue, running_pgqueuer
from bench.steady import spread
from testkit.polling import eventually

pytestmark = pytest.mark.timeout(60)


async def test_each_job_is_stored_at_its_time_and_called_once_not_before(tmp_path: Path) -> None:
    async with running_pgqueuer(PgqSettings(batch_size=10, connections=8), tmp_path) as peer:
        now: datetime = await peer.conn.fetchval("SELECT now()")
        first = now + timedelta(seconds=2)
        asked = spread(first, 20, first + timedelta(seconds=1))
        due = await enqueue(peer.conn, peer.target.url("/t"), asked, chunk=7)
        # Each a little after its time: execute_after is counted from its statement's NOW().
        lag = [s - a for s, a in zip(sorted(due.values()), asked, strict=True)]
        assert all(timedelta(0) <= x < timedelta(seconds=1) for x in lag), lag

        async def all_done() -> bool:
            return int(await peer.conn.fetchval("SELECT count(*) FROM pgqueuer")) == 0

        await eventually(all_done, 30, "every job done")
        calls = await peer.target.stop()
    outcome = herd_outcome("pgqueuer", due, calls, first, CpuFigures({}, 0.0, 0.0))
    assert outcome.problems == []
    assert len(outcome.late) == len(asked)
