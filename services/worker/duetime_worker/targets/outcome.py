"""How an attempt ended, as the worker reports it, with how far its call got."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeAlias

from duetime_core.attempts import CallProgress
from duetime_core.records import AttemptOutcome

MAX_ERROR_BYTES = 4096
LEASE_LAPSED = "not called: the attempt's lease may have lapsed by this worker's clock"


class LeaseLapsed(Exception):
    """Raised by an attempt's send check once its lease may have lapsed: from then on no byte
    of its call may leave the worker (the run may already be another worker's)."""


class SendCheck(Protocol):
    """Called immediately before a target call may send anything; raises LeaseLapsed to stop
    it when the lease may lapse within ``within`` seconds (the longest the call's first byte
    may then take to leave, e.g. its connect timeout)."""

    def __call__(self, within: float = 0.0) -> None: ...


def no_check(within: float = 0.0) -> None:
    """The send check of a call that holds no lease (a notification)."""


Call: TypeAlias = CallProgress | None
# How far a call got (``duetime_core.attempts.CallProgress``): nothing of it reached the
# target; it began without an answer; the target answered; not known.
NOT_BEGUN: Call = CallProgress.NOT_BEGUN
BEGUN: Call = CallProgress.BEGUN
ANSWERED: Call = CallProgress.ANSWERED
UNSAID: Call = None


@dataclass(frozen=True, slots=True)
class Outcome:
    result: AttemptOutcome  # never LEASE_EXPIRED: the scheduler's to say
    retryable: bool = True
    error: str = ""
    status: int = 0  # the HTTP status a target answered with; 0 when none answered
    call: Call = UNSAID

    @classmethod
    def succeeded(cls, *, status: int = 0) -> Outcome:
        return cls(AttemptOutcome.SUCCEEDED, retryable=False, status=status, call=ANSWERED)

    @classmethod
    def failed(
        cls, error: str, *, retryable: bool, status: int = 0, call: Call = UNSAID
    ) -> Outcome:
        return cls(AttemptOutcome.FAILED, retryable, _short(error), status, call)

    @classmethod
    def timed_out(cls, error: str, *, call: Call = UNSAID) -> Outcome:
        return cls(AttemptOutcome.TIMED_OUT, True, _short(error), call=call)

    @classmethod
    def cancelled(cls, error: str, *, call: Call = UNSAID) -> Outcome:
        return cls(AttemptOutcome.CANCELLED, True, _short(error), call=call)

    @classmethod
    def handed_back(cls, error: str, *, call: Call = UNSAID) -> Outcome:
        return cls(AttemptOutcome.HANDED_BACK, True, _short(error), call=call)


def _short(text: str) -> str:
    data = text.encode()
    if len(data) <= MAX_ERROR_BYTES:
        return text
    return data[: MAX_ERROR_BYTES - 3].decode(errors="ignore") + "..."
