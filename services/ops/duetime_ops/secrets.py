"""`duetime-ops secrets`: keyrings and re-sealing stored secrets (duetime_infra.secrets).

  new-keyring [--key-id ID]        print a fresh keyring (JSON) with one random key, current
  add-key FILE --key-id ID         add a random key to the keyring FILE and make it current
  remove-key FILE --key-id ID      remove a key (not the current one) from the keyring FILE
  rotate [--batch-size N]          re-seal every stored secret under the current key of the
                                   keyring in DUETIME_SECRET_KEYS(_FILE), on DUETIME_PG_DSN

Rotating a key: `add-key`, give every API and scheduler the new keyring (a restart reads it),
`rotate`, then `remove-key` the old one and roll the services again.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from duetime_infra.config import ConfigError, EnvReader, env_dsn
from duetime_infra.pg.pool import create_pool
from duetime_infra.secrets.keyring import Keyring, new_keyring, parse_keyring, read_keyring
from duetime_infra.secrets.rotate import rotate
from duetime_infra.secrets.sealing import SecretBox


def register(areas: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = areas.add_parser("secrets", help="keyrings and re-sealing stored secrets")
    parser.set_defaults(run=_run)
    commands = parser.add_subparsers(dest="command", required=True)
    new = commands.add_parser("new-keyring", help="print a fresh keyring with one random key")
    new.add_argument("--key-id", default="k1")
    for name in ("add-key", "remove-key"):
        change = commands.add_parser(name, help=f"{name.replace('-', ' ')} in a keyring file")
        change.add_argument("file", type=Path)
        change.add_argument("--key-id", required=True)
    rotating = commands.add_parser("rotate", help="re-seal stored secrets under the current key")
    rotating.add_argument("--batch-size", type=int, default=200)


def _write(path: Path, keyring: Keyring) -> None:
    """Replaces the keyring file at once (a reader sees the old or the new one), mode 0600."""
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(keyring.to_json() + "\n")
    temporary.replace(path)


async def _rotate(batch_size: int) -> None:
    env = EnvReader()
    keyring = read_keyring(env)
    env.finish()
    pool = await create_pool(env_dsn(), max_size=2)
    try:
        done = await rotate(pool, SecretBox(keyring), batch_size=batch_size)
    finally:
        await pool.close()
    print(
        f"re-sealed {done.resealed} definitions under key {keyring.current!r} "
        f"({done.passes} passes, {done.raced} read again after a concurrent update), "
        f"and {done.signing_keys} teams' signing keys"
    )


def _change(args: argparse.Namespace) -> None:
    keyring = parse_keyring(args.file.read_text(encoding="utf-8"))
    changed = (
        keyring.with_new_key(args.key_id)
        if args.command == "add-key"
        else keyring.without(args.key_id)
    )
    _write(args.file, changed)


def _run(args: argparse.Namespace) -> None:
    try:
        if args.command == "new-keyring":
            print(new_keyring(args.key_id).to_json())
        elif args.command in ("add-key", "remove-key"):
            _change(args)
        else:
            asyncio.run(_rotate(args.batch_size))
    except (ValueError, OSError, ConfigError) as error:
        sys.exit(f"duetime-ops secrets {args.command}: {error}")
