"""What a target is called for, in the worker's own terms: the run an attempt calls, with its
HTTP call or container task. Built once per attempt from the scheduler's start answer
(``duetime_worker.attempt.wire``); the targets never see the wire's messages.

Header and env values are in clear here (the scheduler opened them for this worker): never
logged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from duetime_core.jobspec import CallSigning, HttpMethod


@dataclass(frozen=True, slots=True)
class HttpCall:
    url: str
    method: HttpMethod = HttpMethod.POST
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    signing: CallSigning | None = None  # None: the team's default
    token_audience: str = ""  # the ID token's; empty: the URL's (``signer.default_audience``)


@dataclass(frozen=True, slots=True)
class ContainerTask:
    image: str = ""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TargetRun:
    """The run an attempt calls its target for, as the target is told it (its headers or
    environment, its signatures, its trace)."""

    run_id: str
    target: HttpCall | ContainerTask | None  # None: a kind this worker does not know
    job_id: str = ""
    team: str = ""
    idempotency_key: str = ""
    traceparent: str = ""  # the run's W3C trace context; empty: none
    # The signing keys its start named (None: not said, e.g. an older scheduler's start).
    key_ids: tuple[str, ...] | None = None
