"""The callers waiting for a fresh beat: each returns on the answer to the beat that listed it,
never earlier, and a broken stream lists them again."""

from __future__ import annotations

import asyncio

from duetime_worker.attempt.fresh_beats import FreshCallers


def done(*waiters: asyncio.Future[None]) -> list[bool]:
    return [waiter.done() for waiter in waiters]


async def test_a_caller_returns_on_the_answer_to_its_own_beat() -> None:
    callers = FreshCallers()
    first = callers.ask(("r1", 1))
    assert callers.wanted
    assert callers.unlisted_keys() == [("r1", 1)]
    callers.listed(5)
    assert not callers.wanted
    assert callers.unlisted_keys() == []
    second = callers.ask(("r2", 1))
    callers.listed(6)
    callers.answered_through(4)
    assert done(first, second) == [False, False]
    callers.answered_through(5)
    assert done(first, second) == [True, False]
    callers.answered_through(6)
    assert done(first, second) == [True, True]


async def test_one_answer_answers_every_beat_before_it() -> None:
    callers = FreshCallers()
    waiters = []
    for beat in range(3):
        waiters.append(callers.ask((f"r{beat}", 1)))
        callers.listed(beat)
    late = callers.ask(("late", 1))
    callers.answered_through(2)
    assert done(*waiters, late) == [True, True, True, False]
    assert callers.wanted


async def test_a_broken_stream_lists_its_callers_again_first() -> None:
    callers = FreshCallers()
    early = callers.ask(("early", 1))
    callers.listed(1)
    late = callers.ask(("late", 1))
    callers.relist()
    callers.answered_through(1)  # an answer to the old stream's beat: no longer theirs
    assert done(early, late) == [False, False]
    assert callers.unlisted_keys() == [("early", 1), ("late", 1)]
    callers.listed(2)
    callers.answered_through(2)
    assert done(early, late) == [True, True]


async def test_callers_with_nothing_to_beat_for_return_at_once() -> None:
    callers = FreshCallers()
    listed = callers.ask(("listed", 1))
    callers.listed(1)
    idle = callers.ask(("gone", 1))
    callers.answer_unlisted()
    assert done(listed, idle) == [False, True]
    assert not callers.wanted
