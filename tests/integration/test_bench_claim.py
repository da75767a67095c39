"""bench/claim's seed and claim loops on the real server, at a tiny size: the bench stays
runnable as the stored job format changes."""

from __future__ import annotations

import pytest

from bench.claim import measure, seed

pytestmark = pytest.mark.timeout(60)


async def test_the_claim_bench_claims_every_due_job_in_both_rounds(db_dsn: str) -> None:
    await seed(db_dsn, stored=300, due=120)
    rounds = await measure(db_dsn, batch=50, workers=2, flush=lambda: None)
    assert [claimed for claimed, _, _ in rounds] == [120, 120]
