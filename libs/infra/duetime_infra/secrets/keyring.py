"""The keyring that seals secrets at rest: key id -> AES-256 key, one of them current.

Keys never live in the database. Operators give the keyring as JSON, in a file
(``DUETIME_SECRET_KEYS_FILE``) or in a variable (``DUETIME_SECRET_KEYS``)::

    {"current": "2026-12", "keys": {"2026-06": "<base64 of 32 bytes>", "2026-12": "..."}}

New values are sealed with the current key; any key of the ring opens what it sealed, so a
new key can be made current everywhere, the stored values re-sealed with it
(``duetime-ops secrets rotate``), and only then the old key removed.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from duetime_infra.config import EnvReader

KEY_BYTES = 32
KEYS_VARIABLE = "DUETIME_SECRET_KEYS"
KEYS_FILE_VARIABLE = "DUETIME_SECRET_KEYS_FILE"
_KEY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True, eq=False)
class Keyring:
    current: str
    keys: Mapping[str, bytes]

    def __post_init__(self) -> None:
        for key_id, key in self.keys.items():
            if not _KEY_ID.fullmatch(key_id):
                raise ValueError(f"key id {key_id[:64]!r}: 1 to 64 of [A-Za-z0-9._-]")
            if len(key) != KEY_BYTES:
                raise ValueError(f"key {key_id!r}: {KEY_BYTES} bytes, got {len(key)}")
        if self.current not in self.keys:
            raise ValueError(f"the current key {self.current[:64]!r} is not in the keyring")

    def with_new_key(self, key_id: str) -> Keyring:
        """This keyring plus a fresh random key ``key_id``, made current."""
        if key_id in self.keys:
            raise ValueError(f"key id {key_id!r} is already in the keyring")
        return Keyring(key_id, {**self.keys, key_id: os.urandom(KEY_BYTES)})

    def without(self, key_id: str) -> Keyring:
        """This keyring less ``key_id`` (which must not be the current key)."""
        if key_id == self.current:
            raise ValueError("the current key cannot be removed; make another one current")
        return Keyring(self.current, {k: v for k, v in self.keys.items() if k != key_id})

    def to_json(self) -> str:
        keys = {k: base64.b64encode(v).decode("ascii") for k, v in sorted(self.keys.items())}
        return json.dumps({"current": self.current, "keys": keys})


def new_keyring(key_id: str = "k1") -> Keyring:
    return Keyring(key_id, {key_id: os.urandom(KEY_BYTES)})


def parse_keyring(text: str) -> Keyring:
    """The keyring a JSON document describes; ValueError saying what is wrong (never a key)."""
    try:
        doc = json.loads(text)
    except ValueError:
        raise ValueError("not JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), dict):
        raise ValueError('expected {"current": "<key id>", "keys": {"<key id>": "<base64>"}}')
    current = doc.get("current")
    if not isinstance(current, str):
        raise ValueError('"current" must name a key id')
    keys: dict[str, bytes] = {}
    for key_id, encoded in doc["keys"].items():
        if not isinstance(encoded, str):
            raise ValueError(f"key {key_id[:64]!r}: expected base64 text")
        try:
            keys[key_id] = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"key {key_id[:64]!r}: not valid base64") from None
    return Keyring(current, keys)


# Stands in for a keyring that is missing or bad: the problem is recorded, and the settings'
# ``finish()`` raises before anything could use it.
_UNUSABLE = Keyring("unusable", {"unusable": bytes(KEY_BYTES)})


def read_keyring(
    env: EnvReader, variable: str = KEYS_VARIABLE, file_variable: str = KEYS_FILE_VARIABLE
) -> Keyring:
    """The keyring from ``file_variable`` or ``variable`` (exactly one): by default the one
    that seals secrets at rest, ``DUETIME_SECRET_KEYS_FILE`` or ``DUETIME_SECRET_KEYS``. A
    missing or bad one is recorded in ``env``, whose ``finish()`` then raises."""
    inline = env.text(variable, "")
    path = env.text(file_variable, "")
    if bool(inline) == bool(path):
        env.problem(
            f"{file_variable} or {variable}: set exactly one (a keyring; "
            "`duetime-ops secrets new-keyring` makes one)"
        )
        return _UNUSABLE
    source = variable
    if path:
        source = f"{file_variable}={path}"
        try:
            inline = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            env.problem(f"{source}: cannot be read: {error.strerror}")
            return _UNUSABLE
    try:
        return parse_keyring(inline)
    except ValueError as error:
        env.problem(f"{source}: {error}")
        return _UNUSABLE
