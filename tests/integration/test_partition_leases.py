"""Partition ownership on real etcd: acquisition, even splits, takeover, lost leases.

Every test works under a prefix of its own. Leases are short (TTL 3 s, margin 1 s, a refresh
every second bounded to 0.75 s) so takeovers after a death fit in a few seconds. Measured
times are printed (``pytest -s`` or ``-rA`` shows them) and asserted against their bounds.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aetcd
import pytest

from duetime_infra.etcd import OwnershipChange, PartitionLeases, PartitionToken
from duetime_infra.etcd.gateway import EtcdGateway
from duetime_scheduler.claimer import hand_over
from testkit.polling import eventually

PARTITIONS = 1024
TTL = 3.0
MARGIN = 1.0
ALL = set(range(PARTITIONS))
MEMBER_SCRIPT = Path(__file__).resolve().parents[2] / "testkit" / "partition_member.py"

pytestmark = pytest.mark.timeout(60)


def endpoint() -> str:
    return os.environ["DUETIME_ETCD_ENDPOINT"]


@pytest.fixture
def prefix() -> str:
    return f"/duetime-test/{uuid.uuid4()}/"


@pytest.fixture
async def etcd() -> AsyncIterator[Any]:
    """A plain aetcd client, to check from outside what the managers did."""
    host, port = endpoint().rsplit(":", 1)
    async with aetcd.Client(host=host, port=int(port)) as client:
        yield client


def measured(name: str, seconds: float) -> None:
    print(f"MEASURED {name} = {seconds:.3f}s")


# Takeover times are measured: poll finely.
soon = functools.partial(eventually, interval=0.02)


def manager(prefix: str, scheduler_id: str, **options: Any) -> PartitionLeases:
    settings: dict[str, Any] = {"ttl": TTL, "safety_margin": MARGIN, "prefix": prefix}
    return PartitionLeases(endpoint(), scheduler_id, **(settings | options))


@asynccontextmanager
async def running(managers: Sequence[PartitionLeases]) -> AsyncIterator[None]:
    await asyncio.gather(*(m.start() for m in managers))
    try:
        yield
    finally:
        await asyncio.gather(*(m.stop() for m in managers))


def covers_all_disjointly(managers: Sequence[PartitionLeases]) -> bool:
    owned = [set(m.owned()) for m in managers]
    return sum(len(o) for o in owned) == PARTITIONS and set().union(*owned) == ALL


def even_split(managers: Sequence[PartitionLeases]) -> bool:
    counts = [len(m.owned()) for m in managers]
    return max(counts) - min(counts) <= 1 and covers_all_disjointly(managers)


async def holders(etcd: Any, prefix: str) -> dict[int, Any]:
    """Partition -> etcd key-value, straight from etcd."""
    found = await etcd.get_prefix(f"{prefix}partitions/".encode())
    return {int(kv.key.decode().rsplit("/", 1)[1]): kv for kv in found}


async def member_lease(etcd: Any, prefix: str, scheduler_id: str) -> int | None:
    got = await etcd.get(f"{prefix}schedulers/{scheduler_id}".encode())
    return None if got is None else int(got.lease)


async def three_way(
    etcd: Any, prefix: str, pair: Sequence[PartitionLeases], member: MemberProcess, name: str
) -> bool:
    """The member process holds its share (341 or 342, as it says itself) and the two
    in-process managers hold the rest."""
    in_etcd = await holders(etcd, prefix)
    held = sum(1 for kv in in_etcd.values() if kv.value == name.encode())
    return (
        held in (341, 342)
        and member.last_count() == held
        and sum(len(m.owned()) for m in pair) + held == PARTITIONS
        and set()
        .union(*(set(m.owned()) for m in pair))
        .isdisjoint(p for p, kv in in_etcd.items() if kv.value == name.encode())
    )


@dataclass
class MemberProcess:
    """``testkit/partition_member.py`` running as a process of its own."""

    process: asyncio.subprocess.Process
    lines: list[dict[str, Any]] = field(default_factory=list)

    def changes_since(self, t: float) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["event"] == "changed" and line["t"] >= t]

    def last_count(self) -> int:
        changes = [line for line in self.lines if line["event"] == "changed"]
        return int(changes[-1]["count"]) if changes else 0


@asynccontextmanager
async def member_process(prefix: str, scheduler_id: str) -> AsyncIterator[MemberProcess]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(MEMBER_SCRIPT),
        endpoint(),
        scheduler_id,
        prefix,
        "--ttl",
        str(TTL),
        "--margin",
        str(MARGIN),
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    member = MemberProcess(process)

    async def pump(stream: asyncio.StreamReader) -> None:
        while raw := await stream.readline():
            member.lines.append(json.loads(raw))

    reader = asyncio.create_task(pump(process.stdout))
    try:
        await soon(
            lambda: (
                any(line["event"] == "started" for line in member.lines)
                or process.returncode is not None
            ),
            15,
            f"{scheduler_id} starts",
        )
        assert process.returncode is None, f"{scheduler_id} exited with {process.returncode}"
        yield member
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGCONT)
            process.kill()
        await process.wait()
        await reader


async def test_one_manager_owns_all_partitions_with_etcd_create_revisions(
    prefix: str, etcd: Any
) -> None:
    solo = manager(prefix, "solo", epoch=7)
    async with running([solo]):
        took = await soon(lambda: len(solo.owned()) == PARTITIONS, 10, "solo owns all")
        measured("one manager acquires 1024", took)
        owned = solo.owned()
        assert set(owned) == ALL
        lease = await member_lease(etcd, prefix, "solo")
        assert lease
        in_etcd = await holders(etcd, prefix)
        assert set(in_etcd) == ALL
        for partition, token in owned.items():
            kv = in_etcd[partition]
            assert token == PartitionToken(partition, 7, kv.create_revision)
            assert (kv.value, kv.lease) == (b"solo", lease)
        for partition in (0, 511, 1023):
            got = await etcd.get(f"{prefix}partitions/{partition:04d}".encode())
            assert got.create_revision == owned[partition].revision
        # Each key was created by a transaction of its own: all revisions differ.
        assert len({token.revision for token in owned.values()}) == PARTITIONS
        assert time.monotonic() < solo.claim_deadline() <= time.monotonic() + TTL - MARGIN
    assert solo.owned() == {}
    assert solo.claim_deadline() == 0.0
    assert await holders(etcd, prefix) == {}
    assert await member_lease(etcd, prefix, "solo") is None


async def test_three_managers_converge_to_an_even_disjoint_split(prefix: str, etcd: Any) -> None:
    trio = [manager(prefix, f"sched-{name}") for name in ("a", "b", "c")]
    started = time.monotonic()
    async with running(trio):
        await soon(lambda: even_split(trio), 10, "an even split of three")
        took = time.monotonic() - started
        measured("three managers converge from a cold start", took)
        assert took < 5
        assert sorted(len(m.owned()) for m in trio) == [341, 341, 342]
        in_etcd = await holders(etcd, prefix)
        for m in trio:
            mine = {p for p, kv in in_etcd.items() if kv.value == m.scheduler_id.encode()}
            assert mine == set(m.owned())


async def test_a_graceful_stop_hands_everything_to_the_others(prefix: str, etcd: Any) -> None:
    trio = [manager(prefix, f"sched-{name}") for name in ("a", "b", "c")]
    leaving, staying = trio[0], trio[1:]
    async with running(staying):
        await leaving.start()
        await soon(lambda: even_split(trio), 10, "an even split of three")
        kept = [m.owned() for m in staying]
        stopped_at = time.monotonic()
        await leaving.stop()
        assert leaving.owned() == {}
        took = await soon(lambda: even_split(staying), 5, "two take everything")
        measured("takeover after a graceful stop", time.monotonic() - stopped_at)
        assert took < 3
        assert [len(m.owned()) for m in staying] == [512, 512]
        # The ones that stayed kept their partitions and tokens; they only gained.
        for before, m in zip(kept, staying, strict=True):
            now = m.owned()
            assert all(now[p] == token for p, token in before.items())
        in_etcd = await holders(etcd, prefix)
        assert not any(kv.value == leaving.scheduler_id.encode() for kv in in_etcd.values())


async def taken_over_after_a_kill(prefix: str, etcd: Any, pair: list[PartitionLeases]) -> float:
    """Seconds from a third member's kill -9 until ``pair`` owns every partition evenly."""
    async with running(pair), member_process(prefix, "victim") as victim:
        await soon(
            lambda: three_way(etcd, prefix, pair, victim, "victim"), 10, "three share evenly"
        )
        victim.process.kill()
        killed_at = time.monotonic()
        await soon(lambda: even_split(pair), TTL + 5, "the two own everything")
        return time.monotonic() - killed_at


async def test_a_killed_member_is_taken_over_within_its_ttl(prefix: str, etcd: Any) -> None:
    pair = [manager(prefix, "sched-a"), manager(prefix, "sched-b")]
    took = await taken_over_after_a_kill(prefix, etcd, pair)
    measured("takeover after kill -9 (TTL 3 s)", took)
    assert took <= TTL + 2.5
    # Its keys went with its lease, not earlier: nobody stole a live member's partition.
    assert took > TTL - 1.5
    assert await member_lease(etcd, prefix, "victim") is None


async def test_a_frozen_member_drops_everything_before_reacquiring(prefix: str, etcd: Any) -> None:
    pair = [manager(prefix, "sched-a"), manager(prefix, "sched-b")]
    async with running(pair), member_process(prefix, "frozen") as frozen:

        def shared() -> Awaitable[bool]:
            return three_way(etcd, prefix, pair, frozen, "frozen")

        await soon(shared, 10, "three share evenly")
        before = await holders(etcd, prefix)
        old_max = max(kv.create_revision for kv in before.values() if kv.value == b"frozen")

        frozen.process.send_signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        await soon(lambda: even_split(pair), TTL + 5, "the two take over")
        measured("takeover of a frozen member (TTL 3 s)", time.monotonic() - stopped_at)
        assert await member_lease(etcd, prefix, "frozen") is None

        resumed_at = time.monotonic()
        frozen.process.send_signal(signal.SIGCONT)
        await soon(shared, 10, "three share evenly again")
        after = frozen.changes_since(resumed_at)
        assert after, "the frozen member reported nothing after it resumed"
        assert after[0]["count"] == 0, f"it claimed to own partitions after resuming: {after[0]}"
        assert after[0]["reason"] not in ("acquired", "adopted"), after[0]
        regained = [line for line in after if line["count"] > 0]
        assert regained
        assert all(line["min_revision"] > old_max for line in regained)


async def test_a_revoked_lease_drops_everything_at_once_then_recovers_with_new_tokens(
    prefix: str, etcd: Any
) -> None:
    solo = manager(prefix, "solo")
    changes: list[OwnershipChange] = []
    solo.subscribe(changes.append)
    async with running([solo]):
        await soon(lambda: len(solo.owned()) == PARTITIONS, 10, "solo owns all")
        old = solo.owned()
        lease = await member_lease(etcd, prefix, "solo")
        changes.clear()
        await etcd.revoke_lease(lease)
        revoked_at = time.monotonic()
        took = await soon(lambda: solo.owned() == {}, 2, "ownership dropped")
        measured("ownership dropped after the lease was revoked elsewhere", took)
        await soon(lambda: len(solo.owned()) == PARTITIONS, 10, "solo owns all again")
        measured("recovered all 1024 after revocation", time.monotonic() - revoked_at)
        new = solo.owned()
        assert min(t.revision for t in new.values()) > max(t.revision for t in old.values())
        # The first change after the revocation lost everything in one step.
        assert changes[0].lost == frozenset(ALL)
        assert changes[0].gained == frozenset()
        assert await member_lease(etcd, prefix, "solo") not in (None, lease)


async def test_ownership_ends_before_the_lease_could_expire_when_refreshes_hang(
    prefix: str, etcd: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = aetcd.Client.refresh_lease
    sent: list[float] = []
    hang = asyncio.Event()
    never = asyncio.Event()

    async def refresh(self: Any, lease_id: int) -> Any:
        sent.append(time.monotonic())
        if hang.is_set():
            await never.wait()
        return await original(self, lease_id)

    monkeypatch.setattr(aetcd.Client, "refresh_lease", refresh)
    # A refresh gives up after 0.3 s: the drop comes well before the bound, not at it.
    solo = manager(prefix, "solo", refresh_timeout=0.3)
    losses: list[tuple[float, float, int]] = []

    def on_change(change: OwnershipChange) -> None:
        if change.lost:
            losses.append((time.monotonic(), solo.claim_deadline(), len(solo.owned())))

    solo.subscribe(on_change)
    async with running([solo]):
        await soon(lambda: len(solo.owned()) == PARTITIONS, 10, "solo owns all")
        old_max = max(t.revision for t in solo.owned().values())
        await soon(lambda: len(sent) >= 2, 5, "the keeper refreshes")
        hang.set()
        calls = len(sent)
        # The last refresh that went through was sent at sent[calls - 1] or earlier (the
        # keeper takes its timestamp before calling): validity cannot reach past this.
        last_ok = sent[calls - 1]
        assert solo.claim_deadline() <= last_ok + TTL - MARGIN
        await soon(lambda: len(sent) > calls, 3, "a refresh hangs")
        await soon(lambda: solo.owned() == {}, TTL, "ownership dropped")
        emptied_at = time.monotonic()
        measured("ownership dropped after the last good refresh", emptied_at - last_ok)
        assert emptied_at <= last_ok + TTL - MARGIN
        # Subscribers heard of the loss in time, and saw nothing left to claim with.
        assert len(losses) == 1
        lost_at, deadline_then, owned_then = losses[0]
        assert lost_at <= last_ok + TTL - MARGIN
        assert (deadline_then, owned_then) == (0.0, 0)
        hang.clear()
        await soon(lambda: len(solo.owned()) == PARTITIONS, 10, "solo recovers")
        assert min(t.revision for t in solo.owned().values()) > old_max


async def test_owned_is_empty_once_the_deadline_passes_even_if_the_loop_stalls(
    prefix: str,
) -> None:
    solo = manager(prefix, "solo")
    async with running([solo]):
        await soon(lambda: len(solo.owned()) == PARTITIONS, 10, "solo owns all")
        old_max = max(t.revision for t in solo.owned().values())
        deadline = solo.claim_deadline()
        assert deadline > time.monotonic()
        # Freeze the event loop (a GC pause, a starved CPU) up to the deadline: no keepalive
        # runs, yet a claimer asking now must be told it owns nothing.
        time.sleep(deadline - time.monotonic())  # noqa: ASYNC251 - the stall is the point
        assert solo.owned() == {}
        assert solo.claim_deadline() == 0.0
        await soon(lambda: len(solo.owned()) == PARTITIONS, 10, "solo recovers")
        assert min(t.revision for t in solo.owned().values()) > old_max


async def test_a_release_never_deletes_a_successors_key(prefix: str, etcd: Any) -> None:
    gateway = EtcdGateway(endpoint(), request_timeout=2.0)
    key = f"{prefix}partitions/0007"
    try:
        lease = await gateway.grant_lease(5)
        first = await gateway.create_if_absent(key, b"old", lease_id=lease.lease_id)
        assert first is not None
        assert await gateway.create_if_absent(key, b"other", lease_id=lease.lease_id) is None
        assert await gateway.delete_if_created(key, first)
        second = await gateway.create_if_absent(key, b"new", lease_id=lease.lease_id)
        assert second is not None
        assert second > first
        assert not await gateway.delete_if_created(key, first)
        got = await etcd.get(key.encode())
        assert (got.value, got.create_revision) == (b"new", second)
        await gateway.revoke_lease(lease.lease_id)
        assert await gateway.get(key) is None
    finally:
        await gateway.close()


# Survivors that would not look again on their own for a minute: what they do sooner, they
# do because their watch saw the keys go.
NO_POLL = 60.0


async def test_a_revoked_owner_is_taken_over_at_once_by_the_watch_not_the_poll(
    prefix: str, etcd: Any
) -> None:
    pair = [manager(prefix, f"sched-{n}", recheck_interval=NO_POLL) for n in ("a", "b")]
    async with running(pair), member_process(prefix, "victim") as victim:
        await soon(
            lambda: three_way(etcd, prefix, pair, victim, "victim"), 10, "three share evenly"
        )
        lease = await member_lease(etcd, prefix, "victim")
        assert lease is not None
        victim.process.send_signal(signal.SIGSTOP)  # it cannot hand anything back itself
        revoked_at = time.monotonic()
        await etcd.revoke_lease(lease)
        took = await soon(lambda: even_split(pair), 5, "the two own everything")
        measured("takeover after the owner's lease was revoked (watch)", took)
        assert time.monotonic() - revoked_at < 2


async def test_an_expired_owner_is_taken_over_as_its_lease_ends_not_at_the_next_poll(
    prefix: str, etcd: Any
) -> None:
    pair = [manager(prefix, f"sched-{n}", recheck_interval=NO_POLL) for n in ("a", "b")]
    took = await taken_over_after_a_kill(prefix, etcd, pair)
    measured("takeover after kill -9, no poll (TTL 3 s)", took)
    assert took <= TTL + 1.5


async def test_a_graceful_stop_hands_over_before_the_claim_in_flight_ends(
    prefix: str, etcd: Any
) -> None:
    leaving, staying = (
        manager(prefix, "sched-a"),
        manager(prefix, "sched-b", recheck_interval=NO_POLL),
    )
    async with running([staying]):
        await leaving.start()
        await soon(lambda: even_split([leaving, staying]), 10, "an even split of two")
        # A claim pass that would run on through the whole grace.
        pass_ends = asyncio.Event()

        async def claim_pass() -> None:
            await pass_ends.wait()

        claiming = asyncio.create_task(claim_pass())
        stopping = asyncio.Event()
        began = time.monotonic()
        stop = asyncio.create_task(hand_over(leaving, stopping, claiming, grace=30))
        took = await soon(lambda: len(staying.owned()) == PARTITIONS, 5, "the other owns all")
        measured("takeover on SIGTERM while a claim pass runs", took)
        assert stopping.is_set()
        assert not stop.done()
        assert not any(kv.value == b"sched-a" for kv in (await holders(etcd, prefix)).values())
        pass_ends.set()
        await stop
        assert time.monotonic() - began < 10
