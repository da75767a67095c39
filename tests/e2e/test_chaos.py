"""The fault-injection soak (``bench.chaos``), short: a minute of faults, longer if
need be until every kind ran — kill -9 and SIGSTOP past the lease of each service, restarts of
PostgreSQL, etcd and Kafka — under a dense mix of interval, cron and one-off jobs and a herd,
with a fixed seed; then every invariant must hold: each occurrence accounted for once, every
run finished, no two attempts of a run overlapping (in the database or at the target), no call
after its attempt was closed, no key applied twice, SUCCEEDED exactly where the target applied
the effect (or its report was lost).
"""

from __future__ import annotations

import pytest

from bench.chaos import Workload, soak
from bench.chaos_faults import KINDS
from testkit.invariants import assert_none

pytestmark = pytest.mark.timeout(360)


async def test_a_short_soak_of_every_fault_breaks_no_invariant() -> None:
    work = Workload(interval_jobs=25, cron_jobs=6, herd=100, one_off_every=2.0)
    figures = await soak(1.0, 7, work, fault_every=3.0, every_kind=True)
    assert_none(figures.violations)
    assert set(figures.faults) == {f"{action} {target}" for action, target in KINDS}
    assert not figures.crashes, figures.crashes
    assert figures.occurrences > 500
    assert figures.herd_runs == work.herd
