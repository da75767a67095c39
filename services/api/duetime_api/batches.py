"""Batch pause, resume and redrive: the set a request names or its filter matches, counted
first (``validate_only``), then each item changed as its single call would change it, each
outcome kept; one item's failure never stops the others."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from google.rpc import code_pb2

from duetime.jobs.v1 import job_service_pb2
from duetime_api.jobs import JobOperations, check_note, check_request_id
from duetime_api.names import parse_job_name, parse_run_name
from duetime_core.errors import DuetimeError, FailedPrecondition, InvalidArgument, NotFound
from duetime_core.identity import Principal
from duetime_core.jobspec import JobState
from duetime_infra.grpc.status import to_rpc_status

MAX_BATCH = 1000
MAX_BATCH_REQUEST_ID = 100


@dataclass(frozen=True)
class Outcome:
    name: str
    error: DuetimeError | None = None


@dataclass(frozen=True)
class Batch:
    matched: int
    outcomes: list[Outcome]


def _one_of(names: Sequence[str], where: str) -> None:
    if bool(names) == bool(where.strip()):
        raise InvalidArgument.field("names", "set exactly one of names and filter")
    if len(names) > MAX_BATCH:
        raise InvalidArgument.field("names", f"at most {MAX_BATCH}, not {len(names)}")


def _too_many(found: int) -> None:
    if found > MAX_BATCH:
        raise FailedPrecondition(
            f"the filter matches more than {MAX_BATCH}; narrow it and act in steps",
            reason="BATCH_TOO_LARGE",
        )


def _job_name(team_id: str, job_id: uuid.UUID) -> str:
    return f"teams/{team_id}/jobs/{job_id}"


async def _each(
    items: Sequence[tuple[str, Callable[[], Awaitable[object]]]],
) -> list[Outcome]:
    outcomes = []
    for name, change in items:
        try:
            await change()
        except DuetimeError as error:
            outcomes.append(Outcome(name, error))
        else:
            outcomes.append(Outcome(name))
    return outcomes


class Batches:
    def __init__(self, jobs: JobOperations) -> None:
        self._jobs = jobs

    async def pause(
        self,
        team_id: str,
        names: Sequence[str],
        where: str,
        validate_only: bool,
        by: Principal | None = None,
        note: str = "",
    ) -> Batch:
        """Pauses the named jobs, or the ACTIVE ones the filter matches, each with ``note``."""
        check_note(note)

        async def pause(job_id: uuid.UUID) -> object:
            return await self._jobs.pause(team_id, job_id, "", by, note)

        return await self._jobs_batch(team_id, names, where, JobState.ACTIVE, validate_only, pause)

    async def resume(
        self,
        team_id: str,
        names: Sequence[str],
        where: str,
        validate_only: bool,
        by: Principal | None = None,
    ) -> Batch:
        """Resumes the named jobs, or the PAUSED ones the filter matches."""

        async def resume(job_id: uuid.UUID) -> object:
            return await self._jobs.resume(team_id, job_id, "", by)

        return await self._jobs_batch(team_id, names, where, JobState.PAUSED, validate_only, resume)

    async def _jobs_batch(
        self,
        team_id: str,
        names: Sequence[str],
        where: str,
        state: JobState,
        validate_only: bool,
        change: Callable[[uuid.UUID], Awaitable[object]],
    ) -> Batch:
        _one_of(names, where)
        if names:
            targets = _named(names, lambda name, field: parse_job_name(name, team_id, field))
        else:
            reads = self._jobs.store.reads
            found = await reads.matching_jobs(team_id, where, MAX_BATCH + 1, state)
            _too_many(len(found))
            targets = [(_job_name(team_id, job_id), job_id) for job_id in found]
        if validate_only:
            return Batch(len(targets), [])
        items = [
            (name, _bind(change, job_id) if isinstance(job_id, uuid.UUID) else job_id)
            for name, job_id in targets
        ]
        return Batch(len(targets), await _each(items))

    async def redrive(
        self,
        team_id: str,
        parent: uuid.UUID | None,
        names: Sequence[str],
        where: str,
        validate_only: bool,
        request_id: str,
    ) -> Batch:
        """Redrives the named runs, or the DEAD_LETTERED ones the filter matches under
        ``parent`` (a job, or None for every job of the team). Each run's redrive is
        idempotent by a request id derived from ``request_id`` and the run."""
        _one_of(names, where)
        if not validate_only:
            check_request_id(request_id, required=True)
            if len(request_id) > MAX_BATCH_REQUEST_ID:
                raise InvalidArgument.field(
                    "request_id", f"at most {MAX_BATCH_REQUEST_ID} characters"
                )
        if names:
            targets = _named(names, lambda name, field: parse_run_name(name, team_id, field))
        else:
            reads = self._jobs.store.reads
            found = await reads.matching_dead_letters(team_id, parent, where, MAX_BATCH + 1)
            _too_many(len(found))
            targets = [(f"{_job_name(team_id, j)}/runs/{r}", (j, r)) for j, r in found]
        if validate_only:
            return Batch(len(targets), [])
        batch = hashlib.sha256(request_id.encode()).hexdigest()[:16]
        items = []
        for name, ids in targets:
            if isinstance(ids, tuple):
                job_id, run_id = ids
                key = f"batch-{batch}-{run_id}"
                items.append((name, _bind(self._jobs.redrive, team_id, job_id, run_id, key)))
            else:
                items.append((name, ids))
        return Batch(len(targets), await _each(items))


T = TypeVar("T")


def _named(
    names: Sequence[str], parse: Callable[[str, str], T]
) -> list[tuple[str, T | Callable[[], Awaitable[object]]]]:
    """Each name with what it names; a malformed name fails the request (naming its field),
    another team's or a missing one fails only its item (NOT_FOUND, as a single call)."""
    targets: list[tuple[str, T | Callable[[], Awaitable[object]]]] = []
    for i, name in enumerate(names):
        try:
            targets.append((name, parse(name, f"names[{i}]")))
        except NotFound as error:
            targets.append((name, _bind(_raise, error)))
    return targets


async def _raise(error: DuetimeError) -> object:
    raise error


def _bind(
    change: Callable[..., Awaitable[object]], *args: object
) -> Callable[[], Awaitable[object]]:
    async def call() -> object:
        return await change(*args)

    return call


BatchResponse = TypeVar(
    "BatchResponse",
    job_service_pb2.BatchPauseJobsResponse,
    job_service_pb2.BatchResumeJobsResponse,
    job_service_pb2.BatchRedriveRunsResponse,
)


def encode_batch(batch: Batch, out: BatchResponse) -> BatchResponse:
    """``out`` filled with how many items the batch matched and each one's status."""
    out.matched = batch.matched
    for outcome in batch.outcomes:
        result = out.results.add(name=outcome.name)
        if outcome.error is None:
            result.status.code = code_pb2.OK
        else:
            result.status.CopyFrom(to_rpc_status(outcome.error))
    return out
