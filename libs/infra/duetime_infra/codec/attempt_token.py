"""The fencing token on the worker contract's wire: the attempt number a single report carries
in ``duetime-attempt`` gRPC metadata (a batch entry carries it in its body). Written by the
worker, read by the scheduler: one definition for both."""

from __future__ import annotations

from collections.abc import Iterable

from duetime_core.errors import FieldViolation

ATTEMPT_METADATA_KEY = "duetime-attempt"
# Attempt numbers are int32 on the wire.
MAX_ATTEMPT_NUMBER = 2**31 - 1


def read_attempt_token(
    violations: list[FieldViolation], metadata: Iterable[tuple[str, str | bytes]] | None
) -> int:
    """The attempt number as a decimal in ``duetime-attempt`` metadata; 0 with a violation
    naming the key when it is missing, repeated or not a positive int32."""
    values = [v for k, v in metadata or () if k == ATTEMPT_METADATA_KEY]
    if not values:
        violations.append(FieldViolation(ATTEMPT_METADATA_KEY, "required metadata"))
        return 0
    raw = values[0]
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    number = int(text) if text.isascii() and text.isdigit() and len(text) <= 10 else 0
    if len(values) > 1 or not 1 <= number <= MAX_ATTEMPT_NUMBER:
        violations.append(
            FieldViolation(
                ATTEMPT_METADATA_KEY,
                f"must be one attempt number (a positive decimal integer), got {text[:32]!r}",
            )
        )
    return number
