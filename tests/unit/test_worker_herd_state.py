"""The worker's call backlog: counted once per call, waited on until it clears or for at most
the time given, and never waited on once closed; the garbage collector paused meanwhile, for
a bounded time. The herd governor over it: busy while calls wait or reports go, holding full
beats and success reports for bounded times, never once stopped."""

from __future__ import annotations

import asyncio
import gc
import time

from duetime_worker.herd.gc_pause import CollectorPause
from duetime_worker.herd.governor import Herd
from duetime_worker.herd.knobs import FULL_BEAT_HOLD
from duetime_worker.herd.state import CallBacklog
from testkit.polling import eventually


async def test_a_wait_ends_when_the_last_call_goes_out() -> None:
    backlog = CallBacklog()
    first, second = backlog.due(), backlog.due()
    waiting = asyncio.create_task(backlog.passed(30))
    first()
    first()  # said twice, counted once
    await asyncio.sleep(0)
    assert not waiting.done()
    assert backlog.waiting == 1
    second()
    await asyncio.wait_for(waiting, 5)
    assert backlog.waiting == 0


async def test_a_wait_ends_after_the_longest_time_given() -> None:
    backlog = CallBacklog()
    backlog.due()
    started = time.monotonic()
    await asyncio.wait_for(backlog.passed(0.2), 5)
    assert time.monotonic() - started >= 0.199
    assert backlog.waiting == 1
    backlog.close()


async def test_nothing_waits_without_a_backlog_or_once_closed() -> None:
    backlog = CallBacklog()
    await asyncio.wait_for(backlog.passed(30), 1)
    backlog.due()
    waiting = asyncio.create_task(backlog.passed(30))
    await asyncio.sleep(0)
    backlog.close()
    await asyncio.wait_for(waiting, 1)
    backlog.due()
    await asyncio.wait_for(backlog.passed(30), 1)
    assert gc.isenabled()  # not paused once closed


async def test_each_wait_ends_at_its_own_time_and_a_cancelled_one_is_dropped() -> None:
    backlog = CallBacklog()
    backlog.due()
    long = asyncio.create_task(backlog.passed(30))
    cancelled = asyncio.create_task(backlog.passed(0.05))
    short = asyncio.create_task(backlog.passed(0.1))
    await asyncio.sleep(0)
    cancelled.cancel()
    started = time.monotonic()
    await asyncio.wait_for(short, 5)
    assert time.monotonic() - started >= 0.09
    assert cancelled.cancelled()
    assert not long.done()
    backlog.close()
    await asyncio.wait_for(long, 1)


async def test_the_collector_waits_from_the_first_call_due_until_the_last_went_out() -> None:
    backlog = CallBacklog()
    assert gc.isenabled()
    first = backlog.due()
    second = backlog.due()
    assert not gc.isenabled()
    first()
    assert not gc.isenabled()
    second()
    assert gc.isenabled()
    backlog.due()
    assert not gc.isenabled()
    backlog.close()  # a stopping worker: the collector runs again
    assert gc.isenabled()


async def test_a_collector_pause_ends_after_the_longest_and_waits_for_the_end() -> None:
    pause = CollectorPause(longest=0.05)
    try:
        pause.begin()
        assert not gc.isenabled()

        async def resumed() -> bool:
            return gc.isenabled()

        await eventually(resumed, 5, "the collector runs again after the longest pause", 0.01)
        pause.begin()  # the calls have still not gone out: no second pause
        assert gc.isenabled()
        pause.end()
        pause.begin()
        assert pause.paused
        assert not gc.isenabled()
    finally:
        pause.end()
    assert gc.isenabled()


async def test_a_collector_someone_else_turned_off_is_left_off() -> None:
    pause = CollectorPause()
    gc.disable()
    try:
        pause.begin()
        pause.end()
        assert not gc.isenabled()
    finally:
        gc.enable()


async def test_the_herd_is_busy_while_calls_wait_or_reports_go_and_never_once_stopped() -> None:
    herd = Herd()
    assert not herd.busy
    assert not herd.holds_full_beat(0.0)
    sent = herd.call_due()
    assert herd.busy
    assert not gc.isenabled()  # the collector waits for the calls due
    sent()
    assert not herd.busy
    assert gc.isenabled()
    herd.report_begins()
    assert herd.busy
    assert herd.holds_full_beat(FULL_BEAT_HOLD - 0.1)
    assert not herd.holds_full_beat(FULL_BEAT_HOLD)  # held this long at most
    herd.call_due()
    herd.stop()
    assert not herd.busy  # a stopping worker holds nothing back
    assert not herd.holds_full_beat(0.0)
    assert gc.isenabled()
    herd.report_ends()


async def test_a_success_report_waits_for_the_backlog_within_a_share_of_its_lease() -> None:
    herd = Herd()
    loop = asyncio.get_running_loop()
    await asyncio.wait_for(herd.success_report_held(60), 1)  # no backlog: at once
    sent = herd.call_due()
    try:
        started = loop.time()
        await asyncio.wait_for(herd.success_report_held(0.4), 5)  # a quarter of 0.4 s left
        assert 0.098 <= loop.time() - started < 0.35
        waiting = asyncio.create_task(herd.success_report_held(60))
        await asyncio.sleep(0)
        assert not waiting.done()
        sent()  # the calls went out: the held report goes
        await asyncio.wait_for(waiting, 1)
    finally:
        herd.stop()
