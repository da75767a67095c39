"""The benches' bookkeeping: a herd's calls matched with its runs, steady occurrences in a
window, due times spread at a rate, and the rate search."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from bench.harness import Call, CpuFigures, herd_outcome
from bench.steady import Search, next_rate, occurrences, spread
from duetime_core.runkey import RunKey

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
CPU = CpuFigures({}, 0.0, 0.0)


def call(key: str, after: float) -> Call:
    return Call(AT + timedelta(seconds=after), "/herd", key, "1")


def test_herd_outcome_measures_each_runs_first_call() -> None:
    due = {"a": AT, "b": AT}
    outcome = herd_outcome("peer", due, [call("a", 0.5), call("b", 6.0)], AT, CPU)
    assert sorted(outcome.late) == [0.5, 6.0]
    assert outcome.over_promise == 1
    assert outcome.drain == 6.0
    assert outcome.problems == []


def test_herd_outcome_names_what_went_wrong() -> None:
    due = {"a": AT, "b": AT, "c": AT}
    calls = [call("a", -0.1), call("b", 1.0), call("b", 2.0), call("x", 1.0)]
    outcome = herd_outcome("peer", due, calls, AT, CPU)
    assert outcome.problems == [
        "runs never called: 1",
        "calls of no run: 1",
        "repeated calls: 1",
        "EARLY calls: 1",
    ]


def test_occurrences_are_those_due_in_the_window() -> None:
    job = uuid.UUID(int=1, version=4)
    every = timedelta(seconds=10)
    anchor = AT - timedelta(seconds=12)  # due at -12, -2, 8, 18, 28 s
    due = occurrences([job], [anchor], every, AT, AT + timedelta(seconds=28))
    expected = [AT + timedelta(seconds=s) for s in (8, 18)]
    assert due == {RunKey.scheduled(job, t).canonical(): t for t in expected}


def test_rate_search_doubles_then_bisects() -> None:
    assert next_rate(None, None, 100) == 200
    assert next_rate(200, None, 200) == 400
    assert next_rate(200, 400, 400) == 300
    assert next_rate(None, 100, 100) == 50


def test_spread_is_the_rate_evenly_until_the_end() -> None:
    due = spread(AT, 4, AT + timedelta(seconds=2))
    assert due == [AT + timedelta(milliseconds=250 * i) for i in range(8)]
    # Whole milliseconds; none at or past the end, however the rate divides the second.
    thirds = spread(AT, 3, AT + timedelta(seconds=1, microseconds=1))
    assert thirds == [AT + timedelta(milliseconds=ms) for ms in (0, 333, 666, 1000)]
    assert len(spread(AT, 7, AT + timedelta(seconds=10))) == 70
    assert spread(AT, 100, AT) == []


def test_search_runs_the_rates_given_in_turn() -> None:
    search = Search([50, 200], start=100, precision=0.1, max_steps=10)
    seen = []
    while (rate := search.rate()) is not None:
        seen.append(rate)
        search.record(rate, passed=rate < 100)
    assert seen == [50, 200]
    assert search.passed == 50


def test_search_doubles_then_bisects_to_its_precision() -> None:
    search = Search(None, start=100, precision=0.1, max_steps=10)
    seen = []
    while (rate := search.rate()) is not None:
        seen.append(rate)
        search.record(rate, passed=rate <= 330)
    assert seen == [100, 200, 400, 300, 350, 325]
    assert search.passed == 325


def test_search_stops_at_its_step_limit() -> None:
    search = Search(None, start=100, precision=0.1, max_steps=3)
    seen = []
    while (rate := search.rate()) is not None:
        seen.append(rate)
        search.record(rate, passed=True)
    assert seen == [100, 200, 400]
