"""Who calls: the roles a bearer token can have, and the principal a call runs as."""

from __future__ import annotations

import enum
import hashlib
import uuid
from dataclasses import dataclass


class Role(enum.StrEnum):
    TEAM = "team"  # JobService, for one team
    WORKER = "worker"  # WorkerService
    OPERATOR = "operator"  # AdminService


@dataclass(frozen=True)
class Principal:
    """Who a call runs as. A token's principal also names the token (its id and the
    description operators gave it), which job changes record as their author; a worker's
    certificate names none. A worker token may be bound to the worker ids that begin with
    ``worker_id_prefix`` (a fleet's pod-name prefix, ending with its separator)."""

    role: Role
    team_id: str | None
    token_id: uuid.UUID | None = None
    description: str = ""
    worker_id_prefix: str = ""

    def acts_for_worker(self, worker_id: str) -> bool:
        """Whether this principal may speak for ``worker_id``: an unbound worker token or a
        certificate for any, a bound token only for the ids with its prefix."""
        return worker_id.startswith(self.worker_id_prefix)


def token_digest(token: str) -> bytes:
    """What is stored of a token: its SHA-256 digest, never the secret."""
    return hashlib.sha256(token.encode()).digest()
