"""Re-sealing every stored secret under the keyring's current key, while the system runs.

Teams' signing keys are sealed again too (``reseal_signing_keys``). Job definitions (``jobs``
and the immutable ``job_versions`` runs refer to) are read in
primary-key pages of those that hold a value in clear (written by an older build) or sealed
under another key, and each is rewritten by a compare-and-set on its document: a concurrent
update by the API wins, and the row is read again and re-sealed. No lock is held between
statements, so writers are never held up for more than one row's update. Passes repeat until
one finds nothing left to do. Run it once every API and scheduler has the new keyring (the
new current key, the old keys still in it); remove the old keys afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import asyncpg

from duetime_infra.codec.spec_json import spec_from_json, spec_to_json
from duetime_infra.pg.sql import q
from duetime_infra.pg.teams.signing_keys import reseal_signing_keys
from duetime_infra.secrets.sealing import SecretBox

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"
MAX_PASSES = 10


@dataclass(frozen=True)
class _Table:
    page: str
    get: str
    swap: str
    start: tuple[Any, ...]
    key: Callable[[asyncpg.Record], tuple[Any, ...]]


_TABLES = (
    _Table(
        "secrets_jobs_page",
        "secrets_job_get",
        "secrets_job_swap",
        (uuid.UUID(int=0),),
        lambda r: (r["job_id"],),
    ),
    _Table(
        "secrets_versions_page",
        "secrets_version_get",
        "secrets_version_swap",
        (uuid.UUID(int=0), 0),
        lambda r: (r["job_id"], r["version"]),
    ),
)


@dataclass
class Rotation:
    resealed: int = 0  # documents rewritten
    raced: int = 0  # compare-and-set misses: a concurrent write, read again
    passes: int = 0
    signing_keys: int = 0  # teams' signing keys sealed again


async def rotate(pool: Pool, box: SecretBox, *, batch_size: int = 200) -> Rotation:
    """Re-seals every stored secret not under ``box``'s current key; what it did."""
    done = Rotation()
    while done.passes < MAX_PASSES:
        done.passes += 1
        before = done.resealed
        for table in _TABLES:
            await _table_pass(pool, box, table, batch_size, done)
        if done.resealed == before:
            done.signing_keys = await reseal_signing_keys(pool, box, batch_size)
            return done
    raise RuntimeError(f"stored secrets were still being rewritten after {MAX_PASSES} passes")


async def _table_pass(
    pool: Pool, box: SecretBox, table: _Table, batch_size: int, done: Rotation
) -> None:
    cursor = table.start
    while True:
        rows: Sequence[asyncpg.Record] = await pool.fetch(
            q(table.page), *cursor, box.current_key_id, batch_size
        )
        if not rows:
            return
        for row in rows:
            await _reseal(pool, box, table, row, done)
        cursor = table.key(rows[-1])


async def _reseal(
    pool: Pool, box: SecretBox, table: _Table, row: asyncpg.Record | None, done: Rotation
) -> None:
    while row is not None:
        document = row["spec"]
        fresh = spec_to_json(box.seal_spec(row["job_id"], spec_from_json(document), reseal=True))
        if fresh == document:
            return
        key = table.key(row)
        if await pool.fetchval(q(table.swap), *key, document, fresh) is not None:
            done.resealed += 1
            return
        done.raced += 1
        row = await pool.fetchrow(q(table.get), *key)
