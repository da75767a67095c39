"""Sealing and opening the secret values of a job's target: AES-256-GCM.

Each value is sealed on its own, under the keyring's current key, with a fresh random 96-bit
nonce and, as associated data, the job id and where the value sits (an HTTP header, by its
case-folded name, or an env variable): a sealed value copied into another job or another
name does not open. The API seals what a request brings and keeps what is stored sealed as
it is; only the scheduler opens, when it hands a run to its worker.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import uuid
from collections.abc import Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from duetime_core.errors import FailedPrecondition
from duetime_core.jobspec import (
    ContainerTarget,
    HttpTarget,
    JobSpec,
    Sealed,
    SecretValue,
    Target,
)
from duetime_infra.secrets.keyring import Keyring

log = logging.getLogger(__name__)

_NONCE_BYTES = 12


class SecretUnreadable(FailedPrecondition):
    """A stored secret that this keyring cannot open (its key is missing, or it was altered):
    a job's (``owner`` its id) or a team's signing key (``owner`` ``team <id>``)."""

    def __init__(self, owner: uuid.UUID | str, key_id: str, why: str) -> None:
        whose = f"job {owner}" if isinstance(owner, uuid.UUID) else owner
        log.error(
            "a stored secret cannot be opened",
            extra={"action": "secret_unreadable", "owner": whose, "key_id": key_id, "why": why},
        )
        super().__init__(
            f"a secret of {whose} cannot be opened: {why} (key id {key_id!r})",
            reason="SECRET_UNREADABLE",
        )


def _context(job_id: uuid.UUID, where: str, name: str) -> bytes:
    # Header names are case-insensitive: a header renamed only in case keeps its value.
    folded = name.lower() if where == "header" else name
    return f"duetime-secret/1\x00{job_id}\x00{where}\x00{folded}".encode()


def _team_context(team_id: str, key_id: str, part: str) -> bytes:
    return f"duetime-signing-key/1\x00{team_id}\x00{key_id}\x00{part}".encode()


class SecretBox:
    """Seals with the keyring's current key; opens with any of its keys."""

    def __init__(self, keyring: Keyring) -> None:
        self._current = keyring.current
        self._ciphers = {key_id: AESGCM(key) for key_id, key in keyring.keys.items()}

    @property
    def current_key_id(self) -> str:
        return self._current

    def seal(self, job_id: uuid.UUID, where: str, name: str, value: str) -> Sealed:
        return self._seal(value.encode(), _context(job_id, where, name))

    def open(self, job_id: uuid.UUID, where: str, name: str, sealed: Sealed) -> str:
        try:
            return self._open(job_id, sealed, _context(job_id, where, name)).decode()
        except UnicodeDecodeError:
            raise SecretUnreadable(job_id, sealed.key_id, "it does not authenticate") from None

    def seal_team_key(self, team_id: str, key_id: str, part: str, value: bytes) -> Sealed:
        """Seals part ``part`` of a team's signing key ``key_id`` (bound to all three)."""
        return self._seal(value, _team_context(team_id, key_id, part))

    def open_team_key(self, team_id: str, key_id: str, part: str, sealed: Sealed) -> bytes:
        return self._open(f"team {team_id}", sealed, _team_context(team_id, key_id, part))

    def _seal(self, value: bytes, context: bytes) -> Sealed:
        nonce = os.urandom(_NONCE_BYTES)
        return Sealed(
            self._current, nonce + self._ciphers[self._current].encrypt(nonce, value, context)
        )

    def _open(self, owner: uuid.UUID | str, sealed: Sealed, context: bytes) -> bytes:
        cipher = self._ciphers.get(sealed.key_id)
        if cipher is None:
            raise SecretUnreadable(owner, sealed.key_id, "its key is not in the keyring")
        nonce, data = sealed.data[:_NONCE_BYTES], sealed.data[_NONCE_BYTES:]
        try:
            return cipher.decrypt(nonce, data, context)
        except (InvalidTag, ValueError):  # ValueError: too short to hold its nonce
            raise SecretUnreadable(owner, sealed.key_id, "it does not authenticate") from None

    def _values(
        self, job_id: uuid.UUID, where: str, values: Mapping[str, SecretValue], *, reseal: bool
    ) -> dict[str, SecretValue]:
        out: dict[str, SecretValue] = {}
        for name, value in values.items():
            if isinstance(value, Sealed):
                if reseal and value.key_id != self._current:
                    value = self.seal(job_id, where, name, self.open(job_id, where, name, value))
                out[name] = value
            else:
                out[name] = self.seal(job_id, where, name, value)
        return out

    def seal_target(self, job_id: uuid.UUID, target: Target, *, reseal: bool = False) -> Target:
        """The target with every clear value sealed (and, with ``reseal``, every value sealed
        under another key sealed again under the current one)."""
        match target:
            case HttpTarget(headers=headers) if headers:
                sealed = self._values(job_id, "header", headers, reseal=reseal)
                return dataclasses.replace(target, headers=sealed)
            case ContainerTarget(env=env) if env:
                return dataclasses.replace(
                    target, env=self._values(job_id, "env", env, reseal=reseal)
                )
        return target

    def seal_spec(self, job_id: uuid.UUID, spec: JobSpec, *, reseal: bool = False) -> JobSpec:
        target = self.seal_target(job_id, spec.target, reseal=reseal)
        return spec if target is spec.target else dataclasses.replace(spec, target=target)

    def open_target(self, job_id: uuid.UUID, target: Target) -> Target:
        """The target with every value in clear: for the worker that makes the call."""
        match target:
            case HttpTarget(headers=headers) if headers:
                return dataclasses.replace(target, headers=self._opened(job_id, "header", headers))
            case ContainerTarget(env=env) if env:
                return dataclasses.replace(target, env=self._opened(job_id, "env", env))
        return target

    def _opened(
        self, job_id: uuid.UUID, where: str, values: Mapping[str, SecretValue]
    ) -> dict[str, SecretValue]:
        return {
            name: self.open(job_id, where, name, v) if isinstance(v, Sealed) else v
            for name, v in values.items()
        }


def needs_sealing(target: Target, current_key_id: str) -> bool:
    """Whether a stored target holds a value in clear or sealed under another key."""
    match target:
        case HttpTarget(headers=values) | ContainerTarget(env=values):
            return any(
                not isinstance(v, Sealed) or v.key_id != current_key_id for v in values.values()
            )
