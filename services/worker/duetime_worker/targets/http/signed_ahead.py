"""Signatures made ahead of their call's send (``CallSigner.sign_ahead``) and the rule that says
whether a send may use them: a call started ahead of its time is signed in its wait, not at a
herd's instant."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from duetime_core.jobspec import CallSigning
from duetime_infra.signing import SigningKeys

# How old signatures made ahead may be when their call is sent (seconds). An attempt is started
# at most ``EARLY_AHEAD`` (20 s) before its call and signed then, so a call sent on time uses
# them; one that waited longer for its turn is signed at its send. Well inside what a target
# accepts (Standard Webhooks' five minutes, the token's ``TOKEN_LIFETIME_SECONDS``), and it
# bounds how long before the request its timestamp and ``iat`` say it was made.
AHEAD_FRESH_SECONDS = 30


@dataclass(frozen=True, slots=True, eq=False)
class SignedAhead:
    """A call's signature headers made ahead of its send (``CallSigner.sign_ahead``): by the
    keys named ``key_ids``, over ``body``, for ``attempt``, as ``signing`` says, at ``made``
    (seconds since the epoch: their ``webhook-timestamp`` and ``iat``)."""

    attempt: int
    signing: CallSigning
    key_ids: tuple[str, ...]
    body: bytes
    made: int
    headers: Mapping[str, str]

    def fits(
        self, attempt: int, signing: CallSigning, keys: SigningKeys, body: bytes, now: int
    ) -> bool:
        """Whether these signatures sign a send at ``now`` of ``body`` for ``attempt`` as
        ``signing`` says with ``keys`` (those it may use then): made at most
        ``AHEAD_FRESH_SECONDS`` before, by exactly those keys, over the exact body sent."""
        return (
            0 <= now - self.made <= AHEAD_FRESH_SECONDS
            and attempt == self.attempt
            and signing is self.signing
            and self.key_ids == key_ids(keys)
            and body == self.body
        )


def key_ids(keys: SigningKeys) -> tuple[str, ...]:
    """The ids of the keys a call may be signed with, in order."""
    return tuple(key.key_id for key in keys.active)
