"""Who calls: the roles a bearer token can have, and the principal a call runs as."""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass


class Role(enum.StrEnum):
    TEAM = "team"  # JobService, for one team
    WORKER = "worker"  # WorkerService
    OPERATOR = "operator"  # AdminService


@dataclass(frozen=True)
class Principal:
    role: Role
    team_id: str | None


def token_digest(token: str) -> bytes:
    """What is stored of a token: its SHA-256 digest, never the secret."""
    return hashlib.sha256(token.encode()).digest()
