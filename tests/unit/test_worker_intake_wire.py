"""The intake's edge (``duetime_worker.intake.wire``): a dispatch message read once into the
worker's ``Dispatch``, whatever a writer left out or this build does not know."""

from __future__ import annotations

from duetime.events.v1.events_pb2 import (
    TARGET_KIND_CONTAINER,
    TARGET_KIND_HTTP,
    TARGET_KIND_UNSPECIFIED,
    RunDispatch,
)
from duetime.jobs.v1 import job_pb2
from duetime_core.jobspec import Priority
from duetime_worker.herd.slots import Flow
from duetime_worker.intake.dispatch import Dispatch
from duetime_worker.intake.wire import dispatch_of


def test_a_dispatch_is_read_with_its_run_time_target_kind_turn_nominal_time_and_hint() -> None:
    message = RunDispatch(
        run_id="r1",
        job_id="j1",
        team="a",
        priority=job_pb2.PRIORITY_HIGH,
        target_kind=TARGET_KIND_CONTAINER,
        team_weight=3,
        dispatch_id="d1",
        starts_at_its_time=True,
    )
    message.effective_time.FromNanoseconds(1_767_225_600_123_456_789)
    message.nominal_time.FromNanoseconds(1_767_225_600_000_000_000)
    assert dispatch_of(message) == Dispatch(
        run_id="r1",
        not_before=1_767_225_600_123_456_789,
        container=True,
        flow=Flow(Priority.HIGH, "a", 3),
        nominal_time=1_767_225_600_000_000_000,
        at_its_time=True,
    )


def test_a_dispatch_that_says_nothing_is_due_now_for_no_team_at_weight_one() -> None:
    assert dispatch_of(RunDispatch()) == Dispatch(run_id="")
    assert Dispatch(run_id="").flow == Flow(Priority.NORMAL, "", 1)
    assert dispatch_of(RunDispatch(team="b")).flow == Flow(Priority.NORMAL, "b", 1)


def test_each_priority_is_read_and_an_unknown_one_is_normal() -> None:
    read = {
        number: dispatch_of(RunDispatch(priority=number)).flow.priority  # type: ignore[arg-type]
        for number in (
            job_pb2.PRIORITY_HIGH,
            job_pb2.PRIORITY_NORMAL,
            job_pb2.PRIORITY_LOW,
            job_pb2.PRIORITY_UNSPECIFIED,
            99,
        )
    }
    assert read == {
        job_pb2.PRIORITY_HIGH: Priority.HIGH,
        job_pb2.PRIORITY_NORMAL: Priority.NORMAL,
        job_pb2.PRIORITY_LOW: Priority.LOW,
        job_pb2.PRIORITY_UNSPECIFIED: Priority.NORMAL,
        99: Priority.NORMAL,
    }


def test_only_a_container_kind_reserves_a_launcher_permit() -> None:
    kinds = (TARGET_KIND_CONTAINER, TARGET_KIND_HTTP, TARGET_KIND_UNSPECIFIED, 7)
    read = [dispatch_of(RunDispatch(target_kind=k)).container for k in kinds]  # type: ignore[arg-type]
    assert read == [True, False, False, False]


def test_a_time_before_the_epoch_reads_as_negative_nanoseconds() -> None:
    message = RunDispatch(run_id="r")
    message.effective_time.FromNanoseconds(-1_500_000_000)
    assert dispatch_of(message).not_before == -1_500_000_000
