"""bench/herd's floor peer on real processes: bare clients call the target once a run, none
before the instant, and the case names what went wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.herd_floor import floor_case, shares

pytestmark = pytest.mark.timeout(60)


def test_shares_split_every_run_once() -> None:
    assert shares(10, 3) == [(0, 4), (4, 3), (7, 3)]
    assert shares(2, 2) == [(0, 1), (1, 1)]


async def test_the_floor_calls_each_run_once_after_its_instant(tmp_path: Path) -> None:
    # Enough calls that the clients' CPU after the instant spans many of the kernel's 10 ms
    # accounting ticks (60 calls took under one, and read as none).
    runs = 1000
    outcome = await floor_case("floor", runs, 2, lead=3.0, window=1.0, tmp=tmp_path)
    assert outcome.problems == []
    assert len(outcome.late) == runs
    assert min(outcome.late) >= 0
    assert outcome.cpu.groups["clients"][1] > 0  # the calls' CPU falls after the instant
