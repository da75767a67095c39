"""Retry delays: exponential backoff with "equal jitter".

After the n-th failed attempt of a run's budget the cap is
``min(max_backoff, initial_backoff * multiplier ** (n - 1))``, and the delay is drawn uniformly
from ``[cap / 2, cap]``. The lower half bound keeps retries from stampeding at zero after a
shared outage; the cap grows with the attempt and never exceeds ``max_backoff``.

Pure: the random draw is a parameter, so tests and callers choose their source.
"""

from __future__ import annotations

from datetime import timedelta

from duetime_core.jobspec import RetryPolicy

_MICRO = timedelta(microseconds=1)


def backoff_cap(policy: RetryPolicy, failed_attempt: int) -> timedelta:
    """The upper bound of the delay after ``failed_attempt`` (1-based) failed attempts."""
    if failed_attempt < 1:
        raise ValueError(f"failed_attempt must be at least 1, got {failed_attempt}")
    ceiling = policy.max_backoff // _MICRO
    try:
        grown = (policy.initial_backoff // _MICRO) * policy.multiplier ** (failed_attempt - 1)
    except OverflowError:  # a huge attempt number: the ceiling applies long before
        return policy.max_backoff
    if grown >= ceiling:
        return policy.max_backoff
    return timedelta(microseconds=int(grown))


def backoff_bounds(policy: RetryPolicy, failed_attempt: int) -> tuple[timedelta, timedelta]:
    """``(low, high)``: every delay ``backoff_delay`` can return for this attempt, inclusive."""
    cap = backoff_cap(policy, failed_attempt)
    return timedelta(microseconds=(cap // _MICRO + 1) // 2), cap


def backoff_delay(policy: RetryPolicy, failed_attempt: int, rand: float) -> timedelta:
    """The delay before the next attempt, from a uniform draw ``rand`` in ``[0, 1)``."""
    if not 0.0 <= rand < 1.0:
        raise ValueError(f"rand must be in [0, 1), got {rand}")
    low, high = backoff_bounds(policy, failed_attempt)
    span = (high - low) // _MICRO
    return low + timedelta(microseconds=min(span, int(span * rand)))
