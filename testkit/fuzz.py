"""Type-aware random requests for every RPC, built from the proto descriptors, against the real
servers in process.

``requests(descriptor)`` draws a message of any request type field by field from its
descriptor: strings at their edges (empty, huge, unicode, control characters) or plausible for
the field's name (names of jobs and runs that exist, time zones, cron expressions, URLs),
integers at the int32/int64 limits, floats at NaN and infinity, enums out of range,
timestamps at 0001-01-01 and 9999-12-31 and past them, durations negative and huge, field
masks with junk paths, nested messages, repeated fields and maps, oneofs with one member set.

``FuzzTarget`` runs JobService, AdminService and WorkerService (testkit/api.py,
worker_api.py) on a fresh database seeded with a job, runs and an open attempt, in an event
loop of its own thread, so that a synchronous hypothesis test can call them; after every
refused call it checks that the database did not change (row counts and a hash of every
table's rows).
"""

from __future__ import annotations

import asyncio
import collections
import threading
import uuid
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, TypeVar

import asyncpg
import grpc
from google.protobuf import descriptor as d
from google.protobuf import message as pb_message
from google.protobuf import message_factory
from grpc import aio
from hypothesis import strategies as st

from duetime.admin.v1 import admin_service_pb2
from duetime.jobs.v1 import job_pb2, job_service_pb2
from duetime.worker.v1 import worker_service_pb2
from duetime_infra.codec.attempt_token import ATTEMPT_METADATA_KEY
from testkit.api import ApiClient, running_api
from testkit.databases import create_database, drop_database, migrated_template
from testkit.worker_api import WorkerClient, create_job, running_worker_api, trigger

T = TypeVar("T")
F = d.FieldDescriptor

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
# Timestamp.seconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, the range RFC 3339 and
# the proto contract allow.
MIN_SECONDS, MAX_SECONDS = -62_135_596_800, 253_402_300_799
MAX_DURATION_SECONDS = 315_576_000_000
MAX_DEPTH = 5
HUGE = 70_000

SERVICES = (
    job_service_pb2.DESCRIPTOR.services_by_name["JobService"],
    admin_service_pb2.DESCRIPTOR.services_by_name["AdminService"],
    worker_service_pb2.DESCRIPTOR.services_by_name["WorkerService"],
)
# Answers that mean a handler failed unexpectedly.
BROKEN = frozenset({grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN})


def _mostly(
    sensible: st.SearchStrategy[T], odd: st.SearchStrategy[T], one_in: int = 12
) -> st.SearchStrategy[T]:
    """``sensible``, with ``odd`` one time in ``one_in`` (sampled: hypothesis draws the bounds
    of an integer range far more often than the rest)."""
    return _one_in(one_in).flatmap(lambda hit: odd if hit else sensible)


def _one_in(n: int) -> st.SearchStrategy[bool]:
    return st.sampled_from([False] * (n - 1) + [True])


def _edge_ints(low: int, high: int, tame: bool = False) -> st.SearchStrategy[int]:
    edges = [low, low + 1, -1, 0, 1, 2, 100, 1000, 1001, 10_000, high - 1, high]
    if tame:
        return _mostly(st.integers(1, 100), st.sampled_from(edges))
    return st.one_of(st.sampled_from(edges), st.integers(low, high))


def _tame_pairs(edges: list[int], low: int, high: int, one_in: int) -> st.SearchStrategy[Any]:
    """Mostly sensible values (seconds in [low, high]), an edge one time in ``one_in``."""
    sensible = st.tuples(st.integers(low, high), st.just(0))
    return _mostly(sensible, st.tuples(st.sampled_from(edges), st.just(0)), one_in)


_NOW = 1_796_000_000
_TIME_EDGES = [MIN_SECONDS, MAX_SECONDS, MIN_SECONDS + 3599, MAX_SECONDS - 3599]
_SPAN_EDGES = [0, -1, 366 * 86_400, MAX_DURATION_SECONDS]


def _timestamps() -> st.SearchStrategy[tuple[int, int]]:
    seconds = st.one_of(
        st.sampled_from(
            [
                MIN_SECONDS,
                MIN_SECONDS - 1,
                MAX_SECONDS,
                MAX_SECONDS + 1,
                0,
                -1,
                1_800_000_000,
                INT64[0],
                INT64[1],
            ]
        ),
        st.integers(MIN_SECONDS - 10, MAX_SECONDS + 10),
    )
    nanos = st.one_of(st.sampled_from([0, 999_999_999, 1_000_000_000, -1, INT32[1]]), st.just(0))
    return st.tuples(seconds, nanos)


def _durations() -> st.SearchStrategy[tuple[int, int]]:
    seconds = st.one_of(
        st.sampled_from(
            [
                0,
                1,
                -1,
                59,
                60,
                3600,
                86_400,
                366 * 86_400,
                MAX_DURATION_SECONDS,
                MAX_DURATION_SECONDS + 1,
                -MAX_DURATION_SECONDS,
                INT64[0],
                INT64[1],
            ]
        ),
        st.integers(-(10**6), 10**7),
    )
    nanos = st.sampled_from([0, 1, 500_000_000, 999_999_999, -1, -999_999_999, 1_000_000_000])
    return st.tuples(seconds, nanos)


@dataclass
class Vocabulary:
    """Plausible values by field name, so requests get past the first check now and then."""

    by_name: dict[str, list[str]] = field(default_factory=dict)
    # Values that are wrong for their field (only wild requests use them).
    odd: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, *values: str) -> None:
        self.by_name.setdefault(name, []).extend(values)

    def add_odd(self, name: str, *values: str) -> None:
        self.odd.setdefault(name, []).extend(values)

    def strings(self, name: str, tame: bool = False) -> st.SearchStrategy[str]:
        known = self.by_name.get(name)
        if tame:
            short = st.text(st.characters(codec="ascii", categories=["L", "N"]), max_size=12)
            return st.sampled_from(known) if known else short
        known = [*(known or []), *self.odd.get(name, [])]
        junk = st.one_of(
            st.sampled_from(
                [
                    "",
                    "x",
                    "[REDACTED]",
                    "\x00",
                    "a\r\nb",
                    "é" * 300,
                    "😀" * 100,
                    "x" * HUGE,
                    "/",
                    "teams//jobs/",
                    str(uuid.UUID(int=0)),
                ]
            ),
            st.text(max_size=40),
        )
        if not known:
            return junk
        return st.one_of(st.sampled_from(known), junk)


def _scalar(f: d.FieldDescriptor, words: Vocabulary, tame: bool) -> st.SearchStrategy[Any]:
    match f.type:
        case F.TYPE_STRING:
            return words.strings(f.name, tame)
        case F.TYPE_BYTES:
            return st.binary(max_size=64) if tame else st.just(b"\x00" * HUGE) | st.binary()
        case F.TYPE_BOOL:
            return st.booleans()
        case F.TYPE_DOUBLE | F.TYPE_FLOAT:
            edges = [0.0, 1.0, 2.0, 10.0, 10.5, -1.0, float("nan"), float("inf"), -float("inf")]
            if tame:
                return _mostly(st.floats(1.0, 10.0), st.sampled_from(edges))
            return st.one_of(st.sampled_from(edges), st.floats(allow_nan=True, width=32))
        case F.TYPE_INT32 | F.TYPE_SINT32 | F.TYPE_SFIXED32:
            return _edge_ints(*INT32, tame=tame)
        case F.TYPE_INT64 | F.TYPE_SINT64 | F.TYPE_SFIXED64:
            return _edge_ints(*INT64, tame=tame)
        case F.TYPE_UINT32 | F.TYPE_FIXED32:
            return _edge_ints(0, 2**32 - 1)
        case F.TYPE_UINT64 | F.TYPE_FIXED64:
            return _edge_ints(0, 2**64 - 1)
        case F.TYPE_ENUM:
            assert f.enum_type is not None
            known = [v.number for v in f.enum_type.values]
            if tame:
                return _mostly(st.sampled_from(known), st.just(99))
            return st.one_of(st.sampled_from(known), _edge_ints(*INT32))
    raise AssertionError(f"unexpected field type {f.type} of {f.full_name}")


def _well_known(desc: d.Descriptor, words: Vocabulary, tame: bool) -> st.SearchStrategy[Any] | None:
    cls = message_factory.GetMessageClass(desc)
    if desc.full_name == "google.protobuf.Timestamp":
        pairs = _tame_pairs(_TIME_EDGES, _NOW, _NOW + 400 * 86_400, 3) if tame else _timestamps()
        return pairs.map(lambda p: cls(seconds=p[0], nanos=p[1]))
    if desc.full_name == "google.protobuf.Duration":
        pairs = _tame_pairs(_SPAN_EDGES, 1, 3600, 10) if tame else _durations()
        return pairs.map(lambda p: cls(seconds=p[0], nanos=p[1]))
    if desc.full_name == "google.protobuf.FieldMask":
        paths = st.lists(words.strings("paths", tame), min_size=int(tame), max_size=4)
        return paths.map(lambda ps: cls(paths=ps))
    return None


_BUILT: dict[tuple[int, str, int, bool], st.SearchStrategy[Any]] = {}
# A tame message sets most of its fields.
_PRESENT = _one_in(6).map(lambda absent: not absent)


def requests(desc: d.Descriptor, words: Vocabulary) -> st.SearchStrategy[pb_message.Message]:
    """Requests of type ``desc``: half of them tame (sensible values, a few edges: they get
    deep into the handlers), half wild (see the module's doc)."""
    return st.one_of(messages(desc, words, tame=True), messages(desc, words, tame=False))


def messages(
    desc: d.Descriptor, words: Vocabulary, depth: int = 0, *, tame: bool = False
) -> st.SearchStrategy[pb_message.Message]:
    """Messages of type ``desc``, every field drawn by its type (see the module's doc)."""
    key = (id(words), desc.full_name, depth, tame)
    if key not in _BUILT:
        _BUILT[key] = _messages(desc, words, depth, tame)
    return _BUILT[key]


def _messages(
    desc: d.Descriptor, words: Vocabulary, depth: int, tame: bool
) -> st.SearchStrategy[pb_message.Message]:
    known = _well_known(desc, words, tame)
    if known is not None:
        return known
    cls = message_factory.GetMessageClass(desc)

    @st.composite
    def build(draw: st.DrawFn) -> pb_message.Message:
        msg = cls()
        if depth >= MAX_DEPTH:
            return msg
        chosen = {
            o.name: draw(
                _mostly(st.sampled_from(list(o.fields)), st.none())
                if tame
                else st.sampled_from([None, *o.fields])
            )
            for o in desc.oneofs
            if o.fields
        }
        for f in desc.fields:
            if f.containing_oneof is not None:
                if chosen.get(f.containing_oneof.name) is not f:
                    continue
            elif not draw(_PRESENT if tame else st.booleans()):
                continue
            _fill(draw, msg, f, words, depth, tame)
        return msg

    return build()


def _value(draw: st.DrawFn, f: d.FieldDescriptor, words: Vocabulary, depth: int, tame: bool) -> Any:
    if f.type == F.TYPE_MESSAGE:
        assert f.message_type is not None
        return draw(messages(f.message_type, words, depth + 1, tame=tame))
    return draw(_scalar(f, words, tame))


def _fill(
    draw: st.DrawFn,
    msg: pb_message.Message,
    f: d.FieldDescriptor,
    words: Vocabulary,
    depth: int,
    tame: bool,
) -> None:
    target = getattr(msg, f.name)
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        key_field = f.message_type.fields_by_name["key"]
        value_field = f.message_type.fields_by_name["value"]
        for _ in range(draw(st.integers(0, 2 if tame else 4))):
            key = draw(_scalar(key_field, words, tame))
            value = _value(draw, value_field, words, depth, tame)
            if value_field.type == F.TYPE_MESSAGE:
                target[key].CopyFrom(value)
            else:
                target[key] = value
        if not tame and draw(st.integers(0, 20)) == 0 and value_field.type == F.TYPE_STRING:
            for i in range(101):  # past the limits on counts
                target[f"K{i}"] = "v"
        return
    if f.is_repeated:
        count = draw(st.integers(0, 2) if tame else st.one_of(st.integers(0, 3), st.just(1001)))
        for _ in range(count if f.type != F.TYPE_MESSAGE else min(count, 3)):
            value = _value(draw, f, words, depth, tame)
            if f.type == F.TYPE_MESSAGE:
                target.add().CopyFrom(value)
            else:
                target.append(value)
        return
    value = _value(draw, f, words, depth, tame)
    if f.type == F.TYPE_MESSAGE:
        target.CopyFrom(value)
        if not value.ListFields():
            target.SetInParent()
    else:
        setattr(msg, f.name, value)


@dataclass(frozen=True)
class Rpc:
    service: str
    method: d.MethodDescriptor

    @property
    def name(self) -> str:
        return f"{self.service}/{self.method.name}"


def every_rpc() -> list[Rpc]:
    return [Rpc(s.name, m) for s in SERVICES for m in s.methods]


@dataclass
class Tally:
    """Answers by RPC and status code."""

    counts: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    broken: list[str] = field(default_factory=list)

    def by_code(self) -> collections.Counter[str]:
        out: collections.Counter[str] = collections.Counter()
        for (_, code), n in self.counts.items():
            out[code] += n
        return out


async def fingerprint(db: asyncpg.Connection[asyncpg.Record]) -> list[tuple[str, int, str]]:
    """Row count and a hash of the rows' text, for every table."""
    tables = await db.fetch(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
    )
    query = " UNION ALL ".join(
        f"SELECT '{t[0]}' AS t, count(*) AS n, "
        f"md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS h FROM \"{t[0]}\" x"
        for t in tables
    )
    return [(r["t"], r["n"], r["h"]) for r in await db.fetch(query)]


class FuzzTarget:
    """The three services on a seeded database, in an event loop of their own thread."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._stack = AsyncExitStack()
        self.words = Vocabulary()
        self.tally = Tally()
        self._metadata: dict[str, list[tuple[tuple[str, str], ...]]] = {}
        self._stubs: dict[str, Any] = {}

    def __enter__(self) -> FuzzTarget:
        self._thread.start()
        self._run(self._start())
        return self

    def __exit__(self, *_: object) -> None:
        self._run(self._stack.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout)

    async def _start(self) -> None:
        template = await migrated_template()
        self._stack.push_async_callback(drop_database, template)
        name = f"duetime_fuzz_{uuid.uuid4().hex[:12]}"
        dsn = await create_database(name, template=template)
        self._stack.push_async_callback(drop_database, name)
        api: ApiClient = await self._stack.enter_async_context(running_api(dsn))
        worker: WorkerClient = await self._stack.enter_async_context(running_worker_api(dsn))
        self.db = worker.db
        await self._seed(api, worker)
        team, other = api.auth(), api.auth(api.other_token)
        operator, work = api.auth(api.operator_token), worker.auth()
        self._metadata = {
            "JobService": [team] * 8 + [other, (), work],
            "AdminService": [operator] * 8 + [team, ()],
            "WorkerService": [work] * 8 + [team, ()],
        }
        self._stubs = {
            "JobService": api.stub,
            "AdminService": api.admin,
            "WorkerService": worker.stub,
        }
        self.state = await fingerprint(self.db)

    async def _seed(self, api: ApiClient, worker: WorkerClient) -> None:
        message = job_pb2.Job(
            display_name="seed",
            schedule=job_pb2.Schedule(
                cron=job_pb2.CronSchedule(expression="0 9 * * MON-FRI", time_zone="Europe/London")
            ),
            target=job_pb2.Target(
                http=job_pb2.HttpTarget(url="https://example.com/x", headers={"A": "secret"})
            ),
        )
        job = await create_job(api, message)
        queued = await trigger(api, job, "seed-queued")
        running = await trigger(api, job, "seed-running")
        started = await worker.start(running, delivery="seed", worker="w-1")
        w = self.words
        w.add("name", job.name, f"{job.name}/runs/{queued}", f"{job.name}/runs/{running}")
        w.add("name", "teams/team-a", "teams/team-b", f"tokens/{uuid.uuid4()}")
        w.add_odd("name", "teams/nope", "teams/team-a/jobs/x")
        w.add("parent", job.name)
        w.add("job", job.name)
        w.add("run_id", str(queued), str(running), str(uuid.uuid4()))
        w.add("worker_id", "w-1", "w-2")
        w.add("delivery_id", "seed", "d-1")
        w.add("request_id", "r-1", "r-2", "seed-queued")
        w.add_odd("request_id", "r/1", "x" * 129)
        w.add("team_id", "team-a", "team-b", "new-team")
        w.add_odd("team_id", "A", "t" * 64)
        w.add("time_zone", "UTC", "America/New_York", "Europe/London", "Pacific/Kiritimati")
        w.add_odd("time_zone", "Mars/Base", "+05:00")
        w.add("local_time", "2026-12-24T09:00:00", "2026-03-08T02:30:00", "2026-11-01T01:30:00")
        w.add("local_time", "0001-01-01T00:00:00", "9999-12-31T23:59:59.999999")
        w.add_odd("local_time", "2026-13-01T00:00:00", "24:00", "2026-12-24T09:00:00Z")
        w.add("expression", "0 9 * * *", "*/15 * * * * *", "0 0 L * *", "0 0 15W * *")
        w.add("expression", "0 0 * * 5L", "0 0 * * MON#5", "0 0 31 2 *", "30 2 * * *")
        w.add_odd("expression", "61 * * * *", "* * * * * * *", "@daily", "")
        w.add("url", "https://example.com/hook", "http://127.0.0.1:1/")
        w.add_odd("url", "http://u:p@h/", "ftp://x", "https://")
        w.add("notification_url", "https://example.com/alert", "")
        w.add_odd("notification_url", "javascript:x")
        w.add("image", "registry.example.com/team/task:1")
        w.add_odd("image", "task", "a b")
        w.add("etag", 'W/"1"', "")
        w.add("page_token", "")
        w.add_odd("page_token", "bm9wZQ==")
        w.add("paths", "display_name", "schedule", "target", "retry_policy", "delivery")
        w.add("paths", "max_running", "weight", "notification_url", "runs_per_minute")
        w.add_odd("paths", "schedule.cron", "job.name", "")
        w.add("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        w.add("description", "fuzz")
        w.add("key", "Authorization", "X-Key", "TOKEN")
        w.add_odd("key", "Host", "DUETIME_X", "bad name", "")
        w.add("value", "v", "Bearer t")
        w.add_odd("value", "[REDACTED]", "a\r\nb")
        w.add("display_name", "nightly")
        self.open_attempt = (str(running), started.attempt)

    def call(
        self, rpc: Rpc, request: pb_message.Message, how: int, token: str, *, strict: bool = True
    ) -> grpc.StatusCode:
        """Calls ``rpc``; ``how`` picks its credentials, ``token`` its fencing token text.
        Records the answer; a broken answer, or a refused call that changed the database,
        fails (``strict``) or is only recorded."""
        code, changed = self._run(self._call(rpc, request, how, token))
        self.tally.counts[(rpc.name, code.name)] += 1
        problem = ""
        if code in BROKEN:
            problem = f"{rpc.name} answered {code.name} to {request}"
        elif changed:
            problem = f"{rpc.name} refused ({code.name}) but changed {changed}: {request}"
        if problem:
            self.tally.broken.append(problem[:4000])
            if strict:
                raise AssertionError(problem[:4000])
        return code

    async def _call(
        self, rpc: Rpc, request: pb_message.Message, how: int, token: str
    ) -> tuple[grpc.StatusCode, list[str]]:
        choices = self._metadata[rpc.service]
        metadata = list(choices[how % len(choices)])
        if rpc.method.name == "CompleteAttempt":
            metadata.append((ATTEMPT_METADATA_KEY, token))
        stub = getattr(self._stubs[rpc.service], rpc.method.name)
        answered = False
        if rpc.method.client_streaming:
            code, answered = await _stream(stub, request, tuple(metadata))
        else:
            try:
                await stub(request, metadata=tuple(metadata), timeout=30)
                code = grpc.StatusCode.OK
            except aio.AioRpcError as error:
                code = error.code()
        if code == grpc.StatusCode.OK or answered:
            self.state = await fingerprint(self.db)
            return code, []
        now = await fingerprint(self.db)
        changed = [f"{t} ({n} rows)" for (t, n, h) in now if (t, n, h) not in set(self.state)]
        self.state = now
        return code, changed


async def _stream(
    stub: Callable[..., Any], request: pb_message.Message, metadata: Any
) -> tuple[grpc.StatusCode, bool]:
    """One Heartbeat stream: ``request`` twice, its answers read: the stream's status, and
    whether any beat was answered (a refusal after an answered beat may follow a change the
    answered beat made)."""
    call = stub(metadata=metadata, timeout=30)
    answered = False
    try:
        for _ in range(2):
            await call.write(request)
            if await call.read() is aio.EOF:
                break
            answered = True
        await call.done_writing()
        while await call.read() is not aio.EOF:
            pass
    except aio.AioRpcError:
        pass
    code: grpc.StatusCode = await call.code()
    return code, answered
