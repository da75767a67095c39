"""Teams' signing keys on PostgreSQL (duetime_infra.signing): added, retired, published.

A key's secrets are stored sealed under the secrets keyring (``SecretBox.seal_team_key``) and
opened only by the scheduler that hands them to a worker; the webhook secret is shown once, in
the answer that adds it. A team holds at most two active keys (a rotation's old and new).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeAlias

import asyncpg

from duetime_core.errors import FailedPrecondition, NotFound, PermissionDenied
from duetime_core.jobspec import CallSigning, Sealed
from duetime_core.notifications import DEAD_LETTER_KEYS_WINDOW
from duetime_core.teams import SigningKeyRecord
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q
from duetime_infra.secrets.sealing import SecretBox, SecretUnreadable
from duetime_infra.signing import SigningKey, new_signing_key, signing_key_from

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"

MAX_ACTIVE_KEYS = 2
# How long a retired key's public half stays in the JWKS: longer than an ID token lives, plus
# the 30 s a worker may keep signing with keys it fetched before the retirement. Its row is
# deleted after it (``prune_retired_keys``).
RETIRED_PUBLISHED = timedelta(minutes=10)
SECRET_PART = "webhook_secret"
TOKEN_PART = "token_key"


@dataclass(frozen=True)
class TeamSigning:
    """What a worker signs a team's calls with: its active keys (oldest first; none: it has
    none) and its default for jobs that do not say."""

    keys: tuple[SigningKey, ...]
    default: CallSigning


def _record(row: asyncpg.Record) -> SigningKeyRecord:
    return SigningKeyRecord(row["team_id"], row["key_id"], row["create_time"], row["retire_time"])


async def add_signing_key(
    conn: Conn, box: SecretBox, team_id: str
) -> tuple[SigningKeyRecord, SigningKey]:
    """A new generation of keys for the team, stored sealed; the record and the keys."""
    key = new_signing_key()
    async with conn.transaction():
        if await conn.fetchval(q("signing_team_lock"), team_id) is None:
            raise NotFound(f"team {team_id!r} not found", reason="TEAM_NOT_FOUND")
        if await conn.fetchval(q("signing_active_count"), team_id) >= MAX_ACTIVE_KEYS:
            raise FailedPrecondition(
                f"team {team_id!r} has {MAX_ACTIVE_KEYS} active signing keys: retire one first",
                reason="SIGNING_KEYS_FULL",
            )
        secret = box.seal_team_key(team_id, key.key_id, SECRET_PART, key.secret)
        token = box.seal_team_key(team_id, key.key_id, TOKEN_PART, key.private_der())
        row = await conn.fetchrow(
            q("signing_key_insert"),
            team_id,
            key.key_id,
            secret.key_id,
            secret.data,
            token.data,
            json.dumps(key.public_jwk()),
        )
    assert row is not None
    return _record(row), key


def no_key(team_id: str, field: str, what: str) -> FailedPrecondition:
    """The refusal of a change that would leave calls to sign without a key to sign them."""
    return FailedPrecondition(
        f"{field}: {what}, but team {team_id!r} would have no active signing key"
        " (AdminService.AddSigningKey first)",
        reason="NO_SIGNING_KEY",
        metadata={"field": field},
    )


async def require_key(
    conn: Conn, team_id: str, field: str, what: str, *, exclusive: bool = False
) -> None:
    """Refuses (``no_key``) unless the team holds an active key, its row locked (``exclusive``
    for a change to the team's own row) so that retiring its last key waits for the change."""
    lock = "signing_team_lock" if exclusive else "signing_team_share"
    if await conn.fetchval(q(lock), team_id) is None:
        raise NotFound(f"team {team_id!r} not found", reason="TEAM_NOT_FOUND")
    if await conn.fetchval(q("signing_active_count"), team_id) == 0:
        raise no_key(team_id, field, what)


async def retire_signing_key(conn: Conn, team_id: str, key_id: str) -> SigningKeyRecord:
    """Retires the key; refused while it is the team's last and its default or a job signs."""
    async with conn.transaction():
        if await conn.fetchval(q("signing_team_lock"), team_id) is not None:
            await _check_not_last(conn, team_id, key_id)
        row = await conn.fetchrow(q("signing_key_retire"), team_id, key_id)
    if row is None:
        raise NotFound(
            f"signing key {key_id!r} of team {team_id!r} not found", reason="SIGNING_KEY_NOT_FOUND"
        )
    return _record(row)


async def revoke_signing_key(conn: Conn, team_id: str, key_id: str) -> SigningKeyRecord:
    """Deletes the key, active or retired, secrets and public half: tokens it signed stop
    verifying, and no call started after this is signed with it (``RunSpec.signing_keys``).
    Allowed for the team's last key: a key that leaked must stop at once."""
    row = await conn.fetchrow(q("signing_key_delete"), team_id, key_id)
    if row is None:
        raise NotFound(
            f"signing key {key_id!r} of team {team_id!r} not found", reason="SIGNING_KEY_NOT_FOUND"
        )
    return _record(row)


async def _check_not_last(conn: Conn, team_id: str, key_id: str) -> None:
    active = await conn.fetch(q("signing_keys_active"), team_id)
    if [r["key_id"] for r in active] != [key_id]:
        return  # not the last active key (or not active at all)
    blockers = await conn.fetchrow(q("signing_retire_blockers"), team_id)
    assert blockers is not None  # the team's row is locked
    if blockers["default_call_signing"] != CallSigning.OFF.value:
        raise no_key(team_id, "name", "the team's default_call_signing signs its calls")
    if blockers["job_signs"]:
        raise no_key(team_id, "name", "a job of the team asks for signing")


async def published_keys(
    conn: Conn | Pool, team_id: str
) -> list[tuple[SigningKeyRecord, dict[str, Any]]]:
    """The keys whose public half is served (active, or retired lately), with that half."""
    rows = await conn.fetch(q("signing_keys_published"), team_id, RETIRED_PUBLISHED)
    return [(_record(r), json.loads(r["public_jwk"])) for r in rows]


async def prune_retired_keys(conn: Conn | Pool) -> int:
    """Deletes the keys retired longer ago than ``RETIRED_PUBLISHED`` (no token they signed
    still verifies); how many. Idempotent: the retention pass runs it hourly."""
    pruned: int = await conn.fetchval(q("signing_keys_prune"), RETIRED_PUBLISHED)
    return pruned


async def team_signing(conn: Conn | Pool, box: SecretBox, team_id: str) -> TeamSigning:
    """The team's active keys that open, and its default; NotFound for an unknown team. A key
    that does not open is left out (SecretUnreadable logs it): the default is still answered,
    so calls that are not signed never wait for a key."""
    rows = await conn.fetch(q("signing_keys_active"), team_id)
    if not rows:
        raise NotFound(f"team {team_id!r} not found", reason="TEAM_NOT_FOUND")
    keys: list[SigningKey] = []
    for row in rows:
        if row["key_id"] is None:
            continue
        with contextlib.suppress(SecretUnreadable):
            keys.append(_opened(box, team_id, row))
    return TeamSigning(tuple(keys), CallSigning(rows[0]["default_call_signing"]))


async def signing_for_run(
    conn: Conn | Pool, box: SecretBox, team_id: str, run_id: uuid.UUID, worker_id: str
) -> TeamSigning:
    """The team's signing (``team_signing``) for a worker entitled to it through ``run_id``:
    a run of the team whose open attempt is the worker's (started, or ahead of its time), or
    that was dead-lettered within ``DEAD_LETTER_KEYS_WINDOW`` (its notification is signed, by
    whichever worker delivers it). PermissionDenied otherwise, saying why: a worker's token
    alone does not open every team's keys."""
    held = await conn.fetchrow(q("signing_run_holder"), run_id)
    problem = _not_held(held, team_id, worker_id)
    if problem is not None:
        raise PermissionDenied(
            f"team {team_id!r}'s signing keys are not served for run {run_id}: {problem}",
            reason="KEYS_NOT_HELD",
            metadata={"run_id": str(run_id)},
        )
    return await team_signing(conn, box, team_id)


def _not_held(held: asyncpg.Record | None, team_id: str, worker_id: str) -> str | None:
    """Why the run does not entitle the worker to the team's keys; None when it does."""
    if held is None:
        return "no such run"
    if held["team_id"] != team_id:
        return "the run is another team's"
    if held["open_worker_id"] == worker_id:
        return None
    if held["state"] == "DEAD_LETTERED":
        return _dead_letter_problem(held)
    if held["open_worker_id"] is None:
        return f"the run has no open attempt (it is {held['state']})"
    return f"the run's open attempt is not worker {worker_id!r}'s"


def _dead_letter_problem(held: asyncpg.Record) -> str | None:
    """Why a dead-lettered run no longer entitles any worker to its team's keys: its
    notification is no longer sent (``duetime_core.notifications``); None while it may be."""
    if held["state_age"] <= DEAD_LETTER_KEYS_WINDOW:
        return None
    return (
        f"the run was dead-lettered too long ago (at {held['update_time'].isoformat()}, more"
        f" than {DEAD_LETTER_KEYS_WINDOW // timedelta(minutes=1)} minutes ago): its"
        " notification is no longer sent"
    )


def _opened(box: SecretBox, team_id: str, row: asyncpg.Record) -> SigningKey:
    key_id, sealed_with = row["key_id"], row["sealed_key_id"]
    secret = box.open_team_key(
        team_id, key_id, SECRET_PART, Sealed(sealed_with, row["webhook_secret"])
    )
    token = box.open_team_key(team_id, key_id, TOKEN_PART, Sealed(sealed_with, row["token_key"]))
    return signing_key_from(key_id, secret, token)


async def reseal_signing_keys(pool: Conn | Pool, box: SecretBox, batch_size: int = 200) -> int:
    """Seals every active key sealed under another keyring key under ``box``'s current one;
    how many were sealed again (``duetime-ops secrets rotate``)."""
    done = 0
    while rows := await pool.fetch(q("signing_keys_to_reseal"), box.current_key_id, batch_size):
        for row in rows:
            team_id, key_id = row["team_id"], row["key_id"]
            key = _opened(box, team_id, row)
            secret = box.seal_team_key(team_id, key_id, SECRET_PART, key.secret)
            token = box.seal_team_key(team_id, key_id, TOKEN_PART, key.private_der())
            swapped = await pool.fetchval(
                q("signing_key_reseal"),
                team_id,
                key_id,
                row["sealed_key_id"],
                secret.key_id,
                secret.data,
                token.data,
            )
            done += swapped is not None
    return done
